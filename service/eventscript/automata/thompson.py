"""Thompson construction of an NFA whose edges carry actions.

Every regular-expression node becomes a fragment with one entry and one exit node (language
document §6.3, Fig. 8). An event marker is one symbol edge per symbol it matches (carrying the
marker's store of the event value, if any); an action block is an epsilon edge carrying its
action occurrence. Multipliers are expanded into copies (``R{2,4}`` = ``R R (R (R)?)?``); each
copy gets its own occurrences of the actions inside, which still stand for one textual action
each (``actions``). ``&`` and ``-`` are built by ``product``: both operands become epsilon-free
automata and their product, trimmed to states from which a match is still possible, is embedded
here as an ordinary fragment.
"""

from __future__ import annotations

from ..language import ir
from .actions import OccurrenceTable, Path
from .epsilon import cyclic_action_occurrences
from .nfa import ENFA
from .product import embed_product


class Builder:
    """Builds ENFAs for the regex of a program, sharing one occurrence table."""

    def __init__(
        self, program: ir.ProgramIR, occurrences: OccurrenceTable, state_limit: int, *, skip_empty: bool = False
    ) -> None:
        self.program = program
        self.occ = occurrences
        self.state_limit = state_limit
        #: Give empty action blocks (``{}``) no occurrence (``build_nfa``).
        self.skip_empty = skip_empty
        #: Occurrences of each unit, for the analyses that map results back to units.
        self.unit_occurrences: dict[int, list[int]] = {}
        #: Occurrences found on epsilon cycles (actions on a cyclic path without an event marker).
        self.cyclic: list[int] = []

    def build(self, regex: ir.Node) -> ENFA:
        nfa = ENFA()
        s, e = self.fragment(nfa, regex)
        nfa.start, nfa.final = s, e
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
            empty = self.skip_empty and not self.program.units[r.unit].actions
            nfa.epsilon(a, b, () if empty else (self._occurrence(r.unit),))
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


def build_nfa(program: ir.ProgramIR, occurrences: OccurrenceTable, state_limit: int) -> tuple[Builder, ENFA]:
    """The program's NFA, by the one rule every compilation of it follows (the compiler's and the
    rebuild that tells DFA states' marker copies apart, ``automata/marker_copies.py``, must agree).

    An empty action block (``{}``) does nothing, so a loop through it alone is no "cyclic path
    that has actions" (document footnote 8). It keeps its occurrence wherever that is allowed,
    so that a program compiled before such loops were accepted compiles to the same machine and
    keeps its fingerprint (its state stays readable: ``upgrade/fingerprint.py``); only where the
    actions on cycles are all empty blocks is the NFA built again without them."""
    builder = Builder(program, occurrences, state_limit)
    nfa = builder.build(program.regex)
    if builder.cyclic and all(not program.units[occurrences.items[o].unit].actions for o in builder.cyclic):
        occurrences.load([])
        builder = Builder(program, occurrences, state_limit, skip_empty=True)
        nfa = builder.build(program.regex)
    return builder, nfa
