"""Epsilon elimination, preserving the actions met along each epsilon path.

Following language document §6.3: a node is *significant* if it has a symbol edge or is the
final node. Each symbol edge s --x--> t becomes an edge from s on x to every significant node u
at the end of an epsilon path from t, carrying the edge's own actions followed by the actions
met on that path; the start node's epsilon paths give the initial states and initial actions.

The (u, path) pairs reachable from t are t's *follow set*. Follow sets are shared, not copied:
an edge points to one, and every edge whose target has the same epsilon closure points to the
same one. In ``(A0() B0() | A1() B1() | ...)*`` each ``B`` edge leads back to the n starts of
the alternatives; copying that set into each of the n edges made elimination (and then the
subset construction, which unions the targets) quadratic. A state set reached through a single
follow set is also the same ``frozenset`` object each time, so the subset construction finds it
again without comparing its elements.

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

Target = tuple[int, Path]  # a state, and the actions on the epsilon path to it


@dataclass
class Follow:
    """The states an edge leads to, each with the actions on the way: shared between edges."""

    targets: tuple[Target, ...]
    states: frozenset[int]
    #: The distinct non-empty action paths among ``targets`` (all a transition needs to merge).
    paths: tuple[Path, ...]
    #: Whether some target is reached with no actions.
    bare: bool

    @classmethod
    def of(cls, targets: tuple[Target, ...]) -> Follow:
        paths = tuple(sorted({p for _, p in targets if p}))
        return cls(targets, frozenset(s for s, _ in targets), paths, any(not p for _, p in targets))

    def paths_after(self, prefix: Path) -> list[Path]:
        """The distinct action paths of an edge whose own actions are ``prefix``."""
        if not prefix:
            return list(self.paths)
        out = [prefix + p for p in self.paths]
        if self.bare:
            out.append(prefix)
        return out


@dataclass
class EFAEdge:
    follow: int  # index into EFA.follows
    #: Actions run before the follow set's: the marker's store, and the actions on the epsilon
    #: path to the closure the follow set is shared from.
    prefix: Path
    marker: int
    origin: int  # the ENFA symbol edge it comes from (one position of the expression)


@dataclass
class EFA:
    """An epsilon-free NFA: states 0..n-1, edges by symbol into shared follow sets."""

    edges: list[dict[int, list[EFAEdge]]]
    follows: list[Follow]
    initial: int  # the follow set of the start node: initial states and initial actions
    final: int | None  # the state that is the final node, if it is live

    @property
    def size(self) -> int:
        return len(self.edges)

    @property
    def start(self) -> Follow:
        return self.follows[self.initial]

    def targets(self, edge: EFAEdge) -> list[Target]:
        """Every (state, path) an edge leads to, its own actions first."""
        pre = edge.prefix
        return [(u, pre + p) for u, p in self.follows[edge.follow].targets]


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


Shared = tuple[int, Path]  # a distinct closure, and actions run before each of its paths


def _closures(nfa: ENFA, live: list[bool]) -> tuple[list[Shared], list[frozenset[Target]]]:
    """Each node's epsilon closure as (index into a list of distinct closures, prefix).

    A component with no significant node of its own and one way out shares the closure it
    leads to, with the actions on the way as a prefix, instead of copying it: the ends of
    ``A0() {x} | A1() {y} | ...`` inside a loop all lead back to the loop's one closure.
    """
    n = nfa.size
    eps = [[(t, p) for t, p in nfa.eps[v] if live[t]] if live[v] else [] for v in range(n)]
    succ = [[t for t, _ in eps[v]] for v in range(n)]
    significant = [live[v] and (v == nfa.final or any(live[e.target] for e in nfa.sym[v])) for v in range(n)]

    comps = _tarjan(n, succ)
    comp_of = [0] * n
    for ci, comp in enumerate(comps):
        for v in comp:
            comp_of[v] = ci
    distinct: list[frozenset[Target]] = []
    interned: dict[frozenset[Target], int] = {}
    shared: list[Shared] = [(0, ())] * len(comps)
    for ci, comp in enumerate(comps):  # sinks first, so successors are done
        own = [(v, ()) for v in comp if significant[v]]
        outs: set[Shared] = set()
        for v in comp:
            for t, path in eps[v]:
                if comp_of[t] != ci:
                    k, pre = shared[comp_of[t]]
                    outs.add((k, path + pre))
        if not own and len(outs) == 1:
            shared[ci] = next(iter(outs))
            continue
        items: set[Target] = set(own)
        for k, pre in outs:
            if pre:
                items.update((u, pre + p) for u, p in distinct[k])
            else:
                items.update(distinct[k])
        if len(items) > MAX_CLOSURE:
            raise AutomatonTooLarge(
                "too many distinct epsilon paths with actions; simplify nested alternatives of action blocks"
            )
        closure = frozenset(items)
        index = interned.get(closure)
        if index is None:
            index = interned[closure] = len(distinct)
            distinct.append(closure)
        shared[ci] = (index, ())
    return [shared[comp_of[v]] for v in range(n)], distinct


def eliminate(nfa: ENFA) -> EFA:
    live = _live_nodes(nfa)
    closure_of, closures = _closures(nfa, live)

    # Number the significant live nodes in the order the follow sets meet them, from the start.
    number: dict[int, int] = {}
    order: list[int] = []
    follows: list[Follow] = []
    follow_of: dict[int, int] = {}  # closure index -> follow index

    def targets(items: frozenset[Target], prefix: Path = ()) -> tuple[Target, ...]:
        out = []
        for u, p in sorted(items):
            s = number.get(u)
            if s is None:
                s = number[u] = len(order)
                order.append(u)
            out.append((s, prefix + p))
        return tuple(out)

    def follow(k: int) -> int:
        f = follow_of.get(k)
        if f is None:
            f = follow_of[k] = len(follows)
            follows.append(Follow.of(targets(closures[k])))
        return f

    initial = len(follows)
    if live[nfa.start]:
        k, pre = closure_of[nfa.start]
        if pre:
            follows.append(Follow.of(targets(closures[k], pre)))
        else:
            initial = follow(k)
    else:
        follows.append(Follow.of(()))
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
            k, pre = closure_of[e.target]
            f = follow_of.get(k)
            if f is None:
                f = follow(k)
            path = e.path + pre
            key = (e.symbol, f, path)
            if key in seen:
                continue
            seen.add(key)
            es = row.get(e.symbol)
            if es is None:
                es = row[e.symbol] = []
            es.append(EFAEdge(f, path, e.marker, e.ident))
        edges.append(row)
    final = number.get(nfa.final) if live[nfa.final] else None
    return EFA(edges, follows, initial, final)
