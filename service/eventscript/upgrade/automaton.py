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

The automaton is rebuilt from the intermediate form alone (``automata/marker_copies.py``: the
compiler's own stages, which are deterministic), so compiled JSON files work as well as sources,
and its states are numbered as the compiled machine's are (checked); there too, which marker
copies each DFA state waits before (``StateCopies``, what ``explain`` reads as well).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..automata.compiled import CompiledProgram
from ..automata.epsilon import EFA
from ..automata.machine import DFAMachine
from ..automata.marker_copies import START, Copy, StateCopies, copy_of, edge_copies, rebuild, state_copies
from ..language import ir

__all__ = ["START", "Copy", "History", "NotPlannable", "Shape", "shape_of"]


class NotPlannable(Exception):
    """A program whose states cannot be listed (it runs on the lazy DFA)."""


History = frozenset[Copy]


@dataclass
class Shape(StateCopies):
    """What the plan needs to know of one program's automaton: beside the marker copies each
    DFA state waits before (``StateCopies``: ``masks``, ``waits_before``, ``waits``), the rest."""

    compiled: CompiledProgram
    efa: EFA
    #: Per DFA state's NFA states (its ``masks``): the DFA state.
    index: dict[int, int]
    accepting: list[bool]
    terminal: list[bool]
    #: Per DFA state: its time symbols (those it has a transition on), ascending.
    timer_symbols: list[tuple[int, ...]]
    #: Per marker copy (and START): the NFA states reached once it has matched.
    after: dict[Copy, int]
    #: Per DFA state: the distinct sets of copies that can have been matched last.
    histories: list[set[History]] = field(default_factory=list)

    @property
    def program(self) -> ir.ProgramIR:
        return self.compiled.program

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
    built = rebuild(compiled.program, machine)
    if built is None:
        raise NotPlannable(
            f"program {compiled.name!r}: its automaton, rebuilt from the intermediate form, differs "
            f"from the compiled machine (compiled by another version of EventScript?)"
        )
    nfa, efa, dfa = built
    p = compiled.program
    ident_copy = edge_copies(nfa)
    copies = state_copies(efa, dfa, ident_copy)

    follow_masks = [sum(1 << s for s in f.states) for f in efa.follows]
    after: dict[Copy, int] = {START: follow_masks[efa.initial]}
    row_copies: list[dict[int, frozenset[Copy]]] = []
    for row in efa.edges:
        per_symbol: dict[int, frozenset[Copy]] = {}
        for sym, es in row.items():
            cs = []
            for edge in es:
                c = copy_of(ident_copy, edge)
                after[c] = after.get(c, 0) | follow_masks[edge.follow]
                cs.append(c)
            per_symbol[sym] = frozenset(cs)
        row_copies.append(per_symbol)

    masks = copies.masks
    histories: list[set[History]] = [set() for _ in masks]
    histories[0].add(frozenset({START}))
    for st in dfa.states:
        members = [v for v in range(len(row_copies)) if st.nfa >> v & 1]
        for sym, (t, _) in st.trans.items():
            histories[t].add(frozenset().union(*(row_copies[v].get(sym, frozenset()) for v in members)))
    time_symbols = p.time_symbols
    return Shape(
        masks=masks,
        waits_before=copies.waits_before,
        compiled=compiled,
        efa=efa,
        index={m: i for i, m in enumerate(masks)},
        accepting=[st.accepting for st in dfa.states],
        terminal=[st.terminal for st in dfa.states],
        timer_symbols=[tuple(sorted(s for s in st.trans if s in time_symbols)) for st in dfa.states],
        after=after,
        histories=histories,
    )
