"""Epsilon elimination, preserving the actions met along each epsilon path.

Following language document §6.3: a node is *significant* if it has a symbol edge or is the
final node. Each symbol edge s --x--> t becomes one edge s --x--> u for every epsilon path from
t to a significant node u, carrying the edge's own actions followed by the actions met on that
path; the start node's epsilon paths give the initial states and initial actions.

Epsilon cycles carry no actions (a cyclic path with actions but no event marker is a compile
error, detected here too), so the action sequences over all epsilon walks are exactly those over
acyclic paths. That lets the closure be computed once per strongly connected component of the
epsilon graph instead of enumerating paths.

Before elimination, nodes from which the final node cannot be reached are dropped: an event that
leads only to them cannot continue any match.
"""

from __future__ import annotations

from dataclasses import dataclass

from .actions import Path
from .graphs import can_reach, reachable
from .nfa import ENFA, AutomatonTooLarge

MAX_CLOSURE = 50_000


@dataclass
class EFAEdge:
    target: int
    path: Path
    marker: int
    origin: int  # the ENFA symbol edge it comes from (one position of the expression)


@dataclass
class EFA:
    """An epsilon-free NFA: states 0..n-1, edges by symbol, initial (state, path) pairs."""

    edges: list[dict[int, list[EFAEdge]]]
    initial: list[tuple[int, Path]]
    final: int | None  # the state that is the final node, if it is live

    @property
    def size(self) -> int:
        return len(self.edges)


def _tarjan(n: int, succ: list[list[int]]) -> list[list[int]]:
    """Strongly connected components, in reverse topological order (sinks first)."""
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    comps: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            recurse = False
            while i < len(succ[v]):
                w = succ[v][i]
                i += 1
                if index[w] < 0:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if on_stack[w]:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                comps.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comps


def cyclic_action_occurrences(nfa: ENFA) -> list[int]:
    """Occurrences on an epsilon cycle: actions on a cyclic path without an event marker."""
    n = nfa.size
    succ = [[t for t, _ in nfa.eps[v]] for v in range(n)]
    comp_of = [0] * n
    comps = _tarjan(n, succ)
    for ci, comp in enumerate(comps):
        for v in comp:
            comp_of[v] = ci
    bad: list[int] = []
    for v in range(n):
        for t, path in nfa.eps[v]:
            if path and comp_of[t] == comp_of[v]:
                bad.extend(path)
    return bad


def _live_nodes(nfa: ENFA) -> list[bool]:
    """Nodes reachable from the start from which the final node can still be reached."""
    succ = [[t for t, _ in nfa.eps[v]] + [e.target for e in nfa.sym[v]] for v in range(nfa.size)]
    fwd = reachable(succ, [nfa.start])
    bwd = can_reach(succ, [v == nfa.final for v in range(nfa.size)])
    return [f and b for f, b in zip(fwd, bwd)]


def eliminate(nfa: ENFA) -> EFA:
    n = nfa.size
    live = _live_nodes(nfa)
    eps = [[(t, p) for t, p in nfa.eps[v] if live[t]] if live[v] else [] for v in range(n)]
    succ = [[t for t, _ in eps[v]] for v in range(n)]
    significant = [live[v] and (v == nfa.final or any(live[e.target] for e in nfa.sym[v])) for v in range(n)]

    comps = _tarjan(n, succ)
    comp_of = [0] * n
    for ci, comp in enumerate(comps):
        for v in comp:
            comp_of[v] = ci
    closure: list[frozenset[tuple[int, Path]]] = [frozenset()] * len(comps)
    for ci, comp in enumerate(comps):  # sinks first, so successors are done
        items: set[tuple[int, Path]] = {(v, ()) for v in comp if significant[v]}
        for v in comp:
            for t, path in eps[v]:
                tc = comp_of[t]
                if tc == ci:
                    continue  # inside a component: no actions (checked separately)
                if path:
                    items.update((u, path + p) for u, p in closure[tc])
                else:
                    items.update(closure[tc])
        if len(items) > MAX_CLOSURE:
            raise AutomatonTooLarge("too many distinct epsilon paths with actions; simplify nested "
                                    "alternatives of action blocks")
        closure[ci] = frozenset(items)

    # Number the significant live nodes in breadth-first order from the start.
    number: dict[int, int] = {}
    order: list[int] = []

    def state(v: int) -> int:
        s = number.get(v)
        if s is None:
            s = number[v] = len(order)
            order.append(v)
        return s

    initial: list[tuple[int, Path]] = []
    if live[nfa.start]:
        initial = sorted((state(u), p) for u, p in closure[comp_of[nfa.start]])
    edges: list[dict[int, list[EFAEdge]]] = []
    i = 0
    while i < len(order):
        v = order[i]
        i += 1
        row: dict[int, list[EFAEdge]] = {}
        seen: set[tuple[int, int, Path]] = set()
        for e in nfa.sym[v]:
            if not live[e.target]:
                continue
            for u, p in sorted(closure[comp_of[e.target]]):
                key = (e.symbol, u, e.path + p)
                if key in seen:
                    continue
                seen.add(key)
                row.setdefault(e.symbol, []).append(EFAEdge(state(u), e.path + p, e.marker, e.ident))
        edges.append(row)
    final = number.get(nfa.final) if live[nfa.final] else None
    return EFA(edges, initial, final)
