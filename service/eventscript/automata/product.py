"""Intersection ``L & R`` and difference ``L - R`` by product construction.

Both operands are compiled on their own to epsilon-free NFAs and explored together; the product
is embedded in the enclosing NFA as an ordinary fragment (one entry, one exit). A product step
carries the actions of both sides' paths as *separate* paths (parallel epsilon edges to the same
product state, ``actions.strands``), not merged into one: they are different paths (document
7.3), so only the transition's final merge may order them, and a text order chosen here must not
count as a path's own order there. Language document §3.3.1: & and - follow all feasible paths
through both operands, so actions in the right operand of ``-`` run when that operand is matched.

- ``L & R``: a product state is a *pair of NFA states* (l, r), one path through each operand.
  It steps when both sides step on the symbol and accepts when both accept. Pairing single
  states (not sets) keeps only the paths that are feasible *jointly*: in ``( .* {a} & . )`` the
  left path that matches nothing reaches ``{a}`` at once, but no path of ``.`` matches nothing,
  so ``{a}`` does not run when the intersection is entered.
- ``L - R``: a product state is (l, SR): one left NFA state and the *set* of right NFA states
  (the subset construction of R, which the complement needs). It goes on while the left side
  has a path (SR may become empty: R can no longer match) and accepts when l accepts and SR
  does not. Every path of R runs its actions, as before.

The product is trimmed to the states from which acceptance is still reachable, so every state
of the embedded fragment can still be extended to a match. The document builds the same
language through De Morgan's laws and complemented DFAs; the direct product is smaller.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Protocol, TypeVar

from ..language import ir
from .actions import OccurrenceTable, Path, strands
from .epsilon import EFA, EFAEdge, eliminate
from .graphs import can_reach
from .nfa import ENFA, AutomatonTooLarge
from .simulate import Positions


class OperandBuilder(Protocol):
    """What the product needs from the Thompson construction (``thompson.Builder``)."""

    occ: OccurrenceTable
    state_limit: int

    def build(self, regex: ir.Node) -> ENFA: ...


#: Where a product edge leads: product states, each with the actions on the way. Many edges
#: share one (every edge that pairs the same two follow sets), so it is built and embedded once:
#: in ``( A0() B0() | A1() B1() | ... )* & ( . . )*`` each B leads back to all n starts.
Targets = list[tuple[int, Path]]
#: A product state before numbering: the left operand's state and the right's (a state of the
#: intersection's right operand, or the difference's right state set as a bit mask).
PairKey = tuple[int, int]
_Counted = TypeVar("_Counted")

#: How many (product state, action path) pairs one product may enumerate while building its edges.
#: Each edge pairs every action path of the left operand's step with every one of the right's;
#: nested optional repetitions of action blocks make those paths exponential in number, and
#: ``( ( A()? {...} ){0,2} ){0,2}{0,2} & ...`` then pairs tens of millions (minutes of work, the
#: compiler apparently hung). Past this budget the program gets a compile error instead.
MAX_PATH_PAIRS = 2_000_000


class _Product:
    """Product states numbered as found, their edges (symbol, target set) and the target sets."""

    def __init__(self, kind: str, limit: int) -> None:
        self.kind = kind
        self.limit = limit
        self.index: dict[PairKey, int] = {}
        self.keys: list[PairKey] = []
        self.rows: list[list[tuple[int, int]]] = []  # per state: (symbol, target set)
        self.target_sets: list[Targets] = []
        #: Target set keys -> their index: callers look here first, so that most edges (which
        #: share a target set) build nothing.
        self.known: dict[Hashable, int] = {}
        #: Pairs left of MAX_PATH_PAIRS.
        self.budget = MAX_PATH_PAIRS

    def state(self, key: PairKey) -> int:
        i = self.index.get(key)
        if i is None:
            if len(self.keys) >= self.limit:
                raise AutomatonTooLarge(
                    f"the {self.kind} needs more than {self.limit} states; raise the state "
                    f"limit or simplify its operands"
                )
            i = self.index[key] = len(self.keys)
            self.keys.append(key)
        return i

    def counted(self, pairs: Iterable[_Counted]) -> Iterator[_Counted]:
        """``pairs``, charged to the product's budget of path pairs (MAX_PATH_PAIRS)."""
        for pair in pairs:
            self.budget -= 1
            if self.budget < 0:
                raise AutomatonTooLarge(
                    f"the {self.kind} pairs more than {MAX_PATH_PAIRS:,} action paths of its operands; "
                    f"simplify them (nested optional repetitions of action blocks multiply the paths)"
                )
            yield pair

    def target_set(self, key: Hashable, build: Callable[[], Iterable[tuple[PairKey, Path]]]) -> int:
        """The target set for ``key``, built (product states found on the way) the first time."""
        t = self.known.get(key)
        if t is None:
            targets = list(dict.fromkeys((self.state(k), path) for k, path in self.counted(build())))
            t = self.known[key] = len(self.target_sets)
            self.target_sets.append(targets)
        return t


def _intersection(left: EFA, right: EFA, occ: OccurrenceTable, limit: int) -> tuple[_Product, Targets, list[bool]]:
    prod = _Product("intersection", limit)
    entries = list(
        dict.fromkeys(
            prod.counted(
                (prod.state((ls, r)), p)
                for ls, pl in left.start.targets
                for r, pr in right.start.targets
                for p in strands([pl, pr])
            )
        )
    )
    i = 0
    while i < len(prod.keys):
        ls, r = prod.keys[i]
        i += 1
        row: dict[tuple[int, int], None] = {}
        lrow, rrow = left.edges[ls], right.edges[r]
        for sym in sorted(lrow.keys() & rrow.keys()):
            for el in lrow[sym]:
                for er in rrow[sym]:

                    def build(el: EFAEdge = el, er: EFAEdge = er) -> Iterable[tuple[PairKey, Path]]:
                        return (
                            ((lt, rt), p)
                            for lt, pl in left.targets(el)
                            for rt, pr in right.targets(er)
                            for p in strands([pl, pr])
                        )

                    row[(sym, prod.target_set((el.follow, el.prefix, er.follow, er.prefix), build))] = None
        prod.rows.append(list(row))
    accepting = [ls == left.final and r == right.final for ls, r in prod.keys]
    return prod, entries, accepting


def _difference(left: EFA, right: EFA, occ: OccurrenceTable, limit: int) -> tuple[_Product, Targets, list[bool]]:
    """The right operand's state sets are bit masks stepped through ``simulate.Positions``: one
    symbol at a time, only the symbols the left state has edges on, and the right's action paths
    looked up once per set of right states whose edges carry actions."""
    prod = _Product("difference", limit)
    pos = Positions(right, occ)
    start_r = pos.start
    entries = list(
        dict.fromkeys(
            prod.counted(
                (prod.state((ls, start_r)), p)
                for ls, pl in left.start.targets
                for p in strands([pl, *right.start.paths])
            )
        )
    )
    right_rows: dict[int, dict[int, tuple[int, int]]] = {}  # right states -> symbol -> (reached, acting)
    i = 0
    while i < len(prod.keys):
        ls, sr = prod.keys[i]
        i += 1
        rrow = right_rows.get(sr)
        if rrow is None:
            rrow = right_rows[sr] = {sym: (t, acting) for sym, t, acting in pos.row(sr)}
        row: dict[tuple[int, int], None] = {}
        for sym, es in sorted(left.edges[ls].items()):
            sr2, acting = rrow.get(sym, (0, 0))  # (0, 0): the right operand can no longer match
            rpaths = pos.paths(acting, sym) if acting else ()
            for el in es:
                key = (el.follow, el.prefix, sr2, rpaths)
                t = prod.known.get(key)
                if t is None:

                    def build(
                        el: EFAEdge = el, sr2: int = sr2, rpaths: tuple[Path, ...] = rpaths
                    ) -> Iterable[tuple[PairKey, Path]]:
                        return (((lt, sr2), p) for lt, pl in left.targets(el) for p in strands([pl, *rpaths]))

                    t = prod.target_set(key, build)
                row[(sym, t)] = None
        prod.rows.append(list(row))
    final = pos.final
    accepting = [ls == left.final and not sr & final for ls, sr in prod.keys]
    return prod, entries, accepting


def embed_product(builder: OperandBuilder, nfa: ENFA, r: ir.RInter | ir.RDiff) -> tuple[int, int]:
    left = eliminate(builder.build(r.left))
    right = eliminate(builder.build(r.right))
    build = _intersection if isinstance(r, ir.RInter) else _difference
    prod, entries, accepting = build(left, right, builder.occ, builder.state_limit)

    # Trim: keep the product states from which an accepting state can be reached. The target
    # sets are nodes of that graph too (after the states), so it stays as small as the product.
    n = len(prod.keys)
    succ = [[n + t for _, t in row] for row in prod.rows] + [[k for k, _ in ts] for ts in prod.target_sets]
    live = can_reach(succ, accepting + [False] * len(prod.target_sets))
    entry, exit_ = nfa.node(), nfa.node()
    node = {k: nfa.node() for k in range(n) if live[k]}
    hub: dict[int, int] = {}  # target set -> its node: one symbol edge in, an epsilon edge per live target

    def hub_node(t: int) -> int:
        h = hub.get(t)
        if h is None:
            h = hub[t] = nfa.node()
            for k, path in prod.target_sets[t]:
                if live[k]:
                    nfa.epsilon(h, node[k], path)
        return h

    for k, path in entries:
        if live[k]:
            nfa.epsilon(entry, node[k], path)
    for a, row in enumerate(prod.rows):
        if not live[a]:
            continue
        source = node[a]
        for sym, t in row:
            if live[n + t]:
                h = hub.get(t)
                nfa.edge(source, sym, hub_node(t) if h is None else h, (), -1)
        if accepting[a]:
            nfa.epsilon(node[a], exit_)
    return entry, exit_
