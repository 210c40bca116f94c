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

from collections import deque
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
#: Definitely assigned variables, as a bit mask of their slots.
Assigned = int


def _reads(e: ir.Node, da: Assigned, rec: Record) -> None:
    if isinstance(e, ir.Var):
        if rec is not None and not da >> e.slot & 1:
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


def _actions(actions: list[ir.Node], da: Assigned, rec: Record) -> Assigned:
    for a in actions:
        da = _action(a, da, rec)
    return da


def _action(a: ir.Node, da: Assigned, rec: Record) -> Assigned:
    if isinstance(a, ir.SetVar):
        _reads(a.value, da, rec)
        return da | 1 << a.slot
    if isinstance(a, ir.Store):
        return da | 1 << a.slot
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
    """ids of the ``ir.Var`` reads that may find their variable unset.

    A must-be-assigned dataflow over the epsilon NFA. An action block only ever adds to what is
    assigned, whatever was assigned before (an ``if`` adds what both branches add, a loop
    nothing), so a path's effect is the union with its *gen* set, computed once per path; and
    the reads of a unit that may find a variable unset depend only on what is assigned when it
    starts, so they are found once per (unit, assigned) pair.
    """
    units = program.units
    unit_of = [o.unit for o in occ.items]
    unit_gen: dict[int, Assigned] = {}
    path_gen: dict[Path, Assigned] = {(): 0}

    def gen(path: Path) -> Assigned:
        g = path_gen.get(path)
        if g is None:
            g = 0
            for o in path:
                u = unit_of[o]
                ug = unit_gen.get(u)
                if ug is None:
                    ug = unit_gen[u] = _actions(units[u].actions, 0, None)
                g |= ug
            path_gen[path] = g
        return g

    n = nfa.size
    outs = [[(t, gen(p)) for t, p in nfa.eps[u]] + [(e.target, gen(e.path)) for e in nfa.sym[u]] for u in range(n)]
    din: list[Assigned | None] = [None] * n
    din[nfa.start] = 0
    work = deque([nfa.start])  # first in, first out: a node is mostly final when it is first reached
    queued = [False] * n
    queued[nfa.start] = True
    while work:
        u = work.popleft()
        queued[u] = False
        du = din[u]
        assert du is not None
        for t, g in outs[u]:
            out = du | g
            old = din[t]
            if old is None or old & out != old:
                din[t] = out if old is None else old & out
                if not queued[t]:
                    queued[t] = True
                    work.append(t)

    maybe_unset: set[int] = set()

    def rec(v: ir.Var) -> None:
        maybe_unset.add(id(v))

    checked: set[tuple[int, Assigned]] = set()

    def apply(da: Assigned, path: Path) -> None:
        for o in path:
            u = unit_of[o]
            if (u, da) not in checked:
                checked.add((u, da))
                _actions(units[u].actions, da, rec)
            da |= unit_gen[u]

    timers_checked: set[tuple[int, Assigned]] = set()
    for u in range(n):
        du = din[u]
        if du is None:
            continue
        for _, p in nfa.eps[u]:
            apply(du, p)
        for e in nfa.sym[u]:
            apply(du, e.path)
            if e.symbol in program.time_symbols and (e.symbol, du) not in timers_checked:
                timers_checked.add((e.symbol, du))
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
    never_set = {v.slot for v in program.variables if v.never_set}  # the checker warned once for all reads
    for v in all_reads(program):
        if id(v) in maybe_unset and id(v) in pos.reads and v.slot not in never_set:
            d.warning(
                pos.reads[id(v)],
                f"{v.name!r} may be read before it is set",
                "on some path to this point no action or event marker has set it; reading it then gives $error 3",
                "maybe-unset",
            )


# ---------------------------------------------------------------------------------------
# Properties of the reachable states


def ambiguous_pairs(efa: EFA, states: Iterable[int]) -> set[tuple[int, int]]:
    """Pairs of marker occurrences that one event can match from one reachable state (a bit mask
    of NFA states). A state whose NFA states have at most one edge per symbol between them is
    skipped at once."""
    pairs: set[tuple[int, int]] = set()
    edges = efa.edges
    for st in states:
        members = bits(st)
        if len(members) == 1 and all(len(es) == 1 for es in edges[members[0]].values()):
            continue
        by_symbol: dict[int, dict[int, int]] = {}
        for s in members:
            for sym, es in edges[s].items():
                origins = by_symbol.setdefault(sym, {})
                for e in es:
                    origins.setdefault(e.origin, e.marker)
        for origins in by_symbol.values():
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
            d.warning(
                pos.markers[b],
                "ambiguous regular expression: an event can match two copies of this marker made by a multiplier",
                "the copies' actions are one action and run once per transition; if the nested "
                "repetition is not meant, write a single one (e.g. R* instead of (R+)*)",
                "ambiguous",
            )
            continue
        ma = program.markers[a] if a >= 0 else None
        where = f"the marker at {ma.line}:{ma.col} ({ma.text})" if ma else "an intersection or difference"
        d.warning(
            pos.markers[b],
            f"ambiguous regular expression: an event can match this marker and {where}",
            "all feasible paths are followed and their actions run in program-text order; "
            "make sure that is what you mean",
            "ambiguous",
        )


def warn_simultaneous_timers(
    timer_sets: Iterable[list[int]], program: ir.ProgramIR, pos: Positions, d: Diagnostics
) -> None:
    reported: set[tuple[int, int]] = set()
    for syms in timer_sets:
        # every time symbol has its marker
        markers = sorted(m for s in syms if (m := program.symbols[s].marker) is not None)
        for i in range(1, len(markers)):
            pair = (markers[0], markers[i])
            if pair in reported:
                continue
            reported.add(pair)
            first = program.markers[markers[0]]
            d.warning(
                pos.markers[markers[i]],
                f"this time marker and the one at {first.line}:{first.col} ({first.text}) may fire at the same instant",
                "when they do, only the one written first fires",
                "same-instant",
            )


def warn_nontermination(can_end: bool, all_can_end: bool, pos: Positions, d: Diagnostics) -> None:
    assert pos.regex is not None
    if not can_end:
        msg = "this grouped program never ends an instance"
    elif not all_can_end:
        msg = "this grouped program may never end some instances"
    else:
        return
    # (Not "every key keeps its instance": the engine releases an instance back at its start with
    # nothing to remember, as a fresh one would behave the same (engine/liveness.py), which this
    # layer cannot tell; a door program's closed doors go, those left open stay.)
    d.warning(
        pos.regex,
        msg + ": a key's instance stays in memory unless it comes back to its start with nothing to remember "
        "(a resource leak when keys are open-ended)",
        "if keys are open-ended, let the expression terminate, e.g. end it with elapse[...]();"
        " for a fixed set of keys, accept it with // eventscript: allow never-ends on this line",
        "never-ends",
    )
