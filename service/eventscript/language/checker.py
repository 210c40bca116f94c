"""Name resolution and type inference.

EventScript variables are not declared; their types are inferred. The checker collects every
*typing site* of the program (event markers, assignments, emits, conditions, subscripts,
time-marker expressions, function arguments) and propagates types between them until nothing
changes: a marker gives its variable the event's type, an emit pushes the output type into its
argument, ``x = e`` gives x the type of e (or e the type of x), and so on. A final pass then
re-checks every site and reports inconsistencies, with the place the conflicting type came from.

The rules: ``long`` operands of binary operators are promoted to ``double`` when the other
operand is ``double``; assignments, emits and markers never convert.
"""

from __future__ import annotations

import calendar
import importlib
import sys
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import ast, stdlib, time_checks
from .diagnostics import Diagnostics, Severity
from .hints import closest, listing
from .lexer import LONG_RANGE_HINT
from .source import Pos
from .types import (
    BOOLEAN,
    DOUBLE,
    EMPTY,
    LONG,
    LONG_MAX,
    LONG_MIN,
    OBJECT,
    PRIMITIVES,
    STRING,
    TIME,
    ArrayType,
    PrimitiveType,
    StructType,
    Type,
    describe,
    promote,
)

RESERVED_PREFIX = "$"
#: A bound on the passes of type inference. Every pass but the last types a variable (or fixes
#: the field order of one), so this only guards the compiler against a bug.
MAX_INFERENCE_PASSES = 100_000
PATTERN_RANGE_HINT = ("patterns are [YYYY-MM-DD] H:MM or H:MM:SS in UTC, hours 0..23, minutes and seconds 0..59; "
                      "for midnight write 0:00; '.' matches any value")

# ---------------------------------------------------------------------------------------
# What names denote


@dataclass(eq=False)
class Variable:
    """A program variable: one slot of every instance context."""

    name: str
    index: int
    first_pos: Pos
    ty: Type | None = None
    origin: Pos | None = None  # where the type was inferred
    assigned_at: Pos | None = None
    read_at: Pos | None = None
    #: The type came from a structure builder, whose field order is arbitrary: a structure type
    #: required elsewhere with the same fields in another order may still set the order.
    loose: bool = False
    #: Loose variables copied to or from this one (``q = p``): they share the builder's order, so
    #: settling one settles them all, whichever comes first in the text.
    copies: list[Variable] = field(default_factory=list)
    #: Set by a marker of an event whose declaration has errors: its type is unknown for a reason
    #: already reported.
    broken: bool = False


@dataclass(eq=False)
class LoopIndex:
    """The index of a ``for`` action: a long local to the loop body."""

    name: str
    pos: Pos
    slot: int


@dataclass(eq=False)
class InputEvent:
    name: str
    ty: Type
    pos: Pos
    index: int
    entry: ast.InputEntry
    classes: list[str] = field(default_factory=list)


@dataclass(eq=False)
class EventValue:
    """The arriving event's value, as its name denotes it in case and group clauses."""

    event: InputEvent


@dataclass(eq=False)
class OutputEvent:
    name: str
    ty: Type
    pos: Pos
    index: int


@dataclass(eq=False)
class EventClass:
    """A name introduced by an event-case clause."""

    name: str
    ty: Type
    pos: Pos
    inputs: list[InputEvent] = field(default_factory=list)


@dataclass(eq=False)
class ExternalFunction:
    name: str
    params: tuple[Type, ...]
    result: Type
    impl: str
    pos: Pos
    index: int
    function: Callable[..., Any] | None = None


@dataclass
class CheckedProgram:
    """A parsed program with every name resolved and every expression typed."""

    program: ast.Program
    inputs: dict[str, InputEvent]
    outputs: dict[str, OutputEvent]
    classes: dict[str, EventClass]
    variables: list[Variable]
    externals: dict[str, ExternalFunction]
    key_types: list[Type] | None
    loop_slots: int

    @property
    def grouped(self) -> bool:
        return self.key_types is not None


# ---------------------------------------------------------------------------------------
# External functions


def resolve_external(impl: str, search_dirs: list[Path]) -> tuple[Callable[..., Any] | None, str | None]:
    """Import ``package.module:attribute``; returns (callable, None) or (None, reason)."""
    if ":" not in impl:
        return None, (f"{impl!r} does not name a Python callable; write \"package.module:attribute\"")
    module_name, _, attr = impl.partition(":")
    if not module_name or not attr:
        return None, f"{impl!r} does not name a Python callable; write \"package.module:attribute\""
    added = [str(d) for d in search_dirs if str(d) not in sys.path]
    sys.path[:0] = added
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import failure is a resolution failure
        return None, f"cannot import module {module_name!r}: {exc}"
    except SystemExit as exc:  # a module that exits on import would end the command silently
        return None, f"cannot import module {module_name!r}: it called sys.exit({exc.code!r}) while being imported"
    finally:
        for d in added:
            with suppress(ValueError):
                sys.path.remove(d)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            return None, f"module {module_name!r} has no attribute {attr!r}"
        obj = getattr(obj, part)
    if not callable(obj):
        return None, f"{impl!r} is not callable"
    return obj, None


# ---------------------------------------------------------------------------------------
# The checker


class Checker:
    def __init__(self, diagnostics: Diagnostics, *, resolve_externals: bool = True) -> None:
        self.d = diagnostics
        self.resolve_externals = resolve_externals
        self.typedefs: dict[str, Type] = {}
        self.inputs: dict[str, InputEvent] = {}
        self.outputs: dict[str, OutputEvent] = {}
        self.classes: dict[str, EventClass] = {}
        self.externals: dict[str, ExternalFunction] = {}
        self.variables: dict[str, Variable] = {}
        self.key_types: list[Type] | None = None
        #: Events declared with a type that has errors (reported there, not again at each use).
        self.broken_events: set[str] = set()
        self.sites: list[Callable[[], None]] = []
        self.loop_slots = 0
        self.reporting = False
        self.changed = False
        #: Inside the expectation of a context that would also accept a long for a double (or
        #: the reverse): a type given there is only a guess (see _infer).
        self.guessing = False
        #: During inference: the guessed types of untyped variables, with their positions.
        self.candidates: dict[Variable, list[tuple[Type, Pos]]] | None = None

    # -- reporting ------------------------------------------------------------------

    def err(self, pos: Pos, msg: str, hint: str | Callable[[], str] | None = None) -> None:
        """Report an error (in the reporting pass). A hint that costs something to word (a
        "did you mean" search) is given as a function, called only if the error will be shown."""
        if self.reporting:
            if callable(hint):
                hint = hint() if self.d.has_room(Severity.ERROR) else None
            self.d.error(pos, msg, hint)

    # -- entry point ----------------------------------------------------------------

    def check(self, program: ast.Program) -> CheckedProgram:
        self.reporting = True
        search = [program.pos.source.path.parent] if program.pos.source.path else []
        for decl in program.decls:
            if isinstance(decl, ast.TypeDecl):
                self._typedef(decl)
            elif isinstance(decl, ast.FunctionDecl):
                self._function(decl, search)
            elif isinstance(decl, ast.OutputDecl):
                for o in decl.entries:
                    self._output(o)
            elif isinstance(decl, ast.InputDecl):
                for i in decl.entries:
                    self._input(i)
        self._check_groups()
        for ev in self.inputs.values():
            self._case_clause(ev)
        if program.regex is not None:
            self._collect_regex(program.regex)
        self._infer()
        self._final_variable_checks()
        if program.regex is not None:
            time_checks.check_zero_elapse_loops(program.regex, self.d)
            time_checks.check_ambiguous_patterns(program.regex, self.d)
        variables = sorted(self.variables.values(), key=lambda v: v.index)
        return CheckedProgram(program, self.inputs, self.outputs, self.classes, variables, self.externals,
                              self.key_types, self.loop_slots)

    # -- declarations ---------------------------------------------------------------

    def resolve_type(self, t: ast.TypeExpr) -> Type | None:
        if isinstance(t, ast.TypeName):
            if t.name in PRIMITIVES:
                return PRIMITIVES[t.name]
            if t.name in self.typedefs:
                return self.typedefs[t.name]
            self.err(t.pos, f"unknown type {t.name!r}", lambda: _suggest(
                t.name, [*PRIMITIVES, *self.typedefs],
                "types are boolean, double, long, string, time, object, arrays, structures, "
                "or names defined earlier with 'type Name = ...'"))
            return None
        if isinstance(t, ast.ArrayTypeExpr):
            e = self.resolve_type(t.element)
            return None if e is None else ArrayType(e)
        fields: list[tuple[str, Type]] = []
        seen: set[str] = set()
        ok = True
        for f in t.fields:
            ft = self.resolve_type(f.type)
            if f.name in seen:
                self.err(f.pos, f"field {f.name!r} appears twice in this structure type")
                ok = False
            seen.add(f.name)
            if ft is None:
                ok = False
            else:
                fields.append((f.name, ft))
        return StructType(tuple(fields)) if ok else None

    def _typedef(self, decl: ast.TypeDecl) -> None:
        if decl.name in PRIMITIVES:
            self.err(decl.pos, f"{decl.name!r} is a built-in type and cannot be redefined")
            return
        if decl.name in self.typedefs:
            self.err(decl.pos, f"type {decl.name!r} is defined twice")
            return
        t = self.resolve_type(decl.type)
        if t is not None:
            self.typedefs[decl.name] = t

    def _function(self, decl: ast.FunctionDecl, search: list[Path]) -> None:
        result = self.resolve_type(decl.result)
        params = [self.resolve_type(p) for p in decl.params]
        if decl.name in stdlib.BUILTINS:
            self.err(decl.pos, f"function {decl.name!r} would hide the built-in function of that name",
                     "choose another name")
            return
        if decl.name in self.externals:
            self.err(decl.pos, f"function {decl.name!r} is declared twice")
            return
        if result is None or any(p is None for p in params):
            return
        fn = ExternalFunction(decl.name, tuple(params), result, decl.impl, decl.pos, len(self.externals))  # type: ignore[arg-type]
        if ":" not in decl.impl:
            self.err(decl.impl_pos, f"{decl.impl!r} does not name a Python callable",
                     'write the implementation as "package.module:attribute"')
        elif self.resolve_externals:
            fn.function, problem = resolve_external(decl.impl, search)
            if problem:
                self.err(decl.impl_pos, f"cannot resolve external function {decl.name}: {problem}",
                         "the module is searched on the Python path and beside the program file")
        self.externals[decl.name] = fn

    def _check_name(self, name: str, pos: Pos) -> bool:
        if name.startswith(RESERVED_PREFIX):
            self.err(pos, f"{name!r}: names starting with '$' are reserved")
            return False
        return True

    def _output(self, o: ast.OutputEntry) -> None:
        t = self.resolve_type(o.type)
        if not self._check_name(o.name, o.pos):
            return
        if o.name in self.outputs:
            self.err(o.pos, f"output event {o.name!r} is declared twice")
            return
        if t is not None:
            self.outputs[o.name] = OutputEvent(o.name, t, o.pos, len(self.outputs))
        else:
            self.broken_events.add(o.name)

    def _input(self, entry: ast.InputEntry) -> None:
        t = self.resolve_type(entry.type)
        if not self._check_name(entry.name, entry.pos):
            return
        if entry.name in self.inputs:
            self.err(entry.pos, f"input event {entry.name!r} is declared twice")
            return
        if entry.name in self.classes:
            self.err(entry.pos, f"{entry.name!r} is already an event class of a case clause")
            return
        if t is None:
            self.broken_events.add(entry.name)
            return
        ev = InputEvent(entry.name, t, entry.pos, len(self.inputs), entry)
        self.inputs[entry.name] = ev
        if entry.case is not None:
            self._collect_case_names(ev, entry.case)

    def _collect_case_names(self, ev: InputEvent, node: ast.CaseNode) -> None:
        if isinstance(node, ast.CaseArm):
            self._collect_case_names(ev, node.then)
            self._collect_case_names(ev, node.otherwise)
            return
        name = node.name
        if not self._check_name(name, node.pos):
            return
        if name in self.inputs:
            self.err(node.pos, f"event class {name!r} has the name of an input event",
                     "choose a name that is not declared with 'in'")
            return
        cls = self.classes.get(name)
        if cls is None:
            cls = self.classes[name] = EventClass(name, ev.ty, node.pos)
        elif cls.ty != ev.ty:
            self.err(node.pos, f"event class {name!r} would carry {describe(ev.ty)} here but "
                               f"{describe(cls.ty)} at {cls.pos}")
            return
        if ev not in cls.inputs:
            cls.inputs.append(ev)
        if name not in ev.classes:
            ev.classes.append(name)

    def _check_groups(self) -> None:
        grouped = [e for e in self.inputs.values() if e.entry.group is not None]
        if not grouped:
            return
        for ev in self.inputs.values():
            if ev.entry.group is None:
                self.err(ev.pos, f"input event {ev.name} has no group clause, but other input events do",
                         f"in a grouped program every input event needs group(...); "
                         f"e.g. group({ev.name}.someField)")
        first = grouped[0]
        key_types: list[Type] | None = None
        for ev in grouped:
            assert ev.entry.group is not None
            types: list[Type | None] = []
            for expr in ev.entry.group:
                self._resolve_clause_expr(expr, ev, "group clause")
                t = self._final_synth(expr)
                if t is not None and (not isinstance(t, PrimitiveType) or t == OBJECT):
                    self.err(expr.pos, f"a group key component must be boolean, long, double, string or time, "
                                       f"not {describe(t)}")
                    t = None
                types.append(t)
            if key_types is None:
                key_types = [t if t is not None else OBJECT for t in types]
                continue
            if len(types) != len(key_types):
                self.err(ev.entry.group_pos or ev.pos,
                         f"the group clause of {ev.name} has {len(types)} component(s) but the one of "
                         f"{first.name} has {len(key_types)}",
                         "every group clause must have the same number of key components")
                continue
            for k, (t, kt) in enumerate(zip(types, key_types)):
                if t is not None and t != kt:
                    assert ev.entry.group is not None
                    self.err(ev.entry.group[k].pos,
                             f"key component {k} is {describe(t)} here but {describe(kt)} in the group clause "
                             f"of {first.name}", "corresponding key components must have the same type")
        self.key_types = key_types

    def _case_clause(self, ev: InputEvent) -> None:
        def walk(node: ast.CaseNode) -> None:
            if isinstance(node, ast.CaseArm):
                self._resolve_clause_expr(node.cond, ev, "case clause")
                t = self._final_expect(node.cond, BOOLEAN)
                if t is not None and t != BOOLEAN:
                    self.err(node.cond.pos, f"a case condition must be boolean, not {describe(t)}")
                walk(node.then)
                walk(node.otherwise)

        if ev.entry.case is not None:
            walk(ev.entry.case)

    def _resolve_clause_expr(self, expr: ast.Expr, ev: InputEvent, where: str) -> None:
        """Resolve names in a case or group clause: only the event's own name is visible."""

        def visit(e: ast.Expr) -> None:
            if isinstance(e, ast.Name):
                if e.name == ev.name:
                    e.ref = EventValue(ev)
                else:
                    self.err(e.pos, f"{e.name!r} cannot be used in a {where}",
                             f"a {where} sees only the arriving event's value ({ev.name}), constants and "
                             f"functions, not the program's variables")
            elif isinstance(e, ast.GroupRef):
                self.err(e.pos, f"group[...] cannot be used in a {where}")
            elif isinstance(e, ast.Call) and e.name not in self.externals and e.name not in stdlib.BUILTINS:
                # Without this, the call reached the lowering unresolved and crashed it.
                self._unknown_function(e)
            for child in _children(e):
                visit(child)

        visit(expr)

    def _final_synth(self, e: ast.Expr) -> Type | None:
        was = self.reporting
        self.reporting = False
        self.synth(e)
        self.reporting = was
        return self.synth(e)

    def _final_expect(self, e: ast.Expr, t: Type) -> Type | None:
        was = self.reporting
        self.reporting = False
        self.expect(e, t)
        self.reporting = was
        return self.synth(e)

    # -- collecting the regular expression --------------------------------------------

    def variable(self, name: str, pos: Pos) -> Variable:
        v = self.variables.get(name)
        if v is None:
            v = self.variables[name] = Variable(name, len(self.variables), pos)
        return v

    def event_type(self, name: str) -> Type | None:
        if name in self.inputs:
            return self.inputs[name].ty
        if name in self.classes:
            return self.classes[name].ty
        return None

    def _collect_regex(self, r: ast.Regex) -> None:
        if isinstance(r, (ast.RSeq, ast.RAlt)):
            for item in r.items:
                self._collect_regex(item)
        elif isinstance(r, (ast.RInter, ast.RDiff)):
            self._collect_regex(r.left)
            self._collect_regex(r.right)
        elif isinstance(r, ast.RRepeat):
            self._collect_regex(r.item)
        elif isinstance(r, ast.RActions):
            self._collect_action(r.block, {})
        elif isinstance(r, ast.RMarker):
            self._collect_marker(r)
        elif isinstance(r, ast.RElapse):
            self._collect_expr(r.amount, {})
            amount = r.amount
            self.sites.append(lambda: self._number_site(amount, "an elapse amount"))
            self._marker_target(r.target, r.target_pos, TIME)
        elif isinstance(r, ast.RArrive):
            self._collect_arrive(r)

    def _collect_marker(self, r: ast.RMarker) -> None:
        t = self.event_type(r.name)
        if t is None:
            if r.name in self.broken_events:
                if r.target is not None and r.target_pos is not None:
                    v = self.variable(r.target, r.target_pos)
                    v.assigned_at = v.assigned_at or r.target_pos
                    v.broken = True
            elif r.name in self.outputs:
                self.err(r.pos, f"{r.name!r} is an output event; event markers match input events",
                         f"declare it with 'in' to receive it: in <type> {r.name}")
            else:
                def hint() -> str:
                    known = [*self.inputs, *self.classes]
                    return _suggest(r.name, known, f"declare it with 'in <type> {r.name}' (declared: {listing(known)})")

                self.err(r.pos, f"undeclared input event {r.name!r}", hint)
            return
        self._marker_target(r.target, r.target_pos, t)

    def _marker_target(self, target: str | None, pos: Pos | None, t: Type) -> None:
        if target is None or pos is None:
            return
        v = self.variable(target, pos)
        v.assigned_at = v.assigned_at or pos

        def site() -> None:
            if v.ty is None:
                self._give_type(v, t, pos)
            else:
                self._settle_order(v, t)
            if v.ty != t:
                self.err(pos, f"{target!r} receives {describe(t)} here but is {describe(v.ty)} "
                              f"(from {v.origin})", "use a different variable for each type")

        self.sites.append(site)

    def _check_constant_components(self, p: ast.ArrivePattern) -> None:
        """Constant pattern components out of range can never match: say so now, not at run time."""
        named: list[tuple[ast.PatternComponent, str, int, int]] = []
        if p.date is not None:
            named += zip(p.date, ("year", "month", "day"), (1, 1, 1), (9999, 12, 31))
        if p.time is not None:
            named += zip(p.time, ("hour", "minute", "second"), (0, 0, 0), (23, 59, 59))
        ok = True
        for c, what, lo, hi in named:
            if isinstance(c, ast.IntLit) and not lo <= c.value <= hi:
                self.err(c.pos, f"{what} {c.value} is out of range {lo}..{hi}", PATTERN_RANGE_HINT)
                ok = False
            elif isinstance(c, ast.FloatLit) and what == "second" and not 0 <= c.value < 60:
                self.err(c.pos, f"second {c.value} is out of range: seconds are from 0 to less than 60",
                         PATTERN_RANGE_HINT)
        if ok and p.date is not None and all(isinstance(c, ast.IntLit) for c in p.date[1:]):
            year, month, day = p.date
            y = year.value if isinstance(year, ast.IntLit) else 2000  # a leap year: any year may match
            days = calendar.monthrange(y, month.value)[1]  # type: ignore[union-attr]
            if day.value > days:  # type: ignore[union-attr]
                which = f"{y:04d}-{month.value:02d}" if isinstance(year, ast.IntLit) else f"month {month.value}"  # type: ignore[union-attr]
                self.err(day.pos, f"day {day.value} never comes: {which} has {days} days")  # type: ignore[union-attr]

    def _collect_arrive(self, r: ast.RArrive) -> None:
        p = r.pattern
        self._check_constant_components(p)
        if p.time_expr is not None:
            self._collect_expr(p.time_expr, {})
            te = p.time_expr
            self.sites.append(lambda: self._typed_site(te, TIME, "an arrive time"))
        else:
            comps = [*(p.date or []), *(p.time or [])]
            last = len(comps) - 1
            for i, c in enumerate(comps):
                if isinstance(c, ast.Wild):
                    continue
                self._collect_expr(c, {})
                if i == last and p.time is not None and len(p.time) == 3 and isinstance(c, ast.FloatLit):
                    continue  # fractional seconds
                self.sites.append(lambda c=c: self._typed_site(c, LONG, "an arrive pattern component"))  # type: ignore[misc]
        self._marker_target(r.target, r.target_pos, TIME)

    def _typed_site(self, e: ast.Expr, t: Type, what: str,
                    hint: Callable[[Type], str | None] | None = None) -> None:
        self.expect(e, t)
        got = self.synth(e)
        if got is not None and got != t:
            self.err(e.pos, f"{what} must be {describe(t)}, not {describe(got)}", hint(got) if hint else None)

    def _number_site(self, e: ast.Expr, what: str) -> None:
        got = self.synth(e)
        if got is not None and not got.is_numeric:
            self.err(e.pos, f"{what} must be long or double, not {describe(got)}")

    # -- collecting actions -------------------------------------------------------------

    def _collect_action(self, a: ast.Action, scope: dict[str, LoopIndex]) -> None:
        if isinstance(a, ast.Block):
            for inner in a.actions:
                self._collect_action(inner, scope)
        elif isinstance(a, ast.Emit):
            self._collect_emit(a, scope)
        elif isinstance(a, ast.Assign):
            self._collect_assign(a, scope)
        elif isinstance(a, ast.IfAction):
            self._collect_expr(a.cond, scope)
            cond = a.cond
            self.sites.append(lambda: self._typed_site(cond, BOOLEAN, "a condition", _condition_hint))
            self._collect_action(a.then, scope)
            if a.otherwise is not None:
                self._collect_action(a.otherwise, scope)
        elif isinstance(a, ast.ForAction):
            self._collect_expr(a.low, scope)
            self._collect_expr(a.high, scope)
            lo, hi = a.low, a.high
            self.sites.append(lambda: self._typed_site(lo, LONG, "a for-loop bound"))
            self.sites.append(lambda: self._typed_site(hi, LONG, "a for-loop bound"))
            idx = LoopIndex(a.var, a.var_pos, len(scope))
            self.loop_slots = max(self.loop_slots, len(scope) + 1)
            a.index = idx
            self._collect_action(a.body, {**scope, a.var: idx})

    def _collect_emit(self, a: ast.Emit, scope: dict[str, LoopIndex]) -> None:
        out = self.outputs.get(a.name)
        if a.value is not None:
            self._collect_expr(a.value, scope)
        if out is None:
            if a.name in self.broken_events:
                return
            if a.name.startswith(RESERVED_PREFIX):
                self.err(a.name_pos, f"{a.name} events are emitted by the engine, not by programs")
            else:
                self.err(a.name_pos, f"undeclared output event {a.name!r}", lambda: _suggest(
                    a.name, self.outputs, f"declare it with 'out <type> {a.name}' (declared: {listing(self.outputs)})"))
            return
        value = a.value

        def site() -> None:
            if value is None:
                if out.ty != EMPTY:
                    self.err(a.pos, f"!>{a.name}() has no value but {a.name} carries {describe(out.ty)}")
                return
            self.expect(value, out.ty)
            got = self.synth(value)
            if got is not None and got != out.ty:
                self.err(value.pos, f"{a.name} carries {describe(out.ty)} but this value is {describe(got)}",
                         _conversion_hint(value, got, out.ty))

        self.sites.append(site)

    def _collect_assign(self, a: ast.Assign, scope: dict[str, LoopIndex]) -> None:
        target = a.target
        root = target
        while isinstance(root, (ast.Index, ast.FieldAccess)):
            root = root.obj
        if isinstance(target, ast.Name):
            if target.name in scope:
                self.err(target.pos, f"cannot assign to the loop index {target.name!r}")
                target.ref = scope[target.name]
            else:
                v = self.variable(target.name, target.pos)
                v.assigned_at = v.assigned_at or target.pos
                target.ref = v
        else:
            self._collect_expr(target, scope)
            if isinstance(root, ast.Name) and isinstance(root.ref, Variable):
                # a[i] = e and s.f = e read a / s (they must hold an array or structure)
                pass
        self._collect_expr(a.value, scope)
        value = a.value

        def site() -> None:
            lt = self.synth(target)
            rt = self.synth(value)
            if lt is None and rt is not None:
                lt = self.expect(target, rt)
                if isinstance(target, ast.Name) and isinstance(target.ref, Variable):
                    if isinstance(value, ast.StructBuild):
                        target.ref.loose = True
                    elif isinstance(value, ast.Name) and isinstance(value.ref, Variable) and value.ref.loose:
                        target.ref.loose = True
                        target.ref.copies.append(value.ref)
                        value.ref.copies.append(target.ref)
            elif lt is not None and (rt is None or isinstance(value, (ast.StructBuild, ast.CondExpr))):
                self.expect(value, lt)
                rt = self.synth(value)
            elif (lt is not None and rt is not None and lt != rt and isinstance(target, ast.Name)
                  and isinstance(value, ast.Name) and isinstance(target.ref, Variable)
                  and isinstance(value.ref, Variable)):
                # q = p with both typed, one by a builder alone: the other's order settles it
                if value.ref.loose:
                    self._settle_order(value.ref, lt)
                elif target.ref.loose:
                    self._settle_order(target.ref, rt)
                lt, rt = self.synth(target), self.synth(value)
            if lt is not None and rt is not None and lt != rt:
                what = f"{target.name!r}" if isinstance(target, ast.Name) else "this target"
                origin = ""
                if isinstance(target, ast.Name) and isinstance(target.ref, Variable) and target.ref.origin:
                    origin = f" (from {target.ref.origin})"
                self.err(value.pos, f"cannot assign {describe(rt)} to {what}, which is {describe(lt)}{origin}",
                         _conversion_hint(value, rt, lt))

        self.sites.append(site)

    def _collect_expr(self, e: ast.Expr, scope: dict[str, LoopIndex]) -> None:
        if isinstance(e, ast.Name):
            if e.name in scope:
                e.ref = scope[e.name]
            else:
                v = self.variable(e.name, e.pos)
                v.read_at = v.read_at or e.pos
                e.ref = v
            return
        if isinstance(e, ast.GroupRef):
            self._collect_expr(e.index, scope)
            self.sites.append(lambda: self._group_ref_site(e))
            return
        if isinstance(e, ast.Call):
            for arg in e.args:
                self._collect_expr(arg, scope)
            if e.name not in self.externals and e.name not in stdlib.BUILTINS:
                self._unknown_function(e)
            self.sites.append(lambda: self.synth(e))
            return
        for child in _children(e):
            self._collect_expr(child, scope)
        if isinstance(e, (ast.IntLit, ast.FloatLit, ast.StrLit, ast.BoolLit)):
            return
        self.sites.append(lambda: self.synth(e))

    def _unknown_function(self, e: ast.Call) -> None:
        self.err(e.pos, f"unknown function {e.name!r}", lambda: _suggest(
            e.name, [*stdlib.BUILTINS, *self.externals],
            "declare an external function with: function <type> name(<types>): \"module:attr\""))

    def _group_ref_site(self, e: ast.GroupRef) -> None:
        if self.key_types is None:
            self.err(e.pos, "group[...] used in a program without group clauses",
                     "group[n] reads component n of the group key of a grouped program")
            return
        if not isinstance(e.index, ast.IntLit):
            self.err(e.index.pos, "the index of group[...] must be an integer constant")
            return
        n = e.index.value
        if not 0 <= n < len(self.key_types):
            self.err(e.index.pos, f"group[{n}] is out of range: the group key has {len(self.key_types)} "
                                  f"component(s), group[0] to group[{len(self.key_types) - 1}]")

    # -- inference ----------------------------------------------------------------------

    def _infer(self) -> None:
        """Type every variable, then report.

        Firm rules first: event markers, emits, assignments and the contexts that require one
        type (conditions, subscripts, parameters other than double) never convert, so a type they
        give is the only possible one. Only when they are exhausted does a context that promotes
        long to double (an operand of an arithmetic operator or comparison, a ?: branch, a double
        parameter) give an untyped variable the type it meets there: all such guesses of a round
        at once, so that the result never depends on the order of the program text. Then the
        firm rules again, and so on. (In one pass in text order, ``!>D(d * x)`` written before
        the marker ``B(x)`` made x a double, and the long of B was then rejected.)
        """
        self.reporting = False
        self.candidates = {}
        for _ in range(MAX_INFERENCE_PASSES):
            self.changed = False
            self.candidates.clear()
            for site in self.sites:
                site()
            if self.changed:
                continue  # the firm rules made progress: guesses wait until they are exhausted
            guesses = {v: c for v, c in self.candidates.items() if v.ty is None}
            if not guesses:
                break
            for v, candidates in guesses.items():
                v.ty, v.origin = _choose_guess(candidates)
        self.candidates = None
        self.reporting = True
        for site in self.sites:
            site()

    def _give_type(self, v: Variable, t: Type, pos: Pos) -> None:
        if self.guessing and self.candidates is not None:
            self.candidates.setdefault(v, []).append((t, pos))
            return
        v.ty, v.origin = t, pos
        self.changed = True

    def _soft_expect(self, e: ast.Expr, t: Type) -> Type | None:
        """The expectation of a context where promotion lets a long stand for a double, or a
        double make a long operand's result double: a numeric ``t`` is only a guess there, kept
        until the firm rules are exhausted (see _infer). Other types are required as they are."""
        if not t.is_numeric:
            return self.expect(e, t)
        was = self.guessing
        self.guessing = True
        try:
            return self.expect(e, t)
        finally:
            self.guessing = was

    def _unset_hint(self, name: str) -> str:
        if name in self.inputs or name in self.classes:
            return f"in actions an event's value is reached through its marker's variable, e.g. {name}(x) then x"
        return "set it in an action (x = ...;) or with an event marker (Event(x))"

    def _final_variable_checks(self) -> None:
        for v in sorted(self.variables.values(), key=lambda v: v.index):
            if v.assigned_at is None and v.ty is not None:
                # The document (2.5, 12) makes a read of a variable never set a warning, not an
                # error: at run time each read is $error 3 and gives the type's default value.
                self.d.warning(v.first_pos, f"{v.name!r} is never given a value: each read is $error 3 "
                                            f"and gives the default value", self._unset_hint(v.name))
            elif v.assigned_at is None:
                self.d.error(v.first_pos, f"{v.name!r} is never given a value, and nothing gives it a type",
                             self._unset_hint(v.name))
            elif v.ty is None:
                if v.broken:
                    continue
                self.d.error(v.first_pos, f"cannot infer the type of {v.name!r}",
                             "assign it a value of known type, or use it where its type is required")
            elif v.read_at is None:
                self.d.warning(v.assigned_at, f"variable {v.name!r} is set but never read",
                               "remove it, or check the spelling of its uses")

    # -- synthesis (bottom-up) and expectation (top-down) ----------------------------

    def expect(self, e: ast.Expr, t: Type) -> Type | None:
        """Push an expected type into ``e``, giving unknown variables that type; returns the type
        ``e`` then has (so callers need not synthesize it a second time: doing that at every level
        of nested operators made checking exponential in the nesting depth)."""
        if isinstance(e, ast.Name) and isinstance(e.ref, Variable):
            if e.ref.ty is None:
                self._give_type(e.ref, t, e.pos)
            else:
                self._settle_order(e.ref, t)
        elif isinstance(e, ast.CondExpr):
            # A long branch is promoted when the other is double: a double expected here is a
            # guess for each branch.
            self._soft_expect(e.then, t)
            self._soft_expect(e.otherwise, t)
        elif isinstance(e, ast.StructBuild) and isinstance(t, StructType):
            if sorted(f.name for f in e.fields) == sorted(t.names):
                e._expected = t  # type: ignore[attr-defined]
            for f in e.fields:
                k = t.field_index(f.name)
                if k is not None:
                    self.expect(f.value, t.fields[k][1])
        elif isinstance(e, ast.Index) and self.synth(e.obj) is None:
            self.expect(e.obj, ArrayType(t))
        return self.synth(e)

    def _settle_order(self, v: Variable, t: Type) -> None:
        """``p = {s: "a", x: 1}; !>O(p);`` with O carrying {long x; string s;}: p takes O's order."""
        if (v.loose and isinstance(t, StructType) and isinstance(v.ty, StructType) and v.ty != t
                and sorted(v.ty.fields, key=_field_name) == sorted(t.fields, key=_field_name)):
            v.ty, v.loose = t, False
            self.changed = True
            for w in v.copies:  # q = p: p takes the order q was given, and the other way round
                self._settle_order(w, t)

    def _guess(self, e: ast.Expr, t: Type) -> None:
        """An operand of unknown type takes the other operand's type, but only as a guess: with
        promotion, a long operand would fit a double one as well."""
        if isinstance(e, ast.Name) and isinstance(e.ref, Variable) and e.ref.ty is None:
            self._soft_expect(e, t)

    def synth(self, e: ast.Expr) -> Type | None:
        t = self._synth(e)
        e.ty = t
        return t

    def _synth(self, e: ast.Expr) -> Type | None:
        if isinstance(e, ast.IntLit):
            if not LONG_MIN <= e.value <= LONG_MAX:
                text = str(e.value) if len(str(e.value)) <= 40 else f"of {len(str(abs(e.value)))} digits"
                self.err(e.pos, f"integer literal {text} does not fit in a 64-bit long", LONG_RANGE_HINT)
            return LONG
        if isinstance(e, ast.FloatLit):
            return DOUBLE
        if isinstance(e, ast.StrLit):
            return STRING
        if isinstance(e, ast.BoolLit):
            return BOOLEAN
        if isinstance(e, ast.Name):
            ref = e.ref
            if isinstance(ref, Variable):
                return ref.ty
            if isinstance(ref, LoopIndex):
                return LONG
            if isinstance(ref, EventValue):
                return ref.event.ty
            return None
        if isinstance(e, ast.GroupRef):
            if self.key_types is None or not isinstance(e.index, ast.IntLit):
                return None
            n = e.index.value
            return self.key_types[n] if 0 <= n < len(self.key_types) else None
        if isinstance(e, ast.Unary):
            return self._synth_unary(e)
        if isinstance(e, ast.Binary):
            return self._synth_binary(e)
        if isinstance(e, ast.CondExpr):
            return self._synth_cond(e)
        if isinstance(e, ast.Call):
            return self._synth_call(e)
        if isinstance(e, ast.Index):
            ot = self.synth(e.obj)
            it = self.expect(e.index, LONG)
            if it is not None and it != LONG:
                self.err(e.index.pos, f"a subscript must be long, not {describe(it)}")
            if ot is None:
                return None
            if isinstance(ot, ArrayType):
                return ot.element
            self.err(e.pos, f"only arrays can be subscripted; this is {describe(ot)}")
            return None
        if isinstance(e, ast.FieldAccess):
            ot = self.synth(e.obj)
            if ot is None:
                return None
            if isinstance(ot, StructType):
                k = ot.field_index(e.name)
                if k is None:
                    have = ", ".join(ot.names) or "no fields"
                    self.err(e.name_pos, f"{describe(ot)} has no field {e.name!r}", f"its fields: {have}")
                    return None
                return ot.fields[k][1]
            self.err(e.name_pos, f"field {e.name!r} of {describe(ot)}, which is not a structure")
            return None
        if isinstance(e, ast.StructBuild):
            return self._synth_struct(e)
        if isinstance(e, ast.NewArray):
            elem = self.resolve_type(e.element) if self.reporting else self._quiet_type(e.element)
            st = self.expect(e.size, LONG)
            if st is not None and st != LONG:
                self.err(e.size.pos, f"an array size must be long, not {describe(st)}")
            return None if elem is None else ArrayType(elem)
        return None

    def _quiet_type(self, t: ast.TypeExpr) -> Type | None:
        was = self.reporting
        self.reporting = False
        try:
            return self.resolve_type(t)
        finally:
            self.reporting = was

    def _synth_unary(self, e: ast.Unary) -> Type | None:
        if e.op == "!":
            t = self.expect(e.operand, BOOLEAN)
            if t is not None and t != BOOLEAN:
                self.err(e.pos, f"'!' needs a boolean operand, not {describe(t)}")
            return BOOLEAN
        t = self.synth(e.operand)
        if t is not None and not t.is_numeric:
            self.err(e.pos, f"unary '-' needs a long or double operand, not {describe(t)}")
            return None
        return t

    def _synth_binary(self, e: ast.Binary) -> Type | None:
        op = e.op
        if op in ("&&", "||"):
            for side in (e.left, e.right):
                t = self.expect(side, BOOLEAN)
                if t is not None and t != BOOLEAN:
                    self.err(side.pos, f"'{op}' needs boolean operands, not {describe(t)}")
            return BOOLEAN
        lt = self.synth(e.left)
        rt = self.synth(e.right)
        if lt is None and rt is not None and not (op == "+" and rt == STRING):
            self._guess(e.left, rt)
            lt = self.synth(e.left)
        elif rt is None and lt is not None and not (op == "+" and lt == STRING):
            self._guess(e.right, lt)
            rt = self.synth(e.right)
        comparison = op in ("==", "!=", "<", "<=", ">", ">=")
        if lt is None or rt is None:
            return BOOLEAN if comparison else None
        if op in ("==", "!="):
            if lt != rt and promote(lt, rt) is None:
                self.err(e.pos, f"cannot compare {describe(lt)} with {describe(rt)}")
            return BOOLEAN
        if comparison:
            if promote(lt, rt) is None and not (lt == rt and lt in (STRING, TIME)):
                self.err(e.pos, f"'{op}' compares numbers, strings or times, not {describe(lt)} and {describe(rt)}")
            return BOOLEAN
        p = promote(lt, rt)
        if p is not None:
            return p
        if op == "+" and STRING in (lt, rt):
            other = rt if lt == STRING else lt
            if isinstance(other, PrimitiveType) and other != OBJECT:
                return STRING
            self.err(e.pos, f"cannot concatenate a string and {describe(other)}")
            return STRING
        self.err(e.pos, f"'{op}' needs long or double operands, not {describe(lt)} and {describe(rt)}",
                 "times are shifted with secondsAfter(n, t) and compared with <, >, ==")
        return None

    def _synth_cond(self, e: ast.CondExpr) -> Type | None:
        ct = self.expect(e.cond, BOOLEAN)
        if ct is not None and ct != BOOLEAN:
            self.err(e.cond.pos, f"the condition of '?:' must be boolean, not {describe(ct)}", _condition_hint(ct))
        a = self.synth(e.then)
        b = self.synth(e.otherwise)
        if a is None and b is not None:
            a = self._soft_expect(e.then, b)
        elif b is None and a is not None:
            b = self._soft_expect(e.otherwise, a)
        if a is not None and b is not None:
            if a == b:
                return a
            p = promote(a, b)
            if p is not None:
                return p
            self.err(e.pos, f"the branches of '?:' have different types: {describe(a)} and {describe(b)}")
            return a
        return None

    def _synth_call(self, e: ast.Call) -> Type | None:
        ext = self.externals.get(e.name)
        if ext is not None:
            e.target = ext
            if len(e.args) != len(ext.params):
                self.err(e.pos, f"{e.name} takes {len(ext.params)} argument(s), not {len(e.args)}")
                return ext.result
            for arg, p in zip(e.args, ext.params):
                at = self._soft_expect(arg, p) if p == DOUBLE else self.expect(arg, p)
                if at is not None and at != p and not (p == DOUBLE and at == LONG):
                    self.err(arg.pos, f"argument of {e.name} must be {describe(p)}, not {describe(at)}")
            return ext.result
        overloads = stdlib.BUILTINS.get(e.name)
        if overloads is None:
            return None
        args = [self.synth(a) for a in e.args]
        ov = stdlib.resolve(e.name, args)
        if ov is None:
            if all(a is not None for a in args):
                sigs = "; ".join(o.signature() for o in overloads)
                got = ", ".join(str(a) for a in args)
                self.err(e.pos, f"no version of {e.name} takes ({got})", f"available: {sigs}")
            return None
        for arg, p in zip(e.args, ov.params):
            if isinstance(p, Type) and arg.ty is None:
                if p == DOUBLE:
                    self._soft_expect(arg, p)
                else:
                    self.expect(arg, p)
        e.target = ov
        return ov.result

    def _synth_struct(self, e: ast.StructBuild) -> Type | None:
        seen: set[str] = set()
        fields: list[tuple[str, Type]] = []
        known = True
        for f in e.fields:
            if f.name in seen:
                self.err(f.pos, f"field {f.name!r} is given twice")
            seen.add(f.name)
            t = self.synth(f.value)
            if t is None:
                known = False
            else:
                fields.append((f.name, t))
        if not known:
            return None
        expected: StructType | None = getattr(e, "_expected", None)
        if expected is not None:
            by_name = dict(fields)
            if all(by_name.get(n) == t for n, t in expected.fields):
                return expected
        return StructType(tuple(fields))


def _field_name(f: tuple[str, Type]) -> str:
    return f[0]


def _suggest(name: str, candidates: Iterable[str], otherwise: str) -> str:
    """``otherwise``, preceded by "did you mean 'X'?" when a candidate is close to ``name``."""
    best = closest(name, candidates)
    if best is None:
        return otherwise
    return f"did you mean {best!r}? Otherwise, {otherwise}"


def _condition_hint(got: Type) -> str | None:
    """How to turn a value of type ``got`` into the boolean a condition needs."""
    if got.is_numeric:
        return "EventScript has no truth values for numbers: write a comparison, e.g. n != 0 ? ..."
    if got == STRING:
        return 'write a comparison, e.g. s != "" ? ... or contains(s, "x") ? ...'
    return "write a comparison or another boolean expression"


def _choose_guess(candidates: list[tuple[Type, Pos]]) -> tuple[Type, Pos]:
    """The type a variable takes from the guesses of one round, whatever their order: the one
    type they agree on; double when they mix long and double (the long uses are promoted);
    otherwise an arbitrary but fixed one (a conflict reported later anyway)."""
    types = {t for t, _ in candidates}
    if types == {LONG, DOUBLE}:
        chosen: Type = DOUBLE
    else:
        chosen = min(types, key=lambda t: (describe(t), repr(t)))
    pos = min((p for t, p in candidates if t == chosen), key=lambda p: (p.source.name, p.offset))
    return chosen, pos


def _conversion_hint(value: ast.Expr, got: Type, want: Type) -> str | None:
    if want == DOUBLE and got == LONG:
        if isinstance(value, ast.IntLit):
            return f"write {value.value}.0 for a double constant"
        return "EventScript never converts on assignment: write double(...)"
    if want == LONG and got == DOUBLE:
        return "EventScript never converts on assignment: write long(...) to truncate"
    if isinstance(want, StructType) and isinstance(got, StructType) and sorted(want.names) == sorted(got.names):
        return "the fields are the same but in a different order"
    return None


def _children(e: ast.Expr) -> list[ast.Expr]:
    if isinstance(e, ast.Unary):
        return [e.operand]
    if isinstance(e, ast.Binary):
        return [e.left, e.right]
    if isinstance(e, ast.CondExpr):
        return [e.cond, e.then, e.otherwise]
    if isinstance(e, ast.Call):
        return list(e.args)
    if isinstance(e, ast.Index):
        return [e.obj, e.index]
    if isinstance(e, ast.FieldAccess):
        return [e.obj]
    if isinstance(e, ast.StructBuild):
        return [f.value for f in e.fields]
    if isinstance(e, ast.NewArray):
        return [e.size]
    if isinstance(e, ast.GroupRef):
        return [e.index]
    return []


def check(program: ast.Program, diagnostics: Diagnostics, *, resolve_externals: bool = True) -> CheckedProgram:
    return Checker(diagnostics, resolve_externals=resolve_externals).check(program)
