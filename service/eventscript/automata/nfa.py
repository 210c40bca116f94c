"""Thompson construction of an NFA whose edges carry actions.

Every regular-expression node becomes a fragment with one entry and one exit node (language
document §6.3, Fig. 8). An event marker is one symbol edge per symbol it matches (carrying the
marker's store of the event value, if any); an action block is an epsilon edge carrying its
action occurrence. Multipliers are expanded into copies (``R{2,4}`` = ``R R (R (R)?)?``), each
copy with its own occurrences. ``&`` and ``-`` are built by ``product``: both operands become
epsilon-free automata and their product, trimmed to states from which a match is still
possible, is embedded here as an ordinary fragment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..language import ir
from .actions import OccurrenceTable, Path

#: Guard against programs like A(){100000}{100000}.
MAX_NODES = 400_000


class AutomatonTooLarge(Exception):
    """The automaton would exceed a size limit."""

    def __init__(self, message: str, marker: int | None = None, unit: int | None = None) -> None:
        super().__init__(message)
        self.marker = marker
        self.unit = unit


@dataclass
class SymbolEdge:
    symbol: int
    target: int
    path: Path  # actions run when the edge is taken (a marker's store, or a product's actions)
    marker: int  # the marker occurrence, for diagnostics (-1 inside products)
    ident: int = 0  # unique within its ENFA: tells apart positions that match the same symbol


@dataclass
class ENFA:
    """An NFA with epsilon edges. Nodes are ints; ``eps[n]`` and ``sym[n]`` are n's out-edges."""

    eps: list[list[tuple[int, Path]]] = field(default_factory=list)
    sym: list[list[SymbolEdge]] = field(default_factory=list)
    start: int = 0
    final: int = 0
    _edges: int = 0

    def node(self) -> int:
        if len(self.eps) >= MAX_NODES:
            raise AutomatonTooLarge(f"the automaton would need more than {MAX_NODES} NFA states; "
                                    f"reduce the multipliers")
        self.eps.append([])
        self.sym.append([])
        return len(self.eps) - 1

    def epsilon(self, a: int, b: int, path: Path = ()) -> None:
        self.eps[a].append((b, path))

    def edge(self, a: int, symbol: int, b: int, path: Path, marker: int) -> None:
        self._edges += 1
        self.sym[a].append(SymbolEdge(symbol, b, path, marker, self._edges))

    @property
    def size(self) -> int:
        return len(self.eps)


class Builder:
    """Builds ENFAs for the regex of a program, sharing one occurrence table."""

    def __init__(self, program: ir.ProgramIR, occurrences: OccurrenceTable, state_limit: int) -> None:
        self.program = program
        self.occ = occurrences
        self.state_limit = state_limit
        #: Occurrences of each unit, for the analyses that map results back to units.
        self.unit_occurrences: dict[int, list[int]] = {}
        #: Occurrences found on epsilon cycles (actions on a cyclic path without an event marker).
        self.cyclic: list[int] = []

    def build(self, regex: ir.Node) -> ENFA:
        nfa = ENFA()
        s, e = self.fragment(nfa, regex)
        nfa.start, nfa.final = s, e
        from .epsilon import cyclic_action_occurrences

        self.cyclic.extend(cyclic_action_occurrences(nfa))
        return nfa

    def _occurrence(self, unit: int) -> int:
        u = self.program.units[unit]
        o = self.occ.new(unit, u.order)
        self.unit_occurrences.setdefault(unit, []).append(o)
        return o

    def fragment(self, nfa: ENFA, r: ir.Node) -> tuple[int, int]:
        if isinstance(r, ir.RMarker):
            m = self.program.markers[r.marker]
            a, b = nfa.node(), nfa.node()
            path: Path = (self._occurrence(m.store),) if m.store is not None else ()
            for s in m.symbols:
                nfa.edge(a, s, b, path, r.marker)
            return a, b
        if isinstance(r, ir.RUnit):
            a, b = nfa.node(), nfa.node()
            nfa.epsilon(a, b, (self._occurrence(r.unit),))
            return a, b
        if isinstance(r, ir.RSeq):
            a = cur = nfa.node()
            for item in r.items:
                s, e = self.fragment(nfa, item)
                nfa.epsilon(cur, s)
                cur = e
            return a, cur
        if isinstance(r, ir.RAlt):
            a, b = nfa.node(), nfa.node()
            for item in r.items:
                s, e = self.fragment(nfa, item)
                nfa.epsilon(a, s)
                nfa.epsilon(e, b)
            return a, b
        if isinstance(r, ir.RRepeat):
            return self._repeat(nfa, r)
        if isinstance(r, (ir.RInter, ir.RDiff)):
            from .product import embed_product

            return embed_product(self, nfa, r)
        raise AssertionError(f"unknown regex node {r!r}")

    def _repeat(self, nfa: ENFA, r: ir.RRepeat) -> tuple[int, int]:
        a = cur = nfa.node()
        for _ in range(r.low):
            s, e = self.fragment(nfa, r.item)
            nfa.epsilon(cur, s)
            cur = e
        if r.high is None:
            # Kleene star: loop back through the item, or skip it.
            loop_in, loop_out = nfa.node(), nfa.node()
            s, e = self.fragment(nfa, r.item)
            nfa.epsilon(cur, loop_in)
            nfa.epsilon(loop_in, s)
            nfa.epsilon(e, loop_in)
            nfa.epsilon(loop_in, loop_out)
            return a, loop_out
        # Up to (high - low) optional copies, nested so that positions stay unambiguous:
        # R{0,3} = (R (R (R)?)?)?
        optional = r.high - r.low
        end = nfa.node()
        for _ in range(optional):
            s, e = self.fragment(nfa, r.item)
            nfa.epsilon(cur, s)
            nfa.epsilon(cur, end)
            cur = e
        nfa.epsilon(cur, end)
        return a, end
