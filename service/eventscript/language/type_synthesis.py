"""The types of expressions: synthesis (bottom-up, ``synth``) and expectation (top-down,
``expect``: a context that needs a type pushes it into an expression, typing its variables).
"""

from __future__ import annotations

from . import ast, stdlib
from .check_hints import condition_hint, field_name, size_hint
from .checked import EventValue, LoopIndex, Variable
from .checker_state import CheckerState
from .lexer import LONG_RANGE_HINT
from .types import (
    BOOLEAN,
    DOUBLE,
    LONG,
    LONG_MAX,
    LONG_MIN,
    OBJECT,
    STRING,
    TIME,
    ArrayType,
    PrimitiveType,
    StructType,
    Type,
    describe,
    promote,
)


class TypeSynthesis(CheckerState):
    """Synthesis (bottom-up) and expectation (top-down) of expression types."""

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
                e.expected = t
            for f in e.fields:
                k = t.field_index(f.name)
                if k is not None:
                    self.expect(f.value, t.fields[k][1])
        elif isinstance(e, ast.Index) and self.synth(e.obj) is None:
            self.expect(e.obj, ArrayType(t))
        return self.synth(e)

    def _settle_order(self, v: Variable, t: Type) -> None:
        """``p = {s: "a", x: 1}; !>O(p);`` with O carrying {long x; string s;}: p takes O's order."""
        if (
            v.loose
            and isinstance(t, StructType)
            and isinstance(v.ty, StructType)
            and v.ty != t
            and sorted(v.ty.fields, key=field_name) == sorted(t.fields, key=field_name)
        ):
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
            if n in self.unknown_key_components:
                return None
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
            self.err(e.name_pos, f"field {e.name!r} of {describe(ot)}, which is not a structure", size_hint(e, ot))
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
        self.err(
            e.pos,
            f"'{op}' needs long or double operands, not {describe(lt)} and {describe(rt)}",
            "times are shifted with secondsAfter(n, t) and compared with <, >, ==",
        )
        return None

    def _synth_cond(self, e: ast.CondExpr) -> Type | None:
        ct = self.expect(e.cond, BOOLEAN)
        if ct is not None and ct != BOOLEAN:
            self.err(e.cond.pos, f"the condition of '?:' must be boolean, not {describe(ct)}", condition_hint(ct))
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
        for arg, param in zip(e.args, ov.params):
            if isinstance(param, Type) and arg.ty is None:
                if param == DOUBLE:
                    self._soft_expect(arg, param)
                else:
                    self.expect(arg, param)
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
        expected: StructType | None = e.expected
        if expected is not None:
            by_name = dict(fields)
            if all(by_name.get(n) == t for n, t in expected.fields):
                return expected
        return StructType(tuple(fields))
