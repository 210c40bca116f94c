"""The upgrade plan: for every state of the old automaton, what happens to an instance found there.

``make_plan(old, new)`` compiles nothing: it takes two compiled programs, rebuilds their
automata with positions (``automaton``), matches their markers (``diff``) and decides, per old
state:

- **carried** to a new state: the histories of the old state (the sets of markers that can have
  been matched last) are mapped through the marker match, and those that lead to a state of the
  new program all lead to the same one, which does not end the instance; its timer can be
  re-armed (``timers``). A history through a marker the new program lacks is left out: every
  history of an old state stands for the same place in the text (the same NFA states), so one
  that maps is enough to find that place in the new program;
- **restarted**: no history maps (a marker matched last is gone, or the markers matched last are
  never last together in the new program), or the new program tells apart histories the old one
  merged, or the timer cannot be re-armed: the instance is dropped and a new one starts (initial
  actions run again) at the key's next event;
- **ended**: in the new program the instance's match is complete there (or it had already ended).

Variables are carried by name (a ``long`` becomes a ``double`` when the new program says so); a
new one takes the constant its initial actions give it, or stays unset. What no instance can
survive makes the plan impossible (exit 2): a grouped program becoming ungrouped or the reverse,
another group key (types or clauses), a variable whose type changed otherwise, or a program on
the lazy DFA. Exit 1 when some state restarts or ends, 0 when every state carries.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..automata.compiled import CompiledProgram
from ..language import ir
from ..language.source import Pos
from ..language.types import BOOLEAN, DOUBLE, LONG, STRING, Type
from .automaton import START, Copy, History, NotPlannable, Shape, shape_of
from .diff import match_programs
from .fingerprint import fingerprint
from .places import SourcePlaces
from .timers import Rearm, rearm_rules

CARRIED, RESTARTED, ENDED = "carried", "restarted", "ended"


@dataclass(frozen=True)
class Problem:
    """Why no instance can be carried, and where in the new program's source when that is known
    (``SourcePlaces``): a user told that a variable changed type is shown the line to edit."""

    message: str
    pos: Pos | None = None

    def __str__(self) -> str:
        return f"{self.pos}: {self.message}" if self.pos else self.message


@dataclass
class StatePlan:
    """What happens to an instance found in one old state."""

    old_state: int
    verdict: str
    new_state: int | None = None
    reason: str = ""
    #: The markers the state waits for, in the old program and (carried) in the new one.
    waits_before: list[str] = field(default_factory=list)
    waits_after: list[str] = field(default_factory=list)
    #: Per time symbol of the old state that may be pending (None: the old state has none): how
    #: the new state's time symbols are armed (``timers``).
    rearm: dict[int | None, list[Rearm]] = field(default_factory=dict)
    #: An old terminal state: no live instance is ever stored there.
    already_ended: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "old_state": self.old_state,
            "verdict": self.verdict,
            "new_state": self.new_state,
            "reason": self.reason,
            "waits_before": self.waits_before,
            "waits_after": self.waits_after,
        }
        if any(self.rearm.values()):
            out["timers"] = [{"pending": k, "arm": [dataclasses.asdict(r) for r in v]} for k, v in self.rearm.items()]
        return out


@dataclass
class VariablePlan:
    """Where a variable of the new program takes its value from."""

    name: str
    type: Type
    slot: int
    how: str  # "carried", "promoted" (long → double), "initial" (a constant), "unset"
    old_slot: int | None = None
    value: Any = None
    #: Where the new program first sets it (None for a compiled program: no source).
    pos: Pos | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "type": str(self.type), "how": self.how}
        if self.how == "initial":
            out["value"] = self.value
        if self.pos is not None:
            out["at"] = str(self.pos)
        return out


@dataclass
class Plan:
    old: CompiledProgram
    new: CompiledProgram
    old_fingerprint: str
    new_fingerprint: str
    #: Why no instance can be carried (exit 2); empty when the plan can be applied.
    problems: list[Problem] = field(default_factory=list)
    states: list[StatePlan] = field(default_factory=list)
    variables: list[VariablePlan] = field(default_factory=list)
    dropped_variables: list[str] = field(default_factory=list)
    #: Old time symbol → new time symbol, through the marker match.
    time_symbols: dict[int, int] = field(default_factory=dict)
    #: Marker changes, for people: "kept", "moved" (other text or duration), "removed", "added".
    markers: list[dict[str, Any]] = field(default_factory=list)
    #: Per old state: its time symbols (a snapshot's pending timer is for one of them).
    old_timer_symbols: list[tuple[int, ...]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.problems:
            return 2
        return 0 if all(s.verdict == CARRIED or s.already_ended for s in self.states) else 1

    def counts(self) -> dict[str, int]:
        live = [s for s in self.states if not s.already_ended]
        return {v: sum(1 for s in live if s.verdict == v) for v in (CARRIED, RESTARTED, ENDED)}

    def to_json(self) -> dict[str, Any]:
        return {
            "old": {"name": self.old.name, "fingerprint": self.old_fingerprint},
            "new": {"name": self.new.name, "fingerprint": self.new_fingerprint},
            "exit": self.exit_code,
            "problems": [str(p) for p in self.problems],
            "counts": self.counts(),
            "variables": [v.to_json() for v in self.variables],
            "dropped_variables": self.dropped_variables,
            "markers": self.markers,
            "states": [s.to_json() for s in self.states],
        }


def make_plan(
    old: CompiledProgram,
    new: CompiledProgram,
    *,
    trust_fingerprint: bool = True,
    places: SourcePlaces | None = None,
) -> Plan:
    """The plan from ``old`` to ``new``. Two programs of one fingerprint have one machine, so each
    state carries to itself; ``trust_fingerprint=False`` maps them through the diff all the same
    (tests check that the diff then finds the identity). ``places``: positions in the new
    program's source, for its problems and variables (none without it)."""
    places = places or SourcePlaces()
    plan = Plan(old, new, fingerprint(old), fingerprint(new))
    plan.problems.extend(_key_problems(old.program, new.program, places))
    _plan_variables(plan, places)
    try:
        old_shape, new_shape = shape_of(old), shape_of(new)
    except NotPlannable as exc:
        plan.problems.append(Problem(f"{exc}; reprocess its history with the new version (the backfill) instead"))
        return plan
    identical = trust_fingerprint and plan.old_fingerprint == plan.new_fingerprint
    if identical:
        markers = {i: i for i in range(len(old.program.markers))}
    else:
        markers = match_programs(old.program, new.program).markers
    plan.time_symbols = {
        s.index: t.index
        for s in old.program.symbols
        if s.kind == "time" and s.marker in markers
        for t in new.program.symbols
        if t.kind == "time" and t.marker == markers[s.marker]
    }
    plan.markers = _marker_changes(old.program, new.program, markers)
    plan.old_timer_symbols = old_shape.timer_symbols
    for state in range(len(old_shape.masks)):
        plan.states.append(_plan_state(state, old_shape, new_shape, markers, plan.time_symbols, identical))
    return plan


# -- group keys and variables -------------------------------------------------------------------


def _key_problems(old: ir.ProgramIR, new: ir.ProgramIR, places: SourcePlaces) -> list[Problem]:
    if old.grouped != new.grouped:
        which = "grouped" if old.grouped else "ungrouped"
        message = f"the old program is {which} and the new one is not: instances cannot be carried across"
        return [Problem(message, places.group())]
    if not old.grouped:
        return []
    if [str(t) for t in old.key_types or []] != [str(t) for t in new.key_types or []]:
        message = (
            f"the group key changed from ({', '.join(map(str, old.key_types or []))}) to "
            f"({', '.join(map(str, new.key_types or []))}): instances are stored by key"
        )
        return [Problem(message, places.group())]
    problems = []
    new_inputs = {i.name: i for i in new.inputs}
    for inp in old.inputs:
        other = new_inputs.get(inp.name)
        if other is not None and ir.to_json(inp.group) != ir.to_json(other.group):
            message = (
                f"input {inp.name}: its group clause changed, so its events would reach other "
                f"instances than the ones stored under their keys"
            )
            problems.append(Problem(message, places.group(inp.name)))
    return problems


def _plan_variables(plan: Plan, places: SourcePlaces) -> None:
    old_vars = {v.name: v for v in plan.old.program.variables}
    initial = _initial_constants(plan.new)
    for v in plan.new.program.variables:
        before, pos = old_vars.get(v.name), places.variable(v.name)
        if before is None:
            if v.slot in initial:
                plan.variables.append(VariablePlan(v.name, v.ty, v.slot, "initial", value=initial[v.slot], pos=pos))
            else:
                plan.variables.append(VariablePlan(v.name, v.ty, v.slot, "unset", pos=pos))
        elif before.ty == v.ty:
            plan.variables.append(VariablePlan(v.name, v.ty, v.slot, "carried", before.slot, pos=pos))
        elif before.ty == LONG and v.ty == DOUBLE:
            plan.variables.append(VariablePlan(v.name, v.ty, v.slot, "promoted", before.slot, pos=pos))
        else:
            message = (
                f"variable {v.name}: {before.ty} in the old program, {v.ty} in the new one; "
                f"its value cannot be carried (give the new variable another name to start it "
                f"afresh)"
            )
            plan.problems.append(Problem(message, pos))
    new_names = {v.name for v in plan.new.program.variables}
    plan.dropped_variables = [v.name for v in plan.old.program.variables if v.name not in new_names]


def _initial_constants(compiled: CompiledProgram) -> dict[int, Any]:
    """Variables the initial actions set to a constant of a plain type, written once only."""
    _, units = compiled.machine.start()
    writes: dict[int, list[ir.Node]] = {}
    top: dict[int, Any] = {}
    for u in units:
        actions = compiled.program.units[u].actions
        for node in _walk(actions):
            if isinstance(node, ir.SetVar):
                writes.setdefault(node.slot, []).append(node)
        for action in actions:
            if (
                isinstance(action, ir.SetVar)
                and isinstance(action.value, ir.Const)
                and action.value.ty in (LONG, DOUBLE, STRING, BOOLEAN)
            ):
                top[action.slot] = action.value.value
    return {slot: value for slot, value in top.items() if len(writes[slot]) == 1}


def _walk(x: Any) -> Any:
    if isinstance(x, list):
        for v in x:
            yield from _walk(v)
    elif isinstance(x, ir.Node):
        yield x
        for f in dataclasses.fields(x):
            yield from _walk(getattr(x, f.name))


# -- markers and states ---------------------------------------------------------------------------


def describe(p: ir.ProgramIR, copy: Copy | None, copies: int = 1) -> str:
    """A marker copy for people: its text and place."""
    if copy is None:
        return "the end (the match may end here)"
    if copy == START:
        return "the start"
    if copy.marker < 0:
        return "a position inside & or -"
    m = p.markers[copy.marker]
    more = f" (copy {copy.copy + 1} of its multiplier)" if copies > 1 or copy.copy else ""
    return f"{m.text} at {m.file}:{m.line}:{m.col}{more}"


def _marker_changes(old: ir.ProgramIR, new: ir.ProgramIR, markers: dict[int, int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in old.markers:
        n = markers.get(m.index)
        if n is None:
            out.append({"change": "removed", "old": f"{m.text} at {m.file}:{m.line}:{m.col}"})
        else:
            nm = new.markers[n]
            kind = "kept" if "".join(m.text.split()) == "".join(nm.text.split()) else "changed"
            out.append(
                {
                    "change": kind,
                    "old": f"{m.text} at {m.file}:{m.line}:{m.col}",
                    "new": f"{nm.text} at {nm.file}:{nm.line}:{nm.col}",
                }
            )
    matched = set(markers.values())
    out.extend(
        {"change": "added", "new": f"{m.text} at {m.file}:{m.line}:{m.col}"}
        for m in new.markers
        if m.index not in matched
    )
    return out


def _waits(shape: Shape, state: int) -> list[str]:
    return [describe(shape.program, c) for c in shape.waits(state)]


def _map_history(
    history: History, markers: dict[int, int], identical: bool, old: ir.ProgramIR
) -> tuple[History | None, str]:
    out = []
    for c in history:
        if c == START or identical:
            out.append(c)
        elif c.marker < 0:
            return None, "it can have matched last a position inside & or -, which is not mapped across versions"
        elif c.marker in markers:
            out.append(Copy(markers[c.marker], c.copy))
        else:
            return None, f"it can have matched last {describe(old, c)}, which the new program no longer has"
    return frozenset(out), ""


def _plan_state(
    state: int, old: Shape, new: Shape, markers: dict[int, int], time_symbols: dict[int, int], identical: bool
) -> StatePlan:
    sp = StatePlan(state, RESTARTED, waits_before=_waits(old, state))
    if old.terminal[state]:
        sp.verdict, sp.already_ended = ENDED, True
        sp.reason = "the old program ends instances here, so none is stored in this state"
        return sp
    targets: dict[int, History] = {}
    why = ""
    for history in sorted(old.histories[state], key=sorted):
        mapped, why_not = _map_history(history, markers, identical, old.program)
        target = None if mapped is None else new.state_of(mapped)
        if target is None:
            why = (
                why
                or why_not
                or (
                    f"no state of the new program follows "
                    f"{' and '.join(describe(new.program, c) for c in sorted(mapped or ()))}"
                )
            )
            continue
        targets.setdefault(target, history)
    if not targets:
        sp.reason = why
        return sp
    if len(targets) > 1:
        (a, ha), (b, hb) = list(targets.items())[:2]
        sp.reason = (
            f"the new program tells apart how an instance got here: after "
            f"{' and '.join(describe(old.program, c) for c in sorted(ha))} it is in state {a}, after "
            f"{' and '.join(describe(old.program, c) for c in sorted(hb))} in state {b}"
        )
        return sp
    (target,) = targets
    sp.new_state = target
    sp.waits_after = _waits(new, target)
    if new.terminal[target]:
        sp.verdict = ENDED
        sp.reason = f"in the new program the match is complete here (state {target} ends the instance)"
        return sp
    pendings: list[int | None] = list(old.timer_symbols[state]) or [None]
    for pending in pendings:
        rules, why = rearm_rules(
            old.program, old.timer_symbols[state], pending, new.program, new.timer_symbols[target], time_symbols
        )
        if rules is None:
            sp.reason = why
            return sp
        sp.rearm[pending] = rules
    sp.verdict = CARRIED
    return sp
