"""The order of the actions of one transition (conformance README choice 8, document 3.3.1).

Every action reached on any feasible path runs exactly once. Each path's strand keeps its own
order; where the strands say nothing, or contradict each other about two actions, the action
written first in the program runs first.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable


def action_order(strands: Iterable[tuple[int, ...]]) -> list[int]:
    """Merge strands of action offsets into one run order."""
    firsts: list[list[int]] = []
    for strand in strands:
        seen: list[int] = []
        for a in strand:
            if a not in seen:  # a multiplier's copies are one action: it runs once
                seen.append(a)
        firsts.append(seen)
    before: set[tuple[int, int]] = set()
    for strand in firsts:
        for i, a in enumerate(strand):
            for b in strand[i + 1 :]:
                before.add((a, b))
    nodes = {a for strand in firsts for a in strand}
    edges = {(a, b) for a, b in before if (b, a) not in before or a < b}
    preds: dict[int, set[int]] = {n: set() for n in nodes}
    for a, b in edges:
        preds[b].add(a)
    order: list[int] = []
    done: set[int] = set()
    while len(order) < len(nodes):
        ready = [n for n in nodes if n not in done and preds[n] <= done]
        if not ready:  # a cycle through three or more strands: text order settles it
            ready = [n for n in nodes if n not in done]
        nxt = heapq.nsmallest(1, ready)[0]
        order.append(nxt)
        done.add(nxt)
    return order
