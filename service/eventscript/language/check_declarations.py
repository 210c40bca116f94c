"""The checker's first stage: type, function, output and input declarations, group clauses
and case clauses.
"""

from __future__ import annotations

from pathlib import Path

from . import ast, stdlib
from .check_hints import ERROR_EVENTS_HINT, subexpressions, suggest
from .checked import EventClass, EventValue, ExternalFunction, InputEvent, OutputEvent
from .checker_state import RESERVED_PREFIX, CheckerState
from .external_functions import FORMS, implementation_readings, resolve_external
from .source import Pos
from .types import BOOLEAN, OBJECT, PRIMITIVES, ArrayType, PrimitiveType, StructType, Type, describe


class DeclarationChecks(CheckerState):
    """Declarations: what each name of the program's header denotes, checked as it is declared."""

    # -- declarations ---------------------------------------------------------------

    def resolve_type(self, t: ast.TypeExpr) -> Type | None:
        if isinstance(t, ast.TypeName):
            if t.name in PRIMITIVES:
                return PRIMITIVES[t.name]
            if t.name in self.typedefs:
                return self.typedefs[t.name]
            known = (
                "types are boolean, double, long, string, time, object, arrays, structures, "
                "or names defined earlier with 'type Name = ...'"
            )
            other = OTHER_LANGUAGES_TYPES.get(t.name.lower())
            self.err(
                t.pos,
                f"unknown type {t.name!r}",
                lambda: (
                    f"EventScript's {other}; {known}"
                    if other and t.name not in self.typedefs
                    else suggest(t.name, [*PRIMITIVES, *self.typedefs], known)
                ),
            )
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
            self.err(
                decl.pos, f"function {decl.name!r} would hide the built-in function of that name", "choose another name"
            )
            return
        if decl.name in self.externals:
            self.err(decl.pos, f"function {decl.name!r} is declared twice")
            return
        resolved = tuple(p for p in params if p is not None)
        if result is None or len(resolved) != len(params):
            return
        fn = ExternalFunction(decl.name, resolved, result, decl.impl, decl.pos, len(self.externals))
        if not implementation_readings(decl.impl):
            self.err(
                decl.impl_pos, f"{decl.impl!r} does not name a Python callable", f"write the implementation as {FORMS}"
            )
        elif self.resolve_externals:
            fn.function, problem = resolve_external(decl.impl, search)
            if problem:
                self.err(
                    decl.impl_pos,
                    f"cannot resolve external function {decl.name}: {problem}",
                    "the module is searched on the Python path and beside the program file",
                )
        self.externals[decl.name] = fn

    def _check_name(self, name: str, pos: Pos, hint: str | None = None) -> bool:
        """Whether ``name`` may be declared; if not (``$error``), that is reported, and the event
        counted as broken so that its markers and emits are not reported again as undeclared."""
        if name.startswith(RESERVED_PREFIX):
            self.err(pos, f"{name!r}: names starting with '$' are reserved", hint)
            self.broken_events.add(name)
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
        if not self._check_name(entry.name, entry.pos, ERROR_EVENTS_HINT):
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
            self.err(
                node.pos,
                f"event class {name!r} has the name of an input event",
                "choose a name that is not declared with 'in'",
            )
            return
        cls = self.classes.get(name)
        if cls is None:
            cls = self.classes[name] = EventClass(name, ev.ty, node.pos)
        elif cls.ty != ev.ty:
            self.err(
                node.pos, f"event class {name!r} would carry {describe(ev.ty)} here but {describe(cls.ty)} at {cls.pos}"
            )
            return
        if ev not in cls.inputs:
            cls.inputs.append(ev)
        if name not in ev.classes:
            ev.classes.append(name)

    def _check_groups(self) -> None:
        grouped = [e for e in self.inputs.values() if e.entry.group is not None]
        if not grouped:
            return
        arity = len(grouped[0].entry.group or [])
        for ev in self.inputs.values():
            if ev.entry.group is None:
                self.err(
                    ev.pos,
                    f"input event {ev.name} has no group clause, but other input events do",
                    f"in a grouped program every input event needs group(...) with {arity} component(s), as "
                    f"{grouped[0].name}'s has; e.g. {_group_example(ev, arity)}",
                )
        first = grouped[0]
        key_types: list[Type] | None = None
        for ev in grouped:
            assert ev.entry.group is not None
            types: list[Type | None] = []
            for expr in ev.entry.group:
                self._resolve_clause_expr(expr, ev, "group clause")
                t = self._final_synth(expr)
                if t is not None and (not isinstance(t, PrimitiveType) or t == OBJECT):
                    self.err(
                        expr.pos,
                        f"a group key component must be boolean, long, double, string or time, not {describe(t)}",
                    )
                    t = None
                types.append(t)
            if key_types is None:
                key_types = [t if t is not None else OBJECT for t in types]
                # (a component whose type is not known, its error reported: its uses give no more)
                self.unknown_key_components = {k for k, t in enumerate(types) if t is None}
                continue
            if len(types) != len(key_types):
                self.err(
                    ev.entry.group_pos or ev.pos,
                    f"the group clause of {ev.name} has {len(types)} component(s) but the one of "
                    f"{first.name} has {len(key_types)}",
                    "every group clause must have the same number of key components",
                )
                continue
            for k, (t, kt) in enumerate(zip(types, key_types)):
                if t is not None and t != kt:
                    assert ev.entry.group is not None
                    self.err(
                        ev.entry.group[k].pos,
                        f"key component {k} is {describe(t)} here but {describe(kt)} in the group clause "
                        f"of {first.name}",
                        "corresponding key components must have the same type",
                    )
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
                    self.err(
                        e.pos,
                        f"{e.name!r} cannot be used in a {where}",
                        f"a {where} sees only the arriving event's value ({ev.name}), constants and "
                        f"functions, not the program's variables",
                    )
            elif isinstance(e, ast.GroupRef):
                self.err(e.pos, f"group[...] cannot be used in a {where}")
            elif isinstance(e, ast.Call) and e.name not in self.externals and e.name not in stdlib.BUILTINS:
                # Without this, the call reached the lowering unresolved and crashed it.
                self._unknown_function(e)
            for child in subexpressions(e):
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


#: Type names of other languages (and the language document's own slip, "number exposure" in
#: section 2.5) and what EventScript calls the type.
OTHER_LANGUAGES_TYPES = {
    "number": "numbers are long (64-bit integers) and double (IEEE 754)",
    "int": "integer type is long (64 bits)",
    "integer": "integer type is long (64 bits)",
    "float": "floating-point type is double",
    "bool": "truth values are boolean",
    "str": "text type is string",
    "datetime": "timestamp type is time",
    "timestamp": "timestamp type is time",
}


def _group_example(ev: InputEvent, arity: int) -> str:
    """A group clause of ``arity`` components for an input, from its own value: the value itself,
    or its first fields (document 2.7: group(Trade.traderID, Trade.company))."""
    fields = [f"{ev.name}.{name}" for name, _ in ev.ty.fields] if isinstance(ev.ty, StructType) else []
    parts = (fields or [ev.name])[:arity]
    parts += ["..."] * (arity - len(parts))
    return f"group({', '.join(parts)})"
