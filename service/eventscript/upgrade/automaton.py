"""A compiled program's DFA states as positions in its text.

An eager DFA state is a set of states of the epsilon-free NFA, and each of those waits before one
copy of a textual marker (multipliers make several copies) or is the end of the expression. The
numbers of DFA states mean nothing across versions, but the markers do, through the structural
diff (``diff``). A state is best named by what was matched *last*: "after ``Opened()``" stays the
same state when an alternative is added to what follows it, whereas "waiting for ``Closed()`` or
``elapse``" would not. So each state gets its *histories*: the sets of marker copies whose edges
the last event took to reach it (``START`` for the initial state), and each copy the set of NFA
states its edges lead to (``after``). A state's NFA states are the union of ``after`` over any of
its histories; the plan maps a history through the diff and takes that union in the new program.

The automaton is rebuilt from the intermediate form alone (Thompson, epsilon elimination, subset
construction: the compiler's own stages, which are deterministic), so compiled JSON files work as
well as sources, and its states are numbered as the compiled machine's are (checked).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..automata.actions import OccurrenceTable
from ..automata.compile import DEFAULT_STATE_LIMIT
from ..automata.compiled import CompiledProgram
from ..automata.epsilon import EFA, eliminate
from ..automata.machine import DFAMachine
from ..automata.subset import determinize
from ..automata.thompson import build_nfa
from ..language import ir


class NotPlannable(Exception):
    """A program whose states cannot be listed (it runs on the lazy DFA)."""


@dataclass(frozen=True, order=True)
class Copy:
    """One copy of a textual marker in the automaton (``R{3}`` has three of each of R's markers).
    ``marker`` is -1 for the edges of a ``&`` or ``-`` product, which stand for no one marker;
    ``copy`` then tells those edges apart."""

    marker: int
    copy: int


#: The position of an instance that has matched nothing yet.
START = Copy(-2, 0)

History = frozenset[Copy]


@dataclass
class Shape:
    """What the plan needs to know of one program's automaton."""

    compiled: CompiledProgram
    efa: EFA
    #: Per DFA state: its NFA states as a bit mask; and the reverse.
    masks: list[int]
    index: dict[int, int]
    accepting: list[bool]
    terminal: list[bool]
    #: Per DFA state: its time symbols (those it has a transition on), ascending.
    timer_symbols: list[tuple[int, ...]]
    #: Per NFA state: the marker copy it waits before (None: the end of the expression).
    waits_before: list[Copy | None]
    #: Per marker copy (and START): the NFA states reached once it has matched.
    after: dict[Copy, int]
    #: Per DFA state: the distinct sets of copies that can have been matched last.
    histories: list[set[History]] = field(default_factory=list)

    @property
    def program(self) -> ir.ProgramIR:
        return self.compiled.program

    def waits(self, state: int) -> list[Copy | None]:
        """The marker copies a state waits for (None: it may end here), in text order."""
        mask = self.masks[state]
        out = {self.waits_before[v] for v in range(len(self.waits_before)) if mask >> v & 1}
        return sorted(out, key=lambda c: (c is None, c or START))

    def state_of(self, history: History) -> int | None:
        """The DFA state an instance is in after ``history``, or None if no state is (the copies
        never are last together, or one has no NFA state: it can no longer lead to a match)."""
        mask = 0
        for c in history:
            m = self.after.get(c)
            if m is None:
                return None
            mask |= m
        return self.index.get(mask)


def shape_of(compiled: CompiledProgram) -> Shape:
    """The automaton of ``compiled`` rebuilt with its positions; NotPlannable for a lazy DFA."""
    machine = compiled.machine
    if not isinstance(machine, DFAMachine):
        raise NotPlannable(
            f"program {compiled.name!r} runs on the lazy DFA (its DFA is too large to build "
            f"whole), so its states cannot be listed and mapped"
        )
    p = compiled.program
    occ = OccurrenceTable()
    limit = max(DEFAULT_STATE_LIMIT, machine.size + 1)  # (bounds the products' automata too)
    _, nfa = build_nfa(p, occ, limit)
    efa = eliminate(nfa)
    dfa = determinize(efa, occ, limit)
    if len(dfa.states) != machine.size or any(
        {sym: t for sym, (t, _) in st.trans.items()} != {sym: t for sym, (t, _) in machine.transitions(i).items()}
        for i, st in enumerate(dfa.states)
    ):
        raise NotPlannable(
            f"program {compiled.name!r}: its automaton, rebuilt from the intermediate form, differs "
            f"from the compiled machine (compiled by another version of EventScript?)"
        )

    ident_copy: dict[int, Copy] = {}
    copies_made: dict[int, int] = {}
    for edges in nfa.sym:
        if not edges:
            continue
        m = edges[0].marker
        if m < 0:
            for e in edges:
                ident_copy[e.ident] = Copy(-1, e.ident)
            continue
        k = copies_made.get(m, 0)
        copies_made[m] = k + 1
        for e in edges:
            ident_copy[e.ident] = Copy(m, k)

    follow_masks = [sum(1 << s for s in f.states) for f in efa.follows]
    waits_before: list[Copy | None] = []
    after: dict[Copy, int] = {START: follow_masks[efa.initial]}
    edge_copies: list[dict[int, frozenset[Copy]]] = []
    for row in efa.edges:
        per_symbol: dict[int, frozenset[Copy]] = {}
        first: Copy | None = None
        for sym, es in row.items():
            cs = []
            for edge in es:
                c = ident_copy.get(edge.origin, Copy(-1, edge.origin))
                after[c] = after.get(c, 0) | follow_masks[edge.follow]
                cs.append(c)
                first = first or c
            per_symbol[sym] = frozenset(cs)
        waits_before.append(first)
        edge_copies.append(per_symbol)

    masks = [st.nfa for st in dfa.states]
    histories: list[set[History]] = [set() for _ in masks]
    histories[0].add(frozenset({START}))
    for st in dfa.states:
        members = [v for v in range(len(edge_copies)) if st.nfa >> v & 1]
        for sym, (t, _) in st.trans.items():
            histories[t].add(frozenset().union(*(edge_copies[v].get(sym, frozenset()) for v in members)))
    time_symbols = p.time_symbols
    return Shape(
        compiled,
        efa,
        masks,
        {m: i for i, m in enumerate(masks)},
        [st.accepting for st in dfa.states],
        [st.terminal for st in dfa.states],
        [tuple(sorted(s for s in st.trans if s in time_symbols)) for st in dfa.states],
        waits_before,
        after,
        histories,
    )
