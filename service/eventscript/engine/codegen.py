"""Actions, expressions, classifiers, group keys and timer starts compiled to Python source.

The hot path of the engine must not walk trees: every distinct action sequence of the machine
becomes one generated Python function, compiled once per program. Only program text ever reaches
``compile``: event values are parameters of the generated functions, never source.

Conventions of the generated code (names bound in the namespace the engine supplies):

- ``ctx`` the instance context, ``v`` its variable list, ``ev`` the event value;
- ``UNSET`` marks unset variables; reads the analysis could not prove set are checked;
- ``_err(ctx, code, message)`` emits an ``$error`` and the failing operation yields its type's
  default, so evaluation goes on (conformance README);
- ``_e<k>(ctx, value)`` emits output k; ``_now()``; ``_settimer(ctx, deadline)`` after setting
  ``ctx.tsym``; ``_disarm(ctx)``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..language import ir
from ..language.types import BOOLEAN, DOUBLE, LONG, OBJECT, STRING, TIME, ArrayType, StructType, Type
from . import builtins
from .fold import fold_target, read_state, uses
from .timeutil import MAX_TIME, MIN_TIME
from .values import TWO_63, needs_copy


def default_expr(t: Type) -> str:
    """A Python expression that builds a fresh default value of type t."""
    if t in (LONG, TIME):
        return "0"
    if t == DOUBLE:
        return "0.0"
    if t == BOOLEAN:
        return "False"
    if t == STRING:
        return "''"
    if t == OBJECT:
        return "None"
    if isinstance(t, ArrayType):
        return "[]"
    if isinstance(t, StructType):
        return "[" + ", ".join(default_expr(ft) for _, ft in t.fields) + "]"
    return "None"


def _const(value: Any, t: Type) -> str:
    if t == DOUBLE:
        v = float(value)
        if math.isnan(v):
            return "_NAN"
        if math.isinf(v):
            return "_INF" if v > 0 else "(-_INF)"
        return repr(v)
    if t == BOOLEAN:
        return "True" if value else "False"
    return repr(value)


_AFTER_US = {
    "microsecondsAfter": 1,
    "millisecondsAfter": 1_000,
    "secondsAfter": 1_000_000,
    "minutesAfter": 60_000_000,
    "hoursAfter": 3_600_000_000,
    "daysAfter": 86_400_000_000,
}
_EPOCH_US = {"timeOfEpochMicros": 1, "timeOfEpochMillis": 1_000}

_CMP = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


@dataclass
class Source:
    """Generated functions: name → source text."""

    functions: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        return "\n\n".join(self.functions.values()) + "\n"


def _flat(t: Type) -> bool:
    """An array or structure whose elements hold no arrays or structures: a shallow copy is a snapshot."""
    if isinstance(t, ArrayType):
        return not needs_copy(t.element)
    if isinstance(t, StructType):
        return not any(needs_copy(ft) for _, ft in t.fields)
    return True


def _fresh(e: ir.Node) -> bool:
    """A value built by this very expression, shared with nothing, needs no snapshot."""
    if isinstance(e, ir.Build):
        return all(_fresh(x) or not needs_copy(ir.type_of(x)) for x in e.values)
    if isinstance(e, ir.New):
        return True
    if isinstance(e, ir.Cond):
        return _fresh(e.then) and _fresh(e.otherwise)
    return False


#: A case clause of at most this many classes gets a compact feed step specialised per class
#: (``CodeGen._case_steps``); a longer one takes the generic step, to keep the feed short.
CASE_LEAVES = 8

#: Python's parser accepts at most 200 nested parentheses. Below this expression depth the
#: generated code inlines the 64-bit wrap (two levels per operator); deeper, it calls _wrap (one).
INLINE_DEPTH = 30


class CodeGen:
    def __init__(self, program: ir.ProgramIR) -> None:
        self.p = program
        self._units: dict[tuple[int, bool], list[str]] = {}
        self._depth = 0
        self.one_key = one_value_key(program)
        #: Generating actions for a compact feed (``compact_step``): the key is the table key
        #: ``gk``, not ``ctx.gk``, and outputs are built inline (``emit_by_key``), so that a match that
        #: only emits builds no context.
        self.by_key = False
        #: Generating a compact feed whose new records are built inline (see :meth:`_new_record`).
        self._inline_records = False

    # -- expressions ---------------------------------------------------------------------

    def expr(self, e: ir.Node) -> str:
        self._depth += 1
        try:
            return self._expr(e)
        finally:
            self._depth -= 1

    def _wrap(self, inner: str, side: int = 0) -> str:
        """The 64-bit two's-complement wrap of a long expression: a range check, and the wrap
        only when it overflowed (comparing allocates nothing; the wrap's arithmetic on 64-bit
        numbers allocates three ints). ``side``: 1 when the result can only overflow upwards
        (``n + 1``), -1 downwards (``n - 1``): one comparison of big ints instead of two."""
        if self._depth > INLINE_DEPTH:
            return f"_wrap({inner})"
        low, high = ("" if side > 0 else f"{-TWO_63} <= "), ("" if side < 0 else f" <= {TWO_63 - 1}")
        return f"(_w if {low}(_w := {inner}){high} else _wrap(_w))"

    @staticmethod
    def _overflow_side(e: ir.Binary) -> int:
        """Which way ``e`` (a long + or -) can overflow when one operand is a constant: adding
        c >= 0 only upwards, subtracting it only downwards (operands are in range); 0: both."""
        right = e.right.value if isinstance(e.right, ir.Const) else None
        left = e.left.value if isinstance(e.left, ir.Const) else None
        c = right if right is not None else left
        if e.op == "+" and c is not None:
            return 1 if c >= 0 else -1
        if e.op == "-" and right is not None:
            return -1 if right >= 0 else 1
        return 0

    def _expr(self, e: ir.Node) -> str:
        if isinstance(e, ir.Const):
            return _const(e.value, e.ty)
        if isinstance(e, ir.Var):
            if e.checked:
                return f"(_u if (_u := v[{e.slot}]) is not UNSET else _unset(ctx, {e.name!r}, {default_expr(e.ty)}))"
            return f"v[{e.slot}]"
        if isinstance(e, ir.Loop):
            return f"_l{e.slot}"
        if isinstance(e, ir.EventVal):
            return "ev"
        if isinstance(e, ir.Key):
            gk = "gk" if self.by_key else "ctx.gk"
            return gk if self.one_key else f"{gk}[{e.n}]"
        if isinstance(e, ir.Unary):
            x = self.expr(e.x)
            if e.op == "!":
                return f"(not {x})"
            if e.ty == LONG:
                return self._wrap(f"-{x}", 1)  # only -MIN overflows
            return f"(-{x})"
        if isinstance(e, ir.ToDouble):
            return f"float({self.expr(e.x)})"
        if isinstance(e, ir.Binary):
            return self._binary(e)
        if isinstance(e, ir.Cond):
            return f"({self.expr(e.then)} if {self.expr(e.cond)} else {self.expr(e.otherwise)})"
        if isinstance(e, ir.Call):
            return self._call(e)
        if isinstance(e, ir.Extern):
            args = "".join(", " + self.expr(a) for a in e.args)
            return f"_x{e.fn}(ctx{args})"
        if isinstance(e, ir.Index):
            return f"_idx(ctx, {self.expr(e.obj)}, {self.expr(e.index)}, {default_expr(e.ty)})"
        if isinstance(e, ir.Field):
            return f"{self.expr(e.obj)}[{e.k}]"
        if isinstance(e, ir.Build):
            if e.order is None:
                return "[" + ", ".join(self.expr(x) for x in e.values) + "]"
            # Evaluated in the order written, then put in the declared order.
            written = "".join(self.expr(e.values[k]) + ", " for k in e.order)
            places = "".join(f"{e.order.index(k)}, " for k in range(len(e.values)))
            return f"[*map(({written}).__getitem__, ({places}))]"
        if isinstance(e, ir.New):
            assert isinstance(e.ty, ArrayType)
            return f"_new(ctx, {self.expr(e.size)}, lambda: {default_expr(e.ty.element)})"
        raise AssertionError(f"unknown expression {e!r}")

    def emit_by_key(self, output: int, value: str) -> str:
        """One line emitting output ``output`` of table key ``gk`` in a compact feed: the
        ``Emitted`` made with ``object.__new__`` and its slots set in place (a call of the class
        costs as much again: its ``__init__`` is a second Python frame) and given to the consumer
        ``_C``; ``_PN`` is the program's name, ``_OT<k>`` the output's type (``Engine._bind_emitters``)."""
        key = "(gk,)" if self.one_key else "gk"
        return (
            f"_m = _NEWE(_EM); _m.program = _PN; _m.name = {self.p.outputs[output].name!r}; "
            f"_m.value = {value}; _m.ty = _OT{output}; _m.time = _now(); _m.key = {key}; _C(_m)"
        )

    def _binary(self, e: ir.Binary) -> str:
        lhs, r = self.expr(e.left), self.expr(e.right)
        op = e.op
        if op == "&&":
            return f"({lhs} and {r})"
        if op == "||":
            return f"({lhs} or {r})"
        if op in _CMP:
            return f"({lhs} {_CMP[op]} {r})"
        if e.opty == LONG:
            if op in ("+", "-", "*"):
                return self._wrap(f"{lhs} {op} {r}", self._overflow_side(e))
            if op == "/":
                return f"_ldiv(ctx, {lhs}, {r})"
            if op == "%":
                return f"_lrem(ctx, {lhs}, {r})"
        if e.opty == DOUBLE:
            if op in ("+", "-", "*"):
                return f"({lhs} {op} {r})"
            if op == "/":
                if isinstance(e.right, ir.Const) and float(e.right.value) != 0.0:
                    return f"({lhs} / {r})"
                return f"_fdiv({lhs}, {r})"
            if op == "%":
                return f"_fmod({lhs}, {r})"
        if e.opty == STRING and op == "+":
            return f"({lhs} + {r})"
        raise AssertionError(f"unsupported operator {op} on {e.opty}")

    def _call(self, e: ir.Call) -> str:
        args = [self.expr(a) for a in e.args]
        if e.fn == "now":
            return "_now()"
        if e.fn == "string_any":
            t = ir.type_of(e.args[0])
            x = args[0]
            if t == DOUBLE:
                return f"_fmtd({x})"
            if t == BOOLEAN:
                return f"('true' if {x} else 'false')"
            if t == TIME:
                return f"_fmtt({x})"
            if t == STRING:
                return x
            return f"str({x})"
        if e.fn in _AFTER_US:
            # Inline for speed; a result outside years 1..9999 is $error 8 (and the epoch).
            us = f"({args[1]} + {args[0]} * {_AFTER_US[e.fn]})"
            return f"(_t if {MIN_TIME} <= (_t := {us}) <= {MAX_TIME} else _trange(ctx, _t))"
        if e.fn in _EPOCH_US:
            # A time of years 1..9999 only (docs/language.md 4.1); else $error 8 and the epoch.
            us = f"({args[0]} * {_EPOCH_US[e.fn]})"
            return f"(_t if {MIN_TIME} <= (_t := {us}) <= {MAX_TIME} else _trange(ctx, _t))"
        if e.fn in builtins.FAILING:
            return f"_b_{e.fn}(_err, ctx, {', '.join(args)})"
        return f"_b_{e.fn}({', '.join(args)})"

    # -- actions -------------------------------------------------------------------------

    def actions(self, actions: list[ir.Node], ind: str, out: list[str]) -> None:
        for a in actions:
            self.action(a, ind, out)

    def action(self, a: ir.Node, ind: str, out: list[str]) -> None:
        if isinstance(a, ir.SetVar):
            out.append(f"{ind}v[{a.slot}] = {self.expr(a.value)}")
        elif isinstance(a, ir.Store):
            out.append(f"{ind}v[{a.slot}] = ev")
        elif isinstance(a, ir.SetIndex):
            out.append(f"{ind}_setidx(ctx, {self.expr(a.obj)}, {self.expr(a.index)}, {self.expr(a.value)})")
        elif isinstance(a, ir.SetField):
            out.append(f"{ind}_o = {self.expr(a.obj)}")
            out.append(f"{ind}_o[{a.k}] = {self.expr(a.value)}")
        elif isinstance(a, ir.Emit):
            t = self.p.outputs[a.output].ty
            value = self.expr(a.value)
            if needs_copy(t) and not _fresh(a.value):
                value = f"[*{value}]" if _flat(t) else f"_copy({value})"
            out.append(
                f"{ind}{self.emit_by_key(a.output, value)}" if self.by_key else f"{ind}_e{a.output}(ctx, {value})"
            )
        elif isinstance(a, ir.If):
            out.append(f"{ind}if {self.expr(a.cond)}:")
            self._body(a.then, ind + "    ", out)
            if a.otherwise:
                out.append(f"{ind}else:")
                self._body(a.otherwise, ind + "    ", out)
        elif isinstance(a, ir.For):
            out.append(f"{ind}_lo = {self.expr(a.low)}")
            out.append(f"{ind}_hi = {self.expr(a.high)}")
            out.append(f"{ind}for _l{a.slot} in range(_lo, _hi + 1):")
            self._body(a.body, ind + "    ", out)
        else:
            raise AssertionError(f"unknown action {a!r}")

    def _body(self, actions: list[ir.Node], ind: str, out: list[str]) -> None:
        n = len(out)
        self.actions(actions, ind, out)
        if len(out) == n:
            out.append(f"{ind}pass")

    def unit_lines(self, unit: int) -> list[str]:
        lines = self._units.get((unit, self.by_key))
        if lines is None:
            lines = []
            self.actions(self.p.units[unit].actions, "    ", lines)
            self._units[(unit, self.by_key)] = lines
        return lines

    # -- timers ---------------------------------------------------------------------------

    def timer_start(self, name: str, symbols: list[int]) -> str:
        """A function that evaluates the state's time markers and arms the earliest (choice 5)."""
        return "\n".join([f"def {name}(ctx):", "    v = ctx.vars", *self.timer_start_lines(symbols)])

    def timer_start_lines(self, symbols: list[int]) -> list[str]:
        out = ["    now = _now()"]
        if len(symbols) == 1:
            sym = symbols[0]
            self._deadline(sym, out)
            out.append("    if d is None:")
            out.append("        _disarm(ctx)")
            out.append("    else:")
            out.append(f"        ctx.tsym = {sym}")
            out.append("        _settimer(ctx, d)")
            return out
        out += ["    best = None", "    bsym = -1"]
        for sym in sorted(symbols):  # time symbols are numbered in program-text order
            self._deadline(sym, out)
            out.append("    if d is not None and (best is None or d < best):")
            out.append("        best = d")
            out.append(f"        bsym = {sym}")
        out.append("    if best is None:")
        out.append("        _disarm(ctx)")
        out.append("    else:")
        out.append("        ctx.tsym = bsym")
        out.append("        _settimer(ctx, best)")
        return out

    def _deadline(self, sym: int, out: list[str]) -> None:
        """Lines computing ``d``: the deadline of one time marker, or None if it cannot fire."""
        spec = self.p.timer_of(sym)
        out.append(f"    # {self.p.symbols[sym].name}")
        if isinstance(spec, ir.ElapseSpec):
            amount = self.expr(spec.amount)
            if ir.type_of(spec.amount) == DOUBLE:
                out.append(f"    d = _elapse_d(ctx, now, {amount}, {spec.unit_us})")
            else:
                out.append(f"    d = now + max(0, {amount}) * {spec.unit_us}")
                out.append(f"    if d > {MAX_TIME}:")
                out.append("        d = _tfar(ctx, d)")
        else:
            assert isinstance(spec, ir.ArriveSpec)
            if spec.time is not None:
                out.append(f"    d = {self.expr(spec.time)}")
                out.append("    if d < now:")
                out.append("        d = now")
            else:
                comps = spec.components or []
                parts = ["None" if c is None else self.expr(c) for c in comps]
                out.append(f"    d = _pattern(ctx, now, ({', '.join(parts)},))")

    # -- transitions ----------------------------------------------------------------------

    def transition(self, name: str, units: tuple[int, ...], timers: tuple[int, ...] | None, disarm: bool) -> str | None:
        """A function running the units in order, then starting the target state's timer (its time
        symbols ``timers``), or stopping the timer when leaving a timed state for an untimed one.

        Returns None when there is nothing to do (no actions, no timer change).
        """
        body = self.transition_body(units, timers, disarm)
        if body is None:
            return None
        return "\n".join([f"def {name}(ctx, ev):", *body])

    def transition_body(
        self, units: tuple[int, ...], timers: tuple[int, ...] | None, disarm: bool, by_key: bool = False
    ) -> list[str] | None:
        """The body of :meth:`transition` (indented one level), or None when it would be empty.
        ``by_key``: for a compact feed (see ``by_key``; such programs have no timers)."""
        body: list[str] = []
        self.by_key = by_key
        try:
            for u in units:
                body.extend(self.unit_lines(u))
        finally:
            self.by_key = False
        if timers:
            body.extend(self.timer_start_lines(list(timers)))
        elif disarm:
            body.append("    _disarm(ctx)")
        if not body:
            return None
        if by_key or not any("v[" in line for line in body):  # no variable used: no load
            return body  # (a compact feed's ``v`` is the key's record, which holds the variables)
        return ["    v = ctx.vars", *body]

    # -- classification and group keys ---------------------------------------------------

    def classifier(self, name: str, node: ir.Node) -> tuple[str | None, int | None]:
        """(source, None) for a case clause, or (None, symbol) for an unclassified input."""
        if isinstance(node, ir.CaseSymbol):
            return None, node.symbol
        return f"def {name}(ctx, ev):\n    return {self._classify(node)}", None

    def group_key(self, name: str, exprs: list[ir.Node]) -> str:
        parts = ", ".join(self.key_expr(e) for e in exprs)
        return f"def {name}(ctx, ev):\n    return ({parts},)"

    def table_key(self, inp: ir.Input) -> str:
        """The expression of input ``inp``'s key in the instance table, worked out once per
        input by the feeds: the bare key value for a program grouped by one value (``ev`` itself
        when grouped by the event's value), else the tuple of the key's values."""
        assert inp.group is not None
        if self.one_key:
            return self.key_expr(inp.group[0])
        return f"({', '.join(self.key_expr(e) for e in inp.group)},)"

    def key_expr(self, e: ir.Node) -> str:
        """A group key component: a ``double`` one in its one form per key (``values.key_double``:
        ``-0.0`` is ``0.0``, every NaN one NaN), as the key's bytes route and store it."""
        return f"_kd({self.expr(e)})" if ir.type_of(e) == DOUBLE else self.expr(e)

    def feed(
        self,
        grouped: bool,
        keyed: bool = False,
        lazy: list[str] | None = None,
        track_dirty: bool = False,
        plans: dict[int, SymbolPlan] | None = None,
        compact: bool = False,
        record: int | None = None,
        inline_records: bool = False,
        create_late: bool = False,
    ) -> str:
        """The engine's ``feed(name, ev)``: dispatch on the event name, then (inlined) group key,
        instance lookup, classification, transition and termination. This is the hot path.

        ``keyed``: ``feed_keyed(name, ev, key)`` instead, for hosts that computed the group key
        already (to route the event) and pass it in. ``lazy``: the machine is a lazy DFA, whose
        states are int masks of NFA states (``automata.simulate``), and these are the lines of
        its simulated step (from mask ``m`` on ``sym``: set ``ctx.state = n`` and ``fn``, or
        return ``_unexpected``), taken while ``_SIM`` is set, that is when the transition cache
        is off; otherwise the transition comes from the per-symbol cache ``_M`` or, on a miss,
        from ``_miss(m, sym)`` (both made by ``lazy.LazyExecutor``). Otherwise the machine
        is an eager DFA whose states and transitions are all resolved before the first event.
        ``track_dirty``: record each changed instance in ``_dirty`` (only hosts that persist
        instances ask for it; everyone else skips the write). ``plans``: for an eager DFA, what
        the transitions on each symbol do (:class:`SymbolPlan`), so that an input with one symbol
        gets its actions inlined and no check it cannot need.

        Instances are looked up in ``_cget`` (the instance table's ``get``) by ``gk``: the bare
        value for a program grouped by one value, else the key tuple (``context.GroupContexts``).

        ``compact`` (a grouped eager DFA without timers nor a host that persists instances): the
        table ``_tab`` holds each key's state number, no context (see :meth:`compact_step`); the
        feed then returns None. ``record``: a compact table whose
        entries are records (lists) of the variables then the state number, at index ``record``
        (for programs with variables or initial actions); ``inline_records``: there are no
        initial actions, so a new key's record is built in the feed, not by a call of ``_rec``.
        ``create_late``: a feed of contexts creates a new key's instance in the step of its
        class, and none for a class that would leave it as it was (``Engine.creates_late``).
        """
        if compact:
            return self._compact_feed(keyed, plans or {}, record, inline_records)
        one = self.one_key
        touch = ["elif _dirty is not None:", "    _dirty[id(ctx)] = ctx"] if track_dirty else []
        out = ["def feed_keyed(name, ev, key):" if keyed else "def feed(name, ev):"]
        for k, inp in enumerate(self.p.inputs):
            out.append(f"    {'if' if k == 0 else 'elif'} name == {inp.name!r}:")
            ind = "        "
            gk = ""  # (the table key's name, for a grouped program)
            if grouped:
                assert inp.group is not None
                if keyed:
                    out.append(f"{ind}gk = key[0]" if one else f"{ind}gk = key")
                    gk = "gk"
                else:
                    gk = self.table_key(inp)
                    if "ctx" in gk:  # an error while computing the key belongs to no instance
                        out.append(f"{ind}ctx = None")
                    if gk != "ev":  # grouped by the event value itself: no copy
                        out.append(f"{ind}gk = {gk}")
                        gk = "gk"
                out.append(f"{ind}ctx = _cget({gk})")
            else:
                out += [
                    f"{ind}ctx = _single()",
                    f"{ind}if ctx.terminated:",
                    f"{ind}    _err(ctx, 2, 'program has terminated')",
                    f"{ind}    return ctx",
                ]
            planned = plans is not None and lazy is None and isinstance(inp.classify, ir.CaseSymbol)
            per_class = plans is not None and lazy is None and self._specialise_classes(inp.classify, plans)
            classify = None if planned or per_class else self._classify(inp.classify)
            if classify is not None and not grouped:
                out.append(f"{ind}sym = {classify}")
            # Create a new key's instance in the step of its class, not before classifying
            # (``_first_event``): some class leaves a fresh instance as it was.
            late = create_late and grouped and (planned or per_class) and self._creates_late(inp.classify, plans or {})
            if grouped:
                # A key's first event creates its instance and runs the initial actions in it
                # (conformance README: "when the first event for that key arrives"; document 3.2:
                # when a key value is first encountered), before the event is classified and
                # matched; if the start state does not take it, it is discarded ($error 2) as any
                # instance's. An instance not in memory may be in the host's store (Engine.loader).
                out += [
                    f"{ind}if ctx is None:",
                    f"{ind}    if _loader is not None:",
                    f"{ind}        ctx = _loader({f'({gk},)' if one else gk})",
                ]
                if not late:
                    out += [f"{ind}    if ctx is None:", f"{ind}        ctx = _create({gk})"]
                if classify is not None:
                    out.append(f"{ind}sym = {classify}")
            if lazy is not None:
                body = [
                    "m = ctx.state",
                    "if _SIM:",
                    *(f"    {line}" for line in lazy),
                    "    if fn is not None:",
                    "        fn(ctx, ev)",
                    "    if not n & _OUT:",
                    "        _terminate(ctx)",
                    *(f"    {line}" for line in touch),
                    "    return ctx",
                    "e = _M[sym].get(m)",
                    "if e is None:",
                    "    e = _miss(m, sym)",
                    "    if e is None:",
                    "        return _unexpected(ctx, name, sym)",
                    "ctx.state = e[0]",
                    "fn = e[1]",
                    "if fn is not None:",
                    "    fn(ctx, ev)",
                    "if e[2]:",
                    "    _terminate(ctx)",
                    *touch,
                    "return ctx",
                ]
            elif planned:
                assert plans is not None and isinstance(inp.classify, ir.CaseSymbol)
                plan = plans[inp.classify.symbol]
                body = [*self._first_event(plan, gk, late), *self._planned_step(inp.classify.symbol, plan, track_dirty)]
            elif per_class:
                assert plans is not None
                body = []
                self._planned_arm(inp.classify, plans, track_dirty, (gk, late), "", body)
            else:
                body = [
                    "tr = ctx.state.row[sym]",
                    "if tr is None:",
                    "    return _unexpected(ctx, name, sym)",
                    "target = ctx.state = tr.target",
                    "fn = tr.fn",
                    "if fn is not None:",
                    "    fn(ctx, ev)",
                    "if target.ends:",
                    "    _terminate(ctx)",
                    *touch,
                    "return ctx",
                ]
            out += [ind + line for line in body]
        out += ["    _err(None, 1, f'undeclared input event {name}')", "    return None"]
        return "\n".join(out)

    def _compact_feed(
        self, keyed: bool, plans: dict[int, SymbolPlan], record: int | None, inline_records: bool = False
    ) -> str:
        """``feed`` over a table of state numbers or records (see :meth:`feed`). Per symbol k,
        ``_N{k}`` is the target of each state (None: no transition), ``_K{k}`` the code of its
        transition's function (``RTrans.code``) and ``_F{k}`` the function; ``_E`` says which
        states end an instance; ``_NS``/``_FS`` list them by symbol. A key missing from a table
        of state numbers is at ``_S``; one missing from a table of records gets a new record
        from ``_rec(gk)`` (its initial actions run), or built inline when there are none."""
        one = self.one_key
        self._inline_records = inline_records
        out = ["def feed_keyed(name, ev, key):" if keyed else "def feed(name, ev):"]
        for k, inp in enumerate(self.p.inputs):
            out.append(f"    {'if' if k == 0 else 'elif'} name == {inp.name!r}:")
            ind = "        "
            assert inp.group is not None
            if keyed:
                gk = "key[0]" if one else "key"
            else:
                gk = self.table_key(inp)
                if "ctx" in gk:  # an error while computing the key belongs to no instance
                    out.append(f"{ind}ctx = None")
            if gk != "ev" and not self._key_in_place(gk, inp.classify, plans, record):
                out.append(f"{ind}gk = {gk}")
                gk = "gk"
            if self._specialise_classes(inp.classify, plans):
                out += [ind + line for line in self._case_steps(inp.classify, gk, plans, record)]
                continue
            plan = None
            if isinstance(inp.classify, ir.CaseSymbol) and inp.classify.symbol in plans:
                sym, plan = str(inp.classify.symbol), plans[inp.classify.symbol]
            total = plan is not None and plan.total  # the start state has a transition on sym too
            if record is None and total:
                if self._reads_state(plan):
                    out.append(f"{ind}st = _cget({gk}, _S)")
            else:
                entry = "st" if record is None else "v"
                out.append(f"{ind}{entry} = _cget({gk})")
                if record is not None:  # a key's first event creates its record (initial actions) first
                    out += [f"{ind}if v is None:", f"{ind}    {self._new_record(gk, record)}"]
                if plan is None:
                    classify = self._classify(inp.classify)
                    if "ctx" in classify:  # an error while classifying carries the key (language.md 7.7)
                        out.append(f"{ind}ctx = _keyed({gk})")
                    out.append(f"{ind}sym = {classify}")
                    sym = "sym"
                if record is None:
                    # No variables, initial actions nor timers: a first event that cannot start
                    # leaves a start-state instance, which is the same as none (see _unexpected_key).
                    out.append(f"{ind}if st is None:")
                    if not total:
                        out += [
                            f"{ind}    if {self._compact_table('N', sym)}[_S] is None:",
                            f"{ind}        return _unexpected_key({gk}, name, {sym})",
                        ]
                    out.append(f"{ind}    st = _S")
            out += [ind + line for line in self.compact_step(sym, gk, plan, record)]
        out += ["    _err(None, 1, f'undeclared input event {name}')", "    return None"]
        return "\n".join(out)

    def _key_in_place(self, gk: str, node: ir.Node, plans: dict[int, SymbolPlan], record: int | None) -> bool:
        """May a compact feed read the group key ``gk``, a field of the event (``ev[0]``), at
        each place that needs it rather than name it first (``gk = ev[0]``, a store and a load
        per event)? Its one read on the common path is the table lookup (``v = _cget(ev[0])``);
        a new key's record and an unexpected event's error read it before any action runs, and
        an inlined body names it at its head (``CodeGen._by_key``), also before its actions:
        so an action that changes the event's field in place (``a.sym = ...`` on a marker
        holding the event) cannot change the key the step goes on with. Only where the step
        reads no key after its actions: a table of records (it stores the target in the
        record, not the table) and no symbol whose step may end the instance (that pops the
        key after the actions), each symbol planned, and no class condition reading the key."""
        if record is None or not re.fullmatch(r"ev\[\d+\]", gk):
            return False
        if self._specialise_classes(node, plans):
            symbols = self._case_symbols(node)
            if any(uses("gk", cond) for cond in self._case_conditions(node)):
                return False
        elif isinstance(node, ir.CaseSymbol):
            symbols = [node.symbol]
        else:
            return False
        return all(sym in plans and not plans[sym].ends for sym in symbols)

    def _new_record(self, gk: str, record: int) -> str:
        """The line giving a compact feed's new key its record ``v`` in the table: the record
        built inline (its variables unset, the start state) when there are no initial actions
        (a call of ``_rec`` per new key costs a frame), else by ``_rec``, which runs them."""
        if not self._inline_records:
            return f"v = _rec({gk})"
        return f"v = _tab[{gk}] = [{'UNSET, ' * record}_S]"

    @staticmethod
    def _case_leaves(node: ir.Node) -> int:
        """How many symbols a case clause's arms end in (a symbol named twice counts twice)."""
        if isinstance(node, ir.CaseSymbol):
            return 1
        assert isinstance(node, ir.CaseArm)
        return CodeGen._case_leaves(node.then) + CodeGen._case_leaves(node.otherwise)

    def _specialise_classes(self, node: ir.Node, plans: dict[int, SymbolPlan]) -> bool:
        """Does an input's case clause get a specialised step per class (:meth:`_case_steps`)?
        Only for a clause of at most CASE_LEAVES classes whose symbols all have a plan: past
        that the feed grows more than it gains."""
        if not isinstance(node, ir.CaseArm) or self._case_leaves(node) > CASE_LEAVES:
            return False
        return all(sym in plans for sym in self._case_symbols(node))

    @staticmethod
    def _case_symbols(node: ir.Node) -> list[int]:
        if isinstance(node, ir.CaseSymbol):
            return [node.symbol]
        assert isinstance(node, ir.CaseArm)
        return CodeGen._case_symbols(node.then) + CodeGen._case_symbols(node.otherwise)

    def _case_steps(self, node: ir.Node, gk: str, plans: dict[int, SymbolPlan], record: int | None) -> list[str]:
        """A compact feed's step for an input with a case clause, specialised per class: the
        clause becomes an if/else statement whose every arm runs the step of its symbol as an
        input of that one symbol gets it (one-dimensional tables, actions inlined, checks the
        symbol cannot need left out), instead of the generic step through ``_NS[sym][st]`` and
        a function call per event. A table of records looks the key up (and makes a new key's
        record, running its initial actions) before classifying, as the generic step does; a
        table of state numbers has nothing to run, so each arm looks the key up itself."""
        out: list[str] = []
        if record is not None:
            out += [f"v = _cget({gk})", "if v is None:", f"    {self._new_record(gk, record)}"]
        conditions = self._case_conditions(node)
        if any("ctx" in c for c in conditions):  # an error while classifying carries the key (language.md 7.7)
            out.append(f"ctx = _keyed({gk})")
        self._case_arm(node, gk, plans, record, "", out)
        return out

    def _case_conditions(self, node: ir.Node) -> list[str]:
        if isinstance(node, ir.CaseSymbol):
            return []
        assert isinstance(node, ir.CaseArm)
        return [self.expr(node.cond), *self._case_conditions(node.then), *self._case_conditions(node.otherwise)]

    def _case_arm(
        self, node: ir.Node, gk: str, plans: dict[int, SymbolPlan], record: int | None, ind: str, out: list[str]
    ) -> None:
        if isinstance(node, ir.CaseArm):
            out.append(f"{ind}if {self.expr(node.cond)}:")
            self._case_arm(node.then, gk, plans, record, ind + "    ", out)
            out.append(f"{ind}else:")
            self._case_arm(node.otherwise, gk, plans, record, ind + "    ", out)
            return
        assert isinstance(node, ir.CaseSymbol)
        sym, plan = str(node.symbol), plans[node.symbol]
        lines: list[str] = []  # (from a record, compact_step reads the state itself if it needs it)
        if record is None and plan.total:
            if self._reads_state(plan):
                lines.append(f"st = _cget({gk}, _S)")
        elif record is None:  # see _compact_feed: a first event that cannot start leaves no instance
            lines += [
                f"st = _cget({gk})",
                "if st is None:",
                f"    if _N{sym}[_S] is None:",
                f"        return _unexpected_key({gk}, name, {sym})",
                "    st = _S",
            ]
        out += [ind + line for line in lines + self.compact_step(sym, gk, plan, record)]

    @staticmethod
    def _compact_table(kind: str, sym: str) -> str:
        return f"_{kind}S[{sym}]" if sym == "sym" else f"_{kind}{sym}"

    @staticmethod
    def _reads_state(plan: SymbolPlan | None) -> bool:
        """Does a compact step need the key's state number ``st``? Not when every state goes
        to one target (``plan.target``) running one body or none."""
        return plan is None or plan.target is None or not (plan.uniform or not (plan.bodies or plan.calls))

    @classmethod
    def compact_step(cls, sym: str, gk: str, plan: SymbolPlan | None, record: int | None = None) -> list[str]:
        """The step of a compact feed from state number ``st``: a context (``_view``, inlined for
        actions as ``_VC(gk, _ST[t], vars)``: one call fewer per match) is built only for actions
        and errors, which need one (for the key). A table of state numbers then holds the
        target, or loses the key when the target ends the instance. ``record``: the table holds
        records ``v``, the variables then the state number at index ``record``, which the step
        reads itself (as ``st``, or in its one use); the target is stored before the actions run
        (as ``ctx.state`` is), which use ``v`` as their variables. Locals used once are folded
        (``fold``): ``v[2] = _N1[v[2]]``. A symbol with one acting state (``SymbolPlan.acting``)
        tests that state instead (:meth:`_acting_step`)."""
        nxt, fns = cls._compact_table("N", sym), cls._compact_table("F", sym)
        entry, variables = ("st", "_NV") if record is None else ("v", "v")
        if plan is not None and plan.acting is not None and plan.target is None:
            lines = cls._acting_step(plan, plan.acting, gk, variables, record)
            return lines if record is None else read_state(lines, record)
        if plan is not None and plan.target is not None:
            lines = [f"t = {plan.target}"]
        else:
            lines = [f"t = {nxt}[st]"]
            if plan is None or not plan.total:
                lines += ["if t is None:", f"    return _unexpected(_view({gk}, {entry}), name, {sym})"]
        if record is not None:
            lines.append(f"v[{record}] = t")
        if plan is None:
            lines += [f"fn = {fns}[st]", "if fn is not None:", f"    fn(_VC({gk}, _ST[t], {variables}), ev)"]
        elif plan.uniform:
            lines += [line[4:] for line in cls._by_key(plan.bodies[0], gk, variables)]
        elif len(plan.bodies) == 1 and not plan.calls:
            lines.append(f"if _K{sym}[st]:")
            lines += cls._by_key(plan.bodies[0], gk, variables)
        elif plan.bodies or plan.calls:
            lines += [f"code = _K{sym}[st]", "if code:"]
            for k, body in enumerate(plan.bodies, 1):
                lines.append(f"    {'if' if k == 1 else 'elif'} code == {k}:")
                lines += ["    " + line for line in cls._by_key(body, gk, variables)]
            if plan.calls:
                lines += [
                    f"    {'elif' if plan.bodies else 'if'} code:",
                    f"        {fns}[st](_VC({gk}, _ST[t], {variables}), ev)",
                ]
        if plan is not None and plan.target is not None:  # whether t ends the instance is known
            if plan.ends:
                lines.append(f"_tab.pop({gk}, None)")
            elif record is None:
                lines.append(f"_tab[{gk}] = t")
        elif plan is None or plan.ends:
            lines += ["if _E[t]:", f"    _tab.pop({gk}, None)"]
            if record is None:
                lines += ["else:", f"    _tab[{gk}] = t"]
        elif record is None:
            lines.append(f"_tab[{gk}] = t")
        lines.append("return None")
        lines = fold_target(lines, f"_tab[{gk}] = t" if record is None else f"v[{record}] = t")
        return lines if record is None else read_state(lines, record)

    @classmethod
    def _acting_step(
        cls, plan: SymbolPlan, acting: tuple[int, int, int], gk: str, variables: str, record: int | None
    ) -> list[str]:
        """A compact step on a symbol whose one acting state is known (``SymbolPlan.acting``):
        ``if st == s:`` that state's target stored and its body run, ``else:`` the others' one
        target stored. It reads no table: the general step looks the target up by state and
        then the code (``t = _N2[st]``, ``if _K2[st]:``), two subscripts more per event. As in
        :meth:`compact_step`, a record takes its target before the body runs (as ``ctx.state``
        does), a table of state numbers after it; the target is named ``t`` only for a body
        that reads it (a context's state: ``_ST[t]``)."""
        state, target, other = acting
        body = cls._by_key(plan.bodies[0], gk, variables)
        reads = any(uses("t", line) for line in body)
        store = f"v[{record}] = " if record is not None else f"_tab[{gk}] = "
        stored = [f"    {store}{'t' if reads else target}"]
        lines = [f"if st == {state}:", *([f"    t = {target}"] if reads else [])]
        lines += [*stored, *body] if record is not None else [*body, *stored]
        return [*lines, "else:", f"    {store}{other}", "return None"]

    @staticmethod
    def _by_key(body: list[str], gk: str, variables: str) -> list[str]:
        """A compact feed's inlined body (made ``by_key``): the context it needs, if any (an
        error or a function call takes one; emitting and reading the key do not), and ``gk``."""
        ctx = any("ctx" in line for line in body)
        head = [f"    gk = {gk}"] if gk != "gk" and (ctx or any("gk" in line for line in body)) else []
        if ctx:
            head.append(f"    ctx = _VC(gk, _ST[t], {variables})")
        return head + body

    def _creates_late(self, node: ir.Node, plans: dict[int, SymbolPlan]) -> bool:
        """Does a grouped feed of contexts create a new key's instance in the step of the
        event's class (:meth:`_first_event`)? When some class's step from the start state
        leaves a fresh instance as it was (``SymbolPlan.start_retires``), and the classes'
        conditions cannot fail (an error while classifying carries the instance's key,
        language.md 7.7, so the instance must exist first)."""
        if not any(plans[sym].start_retires for sym in self._case_symbols(node)):
            return False
        return not any("ctx" in c for c in self._case_conditions(node))

    @staticmethod
    def _first_event(plan: SymbolPlan, gk: str, late: bool) -> list[str]:
        """A key's first event when its instance is created late (:meth:`_creates_late`): a
        class whose step from the start state would leave the fresh instance as it was (no
        action, into a state where it retires) creates none, so there is nothing to release,
        mark changed or persist (the Kafka worker drops such an instance's change,
        ``Task._on_terminate``); the feed returns None, as for a compact table. Any other class
        creates it, initial actions and all, before its step."""
        if not late:
            return []
        return ["if ctx is None:", "    return None" if plan.start_retires else f"    ctx = _create({gk})"]

    def _planned_arm(
        self,
        node: ir.Node,
        plans: dict[int, SymbolPlan],
        track_dirty: bool,
        first: tuple[str, bool],
        ind: str,
        out: list[str],
    ) -> None:
        """An eager DFA's step on an event of an input with a case clause, specialised per class
        as a compact feed's (:meth:`_case_steps`): the clause as an if/else statement (its
        conditions evaluated in the same order as the expression :meth:`_classify` makes), each
        arm the step an input of that one symbol gets (:meth:`_planned_step`), not the generic
        step looking the transition up by a computed symbol and calling its function."""
        if isinstance(node, ir.CaseArm):
            out.append(f"{ind}if {self.expr(node.cond)}:")
            self._planned_arm(node.then, plans, track_dirty, first, ind + "    ", out)
            out.append(f"{ind}else:")
            self._planned_arm(node.otherwise, plans, track_dirty, first, ind + "    ", out)
            return
        assert isinstance(node, ir.CaseSymbol)
        plan = plans[node.symbol]
        step = [*self._first_event(plan, *first), *self._planned_step(node.symbol, plan, track_dirty)]
        out += [ind + line for line in step]

    @staticmethod
    def _planned_step(sym: int, plan: SymbolPlan, track_dirty: bool) -> list[str]:
        """The eager DFA's step on ``sym`` with the actions of its transitions inlined, selected
        by ``tr.code`` (1 for ``plan.bodies[0]``, ...; a higher code calls ``tr.fn``)."""
        lines = [f"tr = ctx.state.row[{sym}]"]
        if not plan.total:
            lines += ["if tr is None:", f"    return _unexpected(ctx, name, {sym})"]
        lines.append("target = ctx.state = tr.target" if plan.ends else "ctx.state = tr.target")
        if plan.uniform:
            lines += [line[4:] for line in plan.bodies[0]]  # one level less: no "if code"
        elif plan.bodies or plan.calls:
            lines.append("code = tr.code")
            for k, body in enumerate(plan.bodies, 1):
                lines.append(f"{'if' if k == 1 else 'elif'} code == {k}:")
                lines += body
            if plan.calls:
                lines += [f"{'elif' if plan.bodies else 'if'} code:", "    tr.fn(ctx, ev)"]
        if plan.ends:
            lines += ["if target.ends:", "    _terminate(ctx)"]
            if track_dirty:
                lines += ["else:", "    _dirty[id(ctx)] = ctx"]
        elif track_dirty:
            lines.append("_dirty[id(ctx)] = ctx")
        lines.append("return ctx")
        return lines

    def _classify(self, node: ir.Node) -> str:
        """The symbol of an event of one input: a constant, or its case clause as an expression."""
        if isinstance(node, ir.CaseSymbol):
            return str(node.symbol)
        assert isinstance(node, ir.CaseArm)
        return f"({self._classify(node.then)} if {self.expr(node.cond)} else {self._classify(node.otherwise)})"


@dataclass
class SymbolPlan:
    """What an eager DFA's transitions on one symbol do, for the feed to inline them."""

    #: Bodies (``transition_body`` lines) of the functions inlined; a transition whose ``code``
    #: is k runs bodies[k - 1]; a code beyond them calls its ``fn``.
    bodies: list[list[str]]
    #: Some transitions have a code beyond the inlined bodies.
    calls: bool
    #: Every state has a transition on the symbol (no "unexpected event" check needed).
    total: bool
    #: Some transition on the symbol enters a state that ends the instance (RState.ends).
    ends: bool
    #: Every state has a transition on the symbol and all run bodies[0].
    uniform: bool = False
    #: Every state has a transition on the symbol, all to this state (its number; None: not so).
    target: int | None = None
    #: The start state's transition on the symbol leaves a fresh instance as it was: it runs
    #: nothing and enters a state where the instance retires (``RState.ends``, not terminal),
    #: and creating one runs nothing either (no initial actions, no timers to name an origin for).
    start_retires: bool = False
    #: Every state has a transition on the symbol, none ends the instance, and only one runs
    #: an action (bodies[0], inlined) while every other goes to one same target: (the acting
    #: state's number, its target, the others' target). None: not so. A compact step then
    #: tests that one state (:meth:`CodeGen._acting_step`) instead of looking its target and
    #: its code up in two tables.
    acting: tuple[int, int, int] | None = None


def one_value_key(program: ir.ProgramIR) -> bool:
    """Is the program grouped by one value? Its instances are then kept under the bare value."""
    return program.grouped and all(inp.group is not None and len(inp.group) == 1 for inp in program.inputs)


__all__ = ["CodeGen", "Source", "SymbolPlan", "default_expr", "one_value_key"]
