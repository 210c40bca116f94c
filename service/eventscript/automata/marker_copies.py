"""The copies of textual markers that an eager DFA's states wait before.

A multiplier makes several copies of a marker (``R{3}`` has three of each of R's markers), and
two markers can read one symbol (``Closed()`` in two places): a DFA state's transitions say which
symbols it waits for, not which markers. Each state of the epsilon-free NFA waits before one copy
of a marker (or is the end of the expression), and an eager DFA state is a set of those, so its
markers are told apart by its NFA states: what ``explain`` says an instance waits for, and
where the upgrade planner maps states between versions (``upgrade/automaton.py``).

The compiled program keeps no NFA (it need not, to run), so the automaton is rebuilt from the
intermediate form by the compiler's own stages (Thompson, epsilon elimination, subset
construction), which are deterministic: its states are numbered as the compiled machine's are
(checked), and compiled JSON files work as well as sources. It is rebuilt once per program, when
first asked (``CompiledProgram.marker_copies``): compiling stays as fast, and a worker keeps no
more in memory, where no state is explained.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .actions import OccurrenceTable
from .epsilon import EFA, EFAEdge, eliminate
from .limits import DEFAULT_STATE_LIMIT
from .machine import DFAMachine
from .nfa import ENFA, AutomatonTooLarge
from .subset import DFA, StateLimitExceeded, determinize
from .thompson import build_nfa

if TYPE_CHECKING:
    from ..language.ir import ProgramIR

log = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class Copy:
    """One copy of a textual marker in the automaton (``R{3}`` has three of each of R's markers).
    ``marker`` is -1 for the edges of a ``&`` or ``-`` product, which stand for no one marker;
    ``copy`` then tells those edges apart."""

    marker: int
    copy: int


#: The position of an instance that has matched nothing yet.
START = Copy(-2, 0)


@dataclass
class StateCopies:
    """Which marker copies each state of an eager DFA waits before."""

    #: Per DFA state: its NFA states as a bit mask.
    masks: list[int]
    #: Per NFA state: the marker copy it waits before (None: the end of the expression).
    waits_before: list[Copy | None]

    def waits(self, state: int) -> list[Copy | None]:
        """The marker copies a state waits for (None: it may end here), in text order."""
        mask = self.masks[state]
        out = {self.waits_before[v] for v in range(len(self.waits_before)) if mask >> v & 1}
        return sorted(out, key=lambda c: (c is None, c or START))


def rebuild(program: ProgramIR, machine: DFAMachine) -> tuple[ENFA, EFA, DFA] | None:
    """The automaton of ``program`` (compiled to ``machine``) rebuilt from its intermediate
    form, as the compiler built it; None where it differs from the machine (compiled by another
    version of EventScript). Raises what the compiler's stages raise past their limits."""
    occ = OccurrenceTable()
    limit = max(DEFAULT_STATE_LIMIT, machine.size + 1)  # (bounds the products' automata too)
    _, nfa = build_nfa(program, occ, limit)
    efa = eliminate(nfa)
    dfa = determinize(efa, occ, limit)
    if len(dfa.states) != machine.size or any(
        {sym: t for sym, (t, _) in st.trans.items()} != {sym: t for sym, (t, _) in machine.transitions(i).items()}
        for i, st in enumerate(dfa.states)
    ):
        return None
    return nfa, efa, dfa


def edge_copies(nfa: ENFA) -> dict[int, Copy]:
    """Each symbol edge's marker copy, by the edge's ident: the edges of a marker's k-th copy
    (numbered in NFA order) are ``Copy(marker, k)``; a product's edges each their own copy."""
    copies: dict[int, Copy] = {}
    copies_made: dict[int, int] = {}
    for edges in nfa.sym:
        if not edges:
            continue
        m = edges[0].marker
        if m < 0:
            for e in edges:
                copies[e.ident] = Copy(-1, e.ident)
            continue
        k = copies_made.get(m, 0)
        copies_made[m] = k + 1
        for e in edges:
            copies[e.ident] = Copy(m, k)
    return copies


def copy_of(copies: dict[int, Copy], edge: EFAEdge) -> Copy:
    """The marker copy an edge of the epsilon-free NFA reads (``copies``: ``edge_copies``)."""
    return copies.get(edge.origin, Copy(-1, edge.origin))


def state_copies(efa: EFA, dfa: DFA, copies: dict[int, Copy]) -> StateCopies:
    """The marker copies each state of ``dfa`` (built from ``efa``) waits before (``copies``:
    ``edge_copies`` of the NFA ``efa`` was made from)."""
    waits_before: list[Copy | None] = []
    for row in efa.edges:
        first = next((copy_of(copies, edge) for es in row.values() for edge in es), None)
        waits_before.append(first)
    return StateCopies([st.nfa for st in dfa.states], waits_before)


def marker_copies(program: ProgramIR, machine: object) -> StateCopies | None:
    """The marker copies of the DFA states of ``program``, compiled to ``machine`` (the compiled
    program passes both: this module does not import it, which imports this one). None where
    they cannot be told: a lazy DFA (its states are sets of NFA states already, but not rebuilt
    here), a machine this version does not rebuild the same, or any failure of the rebuild (a
    product's operands past the limits it uses: AutomatonTooLarge, StateLimitExceeded; any other
    is logged); the caller reads states by their symbols then."""
    if not isinstance(machine, DFAMachine):
        return None
    try:
        built = rebuild(program, machine)
    except (AutomatonTooLarge, StateLimitExceeded):
        return None
    except Exception:  # a fault of the rebuild: explain reads symbols, but says so (once per program)
        log.warning(
            "%s: the DFA's marker copies could not be rebuilt; explain reads states by their symbols",
            program.name,
            exc_info=True,
        )
        return None
    if built is None:
        return None
    nfa, efa, dfa = built
    return state_copies(efa, dfa, edge_copies(nfa))
