"""Which eager-DFA states let a grouped instance go ("retire"): states where it equals a fresh one.

Hosts pay per instance (the Kafka worker writes a changelog record and a store entry for each
changed one), and many programs come back to their start after every match, e.g. the echo
program ``( Reading(r) { !>Echo(r); } )*``: after each record the instance cannot be told from
a fresh one. The engine releases an instance entering such a state as it releases a terminated
one, and the key's next event creates a fresh instance, which behaves the same.

A state retires iff it is the start state itself, no timer can be pending in it (it has no time
transition, so entering it stops any timer), and no variable is *live* there: no path from it
reads a variable before writing it. Liveness is the classic backward fixpoint over the DFA:

    live(s) = ∪ over transitions t out of s of  use(t) ∪ (live(target(t)) − def(t))

where ``use``/``def`` come from t's action units followed by the target's timer expressions (they
are evaluated on entry). Only unconditional writes define (a write inside ``if``/``for`` does not);
a marker's store (``A(r)``) defines its variable. Everything uncertain counts as live.

Recreating an instance runs the program's initial actions again, so nothing retires unless they
only assign variables with expressions that can neither fail (``$error``) nor call out (externals).
Case-clause conditions and group-clause expressions see no variables (conformance choice 11); if
one ever did, nothing would retire.

Errors do not tell an instance at its start from no instance: an ``$error`` about an event
carries the event's group key whether or not the key has an instance (docs/language.md 7.7; the
generated feed classifies a key's first event with a stand-in carrying the key), so an event the
start state discards, or a case clause that fails, reports the same with or without one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from ..automata.machine import DFAMachine
from ..language import ir
from ..language.types import LONG
from . import builtins

#: Time built-ins that report ``$error`` 8 for a result outside years 1 to 9999 (codegen inlines them).
_TIME_AFTER = frozenset(
    {"microsecondsAfter", "millisecondsAfter", "secondsAfter", "minutesAfter", "hoursAfter", "daysAfter"}
)


def _children(node: ir.Node) -> Iterator[ir.Node]:
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, ir.Node):
            yield value
        elif isinstance(value, list):
            yield from (x for x in value if isinstance(x, ir.Node))


def reads(node: ir.Node) -> set[int]:
    """The variable slots an expression (or action, whole) reads."""
    out: set[int] = set()
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, ir.Var):
            out.add(x.slot)
        stack.extend(_children(x))
    return out


def use_def(actions: Iterable[ir.Node], defined: set[int] | None = None) -> tuple[set[int], set[int]]:
    """(use, def) of an action sequence: the slots read before an unconditional write in it, and
    the slots it writes unconditionally. ``defined``: slots already written before it."""
    defs = set(defined or ())
    use: set[int] = set()
    for a in actions:
        if isinstance(a, ir.SetVar):
            use |= reads(a.value) - defs
            defs.add(a.slot)
        elif isinstance(a, ir.Store):
            defs.add(a.slot)
        elif isinstance(a, ir.If):
            use |= reads(a.cond) - defs
            use |= use_def(a.then, defs)[0]
            use |= use_def(a.otherwise, defs)[0]
        elif isinstance(a, ir.For):
            use |= (reads(a.low) | reads(a.high)) - defs
            use |= use_def(a.body, defs)[0]
        else:  # Emit, SetIndex, SetField (an element write reads its array) and anything new
            use |= reads(a) - defs
    return use, defs - set(defined or ())


def _harmless(e: ir.Node) -> bool:
    """Can evaluating e neither report an ``$error`` nor call out of the program?"""
    if isinstance(e, ir.Var):
        if e.checked:  # may be unset: $error 3
            return False
    elif isinstance(e, (ir.Extern, ir.Index)):
        return False
    elif isinstance(e, ir.Binary):
        if e.opty == LONG and e.op in ("/", "%"):
            return False
    elif isinstance(e, ir.Call):
        if e.fn in builtins.FAILING or e.fn in _TIME_AFTER:
            return False
    elif isinstance(e, ir.New):
        if not (isinstance(e.size, ir.Const) and 0 <= e.size.value <= 50_000_000):
            return False
    elif not isinstance(
        e, (ir.Const, ir.Key, ir.Unary, ir.ToDouble, ir.Cond, ir.Field, ir.Build, ir.Loop, ir.EventVal)
    ):
        return False
    return all(_harmless(c) for c in _children(e))


def init_repeatable(program: ir.ProgramIR, units: Iterable[int]) -> bool:
    """Do the initial actions only assign variables, so that running them again is invisible?"""
    for u in units:
        for a in program.units[u].actions:
            if isinstance(a, ir.Store):
                continue
            if not isinstance(a, ir.SetVar) or not _harmless(a.value):
                return False
    return True


def _timer_reads(program: ir.ProgramIR, time_symbols: Iterable[int]) -> set[int]:
    out: set[int] = set()
    for sym in time_symbols:
        spec = program.timer_of(sym)
        if isinstance(spec, ir.ElapseSpec):
            out |= reads(spec.amount)
        else:
            assert isinstance(spec, ir.ArriveSpec)
            for c in [spec.time, *(spec.components or [])]:
                if c is not None:
                    out |= reads(c)
    return out


def live_variables(program: ir.ProgramIR, machine: DFAMachine) -> list[set[int]]:
    """live(s) for every state s of the DFA (indexed by state number)."""
    n = machine.size
    timed = [[s for s in machine.transitions(k) if s in program.time_symbols] for k in range(n)]
    entry = [_timer_reads(program, timed[k]) for k in range(n)]
    unit_actions = [u.actions for u in program.units]
    edges: list[list[tuple[int, set[int], set[int]]]] = []
    for k in range(n):
        out = []
        for _sym, (target, units) in machine.transitions(k).items():
            use, defs = use_def(a for u in units for a in unit_actions[u])
            use |= entry[target] - defs
            out.append((target, use, defs))
        edges.append(out)
    live: list[set[int]] = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for k in range(n):
            new = set(live[k])
            for target, use, defs in edges[k]:
                new |= use
                new |= live[target] - defs
            if new != live[k]:
                live[k] = new
                changed = True
    return live


def classifiers_read_variables(program: ir.ProgramIR) -> bool:
    """Does a case-clause condition or group-clause expression read a variable?"""
    nodes: list[ir.Node] = []
    for inp in program.inputs:
        nodes.append(inp.classify)
        nodes.extend(inp.group or ())
    return any(reads(x) for x in nodes)


def retiring_states(program: ir.ProgramIR, machine: DFAMachine) -> frozenset[int]:
    """The DFA states (numbers) an instance of this grouped program may be released in: the start
    state when it is untimed, no variable is live there and the initial actions are repeatable;
    else none. Ungrouped programs keep their one instance: none."""
    if not program.grouped:
        return frozenset()
    start, init_units = machine.start()
    if any(s in program.time_symbols for s in machine.transitions(start)):
        return frozenset()
    if classifiers_read_variables(program) or not init_repeatable(program, init_units):
        return frozenset()
    if program.variables and live_variables(program, machine)[start]:
        return frozenset()
    return frozenset({start})


__all__ = ["init_repeatable", "live_variables", "reads", "retiring_states", "use_def"]
