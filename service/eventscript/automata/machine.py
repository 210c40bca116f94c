"""Machines: the eager DFA and the lazy DFA behind one interface.

As in Rust's ``regex-automata``, the engine does not care which one it runs:

- :class:`DFAMachine` holds the whole transition table, built at compile time.
- :class:`LazyDFA` keeps the epsilon-free NFA (size linear in the program) and builds DFA states
  on demand, with the same steps and the same action merge as the eager construction, so it
  behaves identically. Its ``transitions`` (whole rows, frozenset keys) serve drawings (the
  compile-time analyses step masks through ``simulate.Positions``); the engine runs it through
  ``simulate.PositionSets`` instead (states as int masks, one symbol's transition at a time)
  behind the transition cache of ``hybrid``, which falls back to simulating every step when it
  thrashes. Snapshots store the same sorted list of
  NFA states either way.

Both answer (:class:`Machine`): the start state and initial actions; all transitions from a
state (symbol → target state key and the action units to run, in order); whether a state is
accepting. State keys are ints for the DFA and frozensets of NFA states for the lazy DFA.

``Machine`` is the compile-time interface: the compiled program holds one, drawings and
analyses read it. The engine does not run it through this interface: it chooses an executor
for the machine's kind (``engine.eager``, ``engine.lazy``) that runs it in a form made for
speed (rows of resolved transitions, int masks behind a transition cache), so the executors
do not implement ``Machine``; they share the engine's own executor interface instead.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Protocol

from .actions import Occurrence, OccurrenceTable, merge
from .epsilon import EFA, EFAEdge, Follow
from .subset import DFA, transitions

Units = tuple[int, ...]


class Machine(Protocol):
    """What a compiled program's machine answers, whichever kind it is (see the module docstring)."""

    kind: str

    def start(self) -> tuple[Hashable, Units]: ...

    # A Mapping (read-only, so covariant): each kind answers rows keyed by its own state keys.
    def transitions(self, key: Any) -> Mapping[int, tuple[Hashable, Units]]: ...

    def accepting(self, key: Any) -> bool: ...

    def state_to_json(self, key: Any) -> Any: ...

    def state_from_json(self, data: Any) -> Hashable: ...

    def clear_cache(self) -> None: ...

    def to_json(self) -> dict[str, Any]: ...


class DFAMachine:
    kind = "dfa"

    def __init__(self, initial: Units, accepting: list[bool], trans: list[dict[int, tuple[int, Units]]]) -> None:
        self._initial = initial
        self._accepting = accepting
        self._trans = trans

    @classmethod
    def from_dfa(cls, dfa: DFA, occ: OccurrenceTable) -> DFAMachine:
        seqs = [occ.units(p) for p in dfa.sequences]
        trans = [{sym: (t, seqs[q]) for sym, (t, q) in st.trans.items()} for st in dfa.states]
        return cls(seqs[dfa.initial_sequence], [st.accepting for st in dfa.states], trans)

    @property
    def size(self) -> int:
        return len(self._trans)

    def start(self) -> tuple[int, Units]:
        return 0, self._initial

    def transitions(self, key: int) -> dict[int, tuple[int, Units]]:
        return self._trans[key]

    def accepting(self, key: int) -> bool:
        return self._accepting[key]

    def state_to_json(self, key: int) -> Any:
        return key

    def state_from_json(self, data: Any) -> int:
        if not isinstance(data, int) or not 0 <= data < len(self._trans):
            raise ValueError(f"no DFA state {data!r}")
        return data

    def clear_cache(self) -> None:
        pass

    def to_json(self) -> dict[str, Any]:
        seq_index: dict[Units, int] = {}
        seqs: list[list[int]] = []

        def sid(u: Units) -> int:
            if u not in seq_index:
                seq_index[u] = len(seqs)
                seqs.append(list(u))
            return seq_index[u]

        states = [
            {"accepting": acc, "trans": [[sym, t, sid(u)] for sym, (t, u) in sorted(tr.items())]}
            for acc, tr in zip(self._accepting, self._trans)
        ]
        return {"kind": "dfa", "initial": list(self._initial), "states": states, "sequences": seqs}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DFAMachine:
        seqs = [tuple(s) for s in data["sequences"]]
        trans = [{sym: (t, seqs[q]) for sym, t, q in st["trans"]} for st in data["states"]]
        return cls(tuple(data["initial"]), [bool(st["accepting"]) for st in data["states"]], trans)


class LazyDFA:
    kind = "lazy"

    def __init__(self, efa: EFA, occ: OccurrenceTable) -> None:
        self.efa = efa
        self.occ = occ
        self._cache: dict[frozenset[int], dict[int, tuple[frozenset[int], Units]]] = {}
        self._start = (efa.start.states, occ.units(merge(efa.start.paths, occ)))

    def start(self) -> tuple[frozenset[int], Units]:
        return self._start

    def transitions(self, key: frozenset[int]) -> dict[int, tuple[frozenset[int], Units]]:
        row = self._cache.get(key)
        if row is None:
            row = {
                sym: (target, self.occ.units(merge(paths, self.occ)))
                for sym, (target, paths) in transitions(self.efa, key).items()
            }
            self._cache[key] = row
        return row

    def accepting(self, key: frozenset[int]) -> bool:
        return self.efa.final is not None and self.efa.final in key

    def state_to_json(self, key: frozenset[int]) -> Any:
        return sorted(key)

    def state_from_json(self, data: Any) -> frozenset[int]:
        if not isinstance(data, list) or not all(isinstance(s, int) and 0 <= s < self.efa.size for s in data):
            raise ValueError(f"not a lazy-DFA state: {data!r}")
        return frozenset(data)

    @property
    def cached_states(self) -> int:
        return len(self._cache)

    def clear_cache(self) -> None:
        self._cache.clear()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "lazy",
            "initial": self.efa.initial,
            "final": self.efa.final,
            "follows": [[[s, list(p)] for s, p in f.targets] for f in self.efa.follows],
            "edges": [
                [[sym, [[e.follow, list(e.prefix), e.marker, e.origin] for e in es]] for sym, es in sorted(row.items())]
                for row in self.efa.edges
            ],
            "occurrences": [[o.unit, o.order, o.copy] for o in self.occ.items],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LazyDFA:
        occ = OccurrenceTable()
        occ.load([Occurrence(u, order, copy) for u, order, copy in data["occurrences"]])
        follows = [Follow.of(tuple((s, tuple(p)) for s, p in f)) for f in data["follows"]]
        # Each edge keeps its marker and origin (explain/ and upgrade/ read them); files written before
        # they were kept hold [follow, prefix] only, read as before (no marker, the edge's index).
        edges = [
            {
                sym: [EFAEdge(e[0], tuple(e[1]), *(e[2:4] if len(e) >= 4 else (-1, k))) for k, e in enumerate(es)]
                for sym, es in row
            }
            for row in data["edges"]
        ]
        efa = EFA(edges, follows, data["initial"], data["final"])
        return cls(efa, occ)


def machine_from_json(data: dict[str, Any]) -> Machine:
    kind = data.get("kind")
    if kind == "dfa":
        return DFAMachine.from_json(data)
    if kind == "lazy":
        return LazyDFA.from_json(data)
    raise ValueError(f"unknown machine kind {kind!r}")
