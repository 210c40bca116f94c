"""The rule that re-arms a carried instance's timer in its new state.

A timer is armed when an instance enters a timed state, for the earliest of the state's time
markers (language document, choice 5). Upgrading keeps **the instant the instance entered its
state** and computes the new state's deadlines from it, as the new program would have had it
entered the state then:

- a pending timer of an ``elapse`` of constant duration gives the entry instant (its deadline
  minus its duration); each time marker of the new state that is an ``elapse`` of constant
  duration is due at entry + its duration. A longer timeout moves the pending deadline later by
  the difference, a shorter one earlier (a deadline already past fires at once after the load);
- when the new state's time markers are the old state's, each written the same (any ``elapse``
  or ``arrive`` expression, unchanged), the pending timer is kept as it is: the new program
  computes the same deadlines, so the pending one is still the earliest;
- otherwise a time marker matched with the pending one and written the same keeps the pending
  deadline, whatever the entry instant;
- when nothing was pending but the old state had time markers, nothing is armed (the old
  instance's marker could not fire, nor can the new one's);
- when the old state had no time marker, the new state's are armed as if it were entered at
  the conversion (the upgrade instant), which needs constant ``elapse`` durations;
- anything else (an ``arrive`` or an expression duration that changed or appeared, whose value
  needs the instance's variables or the old entry instant) cannot be re-armed: the state restarts.

The earliest deadline is armed, ties going to the marker first in the text, as the engine does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..language import ir
from ..language.types import DOUBLE


@dataclass(frozen=True)
class Rearm:
    """How one time symbol of the new state gets its deadline: ``keep`` the pending one,
    ``entry`` + ``amount_us``, or ``now`` + ``amount_us`` (the conversion instant)."""

    symbol: int
    how: str
    amount_us: int = 0


def constant_elapse_us(p: ir.ProgramIR, symbol: int) -> int | None:
    """The duration of a time symbol in microseconds when it is an ``elapse`` of a constant, as
    the engine computes it (``Engine._elapse_d`` and ``CodeGen._deadline``); else None."""
    spec = p.timer_of(symbol)
    if not isinstance(spec, ir.ElapseSpec):
        return None
    amount = spec.amount
    if isinstance(amount, ir.ToDouble):
        amount = amount.x
    if not isinstance(amount, ir.Const):
        return None
    value = amount.value
    if ir.type_of(spec.amount) == DOUBLE:
        try:
            return max(0, round(float(value) * spec.unit_us))
        except (OverflowError, ValueError):
            return None
    return max(0, int(value)) * spec.unit_us


def same_spec(old: ir.ProgramIR, old_symbol: int, new: ir.ProgramIR, new_symbol: int) -> bool:
    """Whether two time markers compute their deadline the same way (text positions aside)."""
    a, b = old.timer_of(old_symbol), new.timer_of(new_symbol)
    return type(a) is type(b) and ir.to_json(_without_symbol(a)) == ir.to_json(_without_symbol(b))


def _without_symbol(spec: ir.Node) -> ir.Node:
    if isinstance(spec, ir.ElapseSpec):
        return ir.ElapseSpec(0, spec.amount, spec.unit_us)
    assert isinstance(spec, ir.ArriveSpec)
    return ir.ArriveSpec(0, spec.time, spec.components)


def rearm_rules(
    old: ir.ProgramIR,
    old_symbols: tuple[int, ...],
    pending: int | None,
    new: ir.ProgramIR,
    new_symbols: tuple[int, ...],
    symbol_match: dict[int, int],
) -> tuple[list[Rearm] | None, str]:
    """How each time symbol of the new state is armed when the old instance's pending timer is
    for ``pending``, one of the old state's ``old_symbols`` (None: the old state has none), or
    None and why it cannot be."""
    if (
        pending is not None
        and sorted(symbol_match.get(s, -1) for s in old_symbols) == sorted(new_symbols)
        and all(same_spec(old, s, new, symbol_match[s]) for s in old_symbols)
    ):
        return [Rearm(symbol_match[pending], "keep")], ""
    rules: list[Rearm] = []
    entry_known = pending is not None and constant_elapse_us(old, pending) is not None
    for sym in new_symbols:
        if pending is not None and symbol_match.get(pending) == sym and same_spec(old, pending, new, sym):
            rules.append(Rearm(sym, "keep"))
            continue
        amount = constant_elapse_us(new, sym)
        name = _marker_text(new, sym)
        if amount is None:
            return (
                None,
                f"its new time marker {name} is not an elapse of constant duration, and is not "
                f"the pending one unchanged, so its deadline cannot be computed",
            )
        if pending is None:
            rules.append(Rearm(sym, "now", amount))
        elif entry_known:
            rules.append(Rearm(sym, "entry", amount))
        else:
            return (
                None,
                f"its pending timer ({_marker_text(old, pending)}) does not tell when the state "
                f"was entered, which the new time marker {name} needs",
            )
    return rules, ""


def deadline(
    rules: list[Rearm], old: ir.ProgramIR, pending: tuple[int, int] | None, now: int
) -> tuple[int, int] | None:
    """(deadline, symbol) to arm in the new state, or None: ``pending`` is the old instance's
    (deadline, time symbol), ``now`` the conversion instant (microseconds)."""
    best: tuple[int, int] | None = None
    for rule in rules:
        if rule.how == "keep":
            assert pending is not None
            d = pending[0]
        elif rule.how == "entry":
            assert pending is not None
            old_amount = constant_elapse_us(old, pending[1])
            assert old_amount is not None
            d = pending[0] - old_amount + rule.amount_us
        else:
            d = now + rule.amount_us
        d = max(d, now)
        if best is None or d < best[0] or (d == best[0] and rule.symbol < best[1]):
            best = (d, rule.symbol)
    return best


def _marker_text(p: ir.ProgramIR, symbol: int) -> str:
    marker = p.symbols[symbol].marker
    m = p.markers[marker] if marker is not None else None
    return f"{m.text} at {m.line}:{m.col}" if m is not None else p.symbols[symbol].name
