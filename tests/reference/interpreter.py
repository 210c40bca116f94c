"""The reference interpreter: runs a program over a trace by simulating its syntax tree.

Shares only the front end (parser and checker) with the project. The state of an instance is
its set of feasible paths (:mod:`terms`); each transition runs the actions of every feasible
path once, in the order of :mod:`order`; time markers, termination, grouping and errors follow
the language document (2.4, 2.7, 3.1, 3.2) and the conformance README's choices 1-12.
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from eventscript.language import ast
from eventscript.language.checker import CheckedProgram, check
from eventscript.language.diagnostics import Diagnostics
from eventscript.language.parser import parse
from eventscript.language.source import SourceFile
from eventscript.language.types import BOOLEAN, DOUBLE, LONG, STRING, TIME, ArrayType, StructType

from . import builtins
from .evaluate import INVALID_OPERATION, Scope, evaluate, execute, json_double
from .order import action_order
from .terms import EPS, Acts, Matcher, Symbol, Term, from_ast

UNDECLARED, UNEXPECTED, BAD_VALUE = 1, 2, 6
FIRINGS_AT_ONE_INSTANT = 1000
_UNIT_MICROS = {
    "day": 86_400_000_000,
    "hour": 3_600_000_000,
    "minute": 60_000_000,
    "second": 1_000_000,
    "millisecond": 1000,
    "microsecond": 1,
}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def format_time(micros: int) -> str:
    return builtins.iso_text(micros)


def micros_of(when: datetime) -> int:
    return (when - EPOCH) // timedelta(microseconds=1)


class ReferenceError_(Exception):
    """The program uses something the reference does not model."""


@dataclass
class Instance:
    key: tuple[Any, ...] | None
    paths: frozenset[Term]
    variables: dict[str, Any] = field(default_factory=dict)
    timer: tuple[int, int, int] | None = None  # (deadline, order set, marker offset)
    #: The instant of the last firing and how many followed it at that instant.
    firings: tuple[int | None, int] = (None, 0)


@dataclass
class Trace:
    """A trace as data: ("time", microseconds) or ("event", name, value[, positional]): a
    structure written positionally gives its values in the order written."""

    items: list[tuple[Any, ...]]


@dataclass
class Clock:
    """What the stages of a pipeline share (docs/language.md 10.3): the clock, the count of timers
    set (ties between instances go to the timer set first, across stages too), the output."""

    now: int = 0
    timers: int = 0
    out: list[dict[str, Any]] = field(default_factory=list)
    stages: list[Reference] = field(default_factory=list)


class Reference:
    """One program; ``clock`` and ``downstream`` chain programs into a pipeline: each event this
    one emits goes at once to ``downstream`` (docs/language.md 10.3), only ``$error``s and the last
    stage's events are output."""

    def __init__(self, source: str, clock: Clock | None = None) -> None:
        d = Diagnostics()
        tree = parse(SourceFile("<reference>", source), d)
        if d.has_errors:
            raise ReferenceError_(f"the program does not parse: {d}")
        self.checked: CheckedProgram = check(tree, d)
        if d.has_errors or tree.regex is None:
            raise ReferenceError_(f"the program does not check: {d}")
        self.markers: dict[int, Any] = {}
        self.blocks: dict[int, ast.RActions] = {}
        root = from_ast(tree.regex, self.markers, self.blocks)
        self.inputs = {e.name: e for decl in tree.decls if isinstance(decl, ast.InputDecl) for e in decl.entries}
        self.outputs = {o.name: o for o in self.checked.outputs.values()}
        alphabet: list[Symbol] = []
        for name, entry in self.inputs.items():
            classes = sorted(_case_names(entry.case)) if entry.case is not None else [None]
            alphabet += [("ev", name, c) for c in classes]
        self.matcher = Matcher(root, self.markers, alphabet)
        self.root = root
        self.grouped = self.checked.grouped
        self.clock = clock or Clock()
        self.clock.stages.append(self)
        self.downstream: Reference | None = None
        self.started = False
        self.instances: dict[Any, Instance] = {}
        self.single: Instance | None = None
        self.terminated = False

    @property
    def now(self) -> int:
        return self.clock.now

    @now.setter
    def now(self, value: int) -> None:
        self.clock.now = value

    @property
    def out(self) -> list[dict[str, Any]]:
        return self.clock.out

    # -- output ------------------------------------------------------------------------

    def _error(self, code: int, message: str, key: tuple[Any, ...] | None = None) -> None:
        """``key``: the instance the error happened in (docs/language.md 7.7: its line carries the
        key), None outside any (an undeclared name, a bad value, a key that failed)."""
        line: dict[str, Any] = {"time": format_time(self.now), "event": "$error", "value": code}
        if key is not None:
            line["key"] = self._key_line(key)
        self.out.append(line)

    def _key_line(self, key: tuple[Any, ...]) -> list[Any]:
        """A key as an output line writes it: its components in the value encoding (a time as
        ISO-8601 text, a NaN as "NaN"), typed by the group clauses (all alike: 2.7)."""
        entry = next(e for e in self.inputs.values() if e.group is not None)
        return [_output_value(v, g.ty) for v, g in zip(key, entry.group)]

    def _emit(self, name: str, value: Any, key: tuple[Any, ...] | None) -> None:
        ty = self.outputs[name].ty
        if self.downstream is not None:
            self.downstream.feed_emitted(name, value, ty)
            return
        line: dict[str, Any] = {
            "time": format_time(self.now),
            "event": name,
            "value": _output_value(value, ty),
        }
        if key is not None:
            line["key"] = self._key_line(key)
        self.out.append(line)

    def _scope(self, inst: Instance) -> Scope:
        return Scope(
            inst.variables,
            self.now,
            lambda c, m: self._error(c, m, inst.key),
            lambda n, v: self._emit(n, v, inst.key),
            key=inst.key,
        )

    # -- transitions -------------------------------------------------------------------

    def _feasible(self, options: list[tuple[Acts, Term]]) -> tuple[frozenset[Term], list[tuple[int, ...]]]:
        paths = [(acts, t) for acts, t in options if self.matcher.feasible(t)]
        return frozenset(t for _, t in paths), [s for acts, _ in paths for s in acts]

    def _advance(self, inst: Instance, symbol: Symbol) -> tuple[frozenset[Term], list[tuple[int, ...]]]:
        return self._feasible([o for p in inst.paths for o in self.matcher.step(p, symbol)])

    def _run(self, inst: Instance, strands: list[tuple[int, ...]], value: Any) -> None:
        scope = self._scope(inst)
        for offset in action_order(strands):
            block = self.blocks.get(offset)
            if block is not None:
                execute(block.block, scope)
            else:  # a marker's variable, stored at the marker's place
                target = self.markers[offset].target
                inst.variables[target] = value

    def _enter(self, inst: Instance) -> None:
        """Entering a state: stop the timer, set it for the earliest pending time marker."""
        inst.timer = None
        pending = sorted({m for p in inst.paths for m in self.matcher.time_markers(p)})
        best: tuple[int, int] | None = None
        scope = self._scope(inst)
        for offset in pending:
            node = self.markers[offset].node
            if isinstance(node, ast.RArrive):
                deadline = self._arrive_deadline(node.pattern, scope)
                if deadline is None:
                    continue
            else:
                amount = evaluate(node.amount, scope) * _UNIT_MICROS[node.unit]
                # docs/language.md 5.3 and 7.7: a negative amount counts as 0; a non-finite one,
                # or a deadline beyond year 9999, is $error 8 and the marker does not fire.
                if not math.isfinite(amount) or self.now + max(0, round(amount)) > builtins.MAX_TIME:
                    scope.error(INVALID_OPERATION, f"elapse amount {amount} µs cannot fire")
                    continue
                deadline = self.now + max(0, round(amount))
            if best is None or deadline < best[0]:
                best = (deadline, offset)
        if best is not None:
            self.clock.timers += 1
            inst.timer = (best[0], self.clock.timers, best[1])

    def _arrive_deadline(self, pattern: ast.ArrivePattern, scope: Scope) -> int | None:
        """docs/language.md 5.4 and choice 2: an explicit time fires at it, or at once if it is not
        later than now; a pattern at its first matching instant strictly after now (None: a
        fixed date that has passed never fires). A computed component out of range is ``$error``
        8 and the marker does not fire (5.4, 7.7); ``.`` is a wildcard in any place."""
        if pattern.time_expr is not None:
            return max(self.now, evaluate(pattern.time_expr, scope))
        date = [
            None if c is None or isinstance(c, ast.Wild) else evaluate(c, scope) for c in pattern.date or [None] * 3
        ]
        clock = [None if isinstance(c, ast.Wild) else evaluate(c, scope) for c in pattern.time or []]
        hour, minute, second = ([*clock, 0, 0, 0])[:3]
        for value, low, high in zip([*date, hour, minute], (1, 1, 1, 0, 0), (9999, 12, 31, 23, 59)):
            if value is not None and not low <= value <= high:
                scope.error(INVALID_OPERATION, f"arrive component {value} is out of range {low}..{high}")
                return None
        if second is not None and not 0 <= second < 60:
            scope.error(INVALID_OPERATION, f"arrive second {second} is out of range")
            return None
        seconds = [round(second * 1_000_000)] if second is not None else [s * 1_000_000 for s in range(60)]
        day = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=self.now - self.now % _UNIT_MICROS["day"])
        # Day by day from today: the traces span minutes, the patterns match within days or never.
        for _ in range(800):
            if date[0] is not None and day.year > date[0]:
                return None
            if all(want is None or want == got for want, got in zip(date, (day.year, day.month, day.day))):
                start = micros_of(day)
                for h in range(24) if hour is None else [hour]:
                    for m in range(60) if minute is None else [minute]:
                        base = start + h * _UNIT_MICROS["hour"] + m * _UNIT_MICROS["minute"]
                        if base + 60_000_000 <= self.now:
                            continue
                        for offset in seconds:
                            if base + offset > self.now:
                                return base + offset
            day += timedelta(days=1)
        raise ReferenceError_("an arrive pattern that matches nothing within two years is not modelled")

    def _done(self, inst: Instance) -> bool:
        return inst.paths == frozenset({EPS})

    # -- the trace ---------------------------------------------------------------------

    def start(self, at: int) -> None:
        self.now = at
        for stage in self.clock.stages:
            stage.begin()
        self._fire_due(at)

    def begin(self) -> None:
        """Start this program (an ungrouped one runs its initial actions): when the pipeline
        starts, or before, when the stage before emits an event for it at once."""
        if self.started:
            return
        self.started = True
        if not self.grouped:
            paths, strands = self._feasible(self.matcher.lead(self.root))
            self.single = Instance(None, paths)
            self._run(self.single, strands, None)
            self._enter(self.single)
            # Choice 6: terminated at an accepting end. An empty language is not: its events are
            # classified, then discarded as unexpected.
            self.terminated = self._done(self.single)

    def feed_emitted(self, name: str, value: Any, ty: Any) -> None:
        """An event the stage before emitted, of its declared type ``ty``: as it is where this
        stage declares the same type, promoted from long where it declares a double."""
        self.begin()
        declared = self.checked.inputs.get(name)
        if declared is not None and declared.ty != ty:
            if not (declared.ty == DOUBLE and ty == LONG):
                raise ReferenceError_(f"feeding a {ty} as a {declared.ty} is not modelled")
            value = float(value)
        self.feed(name, value, typed=True)

    def feed(self, name: str, value: Any, *, typed: bool = False) -> None:
        """A trace event (``typed``: a value of the declared type, from the stage before)."""
        entry = self.inputs.get(name)
        if entry is None:
            self._error(UNDECLARED, f"undeclared input event {name}")
            return
        ty = self.checked.inputs[name].ty
        if not typed and not _fits(value, ty):
            self._error(BAD_VALUE, f"{name}: bad value {value!r}")
            return
        # a copy: actions may change its fields
        value = copy.deepcopy(value) if typed else _conform(copy.deepcopy(value), ty)
        if self.terminated:  # choice 6: code 2 and nothing else, not even the case clause's errors
            self._error(UNEXPECTED, f"{name} after the program terminated")
            return
        if self.grouped:
            assert entry.group is not None
            key = tuple(
                _one_key_form(evaluate(g, Scope({}, self.now, self._error, event_value=value))) for g in entry.group
            )
            inst = self.instances.get(key)
            if inst is None:
                # The key's first event creates its instance and runs the initial actions in it
                # (conformance README: "when the first event for that key arrives"; document 3.2),
                # which enters its start state (docs/language.md 7.6: time markers evaluated),
                # before the event is classified and matched.
                paths, init = self._feasible(self.matcher.lead(self.root))
                inst = self.instances[key] = Instance(key, paths)
                self._run(inst, init, None)
                self._enter(inst)
            # An error about an event whose key was computed carries the key (docs/language.md 7.7).
            paths, strands = self._advance(inst, ("ev", name, self._classify(entry, value, key)))
            if not paths:
                self._error(UNEXPECTED, f"{name} is not expected", key)
                if self._done(inst):  # a start state with no way out: the new instance ends at once
                    inst.timer = None
                    del self.instances[key]
            else:
                self._take(inst, paths, strands, value)
        else:
            inst = self.single
            assert inst is not None
            paths, strands = self._advance(inst, ("ev", name, self._classify(entry, value)))
            if not paths:
                self._error(UNEXPECTED, f"{name} is not expected")
            else:
                self._take(inst, paths, strands, value)
        # Timers due fire after the trace event, not inside a stage's action; also after an event
        # discarded as unexpected: the instance it created may have a timer due at once (an
        # elapse of zero or less, an arrive at a time past: conformance README 2, "at once").
        if not typed:
            self._fire_due(self.now)

    def _take(self, inst: Instance, paths: frozenset[Term], strands: list[tuple[int, ...]], value: Any) -> None:
        inst.paths = paths
        self._run(inst, strands, value)
        self._enter(inst)
        if self._done(inst):
            inst.timer = None
            if self.grouped:
                del self.instances[inst.key]
            else:
                self.terminated = True

    def advance(self, to: int) -> None:
        self._fire_due(to)
        self.now = to

    def _live(self) -> list[Instance]:
        return list(self.instances.values()) if self.grouped else ([self.single] if self.single else [])

    def _fire_due(self, to: int) -> None:
        """Every stage's timers due by ``to``, earliest first, then in the order they were set."""
        while True:
            due = [
                (i, stage)
                for stage in self.clock.stages
                for i in stage._live()
                if i.timer is not None and i.timer[0] <= to
            ]
            if not due:
                return
            inst, stage = min(due, key=lambda d: d[0].timer[:2])  # type: ignore[index]
            assert inst.timer is not None
            deadline, _, offset = inst.timer
            self.now = deadline
            # docs/language.md 7.7, code 8: a time marker that fired 1,000 times at one instant (an
            # elapse of zero in a loop) has its timer stopped until the next event.
            last, repeats = inst.firings
            repeats = repeats + 1 if deadline == last else 0
            inst.firings = (deadline, 0 if repeats >= FIRINGS_AT_ONE_INSTANT else repeats)
            if repeats >= FIRINGS_AT_ONE_INSTANT:
                inst.timer = None
                stage._error(INVALID_OPERATION, "a time marker fired 1,000 times at one instant", inst.key)
                continue
            paths, strands = stage._advance(inst, ("time", offset))
            if not paths:
                inst.timer = None
                continue
            stage._take(inst, paths, strands, deadline)

    def _classify(self, entry: ast.InputEntry, value: Any, key: tuple[Any, ...] | None = None) -> str | None:
        node = entry.case
        if node is None:
            return None
        scope = Scope({}, self.now, lambda c, m: self._error(c, m, key), event_value=value)
        while isinstance(node, ast.CaseArm):
            node = node.then if evaluate(node.cond, scope) else node.otherwise
        return node.name


def _output_value(value: Any, ty: Any) -> Any:
    """A value as an output line writes it (conformance README, the output format), also inside
    structures and arrays: doubles as JSON numbers or "NaN"/"Infinity", times as ISO-8601 text."""
    if ty == DOUBLE:
        return json_double(value)
    if ty == TIME:
        return format_time(value)
    if isinstance(ty, StructType):
        return {n: _output_value(value[n], t) for n, t in ty.fields}
    if isinstance(ty, ArrayType):
        return [_output_value(v, ty.element) for v in value]
    return value


def _case_names(node: ast.CaseNode | None) -> set[str]:
    if node is None:
        return set()
    if isinstance(node, ast.CaseName):
        return {node.name}
    return _case_names(node.then) | _case_names(node.otherwise)


def _fits(value: Any, ty: Any) -> bool:
    # Traces are strict (conformance README, the trace format; docs/language.md 10.1): an integer
    # is promoted where a double is declared and nothing else is converted.
    if ty == LONG:
        return type(value) is int and -(2**63) <= value < 2**63
    if ty == BOOLEAN:
        return type(value) is bool
    if ty == DOUBLE:  # also the output's spelling of the doubles no literal can write
        return type(value) in (int, float) or value in ("NaN", "Infinity", "-Infinity")
    if ty == STRING:
        return isinstance(value, str)
    if isinstance(ty, StructType):
        # A builder's fields may come in any order: it takes its order from the declared type
        # (docs/language.md 4.4), as in a program.
        if isinstance(value, list):  # written positionally: the declared order
            return len(value) == len(ty.fields) and all(_fits(v, t) for v, (_, t) in zip(value, ty.fields))
        return (
            isinstance(value, dict)
            and sorted(value) == sorted(n for n, _ in ty.fields)
            and all(_fits(value[n], t) for n, t in ty.fields)
        )
    if isinstance(ty, ArrayType):
        return isinstance(value, list) and all(_fits(v, ty.element) for v in value)
    if ty == TIME:  # ISO-8601 text only
        return isinstance(value, str) and _iso_micros(value) is not None
    return True


def _conform(value: Any, ty: Any) -> Any:
    """A trace value as the program sees it: a long promoted where a double is declared, ISO-8601
    text parsed where a time is (conformance README, the trace format)."""
    if ty == DOUBLE:
        return float(value)
    if ty == LONG:
        return int(value)
    if ty == TIME:
        return _iso_micros(value)
    if isinstance(ty, StructType):
        if isinstance(value, list):
            return {n: _conform(v, t) for v, (n, t) in zip(value, ty.fields)}
        return {n: _conform(value[n], t) for n, t in ty.fields}
    if isinstance(ty, ArrayType):
        return [_conform(v, ty.element) for v in value]
    return value


def _iso_micros(text: str) -> int | None:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return micros_of(when if when.tzinfo else when.replace(tzinfo=UTC))


def run_reference(source: str | list[str], trace: Trace, *, error_keys: bool = False) -> list[dict[str, Any]]:
    """Run a program (or a pipeline of them) over a trace; output lines like the tester's,
    ``$error`` reduced to its code (and its key, with ``error_keys``)."""
    clock = Clock()
    stages = [Reference(s, clock) for s in ([source] if isinstance(source, str) else source)]
    for stage, after in itertools.pairwise(stages):
        stage.downstream = after
    ref = stages[0]
    started = False
    for item in trace.items:
        if item[0] == "time":
            if not started:
                ref.start(item[1])
                started = True
            else:
                ref.advance(item[1])
        elif len(item) > 3 and item[3] and isinstance(item[2], dict):
            ref.feed(item[1], list(item[2].values()))  # a structure written positionally
        else:
            ref.feed(item[1], item[2])
    if error_keys:
        return ref.out
    return [{k: v for k, v in line.items() if k != "key" or line["event"] != "$error"} for line in ref.out]


def _one_key_form(component: Any) -> Any:
    """docs/language.md, grouping: double key components compare as ``==`` does, and every NaN
    is one key (-0.0 and 0.0 are one instance, keyed 0.0)."""
    if isinstance(component, float):
        if math.isnan(component):
            return math.nan
        if component == 0.0:
            return 0.0
    return component
