"""The records of a gated partition, split into queues merged in record-time order: a
repartition partition's per source partition (``SourceStreams``), the partition of a topic other
programs write per record key (``WriterStreams``).

The tasks of a program re-publish each other's records as soon as they fetch them
(``Task.forward_ahead``), so a repartition partition interleaves several source partitions in
fetch order, not in record-time order: a record of 08:00 from one source may follow one of 08:05
from another. Each source partition's copies come in record-time order (its offset order, or,
for a partition several upstream tasks write, the order ``Task._forward_in_time_order``
re-publishes them in), so the merge takes them as Kafka Streams' PartitionGroup takes
partitions: the earliest head first, each source's copies in the order they came, which the
deduplication of copies sent again relies on (``copies.py``). Ties between sources go by the
producer's order (``es-seq``, ``seq_of``), then by source topic and partition, so that which of
two records of one time comes first does not depend on fetch order.
"""

from __future__ import annotations

import collections
import heapq
import re

from . import codec
from .record import Record

#: The ``es-seq`` of a record that carries none: before every one that does (timer firings carry
#: none, and come first).
NO_SEQ = -1


def seq_of(msg: Record) -> int:
    """The producer's order of ``msg`` among records of its time on other partitions (its
    ``es-seq`` header, which outputs copy from their cause); ``NO_SEQ`` when it has none."""
    raw = codec.header(msg.headers(), codec.HEADER_SEQ)
    if raw is None:
        return NO_SEQ
    try:
        return int(raw)
    except ValueError:
        return NO_SEQ


def _source_of(msg: Record) -> tuple[str, int]:
    """The re-published record's source partition (topic, partition), from its header."""
    raw = codec.header(msg.headers(), codec.HEADER_SOURCE)
    if raw is None:
        return "", -1
    head = raw.decode().rpartition(":")[0]  # "topic:partition:offset"
    topic, _, partition = head.rpartition(":")
    return topic, int(partition)


class SourceStreams:
    """Records of one partition split by source partition, each queue in offset order."""

    #: Not followed here: the partition's position passes its records with its next marker.
    taken_to: int | None = None

    def __init__(self) -> None:
        self.queues: dict[tuple[str, int], collections.deque[Record]] = {}
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def append(self, msg: Record) -> None:
        source = _source_of(msg)
        queue = self.queues.get(source)
        if queue is None:
            queue = self.queues[source] = collections.deque()
        queue.append(msg)
        self.count += 1

    def head(self) -> tuple[int, int, tuple[str, int]] | None:
        """The earliest head's (record time ms, ``es-seq``, source); None when empty."""
        best: tuple[int, int, tuple[str, int]] | None = None
        for source, queue in self.queues.items():
            if queue:
                k = (queue[0].timestamp()[1], seq_of(queue[0]), source)
                if best is None or k < best:
                    best = k
        return best

    def pop(self, source: tuple[str, int]) -> Record:
        self.count -= 1
        return self.queues[source].popleft()

    def first_offset(self) -> int | None:
        """The least offset still queued (None: none): the partition's position stays before it."""
        offsets = [queue[0].offset() for queue in self.queues.values() if queue]
        return min(offsets) if offsets else None

    def clear(self) -> None:
        self.queues.clear()
        self.count = 0


#: An ``es-id``'s innermost record coordinates, "topic:partition:offset" (its cause's origin).
_COORDINATES = re.compile(rb"([^/~]+):(\d+):(\d+)")
#: The runs of digits of an ``es-id`` (ranks, offsets, partitions, timer counts).
_NUMBERS = re.compile(rb"(\d+)")


class IdOrder:
    """An ``es-id`` in the order its numbers say, not its text: the outputs of one cause, ranks
    1, 2, ..., 10, in the order they were emitted (as text, "/10" comes before "/2"). Equality
    is the id's bytes; the order, needed only when everything before it in a tie key is equal,
    is worked out then (and kept)."""

    __slots__ = ("_key", "raw")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._key: tuple[bytes | int, ...] | None = None

    def key(self) -> tuple[bytes | int, ...]:
        """The id split into its text and its numbers (text first, alternating: two keys compare
        text with text and numbers with numbers)."""
        if self._key is None:
            parts = _NUMBERS.split(self.raw)
            self._key = tuple(int(p) if i % 2 else p for i, p in enumerate(parts))
        return self._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdOrder) and self.raw == other.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    def __lt__(self, other: IdOrder) -> bool:
        return self.raw != other.raw and self.key() < other.key()

    def __repr__(self) -> str:
        return f"IdOrder({self.raw!r})"


#: The tie order of a record, after ``es-seq``, from its ``es-id`` (``origin_of``).
Origin = tuple[int, bytes, int, int, IdOrder]


def tie_of(msg: Record) -> tuple[int, Origin]:
    """``seq_of`` and ``origin_of`` of ``msg``, its headers read once (for every record a
    ``WriterStreams`` queues)."""
    seq, raw = NO_SEQ, b""
    for k, v in msg.headers() or ():
        if k == codec.HEADER_ID:
            raw = v or b""
        elif k == codec.HEADER_SEQ and v is not None:
            try:
                seq = int(v)
            except ValueError:
                pass
    return seq, _origin(raw)


def _id_of(msg: Record) -> bytes:
    """The ``es-id`` of ``msg`` (empty: it has none, and is never taken for a repeat)."""
    return codec.header(msg.headers(), codec.HEADER_ID) or b""


def origin_of(msg: Record) -> Origin:
    """The tie order, after ``es-seq``, of a record another program wrote, from its ``es-id``:
    what its writer did at that record time, in the order the tester does it — timer firings
    first, then records by their cause's source coordinates (topic, partition, offset: the
    trace's order within a source partition); the whole id last, its numbers as numbers
    (``IdOrder``), so that the order is total."""
    return _origin(codec.header(msg.headers(), codec.HEADER_ID) or b"")


def _origin(raw: bytes) -> Origin:
    """``origin_of`` an ``es-id``."""
    timer = b"~" in raw
    found = _COORDINATES.search(raw)
    if found is None:
        return (0 if timer else 1), b"", -1, -1, IdOrder(raw)
    topic, partition, offset = found.groups()
    return (0 if timer else 1), topic, int(partition), int(offset), IdOrder(raw)


class WriterStreams:
    """Records of one gated partition of a topic that several upstream tasks write, one queue per
    record key.

    The writers' records land in the order their commits did: one task may be minutes ahead of
    another on the same partition, and records of one time from two tasks come in either order.
    Each key is written by one task at a time, in record-time order, so the queue of one key is in
    record-time order; the merge takes the earliest head, ties by ``es-seq`` (``seq_of``: the
    order the producer gave their causes), then in ``origin_of``'s order, so the
    partition is read in record-time order whatever the interleaving (a heap of heads: a partition
    may hold many keys). A key's records keep their offset order.

    A record whose ``es-id`` is already queued under its key is a repeat (at-least-once: a writer
    task that restarted from its last commit wrote its batch again) and is dropped, its offset kept
    in ``repeats`` for the reading task to note as done (``copies.py``), so that a restart from a
    commit drops it too. Its original is still queued whenever it comes: a writer on at-least-once
    marks its progress only once the batch is committed (``kafka/checkpoint.py``), so no reader
    releases a record its writer may write again before the repeat is written, which is before
    the marker that releases both."""

    def __init__(self) -> None:
        self.queues: dict[bytes | None, collections.deque[Record]] = {}
        #: (record time ms, es-seq, origin, arrival number, key) of each queue's first record.
        self.heads: list[tuple[int, int, Origin, int, bytes | None]] = []
        self.count = 0
        self._arrivals = 0
        #: Offsets queued (a heap) and those taken since, for the least offset still queued.
        self._offsets: list[int] = []
        self._taken: set[int] = set()
        #: The offset after the highest one taken (None: none yet).
        self.taken_to: int | None = None
        #: The ``es-id``s queued per key, for the keys that had two records queued at once (made
        #: then: a key with one record at a time, the common case, pays nothing).
        self._ids: dict[bytes | None, set[bytes]] = {}
        #: The offsets of the repeats dropped since last taken (``take_repeats``).
        self.repeats: list[int] = []

    def __len__(self) -> int:
        return self.count

    def _push_head(self, key: bytes | None, msg: Record) -> None:
        self._arrivals += 1
        seq, origin = tie_of(msg)
        heapq.heappush(self.heads, (msg.timestamp()[1], seq, origin, self._arrivals, key))

    def append(self, msg: Record) -> bool:
        """Queue ``msg``; False when it is a repeat of a record queued under its key (dropped)."""
        key = msg.key()
        queue = self.queues.get(key)
        if queue is None:
            queue = self.queues[key] = collections.deque()
        if not queue:
            self._push_head(key, msg)
        else:
            ids = self._ids.get(key)
            if ids is None:
                ids = self._ids[key] = {_id_of(m) for m in queue}
            rid = _id_of(msg)
            if rid and rid in ids:
                offset = msg.offset()
                self.repeats.append(offset)
                if self.taken_to is None or offset >= self.taken_to:
                    self.taken_to = offset + 1  # (the position may pass it: it is done with)
                return False
            ids.add(rid)
        queue.append(msg)
        heapq.heappush(self._offsets, msg.offset())
        self.count += 1
        return True

    def take_repeats(self) -> list[int]:
        """The offsets of the repeats dropped since last taken."""
        taken, self.repeats = self.repeats, []
        return taken

    def head(self) -> tuple[int, int, Origin] | None:
        """The earliest head's (record time ms, es-seq, origin); None when empty."""
        if not self.heads:
            return None
        ts, seq, origin, _, _ = self.heads[0]
        return ts, seq, origin

    def pop(self, _head: object = None) -> Record:
        """Take the earliest head (the one ``head`` names)."""
        _, _, _, _, key = heapq.heappop(self.heads)
        queue = self.queues[key]
        msg = queue.popleft()
        ids = self._ids.get(key)
        if queue:
            self._push_head(key, queue[0])
            if ids is not None:
                ids.discard(_id_of(msg))
        else:
            del self.queues[key]
            if ids is not None:
                del self._ids[key]
        self.count -= 1
        offset = msg.offset()
        self._taken.add(offset)
        if self.taken_to is None or offset >= self.taken_to:
            self.taken_to = offset + 1
        return msg

    def first_offset(self) -> int | None:
        """The least offset still queued (None: none)."""
        offsets, taken = self._offsets, self._taken
        while offsets and offsets[0] in taken:
            taken.discard(heapq.heappop(offsets))
        return offsets[0] if offsets else None

    def clear(self) -> None:
        self.queues.clear()
        self.heads.clear()
        self._offsets.clear()
        self._taken.clear()
        self._ids.clear()
        self.repeats.clear()
        self.count = 0
        self.taken_to = None
