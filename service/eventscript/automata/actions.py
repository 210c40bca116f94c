"""Action occurrences and the rule that orders the actions of one transition.

An *occurrence* is one place of an action unit in the automaton. A unit inside ``R{3}`` has
three occurrences (one per copy of R), all with the unit's program-text order. On a transition
every occurrence reached on any feasible path runs exactly once, in an order that keeps each
path's own order and otherwise follows program text (conformance README, choice 8): a
topological sort of the paths' precedence constraints, earliest program text first. A cycle of
constraints (two paths meeting the same actions in opposite orders) is broken in favour of
program text.
"""

from __future__ import annotations

import heapq
import itertools
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
        self._copies: dict[int, int] = {}
        #: Set when a merge had to break a cycle of constraints, so some path's order was not kept.
        self.cycle_broken = False

    def new(self, unit: int, order: int) -> int:
        copy = self._copies.get(unit, 0)
        self._copies[unit] = copy + 1
        self.items.append(Occurrence(unit, order, copy))
        return len(self.items) - 1

    def key(self, occ: int) -> tuple[int, int, int]:
        o = self.items[occ]
        return (o.order, o.copy, occ)

    def units(self, path: Path) -> tuple[int, ...]:
        return tuple(self.items[o].unit for o in path)


def merge(paths: Iterable[Path], table: OccurrenceTable) -> Path:
    """Merge the action sequences of all feasible paths of one transition (choice 8)."""
    distinct = {p for p in paths if p}
    if not distinct:
        return ()
    if len(distinct) == 1:
        return next(iter(distinct))
    key = table.key
    succ: dict[int, set[int]] = {}
    indeg: dict[int, int] = {}
    for p in distinct:
        for a in p:
            succ.setdefault(a, set())
            indeg.setdefault(a, 0)
        for a, b in itertools.pairwise(p):
            if b not in succ[a]:
                succ[a].add(b)
                indeg[b] += 1
    heap = [(key(n), n) for n, d in indeg.items() if d == 0]
    heapq.heapify(heap)
    out: list[int] = []
    done: set[int] = set()
    while len(out) < len(indeg):
        if not heap:
            # A cycle of constraints: break it by program text.
            n = min((x for x in indeg if x not in done), key=key)
            heap.append((key(n), n))
            table.cycle_broken = True
        _, n = heapq.heappop(heap)
        if n in done:
            continue
        done.add(n)
        out.append(n)
        for m in succ[n]:
            indeg[m] -= 1
            if indeg[m] == 0 and m not in done:
                heapq.heappush(heap, (key(m), m))
    return tuple(out)
