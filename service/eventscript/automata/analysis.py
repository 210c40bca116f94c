"""Analyses over the automata: the diagnostics of language document §6.3 that need paths.

- cyclic paths with actions but no event marker (error; found while building the NFA);
- ambiguous regular expressions (warning): from some reachable state, one event can be matched
  by two different positions of the expression (1-ambiguity in Brüggemann-Klein and Wood's
  sense, which the document uses);
- variables possibly read before they are set (warning), by a must-be-assigned dataflow over
  the epsilon NFA. The same result tells the engine which reads need no run-time check;
- potentially nonterminating grouped programs (warning: instances may never be released);
- time markers that may fire at the same instant (warning: the one written first wins).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..language import ir
from ..language.diagnostics import Diagnostics
from ..language.lower import Positions
from .actions import OccurrenceTable, Path
from .epsilon import EFA
from .nfa import ENFA
from .simulate import bits

# ---------------------------------------------------------------------------------------
# Definite assignment


Record = Callable[[ir.Var], None] | None


def _reads(e: ir.Node, da: frozenset[int], rec: Record) -> None:
    if isinstance(e, ir.Var):
        if rec is not None and e.slot not in da:
            rec(e)
        return
    for child in _expr_children(e):
        _reads(child, da, rec)


def _expr_children(e: ir.Node) -> Iterable[ir.Node]:
    if isinstance(e, (ir.Unary, ir.ToDouble)):
        return (e.x,)
    if isinstance(e, ir.Binary):
        return (e.left, e.right)
    if isinstance(e, ir.Cond):
        return (e.cond, e.then, e.otherwise)
    if isinstance(e, (ir.Call, ir.Extern)):
        return e.args
    if isinstance(e, ir.Index):
        return (e.obj, e.index)
    if isinstance(e, ir.Field):
        return (e.obj,)
    if isinstance(e, ir.Build):
        return e.values
    if isinstance(e, ir.New):
        return (e.size,)
    return ()


def _actions(actions: list[ir.Node], da: frozenset[int], rec: Record) -> frozenset[int]:
    for a in actions:
        da = _action(a, da, rec)
    return da


def _action(a: ir.Node, da: frozenset[int], rec: Record) -> frozenset[int]:
    if isinstance(a, ir.SetVar):
        _reads(a.value, da, rec)
        return da | {a.slot}
    if isinstance(a, ir.Store):
        return da | {a.slot}
    if isinstance(a, ir.SetIndex):
        for x in (a.obj, a.index, a.value):
            _reads(x, da, rec)
        return da
    if isinstance(a, ir.SetField):
        _reads(a.obj, da, rec)
        _reads(a.value, da, rec)
        return da
    if isinstance(a, ir.Emit):
        _reads(a.value, da, rec)
        return da
    if isinstance(a, ir.If):
        _reads(a.cond, da, rec)
        return _actions(a.then, da, rec) & _actions(a.otherwise, da, rec)
    if isinstance(a, ir.For):
        _reads(a.low, da, rec)
        _reads(a.high, da, rec)
        _actions(a.body, da, rec)  # the body may run zero times
        return da
    raise AssertionError(f"unknown action {a!r}")


def _timer_exprs(spec: ir.Node) -> list[ir.Node]:
    if isinstance(spec, ir.ElapseSpec):
        return [spec.amount]
    assert isinstance(spec, ir.ArriveSpec)
    if spec.time is not None:
        return [spec.time]
    return [c for c in spec.components or [] if c is not None]


def definite_assignment(nfa: ENFA, program: ir.ProgramIR, occ: OccurrenceTable) -> set[int]:
    """ids of the ``ir.Var`` reads that may find their variable unset."""

    def apply(da: frozenset[int], path: Path, rec: Record) -> frozenset[int]:
        for o in path:
            da = _actions(program.units[occ.items[o].unit].actions, da, rec)
        return da

    n = nfa.size
    din: list[frozenset[int] | None] = [None] * n
    din[nfa.start] = frozenset()
    work = [nfa.start]
    while work:
        u = work.pop()
        du = din[u]
        assert du is not None
        outs = [(t, p) for t, p in nfa.eps[u]] + [(e.target, e.path) for e in nfa.sym[u]]
        for t, p in outs:
            out = apply(du, p, None)
            old = din[t]
            new = out if old is None else old & out
            if old is None or new != old:
                din[t] = new
                work.append(t)

    maybe_unset: set[int] = set()

    def rec(v: ir.Var) -> None:
        maybe_unset.add(id(v))

    for u in range(n):
        du = din[u]
        if du is None:
            continue
        for _, p in nfa.eps[u]:
            apply(du, p, rec)
        for e in nfa.sym[u]:
            apply(du, e.path, rec)
            if e.symbol in program.time_symbols:
                for x in _timer_exprs(program.timer_of(e.symbol)):
                    _reads(x, du, rec)
    return maybe_unset


def all_reads(program: ir.ProgramIR) -> list[ir.Var]:
    out: list[ir.Var] = []

    def expr(e: ir.Node) -> None:
        if isinstance(e, ir.Var):
            out.append(e)
        for c in _expr_children(e):
            expr(c)

    def acts(actions: list[ir.Node]) -> None:
        for a in actions:
            if isinstance(a, ir.SetVar):
                expr(a.value)
            elif isinstance(a, ir.SetIndex):
                expr(a.obj)
                expr(a.index)
                expr(a.value)
            elif isinstance(a, ir.SetField):
                expr(a.obj)
                expr(a.value)
            elif isinstance(a, ir.Emit):
                expr(a.value)
            elif isinstance(a, ir.If):
                expr(a.cond)
                acts(a.then)
                acts(a.otherwise)
            elif isinstance(a, ir.For):
                expr(a.low)
                expr(a.high)
                acts(a.body)

    for u in program.units:
        acts(u.actions)
    for spec in program.timers:
        for x in _timer_exprs(spec):
            expr(x)
    return out


def mark_read_checks(program: ir.ProgramIR, maybe_unset: set[int] | None) -> None:
    """Keep run-time unset checks only on reads that may find the variable unset."""
    for v in all_reads(program):
        v.checked = maybe_unset is None or id(v) in maybe_unset


def warn_reads(program: ir.ProgramIR, maybe_unset: set[int], pos: Positions, d: Diagnostics) -> None:
    for v in all_reads(program):
        if id(v) in maybe_unset and id(v) in pos.reads:
            d.warning(pos.reads[id(v)], f"{v.name!r} may be read before it is set",
                      "on some path to this point no action or event marker has set it; reading it "
                      "then gives $error 3")


# ---------------------------------------------------------------------------------------
# Properties of the reachable states


def ambiguous_pairs(efa: EFA, states: Iterable[int]) -> set[tuple[int, int]]:
    """Pairs of marker occurrences that one event can match from one reachable state (a bit mask
    of NFA states). Only the states with an edge on a symbol matter for it, so each such subset
    is looked at once, however many DFA states share it."""
    pairs: set[tuple[int, int]] = set()
    edges = efa.edges
    has: dict[int, int] = {}
    for s, row in enumerate(edges):
        for sym in row:
            has[sym] = has.get(sym, 0) | (1 << s)
    lone = {sym: {s for s in bits(h) if len(edges[s][sym]) < 2} for sym, h in has.items()}
    seen: set[tuple[int, int]] = set()
    for st in states:
        for sym, h in has.items():
            r = st & h
            if not r or (sym, r) in seen:
                continue
            seen.add((sym, r))
            if not r & (r - 1) and r.bit_length() - 1 in lone[sym]:
                continue  # one state with one edge on the symbol: one position
            origins: dict[int, int] = {}
            for s in bits(r):
                for e in edges[s][sym]:
                    origins.setdefault(e.origin, e.marker)
            if len(origins) > 1:
                markers = sorted(set(origins.values()))
                if len(markers) == 1:
                    markers = markers * 2
                for i in range(len(markers)):
                    for j in range(i + 1, len(markers)):
                        pairs.add((markers[i], markers[j]))
    return pairs


def warn_ambiguity(pairs: set[tuple[int, int]], program: ir.ProgramIR, pos: Positions, d: Diagnostics) -> None:
    seen_second: set[int] = set()
    for a, b in sorted(pairs):
        if b < 0 or b in seen_second:
            continue
        seen_second.add(b)
        if a == b:
            # Two copies of one marker, made by a multiplier: e.g. ( ( Up() {...} )+ )*.
            d.warning(pos.markers[b], "ambiguous regular expression: an event can match two copies of this "
                                      "marker made by a multiplier",
                      "the copies' actions are one action and run once per transition; if the nested "
                      "repetition is not meant, write a single one (e.g. R* instead of (R+)*)")
            continue
        ma = program.markers[a] if a >= 0 else None
        where = f"the marker at {ma.line}:{ma.col} ({ma.text})" if ma else "an intersection or difference"
        d.warning(pos.markers[b], f"ambiguous regular expression: an event can match this marker and {where}",
                  "all feasible paths are followed and their actions run in program-text order; "
                  "make sure that is what you mean")


def warn_simultaneous_timers(timer_sets: Iterable[list[int]], program: ir.ProgramIR, pos: Positions,
                             d: Diagnostics) -> None:
    reported: set[tuple[int, int]] = set()
    for syms in timer_sets:
        markers = sorted(program.symbols[s].marker for s in syms)  # type: ignore[type-var]
        for i in range(1, len(markers)):
            pair = (markers[0], markers[i])
            if pair in reported:
                continue
            reported.add(pair)
            first = program.markers[markers[0]]
            d.warning(pos.markers[markers[i]],
                      f"this time marker and the one at {first.line}:{first.col} ({first.text}) may fire at the "
                      f"same instant",
                      "when they do, only the one written first fires")


def warn_nontermination(can_end: bool, all_can_end: bool, pos: Positions, d: Diagnostics) -> None:
    assert pos.regex is not None
    if not can_end:
        msg = "this grouped program never ends an instance"
    elif not all_can_end:
        msg = "this grouped program may never end some instances"
    else:
        return
    d.warning(pos.regex, msg + ": every group key ever seen keeps its instance in memory (a resource leak "
                               "when keys are open-ended)",
              "if keys are open-ended, let the expression terminate, e.g. end it with elapse[...]()")
