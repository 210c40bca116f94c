"""Checks of time markers on the syntax tree, before any automaton is built.

Two mistakes are cheap to see in the tree and expensive to meet at run time:

* an ``elapse`` whose constant amount is zero or less (``elapse[0 sec]``) inside a loop that it
  can go round with no event in between: each firing re-enters the state it fired from, which
  arms the same zero timer again, for ever at one instant (at run time, ``$error`` 8 after 1,000
  firings). :func:`check_zero_elapse_loops` reports it as an error;
* ``arrive[.:00]``: two components read as ``H:MM`` (conformance choice 1) make it *hourly*, while
  the language document uses it for "every minute" (``MM:SS``). :func:`check_ambiguous_patterns`
  warns, and says how to write either reading unambiguously.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from . import ast
from .diagnostics import Diagnostics

#: Microseconds per unit, as the engine converts elapse amounts (rounded to the microsecond).
UNIT_MICROSECONDS: dict[str, int] = {
    "day": 86_400_000_000,
    "hour": 3_600_000_000,
    "minute": 60_000_000,
    "second": 1_000_000,
    "millisecond": 1_000,
    "microsecond": 1,
}


def constant_amount(e: ast.Expr) -> float | None:
    """The value of an elapse amount written as a number literal (``0``, ``-1``, ``0.0``), else
    None. Only literals: anything computed is left to run time."""
    if isinstance(e, (ast.IntLit, ast.FloatLit)):
        return float(e.value)
    return None


def is_instant(r: ast.RElapse) -> bool:
    """Whether this elapse marker certainly fires at the moment its state is entered: a constant
    amount that rounds to zero microseconds or less."""
    amount = constant_amount(r.amount)
    if amount is None or amount != amount:  # not a literal, or NaN
        return False
    try:
        return round(amount * UNIT_MICROSECONDS[r.unit]) <= 0
    except (OverflowError, ValueError):  # an infinite literal such as 1e999
        return False


@dataclass(frozen=True)
class _Shape:
    """What a regular expression can match, as far as this check cares.

    ``empty``: it can be passed with no marker at all (only actions). ``instant``: it can be
    passed by firing zero-elapse markers only (at least one), with no event and no other timer.
    Both are under-approximations: intersections and differences count as neither, so the check
    never reports a loop that might be harmless.
    """

    empty: bool
    instant: bool


_BLOCKS = _Shape(empty=False, instant=False)


def _shape(r: ast.Regex, loops: list[tuple[ast.RRepeat, ast.RElapse]]) -> _Shape:
    if isinstance(r, ast.RActions):
        return _Shape(empty=True, instant=False)
    if isinstance(r, ast.RElapse):
        return _Shape(empty=False, instant=is_instant(r))
    if isinstance(r, (ast.RMarker, ast.RWildcard, ast.RArrive)):
        return _BLOCKS
    if isinstance(r, ast.RSeq):
        shapes = [_shape(item, loops) for item in r.items]
        return _Shape(
            empty=all(s.empty for s in shapes),
            instant=all(s.empty or s.instant for s in shapes) and any(s.instant for s in shapes),
        )
    if isinstance(r, ast.RAlt):
        shapes = [_shape(item, loops) for item in r.items]
        return _Shape(empty=any(s.empty for s in shapes), instant=any(s.instant for s in shapes))
    if isinstance(r, ast.RRepeat):
        inner = _shape(r.item, loops)
        if inner.instant and r.high is None:
            first = next(_instant_elapses(r.item), None)
            if first is not None:
                loops.append((r, first))
        return _Shape(empty=r.low == 0 or inner.empty, instant=inner.instant and r.high != 0)
    if isinstance(r, (ast.RInter, ast.RDiff)):
        _shape(r.left, loops)
        _shape(r.right, loops)
        return _BLOCKS
    return _BLOCKS


def _nodes(r: ast.Regex) -> Iterator[ast.Regex]:
    """Every node of a regular expression, in program-text order."""
    yield r
    if isinstance(r, (ast.RSeq, ast.RAlt)):
        for item in r.items:
            yield from _nodes(item)
    elif isinstance(r, ast.RRepeat):
        yield from _nodes(r.item)
    elif isinstance(r, (ast.RInter, ast.RDiff)):
        yield from _nodes(r.left)
        yield from _nodes(r.right)


def _instant_elapses(r: ast.Regex) -> Iterator[ast.RElapse]:
    """The zero-elapse markers inside ``r``, in program-text order."""
    return (n for n in _nodes(r) if isinstance(n, ast.RElapse) and is_instant(n))


def check_zero_elapse_loops(regex: ast.Regex, d: Diagnostics) -> None:
    """Report every unbounded repetition (``*``, ``+``, ``{n,}``) whose body can be gone round by
    zero-elapse markers alone, at the first such marker in the body."""
    loops: list[tuple[ast.RRepeat, ast.RElapse]] = []
    _shape(regex, loops)
    for loop, marker in loops:
        d.error(
            marker.pos,
            "this elapse of zero or less can fire again at the same instant, for ever: the loop "
            "it is in can be repeated with no event in between",
            f"give it a positive amount, or put an event marker in the loop closed by the '{_operator(loop)}' at "
            f"{loop.op_pos.line}:{loop.op_pos.col}, so that each round needs an event: (A() elapse[0 sec]())*",
        )


def _operator(loop: ast.RRepeat) -> str:
    if loop.high is None and loop.low in (0, 1):
        return "*" if loop.low == 0 else "+"
    return f"{{{loop.low},}}"


# ---------------------------------------------------------------------------------------
# Ambiguous arrive patterns


def _pattern_text(p: ast.ArrivePattern) -> str:
    """The pattern as written, from its start to the ``]`` that closes it."""
    text = p.pos.source.text
    depth = 0
    for i in range(p.pos.offset, len(text)):
        ch = text[i]
        if ch in "([":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "]":
            if depth == 0:
                return text[p.pos.offset : i].rstrip()
            depth -= 1
    return text[p.pos.offset :].rstrip()


def _arrives(r: ast.Regex) -> Iterator[ast.RArrive]:
    return (n for n in _nodes(r) if isinstance(n, ast.RArrive))


def check_ambiguous_patterns(regex: ast.Regex, d: Diagnostics) -> None:
    """Warn about two-component time patterns whose first component is a wildcard.

    ``arrive[.:00]`` is read as H:MM, "minute 00 of every hour"; read as MM:SS, as the language
    document's example of 3.3.2 does, it would be "second 00 of every minute". With a number
    first (``arrive[9:30]``) only H:MM makes sense, so only the wildcard form is ambiguous.
    """
    for r in _arrives(regex):
        time = r.pattern.time
        if time is None or len(time) != 2 or not isinstance(time[0], ast.Wild):
            continue
        written = _pattern_text(r.pattern)
        cut = time[0].pos.offset - r.pattern.pos.offset  # where the wildcard hour is
        as_hours, as_minutes = f"arrive[{written}:00]", f"arrive[{written[:cut]}.:{written[cut:]}]"
        if isinstance(time[1], ast.Wild):
            reading, other = "every minute (at second 00)", "every second"
        else:
            minute = written[cut + 1 :].split(":", 1)[-1].strip()
            reading, other = f"every hour (at minute {minute})", f"every minute (at second {minute})"
        d.warning(
            r.pattern.pos,
            f"arrive[{written}] is read as hours:minutes, so it fires {reading}, not {other}",
            f"write {as_hours} for this reading, or {as_minutes} for {other}",
            "hours-minutes",
        )
