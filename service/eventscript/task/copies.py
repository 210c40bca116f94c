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

Persisted as one JSON object under ``HWM_KEY``: ``{"topic:partition": bound}``, or
``[bound, [offsets...]]`` where offsets are kept (``state.changelog.decode_hwm`` reads the bound
of either).
"""

from __future__ import annotations

from typing import Any

import orjson

#: The key prefix of a task's own input partition (``done``), apart from the copies' sources.
DONE = "@"


class CopiesSeen:
    """Per source partition ("topic:partition"): the offset below which every copy is a repeat,
    and the offsets at or above it already processed."""

    def __init__(self) -> None:
        self.below: dict[str, int] = {}
        self.seen: dict[str, set[int]] = {}
        #: Changed since last written (``encode``).
        self.dirty = False

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
                seen = {o for o in seen if o >= bound}
                self.seen[source] = seen
        if offset >= bound:
            if seen is None:
                seen = self.seen[source] = set()
            seen.add(offset)
        self.dirty = True
        return True

    def done(self, name: str, offset: int) -> None:
        """The task re-published or processed record ``offset`` of its input partition ``name``."""
        seen = self.seen.get(DONE + name)
        if seen is None:
            seen = self.seen[DONE + name] = set()
        seen.add(offset)
        self.dirty = True

    def settle(self, name: str, position: int) -> None:
        """The position of input partition ``name`` is at ``position``: the offsets below it need
        not be kept (a restart reads from the position on)."""
        key = DONE + name
        seen = self.seen.get(key)
        if seen and min(seen) < position:
            kept = {o for o in seen if o >= position}
            if kept:
                self.seen[key] = kept
            else:
                del self.seen[key]
            self.below[key] = position
            self.dirty = True

    def done_before(self, name: str, offset: int) -> bool:
        """Whether record ``offset`` of input partition ``name`` was done with before the commit
        the task restarted from (read again after its position: skip it)."""
        seen = self.seen.get(DONE + name)
        return seen is not None and offset in seen

    def encode(self) -> bytes:
        data: dict[str, Any] = {}
        for source in {*self.below, *self.seen}:
            bound = self.below.get(source, 0)
            seen = self.seen.get(source)
            data[source] = [bound, sorted(seen)] if seen else bound
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
            if isinstance(value, list):
                copies.below[str(source)] = int(value[0])
                if len(value) > 1 and value[1]:
                    copies.seen[str(source)] = {int(o) for o in value[1]}
            else:
                copies.below[str(source)] = int(value)
        return copies
