"""Lowering: the checked syntax tree to the intermediate form (language.ir).

Runs only on programs without errors, so every expression has a type. This is where the
alphabet is laid out, markers and action units are numbered in program-text order, and the
implicit ``long`` → ``double`` promotions of binary operators become explicit nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import ast, ir, stdlib
from .checked import InputEvent
from .checker import CheckedProgram, EventValue, LoopIndex, Variable
from .source import Pos
from .types import DOUBLE, EMPTY, LONG, STRING, StructType, Type, promote

UNIT_MICROSECONDS = {
    "day": 86_400_000_000,
    "hour": 3_600_000_000,
    "minute": 60_000_000,
    "second": 1_000_000,
    "millisecond": 1_000,
    "microsecond": 1,
}


_PAIRS = {"(": ")", "[": "]", "{": "}"}


#: The characters ``_balanced`` acts on; it jumps over everything else at once.
_SPECIAL = re.compile(r'["/()\[\]{}]')


def _balanced(text: str, i: int) -> int:
    """Index just past the bracket group opening at text[i], skipping strings and comments."""
    stack = [_PAIRS[text[i]]]
    i += 1
    n = len(text)
    while i < n and stack:
        found = _SPECIAL.search(text, i)
        if found is None:
            return n
        i = found.start()
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 1
        elif c in _PAIRS:
            stack.append(_PAIRS[c])
        elif stack and c == stack[-1]:
            stack.pop()
        i += 1
    return i


def _text(pos: Pos, limit: int = 60) -> str:
    """The source text of the marker or action block at ``pos``, on one line, shortened."""
    text = pos.source.text
    i = pos.offset
    n = len(text)
    if i < n and text[i] == "{":
        end = _balanced(text, i)
    else:
        end = i + 1
        while end < n and (text[end].isalnum() or text[end] == "_"):
            end += 1
        for opener in "[(":
            j = end
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] == opener:
                end = _balanced(text, j)
    snippet = " ".join(text[i:end].split())
    return snippet if len(snippet) <= limit else snippet[: limit - 1] + "…"


@dataclass
class Positions:
    """Source positions of IR records, kept beside the (position-free) IR for diagnostics."""

    markers: dict[int, Pos] = field(default_factory=dict)
    units: dict[int, Pos] = field(default_factory=dict)
    reads: dict[int, Pos] = field(default_factory=dict)  # id(ir.Var) -> position of the read
    regex: Pos | None = None


class Lowerer:
    def __init__(self, checked: CheckedProgram, name: str) -> None:
        self.pos = Positions()
        self.c = checked
        self.name = name
        self.symbols: list[ir.Symbol] = []
        self.symbol_of: dict[str, int] = {}
        self.markers: list[ir.Marker] = []
        self.units: list[ir.Unit] = []
        self.timers: list[ir.Node] = []
        self.time_symbols: dict[int, int] = {}
        self.outputs = {o.name: o.index for o in checked.outputs.values()}

    # -- program ---------------------------------------------------------------------

    def lower(self) -> ir.ProgramIR:
        c = self.c
        for ev in c.inputs.values():
            if ev.entry.case is None:
                self._symbol(ev.name, "input")
            else:
                for cls in ev.classes:
                    if cls not in self.symbol_of:
                        self._symbol(cls, "class")
        # Time symbols are added as the markers are met, in program-text order.
        regex = self.regex(c.program.regex) if c.program.regex is not None else ir.RSeq([])
        self.pos.regex = c.program.regex.pos if c.program.regex is not None else c.program.pos
        inputs = [self._input(ev) for ev in c.inputs.values()]
        outputs = [ir.Output(o.index, o.name, o.ty) for o in c.outputs.values()]
        variables = [ir.Variable(v.index, v.name, v.ty, v.assigned_at is None) for v in c.variables if v.ty is not None]
        externals = [
            ir.External(f.index, f.name, list(f.params), f.result, f.impl)
            for f in sorted(c.externals.values(), key=lambda f: f.index)
        ]
        return ir.ProgramIR(
            self.name,
            self.symbols,
            inputs,
            outputs,
            variables,
            externals,
            c.key_types,
            self.markers,
            self.units,
            self.timers,
            regex,
            c.loop_slots,
            self.time_symbols,
        )

    def _symbol(self, name: str, kind: str, marker: int | None = None) -> int:
        s = ir.Symbol(len(self.symbols), name, kind, marker)
        self.symbols.append(s)
        if kind != "time":
            self.symbol_of[name] = s.index
        return s.index

    def _input(self, ev: InputEvent) -> ir.Input:
        group = [self.expr(g) for g in ev.entry.group] if ev.entry.group is not None else None

        def case(node: ast.CaseNode) -> ir.Node:
            if isinstance(node, ast.CaseName):
                return ir.CaseSymbol(self.symbol_of[node.name])
            return ir.CaseArm(self.expr(node.cond), case(node.then), case(node.otherwise))

        classify = case(ev.entry.case) if ev.entry.case is not None else ir.CaseSymbol(self.symbol_of[ev.name])
        return ir.Input(ev.index, ev.name, ev.ty, group, classify)

    # -- regular expressions ------------------------------------------------------------

    def regex(self, r: ast.Regex) -> ir.Node:
        if isinstance(r, ast.RSeq):
            return ir.RSeq([self.regex(x) for x in r.items])
        if isinstance(r, ast.RAlt):
            return ir.RAlt([self.regex(x) for x in r.items])
        if isinstance(r, ast.RInter):
            return ir.RInter(self.regex(r.left), self.regex(r.right))
        if isinstance(r, ast.RDiff):
            return ir.RDiff(self.regex(r.left), self.regex(r.right))
        if isinstance(r, ast.RRepeat):
            return ir.RRepeat(self.regex(r.item), r.low, r.high)
        if isinstance(r, ast.RActions):
            unit = self._unit(r.order, self.block(r.block), r.pos)
            return ir.RUnit(unit)
        if isinstance(r, ast.RWildcard):
            named = [s.index for s in self.symbols if s.kind != "time"]
            return ir.RMarker(self._marker(r.pos, named, None, None, r.pos.offset))
        if isinstance(r, ast.RMarker):
            if r.name in self.c.inputs and self.c.inputs[r.name].entry.case is not None:
                syms = [self.symbol_of[cls] for cls in self.c.inputs[r.name].classes]
            else:
                syms = [self.symbol_of[r.name]]
            return ir.RMarker(self._marker(r.pos, syms, r.target, r.target_pos, r.order))
        if isinstance(r, ast.RElapse):
            m = len(self.markers)
            sym = self._symbol(f"elapse@{r.pos.line}:{r.pos.col}", "time", m)
            amount = self.expr(r.amount)
            self._timer(sym, ir.ElapseSpec(sym, amount, UNIT_MICROSECONDS[r.unit]))
            return ir.RMarker(self._marker(r.pos, [sym], r.target, r.target_pos, r.order))
        if isinstance(r, ast.RArrive):
            m = len(self.markers)
            sym = self._symbol(f"arrive@{r.pos.line}:{r.pos.col}", "time", m)
            self._timer(sym, self._arrive(sym, r.pattern))
            return ir.RMarker(self._marker(r.pos, [sym], r.target, r.target_pos, r.order))
        raise AssertionError(f"unknown regex node {r!r}")

    def _timer(self, sym: int, spec: ir.Node) -> None:
        self.time_symbols[sym] = len(self.timers)
        self.timers.append(spec)

    def _arrive(self, sym: int, p: ast.ArrivePattern) -> ir.ArriveSpec:
        if p.time_expr is not None:
            return ir.ArriveSpec(sym, self.expr(p.time_expr), None)

        def comp(c: ast.PatternComponent) -> ir.Node | None:
            return None if isinstance(c, ast.Wild) else self.expr(c)

        date = [comp(c) for c in p.date] if p.date is not None else [None, None, None]
        zero = ir.Const(LONG, 0)
        if p.time is None:
            time: list[ir.Node | None] = [zero, zero, zero]
        else:
            time = [comp(c) for c in p.time]
            if len(time) == 2:
                time.append(zero)
        return ir.ArriveSpec(sym, None, [*date, *time])

    def _marker(self, pos: Pos, syms: list[int], target: str | None, target_pos: Pos | None, order: int) -> int:
        store = None
        if target is not None:
            var = next(v for v in self.c.variables if v.name == target)
            store = self._unit(order, [ir.Store(var.index, var.name)], target_pos or pos)
        m = ir.Marker(len(self.markers), _text(pos, 40), syms, store, order, pos.line, pos.col, pos.source.name)
        self.markers.append(m)
        self.pos.markers[m.index] = pos
        return m.index

    def _unit(self, order: int, actions: list[ir.Node], pos: Pos) -> int:
        u = ir.Unit(len(self.units), order, actions, _text(pos), pos.line, pos.col, pos.source.name)
        self.units.append(u)
        self.pos.units[u.index] = pos
        return u.index

    # -- actions -------------------------------------------------------------------------

    def block(self, b: ast.Block) -> list[ir.Node]:
        out: list[ir.Node] = []
        for a in b.actions:
            out.extend(self.action(a))
        return out

    def action(self, a: ast.Action) -> list[ir.Node]:
        if isinstance(a, ast.Block):
            return self.block(a)
        if isinstance(a, ast.Emit):
            out = self.c.outputs[a.name]
            value = self.expr(a.value) if a.value is not None else ir.Build(EMPTY, [])
            return [ir.Emit(out.index, value)]
        if isinstance(a, ast.Assign):
            value = self.expr(a.value)
            t = a.target
            if isinstance(t, ast.Name):
                assert isinstance(t.ref, Variable)
                return [ir.SetVar(t.ref.index, t.ref.name, value)]
            if isinstance(t, ast.Index):
                return [ir.SetIndex(self.expr(t.obj), self.expr(t.index), value)]
            assert isinstance(t, ast.FieldAccess)
            st = t.obj.ty
            assert isinstance(st, StructType)
            k = st.field_index(t.name)
            assert k is not None
            return [ir.SetField(self.expr(t.obj), k, value)]
        if isinstance(a, ast.IfAction):
            return [
                ir.If(
                    self.expr(a.cond), self.action(a.then), self.action(a.otherwise) if a.otherwise is not None else []
                )
            ]
        if isinstance(a, ast.ForAction):
            idx: LoopIndex = a.index
            return [ir.For(idx.slot, idx.name, self.expr(a.low), self.expr(a.high), self.action(a.body))]
        raise AssertionError(f"unknown action {a!r}")

    # -- expressions ---------------------------------------------------------------------

    def _as(self, node: ir.Node, have: Type, want: Type) -> ir.Node:
        if have == LONG and want == DOUBLE:
            if isinstance(node, ir.Const):
                return ir.Const(DOUBLE, float(node.value))
            return ir.ToDouble(DOUBLE, node)
        return node

    def expr(self, e: ast.Expr) -> ir.Node:
        t: Type = e.ty
        if isinstance(e, ast.IntLit):
            return ir.Const(LONG, e.value)
        if isinstance(e, ast.FloatLit):
            return ir.Const(DOUBLE, e.value)
        if isinstance(e, ast.StrLit):
            return ir.Const(STRING, e.value)
        if isinstance(e, ast.BoolLit):
            return ir.Const(t, e.value)
        if isinstance(e, ast.Name):
            ref = e.ref
            if isinstance(ref, Variable):
                node = ir.Var(t, ref.index, ref.name)
                self.pos.reads[id(node)] = e.pos
                return node
            if isinstance(ref, LoopIndex):
                return ir.Loop(LONG, ref.slot, ref.name)
            assert isinstance(ref, EventValue)
            return ir.EventVal(t)
        if isinstance(e, ast.GroupRef):
            assert isinstance(e.index, ast.IntLit)
            return ir.Key(t, e.index.value)
        if isinstance(e, ast.Unary):
            return ir.Unary(t, e.op, self.expr(e.operand))
        if isinstance(e, ast.Binary):
            return self._binary(e)
        if isinstance(e, ast.CondExpr):
            return ir.Cond(
                t,
                self.expr(e.cond),
                self._as(self.expr(e.then), e.then.ty, t),
                self._as(self.expr(e.otherwise), e.otherwise.ty, t),
            )
        if isinstance(e, ast.Call):
            return self._call(e)
        if isinstance(e, ast.Index):
            return ir.Index(t, self.expr(e.obj), self.expr(e.index))
        if isinstance(e, ast.FieldAccess):
            st = e.obj.ty
            assert isinstance(st, StructType)
            k = st.field_index(e.name)
            assert k is not None
            return ir.Field(t, self.expr(e.obj), k, e.name)
        if isinstance(e, ast.StructBuild):
            assert isinstance(t, StructType)
            by_name = {f.name: f.value for f in e.fields}
            written = [t.names.index(f.name) for f in e.fields]
            order = written if written != sorted(written) else None
            return ir.Build(t, [self.expr(by_name[n]) for n in t.names], order)
        if isinstance(e, ast.NewArray):
            return ir.New(t, self.expr(e.size))
        raise AssertionError(f"unknown expression {e!r}")

    def _binary(self, e: ast.Binary) -> ir.Node:
        lt, rt, t = e.left.ty, e.right.ty, e.ty
        left, right = self.expr(e.left), self.expr(e.right)
        if e.op in ("&&", "||"):
            return ir.Binary(t, e.op, t, left, right)
        p = promote(lt, rt)
        if p is not None:
            return ir.Binary(t, e.op, p, self._as(left, lt, p), self._as(right, rt, p))
        if e.op == "+" and t == STRING:
            if lt != STRING:
                left = ir.Call(STRING, "string_any", [left])
            if rt != STRING:
                right = ir.Call(STRING, "string_any", [right])
            return ir.Binary(STRING, "+", STRING, left, right)
        return ir.Binary(t, e.op, lt, left, right)

    def _call(self, e: ast.Call) -> ir.Node:
        target = e.target
        args = [self.expr(a) for a in e.args]
        if isinstance(target, stdlib.Overload):
            conv = [self._as(a, x.ty, p) if isinstance(p, Type) else a for a, x, p in zip(args, e.args, target.params)]
            return ir.Call(e.ty, target.id, conv)
        conv = [self._as(a, x.ty, p) for a, x, p in zip(args, e.args, target.params)]
        return ir.Extern(e.ty, target.index, conv)


def lower(checked: CheckedProgram, name: str) -> tuple[ir.ProgramIR, Positions]:
    lowerer = Lowerer(checked, name)
    program = lowerer.lower()
    return program, lowerer.pos
