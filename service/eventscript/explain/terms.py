"""A compiled program's states, symbols and action units in the words of its source text."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..automata.compiled import CompiledProgram
from ..language import ir
from ..tools.graph import Labels, time_marker_text


@dataclass(frozen=True)
class MarkerRef:
    """A textual marker of the program: where it is and what it reads."""

    index: int
    text: str
    line: int
    col: int
    time: bool

    def to_json(self) -> dict[str, Any]:
        return {"marker": self.index, "text": self.text, "line": self.line, "col": self.col, "time": self.time}

    def __str__(self) -> str:
        return f"{self.text}@{self.line}:{self.col}"


def event_marker_text(text: str) -> str:
    """An event marker's own text, ``Closed()`` or ``Reading(r)``, without what follows it on
    its source line (the intermediate form keeps the rest of the line)."""
    depth = 0
    in_string = False
    escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[: i + 1].strip()
    return text.strip()


class ProgramTerms:
    """Looks up what a state of the machine means in the program: the markers whose symbols it
    has transitions on (what the instance waits for), and the text of symbols and units.

    States are given in their snapshot form (``machine.state_to_json``): a DFA state's number,
    or a lazy DFA's sorted NFA states, as the engine's snapshots and the state stores hold them.
    Where two markers read the same symbol (``Closed()`` in two places), a state with a
    transition on it is not told apart by the symbol: an eager DFA's states are sets of marker
    copies (``CompiledProgram.marker_copies``, rebuilt once per program by the compiler's own
    deterministic stages), and a state waits for the markers of its copies only. A lazy DFA's
    states, and the copies inside a ``&`` or ``-`` product (which stand for no one marker), keep
    the reading by symbol: every marker of a symbol the state has a transition on.
    """

    def __init__(self, compiled: CompiledProgram) -> None:
        self.compiled = compiled
        self.program: ir.ProgramIR = compiled.program
        self.machine = compiled.machine
        self.labels = Labels(self.program)
        time_symbols = self.program.time_symbols
        self.markers: list[MarkerRef] = []
        self._by_symbol: dict[int, list[MarkerRef]] = {}
        for m in self.program.markers:
            is_time = bool(m.symbols) and all(s in time_symbols for s in m.symbols)
            text = time_marker_text(m.text) if is_time else event_marker_text(m.text)
            ref = MarkerRef(m.index, text, m.line, m.col, is_time)
            self.markers.append(ref)
            for s in m.symbols:
                self._by_symbol.setdefault(s, []).append(ref)
        self._waiting: dict[Hashable, list[MarkerRef]] = {}
        self._units: dict[int, dict[str, Any]] = {}

    def key(self, state: Any) -> Hashable:
        """The machine's key for a state in snapshot form."""
        return self.machine.state_from_json(state)

    def transitions(self, state: Any) -> Mapping[int, tuple[Hashable, tuple[int, ...]]]:
        return self.machine.transitions(self.key(state))

    def accepting(self, state: Any) -> bool:
        return bool(self.machine.accepting(self.key(state)))

    def waiting(self, state: Any) -> list[MarkerRef]:
        """The markers an instance in ``state`` waits for, in program-text order."""
        key = self.key(state)
        found = self._waiting.get(key)
        if found is None:
            copies = self._copies_waited(key)
            if copies is not None:
                refs = {self._by_index[m].index: self._by_index[m] for m in copies}
            else:
                refs = {r.index: r for sym in self.machine.transitions(key) for r in self._by_symbol.get(sym, ())}
            found = self._waiting[key] = sorted(refs.values(), key=lambda r: (r.line, r.col))
        return found

    @cached_property
    def _by_index(self) -> dict[int, MarkerRef]:
        return {r.index: r for r in self.markers}

    def _copies_waited(self, key: Hashable) -> set[int] | None:
        """The markers whose copies DFA state ``key`` waits before, or None where that cannot be
        told (a lazy DFA; a product's copies, marker -1)."""
        copies = self.compiled.marker_copies  # (None on any failure to rebuild them: kept)
        if copies is None or not isinstance(key, int) or not 0 <= key < len(copies.masks):
            return None
        waited = [c for c in copies.waits(key) if c is not None]
        if any(c.marker < 0 or c.marker not in self._by_index for c in waited):
            return None
        return {c.marker for c in waited}

    def symbol(self, sym: int) -> str:
        return self.labels.symbol(sym)

    def time_marker(self, sym: int) -> MarkerRef | None:
        """The time marker a time symbol stands for (what a pending timer will deliver)."""
        s = self.program.symbols[sym] if 0 <= sym < len(self.program.symbols) else None
        if s is None or s.marker is None:
            return None
        return self.markers[s.marker]

    def time_marker_text(self, sym: int) -> str | None:
        """``elapse[5 minutes]@6:5``: the time marker of a time symbol, and where it is."""
        marker = self.time_marker(sym)
        return None if marker is None else str(marker)

    def unit(self, u: int) -> dict[str, Any]:
        """An action unit as run: its number, its text shortened to one line, and where it is
        (one dict per unit, shared by every step that ran it: do not change it)."""
        told = self._units.get(u)
        if told is None:
            unit = self.program.units[u]
            told = self._units[u] = {"unit": u, "text": self.labels.unit(u), "line": unit.line, "col": unit.col}
        return told

    @cached_property
    def symbols_of_input(self) -> dict[str, list[int]]:
        """Each input's symbols: its own, or the classes its case clause can give."""
        return {inp.name: sorted(_case_symbols(inp.classify)) for inp in self.program.inputs}

    def start(self) -> tuple[Any, tuple[int, ...]]:
        """The start state (snapshot form) and the units of the initial actions."""
        key, units = self.machine.start()
        return self.machine.state_to_json(key), tuple(units)

    def step(self, before: Any, symbols: list[int], after: Any) -> tuple[int | None, tuple[int, ...]]:
        """The symbol (one of ``symbols``) that took ``before`` to ``after``, and the units its
        transition ran; (None, ()) when none did (an unexpected event: no transition)."""
        row = self.transitions(before)
        after_key = self.key(after)
        for sym in symbols:
            tr = row.get(sym)
            if tr is not None and tr[0] == after_key:
                return sym, tuple(tr[1])
        return None, ()


def _case_symbols(node: ir.Node) -> set[int]:
    """The symbols a case clause (a tree of arms ending in symbols) can classify an event as."""
    if isinstance(node, ir.CaseSymbol):
        return {node.symbol}
    if isinstance(node, ir.CaseArm):
        return _case_symbols(node.then) | _case_symbols(node.otherwise)
    return set()
