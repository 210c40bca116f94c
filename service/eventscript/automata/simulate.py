"""Position sets as bit masks: the simulation behind the lazy DFA.

A lazy-DFA state is a set of states of the epsilon-free NFA (``subset``). Here such a set is an
``int`` whose bit ``s`` is NFA state ``s``, so the successor on one symbol is the union of the
states' successors: a few table lookups, one per 8-bit chunk of the mask (each table holds the
union for every value of its chunk), with no frozenset, no dict of rows and no object per state.
The cost of a step grows with the expression's size (chunks), never with the number of DFA
states, which is what makes it the fallback when a lazy DFA's cache thrashes (``.* A() .{25}``
visits a new DFA state on nearly every event): the same answer as building the DFA state, at
the price of a few lookups per event, as ``regex-automata``'s hybrid falls back to its NFA
simulation when its cache is cleared too often.

The actions of a step are those of the eager construction exactly: the paths of the edges taken,
merged by ``actions.merge``. Only states with an edge on the symbol that carries actions
contribute a path, so the merged sequence is a function of the symbol and of the mask restricted
to those states, and is computed once per such pair.
"""

from __future__ import annotations

from collections.abc import Iterable

from .actions import OccurrenceTable, Path, merge
from .epsilon import EFA

Units = tuple[int, ...]

CHUNK_BITS = 8
CHUNK_VALUES = 1 << CHUNK_BITS
#: Up to this many NFA states, ``Positions.row`` steps through whole tables (8 chunks at most).
SMALL_STATES = 64
#: Above this many table entries (symbols x chunks x 256) tables are built per chunk on first use.
EAGER_TABLE_ENTRIES = 1 << 20


class Positions:
    """An epsilon-free NFA as bit masks: per symbol, each state's successors, the states with an
    edge on it and those whose edges on it carry actions. The subset constructions of the
    compiler (``subset.determinize``, the right operand of ``-``, the analyses of a lazy DFA) step
    through it; :class:`PositionSets` adds the engine's lookup tables.

    ``step`` here remembers the union for each 8-bit chunk value it meets, instead of tabulating
    all 256 values of every chunk: a compilation visits few of them, and large automata have
    sparse sets.
    """

    def __init__(self, efa: EFA, occ: OccurrenceTable, nsym: int | None = None) -> None:
        if nsym is None:
            nsym = 1 + max((sym for row in efa.edges for sym in row), default=-1)
        self.efa = efa
        self.occ = occ
        self.nsym = nsym
        self.size = efa.size
        #: succ[sym][s]: the states that state s reaches on sym (absent: no edge).
        self.succ: list[dict[int, int]] = [{} for _ in range(nsym)]
        #: has[sym]: the states with an edge on sym; act[sym]: those whose edges on sym carry actions.
        self.has = [0] * nsym
        self.act = [0] * nsym
        follow_masks = [to_mask(f.states) for f in efa.follows]
        follows = efa.follows
        for s, row in enumerate(efa.edges):
            bit = 1 << s
            for sym, es in row.items():
                target = 0
                for e in es:
                    target |= follow_masks[e.follow]
                    if e.prefix or follows[e.follow].paths:
                        self.act[sym] |= bit
                self.succ[sym][s] = target
                self.has[sym] |= bit
        #: The symbols some state has an edge on, ascending (the order of a DFA state's row).
        self.alphabet = tuple(sym for sym in range(nsym) if self.has[sym])
        #: out: states with any edge; a non-empty set without one is the final state alone.
        self.out = 0
        for h in self.has:
            self.out |= h
        self.final = 0 if efa.final is None else 1 << efa.final
        self.start = follow_masks[efa.initial]
        #: Per state: its (symbol, successors, itself as a bit if its edges on it carry actions).
        self._out_edges = [
            tuple((sym, self.succ[sym][s], (1 << s) & self.act[sym]) for sym in sorted(row))
            for s, row in enumerate(efa.edges)
        ]
        self._steps: list[dict[int, int]] = [{} for _ in range(nsym)]
        self._mean_degree = sum(map(len, self._out_edges)) / max(1, efa.size)
        #: Per symbol: the union of succ[sym] over the bits of each chunk value met, by
        #: (chunk << CHUNK_BITS) | value.
        self._chunk_unions: list[dict[int, int]] = [{} for _ in range(nsym)]
        #: Automata of at most SMALL_STATES states step through whole tables, built per symbol.
        self._small: list[list[list[int]] | None] | None = [None] * nsym if efa.size <= SMALL_STATES else None
        self._paths: dict[tuple[int, int], tuple[Path, ...]] = {}
        self._merged: dict[tuple[Path, ...], Path] = {}
        self._follow_paths: dict[tuple[int, Path], tuple[Path, ...]] = {}
        self._edge_merged: dict[tuple[int, Path], Path] = {}

    def step(self, mask: int, sym: int) -> int:
        """The states reached from ``mask`` on ``sym`` (0: no transition, the event is unexpected).

        Remembered per set of states *with an edge on sym*: sets that differ only in states
        without one step alike, and in ``.* P1 | .* P2 | ...`` most do (a tenth of the steps of
        the 41-pattern program are distinct)."""
        m = mask & self.has[sym]
        steps = self._steps[sym]
        out = steps.get(m)
        if out is None:
            out = steps[m] = self._chunk_step(m, sym)
        return out

    def _chunk_step(self, m: int, sym: int) -> int:
        out = 0
        unions = self._chunk_unions[sym]
        for c, value in enumerate(m.to_bytes((m.bit_length() + 7) >> 3, "little")):
            if value:  # one lookup per chunk that has a state with an edge on sym
                key = c << CHUNK_BITS | value
                u = unions.get(key)
                if u is None:
                    u = unions[key] = self._union(sym, c * CHUNK_BITS, value)
                out |= u
        return out

    def row(self, mask: int) -> list[tuple[int, int, int]]:
        """Every step from ``mask``: (symbol, states reached, states whose edges on it carry
        actions), symbols ascending. The set is walked state by state, or symbol by symbol through
        ``step`` when that takes fewer lookups (a large set over a small alphabet)."""
        states = mask.bit_count()
        if len(self.alphabet) * min(states, (mask.bit_length() + 7) >> 3) < states * self._mean_degree:
            has, act, small = self.has, self.act, self._small
            if small is None:
                step = self.step
                return [(sym, step(mask, sym), mask & act[sym]) for sym in self.alphabet if mask & has[sym]]
            out = []
            for sym in self.alphabet:  # a small automaton: whole tables, ints of one machine word
                m = mask & has[sym]
                if m:
                    tables = small[sym] or self._small_tables(sym)
                    target = c = 0
                    while m:
                        target |= tables[c][m & 0xFF]
                        m >>= CHUNK_BITS
                        c += 1
                    out.append((sym, target, mask & act[sym]))
            return out
        targets: dict[int, list[int]] = {}
        for s in bits(mask):
            for sym, succ, acting in self._out_edges[s]:
                t = targets.get(sym)
                if t is None:
                    targets[sym] = [succ, acting]
                else:
                    t[0] |= succ
                    t[1] |= acting
        return [(sym, t[0], t[1]) for sym, t in sorted(targets.items())]

    def _table(self, sym: int, chunk: int) -> list[int]:
        """The union of succ[sym] for each of the 256 values of chunk ``chunk``."""
        succ = self.succ[sym]
        base = chunk * CHUNK_BITS
        table = [0] * CHUNK_VALUES
        for v in range(1, CHUNK_VALUES):
            low = v & -v
            s = base + low.bit_length() - 1
            table[v] = table[v ^ low] | succ.get(s, 0)
        return table

    def _small_tables(self, sym: int) -> list[list[int]]:
        assert self._small is not None
        t = self._small[sym] = [self._table(sym, c) for c in range((self.size + CHUNK_BITS - 1) // CHUNK_BITS)]
        return t

    def _union(self, sym: int, base: int, value: int) -> int:
        succ = self.succ[sym]
        u = 0
        for s in bits(value):
            u |= succ.get(base + s, 0)
        return u

    def paths(self, mask: int, sym: int) -> tuple[Path, ...]:
        """The distinct non-empty action paths of the step from ``mask`` on ``sym``, sorted: they
        come from the states whose edges on sym carry actions only, so they are computed once per
        set of such states."""
        acting = mask & self.act[sym]
        if not acting:
            return ()
        key = (sym, acting)
        p = self._paths.get(key)
        if p is None:
            if acting & (acting - 1):
                found: set[Path] = set()
                for s in bits(acting):
                    found.update(self._state_paths(s, sym))
                p = tuple(sorted(found))
            else:
                p = self._state_paths(acting.bit_length() - 1, sym)
            self._paths[key] = p
        return p

    def _state_paths(self, s: int, sym: int) -> tuple[Path, ...]:
        es = self.efa.edges[s][sym]
        if len(es) == 1:
            return self._edge_paths(es[0].follow, es[0].prefix)
        return tuple(sorted({p for e in es for p in self._edge_paths(e.follow, e.prefix)}))

    def _edge_paths(self, follow: int, prefix: Path) -> tuple[Path, ...]:
        """The paths of an edge into a follow set: shared by every edge with the same follow set
        and prefix (a tenth of the edges, in a product's embedding)."""
        key = (follow, prefix)
        p = self._follow_paths.get(key)
        if p is None:
            p = self._follow_paths[key] = tuple(sorted(set(self.efa.follows[follow].paths_after(prefix))))
        return p

    def merged(self, mask: int, sym: int) -> Path:
        """The step's actions merged as one transition runs them (``actions.merge``), once per
        distinct set of paths; a step through one edge, the common case, is looked up by the
        edge's follow set and prefix."""
        acting = mask & self.act[sym]
        if not acting:
            return ()
        if not acting & (acting - 1):
            es = self.efa.edges[acting.bit_length() - 1][sym]
            if len(es) == 1:
                key = (es[0].follow, es[0].prefix)
                m = self._edge_merged.get(key)
                if m is None:
                    m = self._edge_merged[key] = self._merge_paths(self._edge_paths(*key))
                return m
        return self._merge_paths(self.paths(acting, sym))

    def _merge_paths(self, paths: tuple[Path, ...]) -> Path:
        m = self._merged.get(paths)
        if m is None:
            m = self._merged[paths] = merge(paths, self.occ)
        return m

    def accepting(self, mask: int) -> bool:
        return bool(mask & self.final)

    def terminal(self, mask: int) -> bool:
        """An accepting state with no way out ends the instance (choice 6)."""
        return bool(mask & self.final) and not mask & self.out

    def symbols(self, mask: int, among: tuple[int, ...]) -> tuple[int, ...]:
        """The symbols of ``among`` with a transition from ``mask``, in the order given."""
        return tuple(s for s in among if mask & self.has[s])


class PositionSets(Positions):
    """Steps of the lazy DFA over int masks of NFA states, with the same outputs as ``subset``:
    what the engine runs, with a lookup table per chunk (unrolled in its generated code)."""

    def __init__(self, efa: EFA, occ: OccurrenceTable, nsym: int) -> None:
        super().__init__(efa, occ, nsym)
        self.chunks = max(1, (efa.size + CHUNK_BITS - 1) // CHUNK_BITS)
        self.initial_units = occ.units(merge(efa.start.paths, occ))
        eager = nsym * self.chunks * CHUNK_VALUES <= EAGER_TABLE_ENTRIES
        #: tables[sym][c][v]: the union of succ[sym] over the bits of value v in chunk c.
        self.tables: list[list[list[int] | None]] = [
            [self._table(sym, c) if eager else None for c in range(self.chunks)] for sym in range(nsym)
        ]
        self._units: dict[tuple[int, int], Units] = {}

    def table(self, sym: int, chunk: int) -> list[int]:
        t = self.tables[sym][chunk]
        if t is None:
            t = self.tables[sym][chunk] = self._table(sym, chunk)
        return t

    @property
    def eager_tables(self) -> bool:
        return all(t is not None for row in self.tables for t in row)

    def step(self, mask: int, sym: int) -> int:
        """As ``Positions.step``, through the tables."""
        if not mask & self.has[sym]:
            return 0
        out = 0
        tables = self.tables[sym]
        while mask:  # one lookup per chunk that has a state: large automata have sparse sets
            shift = ((mask & -mask).bit_length() - 1) & ~(CHUNK_BITS - 1)
            c = shift // CHUNK_BITS
            t = tables[c]
            if t is None:
                t = self.table(sym, c)
            out |= t[(mask >> shift) & 0xFF]
            mask &= ~(0xFF << shift)
        return out

    def units(self, mask: int, sym: int) -> Units:
        """The action units of the step, merged as the DFA's transition merges them."""
        acting = mask & self.act[sym]
        if not acting:
            return ()
        key = (sym, acting)
        u = self._units.get(key)
        if u is None:
            u = self._units[key] = self._merge(acting, sym)
        return u

    def _merge(self, acting: int, sym: int) -> Units:
        return self.occ.units(self.merged(acting, sym))

    def to_json(self, mask: int) -> list[int]:
        """The lazy DFA's snapshot form: the sorted NFA states."""
        return list(bits(mask))

    def from_json(self, data: object) -> int:
        if not isinstance(data, list) or not all(type(s) is int and 0 <= s < self.size for s in data):
            raise ValueError(f"not a lazy-DFA state: {data!r}")
        return to_mask(data)


def to_mask(states: Iterable[int]) -> int:
    m = 0
    for s in states:
        m |= 1 << s
    return m


def bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


#: Up to this many chunks a step is generated as one expression; beyond, ``step`` loops.
UNROLLED_CHUNKS = 32


def step_expression(ps: PositionSets, mask: str, tables: str) -> str | None:
    """Python source of ``step`` for this automaton (``tables`` naming ``ps.tables[sym]``), the
    chunks unrolled; None when the automaton is too large for that (or its tables are built on
    demand)."""
    if ps.chunks > UNROLLED_CHUNKS or not ps.eager_tables:
        return None
    last = ps.chunks - 1
    parts = []
    for c in range(ps.chunks):
        shifted = mask if c == 0 else f"({mask} >> {c * CHUNK_BITS})"
        parts.append(f"{tables}[{c}][{shifted}{'' if c == last else ' & 255'}]")
    return " | ".join(parts)
