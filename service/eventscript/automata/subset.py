"""Subset construction: from the epsilon-free NFA to a DFA whose transitions carry actions.

Each DFA state is the set of NFA states reachable by the events seen so far (all feasible
paths at once, language document §3.3.1). The transition on a symbol goes to the set of NFA
states its edges reach, and carries the merged actions of all those edges (``actions.merge``).
The empty set is the error: no path can continue.

``step`` is shared by the eager construction here, the lazy DFA, and the products for ``&``/``-``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .actions import OccurrenceTable, Path, merge
from .epsilon import EFA


class StateLimitExceeded(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the DFA would have more than {limit} states")
        self.limit = limit


def step(efa: EFA, states: frozenset[int], symbol: int) -> tuple[frozenset[int], list[Path]]:
    """The NFA states reached from ``states`` on ``symbol``, and the action paths taken."""
    targets: set[int] = set()
    paths: list[Path] = []
    edges = efa.edges
    for s in states:
        for e in edges[s].get(symbol, ()):
            targets.add(e.target)
            if e.path:
                paths.append(e.path)
    return frozenset(targets), paths


def symbols_from(efa: EFA, states: frozenset[int]) -> set[int]:
    out: set[int] = set()
    for s in states:
        out.update(efa.edges[s])
    return out


@dataclass
class DFAState:
    nfa: frozenset[int]
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
    seqs = SequenceTable()
    start = frozenset(s for s, _ in efa.initial)
    initial_seq = seqs.id(merge((p for _, p in efa.initial), occ))
    index: dict[frozenset[int], int] = {start: 0}
    states = [DFAState(start, efa.final in start)]
    i = 0
    while i < len(states):
        st = states[i]
        i += 1
        for sym in sorted(symbols_from(efa, st.nfa)):
            target, paths = step(efa, st.nfa, sym)
            t = index.get(target)
            if t is None:
                if len(states) >= limit:
                    raise StateLimitExceeded(limit)
                t = index[target] = len(states)
                states.append(DFAState(target, efa.final in target))
            st.trans[sym] = (t, seqs.id(merge(paths, occ)))
    return DFA(states, initial_seq, seqs.items)
