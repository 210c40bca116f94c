"""The structural diff of two programs' regular expressions: which markers and action blocks of
the old version are which of the new one.

Markers are matched by what they match (their event names, or the kind of a time marker, so an
``elapse`` whose duration changed is still the same marker), action blocks by their text, and the
trees around them by shape, top-down, as tree diffs do (GumTree's top-down phase, simplified):

- a sequence is aligned with a sequence in order (the best-scoring alignment, dynamic
  programming as in a longest common subsequence), so an item inserted or removed in one place
  leaves the others matched;
- an alternation is matched with an alternation as a set (the best pairs first), so reordered
  alternatives stay matched;
- a node is also compared with each child of the other side's node, so wrapping an item in a
  group, an alternation or a repetition (``A()`` → ``(A() | D())``) keeps it matched.

Each pair of nodes scores the markers matched below it (1 each, 1.5 when the text is the same)
and the action blocks (0.5 when the text is the same, 0.2 otherwise), so that the best alignment
is the one that keeps the most of the program.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..language import ir

_Pairs = tuple[tuple[str, int, int], ...]


@dataclass
class Match:
    """Old index → new index, for markers and for action units."""

    markers: dict[int, int] = field(default_factory=dict)
    units: dict[int, int] = field(default_factory=dict)


def match_programs(old: ir.ProgramIR, new: ir.ProgramIR) -> Match:
    """The markers and action blocks of ``old`` matched with those of ``new``."""
    _, pairs = _Differ(old, new).sim(old.regex, new.regex)
    match = Match()
    for kind, o, n in pairs:
        (match.markers if kind == "m" else match.units)[o] = n
    return match


def marker_label(p: ir.ProgramIR, marker: int) -> tuple[str, ...]:
    """What a marker matches, in terms that survive an edit elsewhere: its symbols' names, or
    the kind of a time marker (``elapse``, ``arrive``)."""
    m = p.markers[marker]
    names = []
    for s in m.symbols:
        sym = p.symbols[s]
        names.append(sym.name.split("@")[0] + "#time" if sym.kind == "time" else sym.name)
    return tuple(sorted(names))


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _children(r: ir.Node) -> list[ir.Node]:
    if isinstance(r, (ir.RSeq, ir.RAlt)):
        return list(r.items)
    if isinstance(r, ir.RRepeat):
        return [r.item]
    if isinstance(r, (ir.RInter, ir.RDiff)):
        return [r.left, r.right]
    return []


class _Differ:
    def __init__(self, old: ir.ProgramIR, new: ir.ProgramIR) -> None:
        self.old = old
        self.new = new
        self.memo: dict[tuple[int, int], tuple[float, _Pairs]] = {}

    def sim(self, o: ir.Node, n: ir.Node) -> tuple[float, _Pairs]:
        key = (id(o), id(n))
        got = self.memo.get(key)
        if got is None:
            got = self.memo[key] = self._sim(o, n)
        return got

    def _sim(self, o: ir.Node, n: ir.Node) -> tuple[float, _Pairs]:
        if isinstance(o, ir.RMarker) and isinstance(n, ir.RMarker):
            if marker_label(self.old, o.marker) != marker_label(self.new, n.marker):
                return 0.0, ()
            same_text = _squeezed(self.old.markers[o.marker].text) == _squeezed(self.new.markers[n.marker].text)
            return (1.5 if same_text else 1.0), (("m", o.marker, n.marker),)
        if isinstance(o, ir.RUnit) and isinstance(n, ir.RUnit):
            same_text = _squeezed(self.old.units[o.unit].text) == _squeezed(self.new.units[n.unit].text)
            return (0.5 if same_text else 0.2), (("u", o.unit, n.unit),)
        best: tuple[float, _Pairs] = (0.0, ())
        if type(o) is type(n):
            if isinstance(o, ir.RSeq) and isinstance(n, ir.RSeq):
                best = self._align(o.items, n.items)
            elif isinstance(o, ir.RAlt) and isinstance(n, ir.RAlt):
                best = self._pair_up(o.items, n.items)
            elif isinstance(o, ir.RRepeat) and isinstance(n, ir.RRepeat):
                best = self.sim(o.item, n.item)
            elif isinstance(o, (ir.RInter, ir.RDiff)) and isinstance(n, (ir.RInter, ir.RDiff)):
                left, right = self.sim(o.left, n.left), self.sim(o.right, n.right)
                best = (left[0] + right[0], left[1] + right[1])
        if best[0] == 0.0 or type(o) is not type(n):
            for child in _children(n):  # o wrapped in n
                best = max(best, self.sim(o, child), key=lambda x: x[0])
            for child in _children(o):  # o's child unwrapped
                best = max(best, self.sim(child, n), key=lambda x: x[0])
        return best

    def _align(self, olds: list[ir.Node], news: list[ir.Node]) -> tuple[float, _Pairs]:
        """The best in-order alignment of two sequences (dynamic programming over suffixes, read
        from the front, so that among equal alignments the earliest items pair up: removing the
        second of ``Closed() Closed()`` keeps the first matched)."""
        rows, cols = len(olds), len(news)
        score = [[0.0] * (cols + 1) for _ in range(rows + 1)]
        for i in range(rows - 1, -1, -1):
            for j in range(cols - 1, -1, -1):
                score[i][j] = max(score[i + 1][j], score[i][j + 1], score[i + 1][j + 1] + self.sim(olds[i], news[j])[0])
        pairs: list[tuple[str, int, int]] = []
        i = j = 0
        while i < rows and j < cols:
            s, p = self.sim(olds[i], news[j])
            if s > 0 and score[i][j] == score[i + 1][j + 1] + s:
                pairs.extend(p)
                i, j = i + 1, j + 1
            elif score[i][j] == score[i + 1][j]:
                i += 1
            else:
                j += 1
        return score[0][0], tuple(pairs)

    def _pair_up(self, olds: list[ir.Node], news: list[ir.Node]) -> tuple[float, _Pairs]:
        """Alternatives matched as a set: the best-scoring pairs first; at equal scores, those
        whose places are closest (an unchanged alternation pairs each item with itself)."""
        candidates = []
        for i, o in enumerate(olds):
            for j, n in enumerate(news):
                s, p = self.sim(o, n)
                if s > 0:
                    candidates.append((-s, abs(i - j), i, j, p))
        candidates.sort(key=lambda c: c[:4])
        used_old: set[int] = set()
        used_new: set[int] = set()
        total = 0.0
        pairs: list[tuple[str, int, int]] = []
        for neg, _, i, j, p in candidates:
            if i in used_old or j in used_new:
                continue
            used_old.add(i)
            used_new.add(j)
            total -= neg
            pairs.extend(p)
        return total, tuple(pairs)
