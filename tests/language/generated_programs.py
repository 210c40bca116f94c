"""Generators of large EventScript programs, for the compile-time benchmark and its tests.

``bench/check.py`` times them and ``tests/language/test_compile_time.py`` checks their compile
time and their outputs, so both import this one module. Every generator is deterministic (a
fixed seed per call), so a figure measured today can be compared with one measured later.

- :func:`blowup_program` — ``.* A() .{k}``: the DFA needs 2^(k+1) states; past the state limit
  the program runs on the lazy DFA.
- :func:`difference_program` — many patterns under ``-``, each with a multi-line action block:
  the product construction of a difference, with a subset construction of its right operand.
- :func:`intersection_program` — many patterns under ``&`` (a product of single NFA states).
- :func:`nested_program` — deeply nested loops and alternatives, actions at every level.
"""

from __future__ import annotations

import random

#: Input event names the generated programs declare (each carries a long).
SYMBOLS = 10


def blowup_program(k: int) -> str:
    """The 4-line program of issue 11: a DFA of 2^(k+1) states, an NFA of k + 2."""
    return f"in {{ }} A, {{ }} B\nout {{ }} Z\n\n.* A() .{{{k}}} {{ !>Z({{}}); }}\n"


def _header(symbols: int) -> list[str]:
    events = ", ".join(f"long E{i}" for i in range(symbols))
    return [f"in {events}", "out long Alert, long Total", "", "{ total = 0; hits = 0; }"]


def _markers(rng: random.Random, n: int, tag: int, symbols: int, wildcards: float = 0.0) -> tuple[str, list[str]]:
    """``n`` event markers (some storing their value, inner ones a wildcard ``.`` with probability
    ``wildcards``) and the variables they store."""
    parts: list[str] = []
    stored: list[str] = []
    for j in range(n):
        sym = rng.randrange(symbols)
        if 0 < j < n - 1 and rng.random() < wildcards:
            parts.append(".")
        elif rng.random() < 0.5:
            var = f"v{tag}_{j}"
            stored.append(var)
            parts.append(f"E{sym}({var})")
        else:
            parts.append(f"E{sym}()")
    return " ".join(parts), stored


def _action_lines(rng: random.Random, tag: int, stored: list[str], count: int, indent: str) -> list[str]:
    """A block of ``count`` lines (braces included) that reads the stored variables."""
    body: list[str] = []
    values = stored or ["hits"]
    for j in range(max(0, count - 2)):
        v = values[j % len(values)]
        choice = rng.randrange(4)
        if choice == 0:
            body.append(f"total = total + {v};")
        elif choice == 1:
            body.append(f"{v} > {rng.randrange(100)} ? !>Alert({tag});")
        elif choice == 2:
            body.append(f"hits = hits + {rng.randrange(1, 9)};")
        else:
            body.append(f"for (i{tag}_{j}: 0, 2) total = total + i{tag}_{j};")
    lines = [indent + "{ !>Total(total);"]
    lines += [indent + "  " + b for b in body]
    lines.append(indent + "}")
    return lines


def _patterns(rng: random.Random, lines: int, patterns: int, symbols: int, prefix: str, wildcards: float) -> list[str]:
    """``patterns`` alternatives of ``prefix`` + 3 to 5 markers + an action block, about ``lines``
    lines in all."""
    per = max(3, lines // max(1, patterns))
    out: list[str] = []
    for p in range(patterns):
        markers, stored = _markers(rng, rng.randint(3, 5), p, symbols, wildcards)
        out.append(f"  {'|' if p else ' '} {prefix}{markers}")
        out += _action_lines(rng, p, stored, per - 1, "      ")
    return out


def difference_program(
    lines: int = 500, patterns: int = 41, *, symbols: int = SYMBOLS, wildcards: float = 0.25, seed: int = 1
) -> str:
    """``.* - ( .* P1 {...} | ... | .* Pn {...} )``: every event sequence that does not end with
    one of the patterns; each pattern's actions run when it is matched (document §3.3.1). Inner
    markers are a wildcard ``.`` with probability ``wildcards``, which multiplies the states of
    the right operand's subset construction (0.25: ~600 states at 41 patterns)."""
    rng = random.Random(seed)
    head = _header(symbols)
    body = _patterns(rng, lines - len(head) - 2, patterns, symbols, ".* ", wildcards)
    return "\n".join([*head, ".* - (", *body, ")"]) + "\n"


def intersection_program(
    lines: int = 500, patterns: int = 41, *, symbols: int = SYMBOLS, wildcards: float = 0.25, seed: int = 2
) -> str:
    """``( P1 {...} | ... | Pn {...} | . )* & ( .* E0() .* )``: runs of the patterns, among any
    events, in a sequence that has seen an E0."""
    rng = random.Random(seed)
    head = _header(symbols)
    body = _patterns(rng, lines - len(head) - 3, patterns, symbols, "", wildcards)
    return "\n".join([*head, "( (", *body, "  | .", ")* ) & ( .* E0() .* )"]) + "\n"


def nested_program(lines: int = 500, depth: int = 12, *, symbols: int = SYMBOLS, seed: int = 3) -> str:
    """Loops nested ``depth`` deep, each level an alternative of two marker sequences with
    action blocks, spread over about ``lines`` lines."""
    rng = random.Random(seed)
    head = _header(symbols)
    per_block = max(3, (lines - len(head)) // (2 * depth) - 1)

    def level(d: int) -> list[str]:
        indent = "  " * d
        if d == depth:
            return [f"{indent}E{rng.randrange(symbols)}(last) {{ total = total + last; }}"]
        markers, stored = _markers(rng, 2, d, symbols)
        other, other_stored = _markers(rng, 1, depth + d, symbols)
        return [
            f"{indent}( {markers}",
            *_action_lines(rng, d, stored, per_block, indent + "    "),
            f"{indent}  (",
            *level(d + 1),
            f"{indent}  )*",
            f"{indent}| {other}",
            *_action_lines(rng, depth + d, other_stored, per_block, indent + "    "),
            f"{indent})*",
        ]

    return "\n".join([*head, *level(0)]) + "\n"
