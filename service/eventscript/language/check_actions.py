"""The checker's third stage: the typing sites of actions (emits, assignments, conditions,
calls and group references), kept for inference (``type_inference``).
"""

from __future__ import annotations

from . import ast, stdlib
from .check_hints import condition_hint, conversion_hint, expression_start, subexpressions, suggest
from .checked import LoopIndex, Variable
from .checker_state import RESERVED_PREFIX, CheckerState
from .hints import listing
from .types import BOOLEAN, EMPTY, LONG, describe


class ActionSites(CheckerState):
    """Collects the typing sites of actions and of the expressions in them."""

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
            self.sites.append(lambda: self._typed_site(cond, BOOLEAN, "a condition", condition_hint))
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
        self.emitted.add(a.name)
        if a.value is not None:
            self._collect_expr(a.value, scope)
        if out is None:
            if a.name in self.broken_events:
                return
            if a.name.startswith(RESERVED_PREFIX):
                self.err(a.name_pos, f"{a.name} events are emitted by the engine, not by programs")
            else:
                self.err(
                    a.name_pos,
                    f"undeclared output event {a.name!r}",
                    lambda: suggest(
                        a.name,
                        self.outputs,
                        f"declare it with 'out <type> {a.name}' (declared: {listing(self.outputs)})",
                    ),
                )
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
                self.err(
                    expression_start(value),
                    f"{a.name} carries {describe(out.ty)} but this value is {describe(got)}",
                    conversion_hint(value, got, out.ty)
                    or f"emit {describe(out.ty)}, or declare the event as 'out {got} {a.name}' if it is to carry this",
                )

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
            elif (
                lt is not None
                and rt is not None
                and lt != rt
                and isinstance(target, ast.Name)
                and isinstance(value, ast.Name)
                and isinstance(target.ref, Variable)
                and isinstance(value.ref, Variable)
            ):
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
                self.err(
                    value.pos,
                    f"cannot assign {describe(rt)} to {what}, which is {describe(lt)}{origin}",
                    conversion_hint(value, rt, lt),
                )

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
        for child in subexpressions(e):
            self._collect_expr(child, scope)
        if isinstance(e, (ast.IntLit, ast.FloatLit, ast.StrLit, ast.BoolLit)):
            return
        self.sites.append(lambda: self.synth(e))

    def _unknown_function(self, e: ast.Call) -> None:
        if e.name == "not":  # (``not x`` is caught by the parser; ``not (x > 1)`` reads as a call)
            self.err(e.pos, "'not' is not an operator of EventScript", "negation is written '!': !(...)")
            return
        self.err(
            e.pos,
            f"unknown function {e.name!r}",
            lambda: suggest(
                e.name,
                [*stdlib.BUILTINS, *self.externals],
                'declare an external function with: function <type> name(<types>): "module:attr"',
            ),
        )

    def _group_ref_site(self, e: ast.GroupRef) -> None:
        if self.key_types is None:
            self.err(
                e.pos,
                "group[...] used in a program without group clauses",
                "group[n] reads component n of the group key of a grouped program",
            )
            return
        if not isinstance(e.index, ast.IntLit):
            self.err(e.index.pos, "the index of group[...] must be an integer constant")
            return
        n = e.index.value
        if not 0 <= n < len(self.key_types):
            self.err(
                e.index.pos,
                f"group[{n}] is out of range: the group key has {len(self.key_types)} "
                f"component(s), group[0] to group[{len(self.key_types) - 1}]",
            )
