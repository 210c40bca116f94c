"""One instance snapshot written by the old program, converted for the new one.

A pure function over the snapshot format of ``engine.context`` (what ``Engine.snapshot`` writes
and the worker's stores and changelogs hold): no engine, no clock but the ``now`` it is given (the
conversion instant, for timers the old state did not have; see ``timers``). Hosts call it when
they load an instance, so a store converts lazily, key by key.

The result says what the host does with the instance:

- ``carried``: ``data`` is the new snapshot (new state number, variables by name, the timer
  re-armed), to restore and write back;
- ``restarted``: ``data`` is None; the instance is dropped (a grouped program makes a new one at
  its key's next event, running the initial actions; an ungrouped one starts afresh);
- ``ended``: a grouped instance is dropped (``data`` None); an ungrouped one stays, ended
  (``data`` is a terminated snapshot, as the engine keeps an ended ungrouped instance).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine import context
from ..engine.values import UNSET
from .plan import CARRIED, ENDED, RESTARTED, Plan
from .timers import deadline


class UpgradeRefused(Exception):
    """The plan cannot be applied (its problems say why)."""


@dataclass(frozen=True)
class Conversion:
    verdict: str
    data: bytes | None
    reason: str = ""
    old_state: int = -1
    new_state: int | None = None


def convert(plan: Plan, data: bytes, now: int) -> Conversion:
    """``data`` (a snapshot of ``plan.old``) for ``plan.new``; ValueError for a snapshot that is
    not one of the old program's, UpgradeRefused for a plan with problems."""
    if plan.problems:
        raise UpgradeRefused("; ".join(map(str, plan.problems)))
    _, state, variables, key, timer, terminated, origin, fires, _ = context.decode_payload(data)
    if type(state) is not int or not 0 <= state < len(plan.states):
        raise ValueError(f"snapshot state {state!r} is not a state of the old program ({len(plan.states)} states)")
    if len(variables) != len(plan.old.program.variables):
        raise ValueError(
            f"snapshot has {len(variables)} variables, the old program has {len(plan.old.program.variables)}"
        )
    sp = plan.states[state]
    new_vars = _variables(plan, variables)
    if terminated:  # an ended ungrouped instance stays ended
        target = sp.new_state if sp.new_state is not None else 0
        return Conversion(
            ENDED,
            context.encode(target, new_vars, None, None, True, origin, fires),
            "the instance had ended",
            state,
            target,
        )
    if sp.verdict == RESTARTED:
        return Conversion(RESTARTED, None, sp.reason, state, None)
    if sp.verdict == ENDED:
        out = None if plan.new.grouped else context.encode(sp.new_state or 0, new_vars, None, None, True, origin, fires)
        return Conversion(ENDED, out, sp.reason, state, sp.new_state)
    assert sp.verdict == CARRIED and sp.new_state is not None
    new_timer: tuple[Any, ...] | None = None
    if timer is not None:
        pending_deadline, pending_symbol, seq = timer[0], timer[1], timer[2]
        rules = sp.rearm.get(pending_symbol)
        if rules is None:
            raise ValueError(
                f"snapshot in state {state} has a timer for symbol {pending_symbol}, which that state does not have"
            )
        armed = deadline(rules, plan.old.program, (pending_deadline, pending_symbol), now)
        if armed is not None:
            # (what set the old timer, when the host named it, sets the new one too: ``es-armed``)
            new_timer = (armed[0], armed[1], seq, *timer[3:4])
    elif not plan.old_timer_symbols[state]:
        armed = deadline(sp.rearm.get(None, []), plan.old.program, None, now)
        if armed is not None:
            new_timer = (armed[0], armed[1], 0)
    return Conversion(
        CARRIED,
        context.encode(
            sp.new_state, new_vars, tuple(key) if key is not None else None, new_timer, False, origin, fires
        ),
        "",
        state,
        sp.new_state,
    )


def _variables(plan: Plan, old: list[Any]) -> list[Any]:
    out: list[Any] = [UNSET] * len(plan.new.program.variables)
    for v in plan.variables:
        if v.how == "carried":
            out[v.slot] = old[v.old_slot]  # type: ignore[index]  # a carried variable has its old slot
        elif v.how == "promoted":
            value = old[v.old_slot]  # type: ignore[index]  # so has a promoted one
            out[v.slot] = value if value is UNSET else float(value)
        elif v.how == "initial":
            out[v.slot] = v.value
    return out
