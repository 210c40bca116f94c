"""Intersection ``L & R`` and difference ``L - R`` by product construction.

Both operands are compiled on their own to epsilon-free NFAs and explored together, each as a
set of NFA states (the subset construction of each, side by side). A product state is a pair
(SL, SR). On a symbol both sides step; the transition carries the actions of both sides' paths
(language document §3.3.1: & and - follow all feasible paths through both operands, so actions
in the right operand of ``-`` run when that operand is matched).

- ``L & R`` goes on while both sides have a path and accepts when both accept.
- ``L - R`` goes on while the left side has a path (the right side may be empty: R can no
  longer match) and accepts when the left accepts and the right does not.

The product is trimmed to the states from which acceptance is still reachable, so every state of
the embedded fragment can still be extended to a match. The document builds the same automaton
through De Morgan's laws and complemented DFAs; the direct product is equivalent and smaller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..language import ir
from .actions import merge
from .epsilon import eliminate
from .graphs import can_reach
from .nfa import ENFA, AutomatonTooLarge
from .subset import step, symbols_from

if TYPE_CHECKING:
    from .nfa import Builder

Pair = tuple[frozenset[int], frozenset[int]]


def embed_product(builder: Builder, nfa: ENFA, r: ir.RInter | ir.RDiff) -> tuple[int, int]:
    left = eliminate(builder.build(r.left))
    right = eliminate(builder.build(r.right))
    inter = isinstance(r, ir.RInter)
    occ = builder.occ

    def accepting(p: Pair) -> bool:
        sl, sr = p
        if left.final is None or left.final not in sl:
            return False
        in_right = right.final is not None and right.final in sr
        return in_right if inter else not in_right

    start: Pair = (frozenset(s for s, _ in left.initial), frozenset(s for s, _ in right.initial))
    init_paths = [p for _, p in left.initial] + [p for _, p in right.initial]
    if not start[0] or (inter and not start[1]):
        entry, exit_ = nfa.node(), nfa.node()
        return entry, exit_  # the empty language: no way from entry to exit

    index: dict[Pair, int] = {start: 0}
    pairs: list[Pair] = [start]
    trans: list[list[tuple[int, int, tuple[int, ...]]]] = []
    i = 0
    while i < len(pairs):
        sl, sr = pairs[i]
        i += 1
        row: list[tuple[int, int, tuple[int, ...]]] = []
        syms = symbols_from(left, sl)
        if inter:
            syms &= symbols_from(right, sr)
        for sym in sorted(syms):
            tl, pl = step(left, sl, sym)
            tr, pr = step(right, sr, sym)
            if not tl or (inter and not tr):
                continue
            target = (tl, tr)
            t = index.get(target)
            if t is None:
                if len(pairs) >= builder.state_limit:
                    raise AutomatonTooLarge(
                        f"the {'intersection' if inter else 'difference'} needs more than "
                        f"{builder.state_limit} states; raise the state limit or simplify its operands")
                t = index[target] = len(pairs)
                pairs.append(target)
            row.append((sym, t, merge(pl + pr, occ)))
        trans.append(row)

    # Trim: keep the pairs from which an accepting pair can be reached.
    live = can_reach([[b for _, b, _ in row] for row in trans], [accepting(p) for p in pairs])

    entry, exit_ = nfa.node(), nfa.node()
    if not live[0]:
        return entry, exit_
    node = {k: nfa.node() for k, ok in enumerate(live) if ok}
    nfa.epsilon(entry, node[0], merge(init_paths, occ))
    for a, row in enumerate(trans):
        if not live[a]:
            continue
        for sym, b, path in row:
            if live[b]:
                nfa.edge(node[a], sym, node[b], path, -1)
        if accepting(pairs[a]):
            nfa.epsilon(node[a], exit_)
    return entry, exit_
