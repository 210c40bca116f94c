"""Which re-published copies a task has processed (its repartition topic's deduplication).

A task re-publishes the records of other tasks' group keys on its program's repartition topic
(``Task._forward``), and re-publishes them again after a restart from its committed position, so
the reading task drops the copies it has already processed, by their source coordinates (header
``es-source``: topic, partition, offset).

A source partition's copies mostly come in offset order (an external topic, or one topic one
upstream task writes): then "already processed" is "below the offset after the last copy
processed", one number per source partition, as before. A partition several upstream tasks write
holds their records in the order their commits landed, and the forwarding task re-publishes them
in record-time order (``Task.forward_ahead``), which is not offset order. Such a copy carries the
header ``es-source-below``: the offset below which every record of its source partition that goes
anywhere has been re-published before it (the least offset the forwarder still holds back). The
reader then keeps that bound (the highest heard) and the offsets of the copies it processed at or
above it: a copy below the bound, or one whose offset is kept, is a repeat. The kept offsets are
those of the forwarder's window of disorder, and go as the bound passes them.

The same bookkeeping serves a task's own input partition that several upstream tasks write,
read in record-time order (``Task._forward_in_time_order``): its records are re-published or
processed out of offset order, and its position stays before the first one still waiting, so a
restart from a commit would take again the records after the position that the commit's state
already has. Under the key ``"@topic:partition"`` the task keeps the offsets of the records it has
done with at or above its position (``done``, ``settle``) and skips them when they are read again
(``done_before``): those it processed or re-published, and the repeats its queues dropped (records
an upstream task wrote again after a restart, ``streams.WriterStreams``), whose originals a restart
may not read again.

Persisted as one JSON object under ``HWM_KEY`` (with the watches of ``repeats.py`` under
``"#topic:partition"``: ``[until, [ids...]]``, and the offset of the marker that ended it, once
one did): ``{"topic:partition": bound}``, or
``[bound, [runs...]]`` where offsets are kept, a run being an offset or ``[start, end]`` for the
offsets from start to before end (``OffsetRuns``: a record that waits long below a task's position
leaves every record processed meanwhile noted, and those come in runs; a list of single offsets,
as written before, reads too). ``state.changelog.decode_hwm`` reads the bound of either.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

#: The key prefix of a task's own input partition (``done``), apart from the copies' sources.
DONE = "@"
#: The key prefix of an input partition's watch after its writer restarted (``watched``), which
#: ``state.changelog.decode_hwm`` leaves out.
WATCHED = "#"


class OffsetRuns:
    """A set of offsets kept as sorted, disjoint runs ``[start, end)``: noting the next offset of
    a run, the common case, extends it; a set of a partition's offsets noted while one record
    waits (every record processed meanwhile) stays a few runs, however many records."""

    __slots__ = ("ends", "starts")

    def __init__(self, offsets: Iterable[int] = ()) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        for offset in sorted(offsets):
            self.add(offset)

    def add(self, offset: int) -> None:
        starts, ends = self.starts, self.ends
        if not ends or offset > ends[-1]:
            starts.append(offset)
            ends.append(offset + 1)
            return
        if offset == ends[-1]:
            ends[-1] = offset + 1
            return
        i = bisect_right(starts, offset)  # (run i - 1 starts at or before it)
        if i and offset < ends[i - 1]:
            return
        left = i > 0 and ends[i - 1] == offset
        right = i < len(starts) and starts[i] == offset + 1
        if left and right:
            ends[i - 1] = ends[i]
            del starts[i], ends[i]
        elif left:
            ends[i - 1] = offset + 1
        elif right:
            starts[i] = offset
        else:
            starts.insert(i, offset)
            ends.insert(i, offset + 1)

    def add_run(self, start: int, end: int) -> None:
        """The offsets from ``start`` to before ``end`` (a run decoded)."""
        if end <= start:
            return
        i = bisect_right(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, end)
        self._merge()

    def _merge(self) -> None:
        """Join the runs that overlap or touch."""
        starts, ends = [self.starts[0]], [self.ends[0]]
        for a, b in zip(self.starts[1:], self.ends[1:], strict=True):
            if a <= ends[-1]:
                ends[-1] = max(ends[-1], b)
            else:
                starts.append(a)
                ends.append(b)
        self.starts, self.ends = starts, ends

    def __contains__(self, offset: object) -> bool:
        if not isinstance(offset, int):
            return False
        i = bisect_right(self.starts, offset)
        return i > 0 and offset < self.ends[i - 1]

    def drop_below(self, bound: int) -> None:
        """Forget the offsets below ``bound``."""
        starts, ends = self.starts, self.ends
        i = bisect_right(ends, bound)  # (runs ending at or before it go whole)
        del starts[:i], ends[:i]
        if starts and starts[0] < bound:
            starts[0] = bound

    def first(self) -> int:
        return self.starts[0]

    def __bool__(self) -> bool:
        return bool(self.starts)

    def __len__(self) -> int:
        return sum(self.ends) - sum(self.starts)

    def __iter__(self) -> Iterator[int]:
        for a, b in zip(self.starts, self.ends, strict=True):
            yield from range(a, b)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OffsetRuns):
            return (self.starts, self.ends) == (other.starts, other.ends)
        if isinstance(other, (set, frozenset)):
            return len(self) == len(other) and all(o in self for o in other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OffsetRuns({self.encode()})"

    def encode(self) -> list[int | list[int]]:
        return [a if b == a + 1 else [a, b] for a, b in zip(self.starts, self.ends, strict=True)]

    @classmethod
    def decode(cls, runs: Iterable[Any]) -> OffsetRuns:
        kept = cls()
        for run in runs:
            if isinstance(run, list):
                kept.add_run(int(run[0]), int(run[1]))
            else:
                kept.add(int(run))
        return kept


class Watch:
    """What a reader keeps of an input partition after its writer restarted (``repeats.py``): the
    record time its writers' progress must pass (``until``), the ids of the records it held and
    took since, each with its offset, and where its writers passed ``until`` (``ended_at``: the
    offset of that marker). Ended, it drops nothing a live reader would take (the copies are late
    by then), but it is kept until the committed position passes that marker: a reader restarted
    before it reads the copies again, and the markers that made them late only after them."""

    __slots__ = ("ended_at", "ids", "until")

    def __init__(self, until: int | None, ids: dict[bytes, int], ended_at: int | None = None) -> None:
        self.until = until
        self.ids = ids
        self.ended_at = ended_at

    def __repr__(self) -> str:
        return f"Watch(until={self.until}, ids={len(self.ids)}, ended_at={self.ended_at})"


class CopiesSeen:
    """Per source partition ("topic:partition"): the offset below which every copy is a repeat,
    and the offsets at or above it already processed."""

    def __init__(self) -> None:
        self.below: dict[str, int] = {}
        self.seen: dict[str, OffsetRuns] = {}
        #: Per input partition ("topic:partition") whose writer restarted (``repeats.py``). Kept
        #: with the commit, the ids below the partition's position (taken): a reader restarted
        #: from it reads after its position the copies of records it took before it (and the
        #: records it held, again: not kept).
        self.watched: dict[str, Watch] = {}
        #: Changed since last written (``encode``).
        self.dirty = False
        #: Per input partition ``name`` with offsets noted done when loaded (``decode``): one past
        #: the highest. Only a record below it can have been done with before the commit the task
        #: restarted from: a task reads each record once between loads (a rewind loads again),
        #: so the offsets it notes itself are of records it will not read again. So a record at
        #: or past it is not looked up (``done_before``, ``noting.DoneNotes``): out of offset
        #: order, most records of such a partition are taken while some are noted, and the
        #: look-up cost each about 100 ns (issue 21). Dropped once the position passes it.
        self.loaded_done: dict[str, int] = {}

    def first_time(self, source: str, offset: int, below: int | None) -> bool:
        """Whether the copy of record ``offset`` of ``source`` is processed for the first time,
        noting that it is. ``below``: its ``es-source-below`` (None: copies of ``source`` come in
        offset order, and every one before it is a repeat from here on)."""
        bound = self.below.get(source, 0)
        if offset < bound:
            return False
        seen = self.seen.get(source)
        if below is None:
            self.below[source] = offset + 1
            if seen is not None:
                del self.seen[source]
            self.dirty = True
            return True
        if seen is not None and offset in seen:
            return False
        if below > bound:
            self.below[source] = bound = below
            if seen:
                seen.drop_below(bound)
        if offset >= bound:
            if seen is None:
                seen = self.seen[source] = OffsetRuns()
            seen.add(offset)
        self.dirty = True
        return True

    def done(self, name: str, offset: int) -> None:
        """The task re-published or processed record ``offset`` of its input partition ``name``."""
        seen = self.seen.get(DONE + name)
        if seen is None:
            seen = self.seen[DONE + name] = OffsetRuns()
        seen.add(offset)
        self.dirty = True

    def settle(self, name: str, position: int) -> None:
        """The position of input partition ``name`` is at ``position``: the offsets below it need
        not be kept (a restart reads from the position on)."""
        key = DONE + name
        seen = self.seen.get(key)
        if seen and seen.first() < position:
            seen.drop_below(position)
            if not seen:
                del self.seen[key]
            self.below[key] = position
            self.dirty = True
        if name in self.loaded_done and position >= self.loaded_done[name]:
            del self.loaded_done[name]

    def done_before(self, name: str, offset: int) -> bool:
        """Whether record ``offset`` of input partition ``name`` was done with before the commit
        the task restarted from (read again after its position: skip it)."""
        end = self.loaded_done.get(name)
        if end is None or offset >= end:
            return False
        seen = self.seen.get(DONE + name)
        return seen is not None and offset in seen

    def unsaved(self) -> bool:
        """Whether a commit must write this again: changed since last written, or a watch kept
        (what a watch keeps depends on the committed position, ``encode``: a commit after the
        reader took records it held keeps their ids, though none was added since)."""
        return self.dirty or bool(self.watched)

    def encode(self, position: dict[str, int] | None = None) -> bytes:
        """The JSON to keep; ``position``: the input positions committed with it (the watches
        keep the ids of the records below them)."""
        data: dict[str, Any] = {}
        for source in {*self.below, *self.seen}:
            bound = self.below.get(source, 0)
            seen = self.seen.get(source)
            data[source] = [bound, seen.encode()] if seen else bound
        for name, watch in list(self.watched.items()):
            below = (position or {}).get(name, 0)
            if watch.ended_at is not None and below > watch.ended_at:
                del self.watched[name]  # (a restart reads after the marker that ended it)
                continue
            taken = sorted(i.decode("utf-8", "surrogateescape") for i, o in watch.ids.items() if o < below)
            data[WATCHED + name] = [watch.until, taken] + ([watch.ended_at] if watch.ended_at is not None else [])
        return orjson.dumps(data)

    @classmethod
    def decode(cls, raw: bytes | None) -> CopiesSeen:
        copies = cls()
        if raw is None:
            return copies
        data: Any = orjson.loads(raw)
        if not isinstance(data, dict):
            return copies
        for source, value in data.items():
            if str(source).startswith(WATCHED) and isinstance(value, list) and len(value) in (2, 3):
                until = int(value[0]) if value[0] is not None else None
                ids = {str(i).encode("utf-8", "surrogateescape"): -1 for i in value[1]}  # (taken: below)
                ended_at = int(value[2]) if len(value) == 3 else None
                copies.watched[str(source)[len(WATCHED) :]] = Watch(until, ids, ended_at)
            elif isinstance(value, list):
                copies.below[str(source)] = int(value[0])
                if len(value) > 1 and value[1]:
                    runs = copies.seen[str(source)] = OffsetRuns.decode(value[1])
                    if str(source).startswith(DONE) and runs:
                        copies.loaded_done[str(source)[len(DONE) :]] = runs.ends[-1]
            else:
                copies.below[str(source)] = int(value)
        return copies
