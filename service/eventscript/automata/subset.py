"""Subset construction: from the epsilon-free NFA to a DFA whose transitions carry actions.

Each DFA state is the set of NFA states reachable by the events seen so far (all feasible
paths at once, language document §3.3.1). The transition on a symbol goes to the set of NFA
states its edges reach, and carries the merged actions of all those edges (``actions.merge``).
The empty set is the error: no path can continue.

``determinize`` steps bit masks of NFA states (``simulate.Positions``), as the difference product
(``-``) and the analyses of a lazy DFA do. ``transitions`` is the same step on frozensets, a whole
row at a time: the lazy DFA's rows (drawings, ``eventscript graph``) and the reference the tests
check the mask constructions against.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .actions import OccurrenceTable, Path, merge
from .epsilon import EFA
from .simulate import Positions


class StateLimitExceeded(Exception):
    def __init__(self, limit: int, work: bool = False) -> None:
        super().__init__(
            f"building the DFA would take more than {WORK_LIMIT} steps"
            if work
            else f"the DFA would have more than {limit} states"
        )
        self.limit = limit
        self.work = work


#: The eager construction's budget of work: NFA states visited over all DFA states plus the
#: states whose action paths a transition merges. The largest benchmark programs take ~0.3 M
#: and a DFA of the full 40,000 states of few NFA states each under 1 M; a random program with
#: many nested action blocks took 22 M (18 s) before it met the state limit. Past the budget the
#: program runs on the lazy DFA, which gives the same outputs (tested) and builds only the
#: states the events visit.
WORK_LIMIT = 2_000_000


Row = dict[int, tuple[frozenset[int], list[Path]]]  # symbol -> (target states, action paths)


def transitions(efa: EFA, states: frozenset[int]) -> Row:
    """Every transition from a set of NFA states: symbol -> (states reached, action paths taken).

    One pass over the states' edges, grouped by symbol, so a state set with many symbols costs
    the number of its edges, not symbols x states. The targets of a symbol reached through one
    follow set are that follow set's own ``frozenset``.
    """
    ends: dict[int, dict[tuple[int, Path], None]] = {}
    edges = efa.edges
    for s in states:
        for sym, es in edges[s].items():
            d = ends.setdefault(sym, {})
            for e in es:
                d[(e.follow, e.prefix)] = None
    follows = efa.follows
    row: Row = {}
    for sym in sorted(ends):
        pairs = ends[sym]
        ids = {f for f, _ in pairs}
        if len(ids) == 1:
            targets = follows[next(iter(ids))].states
        else:
            targets = frozenset().union(*(follows[f].states for f in ids))
        paths: list[Path] = []
        for f, prefix in pairs:
            paths.extend(follows[f].paths_after(prefix))
        row[sym] = (targets, paths)
    return row


@dataclass
class DFAState:
    nfa: int  # the NFA states, as a bit mask (``simulate``)
    accepting: bool
    trans: dict[int, tuple[int, int]] = field(default_factory=dict)  # symbol -> (target, sequence)

    @property
    def terminal(self) -> bool:
        """An accepting state with no way out ends the instance (choice 6)."""
        return self.accepting and not self.trans


@dataclass
class DFA:
    states: list[DFAState]
    initial_sequence: int
    sequences: list[Path]  # merged occurrence paths; sequence 0 is the empty one


class SequenceTable:
    def __init__(self) -> None:
        self.items: list[Path] = [()]
        self.index: dict[Path, int] = {(): 0}

    def id(self, path: Path) -> int:
        i = self.index.get(path)
        if i is None:
            i = self.index[path] = len(self.items)
            self.items.append(path)
        return i


def determinize(efa: EFA, occ: OccurrenceTable, limit: int) -> DFA:
    """The DFA, states numbered breadth-first with each state's symbols in ascending order.

    States are bit masks of NFA states stepped through :class:`simulate.Positions`, so a state
    costs a few int operations per symbol, and the merged actions of a transition are computed
    once per symbol and set of NFA states whose edges on it carry actions. Past ``limit`` states
    it gives up (the caller falls back to the lazy DFA) before building any state object.
    """
    pos = Positions(efa, occ)
    seqs = SequenceTable()
    initial_seq = seqs.id(merge(efa.start.paths, occ))
    index: dict[int, int] = {pos.start: 0}
    masks = [pos.start]
    rows: list[dict[int, tuple[int, int]]] = []
    i = work = 0
    while i < len(masks):
        m = masks[i]
        i += 1
        work += m.bit_count()
        if work > WORK_LIMIT:
            raise StateLimitExceeded(limit, work=True)
        row: dict[int, tuple[int, int]] = {}
        for sym, target, acting in pos.row(m):
            if acting:
                work += acting.bit_count()
            t = index.get(target)
            if t is None:
                if len(masks) >= limit:
                    raise StateLimitExceeded(limit)
                t = index[target] = len(masks)
                masks.append(target)
            row[sym] = (t, seqs.id(pos.merged(acting, sym)) if acting else 0)
        rows.append(row)
    final = pos.final
    states = [DFAState(m, bool(m & final), row) for m, row in zip(masks, rows)]
    return DFA(states, initial_seq, seqs.items)
