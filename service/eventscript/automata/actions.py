"""Action occurrences and the rule that orders the actions of one transition.

An *occurrence* is one place of an action unit in the automaton. A unit inside ``R{3}`` has
three occurrences (one per copy of R), but they are still one textual action: the language
document numbers actions in program text before it expands the expression (§6.3), and runs
every action reached on a transition (§3.3.1), so a unit runs **at most once per transition**
however many of its copies the feasible paths reach (conformance README, choice 8).

The order of one transition's units (:func:`merge`):

1. each feasible path is reduced to its units, each unit kept where the path *first* meets
   one of its copies (a path that meets copy 1 of ``u``, then ``v``, then copy 2 of ``u``
   runs ``u`` then ``v``);
2. the reduced sequences are merged so that each keeps its own order, and otherwise program
   text decides (earliest first): a topological sort of the paths' precedence constraints,
   earliest program text first. Where two paths meet the same two units in opposite orders,
   program text decides that pair (and only that pair: an unrelated unit written later still
   runs after both); a cycle through three or more paths is broken in favour of program text.

The result lists one occurrence per unit (the unit's first occurrence), so equal unit
sequences are equal tuples.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

Path = tuple[int, ...]  # occurrence ids, in the order a path meets them


@dataclass(frozen=True)
class Occurrence:
    unit: int
    order: int  # program-text order of the unit
    copy: int  # distinguishes the copies made by multipliers


class OccurrenceTable:
    def __init__(self) -> None:
        self.items: list[Occurrence] = []
        self._first: dict[int, int] = {}  # unit -> its first occurrence
        self._copies: dict[int, int] = {}  # unit -> how many occurrences it has
        #: Set when a merge had to break a cycle of constraints, so some path's order was not kept.
        self.cycle_broken = False

    def new(self, unit: int, order: int) -> int:
        copy = self._copies.get(unit, 0)
        self._copies[unit] = copy + 1
        self.items.append(Occurrence(unit, order, copy))
        occ = len(self.items) - 1
        self._first.setdefault(unit, occ)
        return occ

    def load(self, items: list[Occurrence]) -> None:
        """Replace the table (a compiled program read back from JSON)."""
        self.items = items
        self._first = {}
        self._copies = {}
        for i, o in enumerate(items):
            self._first.setdefault(o.unit, i)
            self._copies[o.unit] = self._copies.get(o.unit, 0) + 1

    def canonical(self, occ: int) -> int:
        """The first occurrence of ``occ``'s unit: the one occurrence that stands for the unit."""
        return self._first[self.items[occ].unit]

    def key(self, occ: int) -> tuple[int, int]:
        o = self.items[occ]
        return (o.order, o.unit)

    def units(self, path: Path) -> tuple[int, ...]:
        return tuple(self.items[o].unit for o in path)


def _first_meetings(path: Path, table: OccurrenceTable) -> Path:
    """The path's units as canonical occurrences, each where the path first meets it."""
    seen: set[int] = set()
    out: list[int] = []
    for o in path:
        c = table.canonical(o)
        if c not in seen:
            seen.add(c)
            out.append(c)
    return tuple(out)


def merge(paths: Iterable[Path], table: OccurrenceTable) -> Path:
    """Merge the action sequences of all feasible paths of one transition (choice 8)."""
    strands = {_first_meetings(p, table) for p in set(paths) if p}
    if not strands:
        return ()
    if len(strands) == 1:
        return next(iter(strands))
    key = table.key
    # Every strand orders each pair of its units; where two strands disagree about a pair,
    # program text decides that pair.
    before: set[tuple[int, int]] = set()
    for p in strands:
        for i, a in enumerate(p):
            for b in p[i + 1 :]:
                before.add((a, b))
    preds: dict[int, set[int]] = {n: set() for p in strands for n in p}
    for a, b in before:
        if (b, a) in before:
            table.cycle_broken = True
            if key(a) > key(b):
                continue
        preds[b].add(a)
    succ: dict[int, list[int]] = {n: [] for n in preds}
    for b, ps in preds.items():
        for a in ps:
            succ[a].append(b)
    waiting = {n: len(ps) for n, ps in preds.items()}
    heap = [(key(n), n) for n, w in waiting.items() if w == 0]
    heapq.heapify(heap)
    out: list[int] = []
    done: set[int] = set()
    while len(out) < len(preds):
        if not heap:
            # A cycle through three or more strands: program text breaks it.
            n = min((x for x in preds if x not in done), key=key)
            heap.append((key(n), n))
            table.cycle_broken = True
        _, n = heapq.heappop(heap)
        if n in done:
            continue
        done.add(n)
        out.append(n)
        for m in succ[n]:
            waiting[m] -= 1
            if waiting[m] == 0 and m not in done:
                heapq.heappush(heap, (key(m), m))
    return tuple(out)


def strands(paths: Iterable[Path]) -> list[Path]:
    """The distinct action paths of one product step (a path through each operand of ``&``, or
    the left path and every right path of ``-``), kept apart rather than merged.

    They are different paths (document 7.3): merging them here would fix a text order between
    them that the transition's :func:`merge` would then treat as one path's own order, and let
    it override the order a real path meets them in. The empty path is dropped when another is
    left: whatever follows the product continues every strand, so it adds no constraint.
    """
    out = list(dict.fromkeys(p for p in paths if p))
    return out or [()]
