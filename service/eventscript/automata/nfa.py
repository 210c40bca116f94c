"""The NFA with epsilon edges whose edges carry actions: the data structure only.

A leaf module: the Thompson construction (``thompson``), epsilon elimination (``epsilon``), the
products (``product``) and the analyses import it; it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .actions import Path

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
            raise AutomatonTooLarge(
                f"the automaton would need more than {MAX_NODES} NFA states; reduce the multipliers"
            )
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
