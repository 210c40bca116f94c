"""A compact feed's step with its single-use locals folded into their one use.

``CodeGen.compact_step`` writes a step as plain statements: the state number read into ``st``
(``st = v[k]`` from a key's record), the target into ``t`` (``t = _N1[st]``, or a constant),
then ``t`` stored (``v[k] = t`` in a record, ``_tab[gk] = t`` in a table of state numbers). When
a step uses each only once, naming them costs a store and a load per event, about 3% of the
realistic program's batch feed (bench/SPEED.md): ``v[2] = _N1[v[2]]`` does the same in one
statement. Folding only moves a read of ``st`` to before the store that changes ``v[k]``, and
moves the target's evaluation (a constant, or a tuple lookup by ``st``, which nothing else
assigns) to its store, so the step does what it did.

Uses are counted on the generated text: a name inside a string literal counts as a use, which
only leaves a local unfolded.
"""

from __future__ import annotations

import re


def uses(name: str, line: str) -> int:
    """How many times ``name`` appears in ``line`` as a name (not an attribute, not part of one)."""
    return len(re.findall(rf"(?<![\w.]){name}(?!\w)", line))


def fold_target(lines: list[str], store: str) -> list[str]:
    """``lines`` (a step starting ``t = <target>``) with ``t`` folded into ``store`` (a line of
    the step at its top level, ``<place> = t``) when that is its only use."""
    if not lines or not lines[0].startswith("t = "):
        return lines
    users = [i for i, line in enumerate(lines[1:], 1) if uses("t", line)]
    if len(users) != 1 or lines[users[0]] != store or uses("t", store) != 1:
        return lines
    place = store[: -len(" = t")]
    out = lines[1:]
    out[users[0] - 1] = f"{place} = {lines[0][len('t = ') :]}"
    return out


def read_state(lines: list[str], record: int) -> list[str]:
    """A step over a key's record ``v`` reading its state number from ``v[record]``: ``st = v[record]``
    first when the step uses ``st`` more than once; its one use replaced when that is the first
    line (it comes before the step stores the target); nothing when it uses none."""
    used = [i for i, line in enumerate(lines) if uses("st", line)]
    if not used:
        return lines
    if used == [0] and uses("st", lines[0]) == 1:
        return [re.sub(r"(?<![\w.])st(?!\w)", f"v[{record}]", lines[0]), *lines[1:]]
    return [f"st = v[{record}]", *lines]


__all__ = ["fold_target", "read_state", "uses"]
