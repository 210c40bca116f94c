"""Reachability over small directed graphs given as successor lists (node i → succ[i])."""

from __future__ import annotations

from collections.abc import Iterable


def reachable(succ: list[list[int]], seeds: Iterable[int]) -> list[bool]:
    """Which nodes can be reached from the seeds (the seeds included)."""
    seen = [False] * len(succ)
    stack = []
    for s in seeds:
        if not seen[s]:
            seen[s] = True
            stack.append(s)
    while stack:
        v = stack.pop()
        for w in succ[v]:
            if not seen[w]:
                seen[w] = True
                stack.append(w)
    return seen


def reversed_edges(succ: list[list[int]]) -> list[list[int]]:
    pred: list[list[int]] = [[] for _ in succ]
    for a, ts in enumerate(succ):
        for b in ts:
            pred[b].append(a)
    return pred


def can_reach(succ: list[list[int]], targets: list[bool]) -> list[bool]:
    """Which nodes have a path to some target node (the targets included)."""
    return reachable(reversed_edges(succ), (i for i, t in enumerate(targets) if t))
