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

import bisect
import collections
import heapq
import itertools
import operator
import re
from typing import Any

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


#: ``order_of``: the ``es-seq``, then (0, what set the timer) for a timer firing's output that
#: says (``es-armed``), (1,) for any other record.
SeqOrder = tuple[int, tuple[Any, ...]]
_NOT_ARMED: tuple[Any, ...] = (1,)


def order_of(msg: Record) -> SeqOrder:
    """The order of ``msg`` among records of its time from other partitions or inputs: by its
    ``es-seq`` (``seq_of``), and among those of one (timer firings' outputs have none) the
    outputs of timers first, in the order the timers were set (``es-armed``, ``_armed_order``:
    the tester fires timers of one deadline so), before the records that name no such thing."""
    seq, _, armed = _tie_headers(msg)
    if armed is None:
        return seq, _NOT_ARMED
    return seq, (0, _armed_order(armed))


def _tie_headers(msg: Record) -> tuple[int, bytes, bytes | None]:
    """The ``es-seq`` (``NO_SEQ``: none, or not a number), ``es-id`` (empty: none) and
    ``es-armed`` of ``msg``, its headers read once."""
    seq, raw, armed = NO_SEQ, b"", None
    for k, v in msg.headers() or ():
        if k == codec.HEADER_ID:
            raw = v or b""
        elif k == codec.HEADER_SEQ and v is not None:
            try:
                seq = int(v)
            except ValueError:
                pass
        elif k == codec.HEADER_ARMED:
            armed = v
    return seq, raw, armed


def _tie_seq(msg: Record) -> int:
    """The ``es-seq`` of ``msg`` as ``tie_of`` reads it (``_tie_headers``: the last that is a
    number), without its origin. A program's outputs carry it last (``Task``'s output handler): that
    one is the answer without a loop over the others (at ten records a ms, nearly every record
    a reader releases is read so: bench/worker_markers.py --per-ms 10)."""
    headers = msg.headers()
    if not headers:
        return NO_SEQ
    k, v = headers[-1]
    if k == codec.HEADER_SEQ and v is not None:
        try:
            return int(v)
        except ValueError:
            pass
    seq = NO_SEQ
    for k, v in headers:
        if k == codec.HEADER_SEQ and v is not None:
            try:
                seq = int(v)
            except ValueError:
                pass
    return seq


#: ``WriterStreams._order_ties`` packs a record's time (from the release's first) and ``es-seq``
#: into one int, ``(time << _SEQ_BITS) + es-seq``, where every es-seq is within ``_SEQ_HALF`` of 0:
#: two es-seqs then differ by less than one ms's step, so the ints keep the pairs' order and
#: equality.
_SEQ_BITS = 40
_SEQ_HALF = 1 << (_SEQ_BITS - 1)


_NAME, _VALUE = operator.itemgetter(0), operator.itemgetter(1)


def _tie_seqs(msgs: list[Record]) -> list[int]:
    """``_tie_seq`` of each of ``msgs``: read in C (no call per record) where each carries its
    ``es-seq`` last and as a number, as a program's outputs do."""
    try:
        lasts = [m.headers()[-1] for m in msgs]  # type: ignore[index]  # (TypeError, IndexError: none)
        if all(map(operator.eq, map(_NAME, lasts), itertools.repeat(codec.HEADER_SEQ))):
            return list(map(int, map(_VALUE, lasts)))
    except (TypeError, IndexError, ValueError):
        pass
    return list(map(_tie_seq, msgs))


def _equal_spans(values: list[Any]) -> list[tuple[int, int]]:
    """The spans ``[start, end)`` of ``values`` (in order) where two or more neighbours are
    equal, found in C."""
    n = len(values)
    changes = itertools.compress(range(1, n), map(operator.ne, values, itertools.islice(values, 1, None)))
    cuts = [0, *changes, n]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b - a > 1]


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

    def put(self, msg: Record, _ts: int, _key: bytes | None) -> None:
        """``append`` (as ``WriterStreams.put``: the record time and key are not needed here)."""
        self.append(msg)

    def append(self, msg: Record, _ts: int | None = None) -> None:
        source = _source_of(msg)
        queue = self.queues.get(source)
        if queue is None:
            queue = self.queues[source] = collections.deque()
        queue.append(msg)
        self.count += 1

    def head(self) -> tuple[int, SeqOrder, tuple[str, int]] | None:
        """The earliest head's (record time ms, ``order_of``, source); None when empty."""
        best: tuple[int, SeqOrder, tuple[str, int]] | None = None
        for source, queue in self.queues.items():
            if queue:
                k = (queue[0].timestamp()[1], order_of(queue[0]), source)
                if best is None or k < best:
                    best = k
        return best

    def head_ms(self) -> int | None:
        """The record time of the earliest head (None: none)."""
        head = self.head()
        return None if head is None else head[0]

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


#: The tie order of a record, after ``es-seq``, from its ``es-id`` and ``es-armed``
#: (``origin_of``): (timer firing 0 / record 1, what set the timer, topic, partition, offset, id).
Origin = tuple[int, tuple[Any, ...], bytes, int, int, IdOrder]


def tie_of(msg: Record) -> tuple[int, Origin]:
    """``seq_of`` and ``origin_of`` of ``msg``, its headers read once (for every record a
    ``WriterStreams`` queues)."""
    seq, raw, armed = _tie_headers(msg)
    return seq, _origin(raw, armed)


def _tie_before(msg: Record, other: Record) -> bool:
    """``tie_of(msg) < tie_of(other)``, the ids parsed for their origins only where the two
    share an ``es-seq``: a hot key's records of one ms are compared so as they come (Zipf keys
    at ten records a ms: bench/worker_markers.py --per-ms 10), and mostly differ in it."""
    seq, raw, armed = _tie_headers(msg)
    other_seq, other_raw, other_armed = _tie_headers(other)
    if seq != other_seq:
        return seq < other_seq
    return _origin(raw, armed) < _origin(other_raw, other_armed)


def _id_of(msg: Record) -> bytes:
    """The ``es-id`` of ``msg`` (empty: it has none, and is never taken for a repeat)."""
    return codec.header(msg.headers(), codec.HEADER_ID) or b""


def origin_of(msg: Record) -> Origin:
    """The tie order, after ``es-seq``, of a record another program wrote, from its ``es-id``:
    what its writer did at that record time, in the order the tester does it — timer firings
    first, in the order they were set (``es-armed``: by when, then by what set them, as the
    writer took it; the tester fires the timers of one deadline so across all of a program's
    keys, which several tasks share out), then records by their cause's source coordinates
    (topic, partition, offset: the trace's order within a source partition); the whole id last,
    its numbers as numbers (``IdOrder``), so that the order is total."""
    _, raw, armed = _tie_headers(msg)
    return _origin(raw, armed)


def _armed_order(armed: bytes) -> tuple[Any, ...]:
    """The order of an ``es-armed`` header, "time,kind,seq,cause": (time, kind, seq, the cause's
    ``_origin``); () for one that does not parse (before every one that does)."""
    parts = armed.split(b",", 3)
    if len(parts) != 4:
        return ()
    try:
        return int(parts[0]), int(parts[1]), int(parts[2]), _origin(parts[3])
    except ValueError:
        return ()


def _origin(raw: bytes, armed: bytes | None = None) -> Origin:
    """``origin_of`` an ``es-id`` (and the ``es-armed`` of a timer firing's output)."""
    timer = b"~" in raw
    when = _armed_order(armed) if armed is not None and timer else ()
    found = _COORDINATES.search(raw)
    if found is None:
        return (0 if timer else 1), when, b"", -1, -1, IdOrder(raw)
    topic, partition, offset = found.groups()
    return (0 if timer else 1), when, topic, int(partition), int(offset), IdOrder(raw)


#: A record's offset (``WriterStreams._index``, ``waiting_offset``: called in C).
_OFFSET_OF = operator.methodcaller("offset")

#: A record time past every record's: no bound.
MAX_MS = 1 << 62

#: The most runs of records waiting (``WriterStreams._index``) before they are merged into one.
MAX_RUNS = 16


def _merge_key(msg: Record) -> tuple[int, int, Origin, int]:
    """The order ``WriterStreams`` takes records in: time, ``es-seq``, origin, offset."""
    seq, origin = tie_of(msg)
    return msg.timestamp()[1], seq, origin, msg.offset()


class WriterStreams:
    """Records of one gated partition of a topic that several upstream tasks write, taken in
    record-time order.

    The writers' records land in the order their commits did: one task may be minutes ahead of
    another on the same partition, and records of one time from two tasks come in either order.
    Each key is written by one task at a time, in record-time order, so the records of one key
    come in record-time order; the partition is taken as a merge of its keys' records: the
    earliest first, ties by ``es-seq`` (``seq_of``: the order the producer gave their causes),
    then in ``origin_of``'s order, then in offset order, so that it is read in record-time order
    whatever the interleaving. A key's records keep their offset order.

    Why no queue per key: at 100k keys nearly every key has one record waiting at a time, and a
    queue and a heap entry per record cost a reader more than the markers' whole share should
    (issue 21). The records wait in one list in arrival (offset) order (``arrived``), beside
    their record times. A record added is only noted under its key (``tail``); the records come
    since are put in place when records are released (``release``): a run of their indices,
    sorted by record time in C (stable: arrival order among equal times). Each release cuts every
    run at the bound by a bisection and merges only what it takes, so the records that wait on
    (a writer minutes ahead of another) are not sorted again with every fetch. A key is noted
    only while it has a record waiting (its last one), and only a key with several gets more
    (those records, and whether they came out of the merge's order). While every key's records
    are in that order, the merge is this sort, and records of one time are put in the tie order
    among themselves. A key whose records came out of that
    order (one task's timer firing after a record of the same time: it has no ``es-seq``, which
    sorts first) makes it a merge of per-key queues until that key has nothing waiting
    (``_merged``). The records released wait in ``ready``, in order, until the task's merge
    takes them.

    A record whose ``es-id`` is already waiting under its key is a repeat (at-least-once: a
    writer task that restarted from its last commit wrote its batch again) and is dropped, its
    offset kept in ``repeats`` for the reading task to note as done (``copies.py``), so that a
    restart from a commit drops it too. Its original is still waiting whenever it comes: a writer
    on at-least-once marks its progress only once the batch is committed
    (``kafka/checkpoint.py``), so no reader releases a record its writer may write again before
    the repeat is written, which is before the marker that releases both."""

    def __init__(self) -> None:
        #: The records put in place, in arrival (offset) order (those taken stay until
        #: ``_compact``), and their record times (ms); the indices of those still waiting, in
        #: runs each sorted by record time, and how many.
        self.arrived: list[Record] = []
        self.times: list[int] = []
        self.runs: list[list[int]] = []
        self.count = 0
        #: The least index waiting (None: not known, worked out when asked).
        self.first_index: int | None = None
        #: The records come since (not in place yet), in arrival order.
        self.tail: list[Record] = []
        self.tail_times: list[int] = []  # (their record times, read once: in ``append``)
        #: Records released (``release``) in the merge's order, not taken yet: before the others.
        self.ready: collections.deque[Record] = collections.deque()
        #: Each key with a record waiting → its last one; but the records appended past every one
        #: before them since ``last`` was last read — the last ``unnoted`` of ``tail``, and (put in
        #: place since) ``arrived`` from ``unnoted_from`` on — are noted only when ``last`` is next
        #: read (``_note_tail``), and never when every record waiting is taken first (``_forget``:
        #: the common case, the writers' markers releasing all that waits).
        self.last: dict[bytes | None, Record] = {}
        self.unnoted = 0
        self.unnoted_from: int | None = None
        #: While ``indexed``: the keys with several records waiting → those records, in order.
        #: Kept only from a record no later than its key's last one (a repeat, or out of order)
        #: until no key has several: a key's later record needs only ``last`` (``append``).
        self.indexed = False
        self.several: dict[bytes | None, collections.deque[Record]] = {}
        #: The latest record time appended (ms): a record past it is past its key's last one.
        self.top_ms = -1
        #: The keys whose records waiting are not in the merge's order.
        self.disordered: set[bytes | None] = set()
        #: While not ``indexed``: a key with several records of one ms waiting (its last one's) →
        #: (that last record, the ``es-id``s of its records of that ms), to tell a repeat among them
        #: (``_same_ms``); stale once the key's last is another record.
        self.same: dict[bytes | None, tuple[Record, set[bytes]]] = {}
        #: The offset after the highest one taken or dropped (None: none yet).
        self.taken_to: int | None = None
        #: The highest offset kept while records wait, and whether one came below it: records
        #: come in offset order as fetched (``append``), but a task's own records of a partition it
        #: re-publishes come in record-time order (``keep``: ``Task._forward_in_time_order``), and
        #: then the first record waiting is not the least offset waiting (``waiting_offset``).
        self.top_offset = -1
        self.out_of_offset_order = False
        #: While ``out_of_offset_order``: the offsets of the records put in place since it came
        #: (and of those waiting then), a heap, and those of them taken since (``gone``: dropped
        #: from the heap as they reach its top). ``waiting_offset`` is asked at each release, and
        #: a scan of every record waiting cost a worker whose program runs on several tasks (its
        #: own records kept in record-time order: ``Task._forward_in_time_order``) a fifth of its
        #: records per CPU-second (bench/worker_markers.py). (An offset is kept once between
        #: ``clear``s: a partition's record is read once, a rewind clears.)
        self.offset_heap: list[int] = []
        self.gone: set[int] = set()
        #: The offsets of the repeats dropped since last taken (``take_repeats``).
        self.repeats: list[int] = []

    def __len__(self) -> int:
        return self.count + len(self.tail) + len(self.ready)

    def keep(self, msg: Record) -> bool:
        """``append`` a record that may come before one appended already in offset order: a
        task's own records of a partition it re-publishes, kept in record-time order
        (``Task._forward_in_time_order``). The offsets are followed only here: the consumer's
        records, ``append``'s, come in offset order (one partition's fetches), and following them
        cost every record of a gated partition a tenth of what the markers cost it (issue 21)."""
        offset = msg.offset()
        if offset > self.top_offset:
            self.top_offset = offset
        elif not self.out_of_offset_order:
            self.out_of_offset_order = True
            arrived = self.arrived  # (those put in place; the tail's go in with it: ``_index``)
            self.offset_heap = [arrived[i].offset() for run in self.runs for i in run]
            heapq.heapify(self.offset_heap)
            self.gone = set()
        return self.append(msg)

    def append(self, msg: Record, ts: int | None = None) -> bool:
        """Queue ``msg`` (``put``; ``ts``: its record time in ms, when read already)."""
        return self.put(msg, msg.timestamp()[1] if ts is None else ts, msg.key())

    def put(self, msg: Record, ts: int, key: bytes | None) -> bool:
        """Queue ``msg``, of record time ``ts`` (ms) and key ``key`` (read by the caller, once:
        ``PartitionGroup.add`` reads both already), which comes after every record appended
        before in offset order (as the consumer fetches them; else ``keep``); False when it is a
        repeat of a record waiting under its key (dropped).
        (Only what a repeat needs is done here, once per record: the rest, in bulk, as records
        are released.) A repeat has its original's record time (its writer redid the batch from
        its committed clock), at most that of its key's last record: only a record no later than
        it is looked at any further (``_another``). Why a later one is only noted as its key's
        last, and the keys' records are indexed (``several``) only from such a record on: with
        Zipf keys most records have one of their key waiting, and a queue per key cost a reader
        a third of what the markers cost it (issue 21). A record past every one appended before
        (records mostly come so) is past its key's last without looking that up."""
        if ts > self.top_ms:
            self.top_ms = ts
            if not self.indexed:  # (noted under its key later, in bulk: ``_note_tail``)
                self.tail.append(msg)
                self.tail_times.append(ts)
                self.unnoted += 1
                return True
        if self.unnoted or self.unnoted_from is not None:
            self._note_tail()
        last = self.last.setdefault(key, msg)
        if last is not msg:
            if not self.indexed:
                before = last.timestamp()[1]
                if ts > before:
                    self.last[key] = msg
                    self.tail.append(msg)
                    self.tail_times.append(ts)
                    return True
                if ts == before and (kept := self._same_ms(key, last, msg, ts)) is not None:
                    return kept
                self._note_keys(index=True)  # (a repeat or out of order: its key's records needed)
            entry = self.several.get(key)
            if entry is None:
                entry = self.several[key] = collections.deque((last,))
            if (ts <= last.timestamp()[1] or self.disordered) and not self._another(key, last, msg):
                if len(entry) == 1:
                    del self.several[key]
                return False
            entry.append(msg)
            self.last[key] = msg
        self.tail.append(msg)
        self.tail_times.append(ts)
        return True

    def _note_tail(self) -> None:
        """Note under their keys (``last``) the records appended past every one before them
        since the last time: each is its key's last (in arrival order, a later one overrides),
        in one comprehension rather than a dictionary write per record as it comes. (Not
        ``map(operator.methodcaller("key"), ...)``: in CPython 3.11 the comprehension's
        specialised method call takes half the time.)"""
        if self.unnoted_from is not None:
            placed = self.arrived[self.unnoted_from :]
            self.unnoted_from = None
            self.last.update({m.key(): m for m in placed})
        if self.unnoted:
            new = self.tail[-self.unnoted :]
            self.unnoted = 0
            self.last.update({m.key(): m for m in new})

    def _same_ms(self, key: bytes | None, last: Record, msg: Record, ts: int) -> bool | None:
        """``msg``, of the record time ``ts`` of its key's ``last`` record, while no key's records
        are indexed: False when it repeats one of the key's records of that ms waiting (dropped, as
        ``_another`` drops it), True when it comes after ``last`` in the tie order (queued: the
        key's new last), None when it comes before (the key's records out of the merge's order:
        the caller indexes them). At ten records a ms a hot key has several of one ms waiting at
        every fetch; indexing every key's records for them (``_note_keys``) cost each record of
        the fetch more than the comparison costs the few (bench/event_time.py --per-ms 10, Zipf
        keys). A key's records of one ms are all taken at once or all wait (a release cuts by
        time; ``pop`` takes one and forgets its id), so the ids kept are those waiting."""
        entry = self.same.get(key)
        if entry is None or entry[0] is not last:
            entry = (last, {_id_of(last)})
        ids = entry[1]
        rid = _id_of(msg)
        if rid and rid in ids:
            self._dropped(msg)
            return False
        if _tie_before(msg, last):
            return None
        ids.add(rid)
        self.same[key] = (msg, ids)
        self.last[key] = msg
        self.tail.append(msg)
        self.tail_times.append(ts)
        return True

    def _dropped(self, msg: Record) -> None:
        """``msg`` is a repeat of a record waiting: noted, and the position may pass it."""
        offset = msg.offset()
        self.repeats.append(offset)
        if self.taken_to is None or offset >= self.taken_to:
            self.taken_to = offset + 1  # (the position may pass it: it is done with)

    def _another(self, key: bytes | None, last: Record, msg: Record) -> bool:
        """``msg``, no later than ``last`` under ``key`` (or some key's records are out of order):
        False when it is a repeat of a record waiting under ``key``; else noted."""
        ts, before = msg.timestamp()[1], last.timestamp()[1]
        if ts > before and key not in self.disordered:
            return True
        rid = _id_of(msg)
        if rid and self._waits(key, ts, rid):
            self._dropped(msg)
            return False
        if ts < before or (ts == before and _tie_before(msg, last)):
            self.disordered.add(key)  # (past ``before``: only where the key is so already)
        return True

    def _waits(self, key: bytes | None, ts: int, rid: bytes) -> bool:
        """Whether a record of record time ``ts`` and ``es-id`` ``rid`` waits under ``key``. A key
        whose records are in the merge's order has them in time order: only those at the end,
        from ``ts`` on, are looked at (a hot key has many waiting, most records of one ms come
        with others of it, and looking at all of them for each cost a reader at 10 records a ms
        and Zipf keys a quarter of its time: bench/worker_markers.py --per-ms 10)."""
        entry = self.several[key]
        if key in self.disordered:
            return any(m.timestamp()[1] == ts and _id_of(m) == rid for m in entry)
        for m in reversed(entry):
            t = m.timestamp()[1]
            if t < ts:
                return False
            if t == ts and _id_of(m) == rid:
                return True
        return False

    def take_repeats(self) -> list[int]:
        """The offsets of the repeats dropped since last taken."""
        taken, self.repeats = self.repeats, []
        return taken

    def head_ms(self) -> int | None:
        """The record time of the record the merge takes next (None: none)."""
        if self.ready:
            return self.ready[0].timestamp()[1]
        if not self.disordered:
            return self._least_time()
        head = self.head()
        return None if head is None else head[0]

    def head(self) -> tuple[int, int, Origin] | None:
        """The (record time ms, es-seq, origin) of the record the merge takes next; None when
        there is none."""
        if self.ready:
            msg = self.ready[0]
        else:
            first = self._first()
            if first is None:
                return None
            msg = self.arrived[first]
        return (msg.timestamp()[1], *tie_of(msg))

    def pop(self, _head: object = None) -> Record:
        """Take the record the merge takes next (the one ``head`` names)."""
        if self.ready:
            return self.ready.popleft()
        first = self._first()
        assert first is not None, "pop from an empty WriterStreams"
        waiting = self._merge_all()
        waiting.remove(first)
        if not waiting:
            self.runs.clear()
        msg = self._taken([first])[0]
        entry = self.same.get(msg.key()) if self.same else None
        if entry is not None:  # (its key's records of its ms may wait on: it no longer does)
            entry[1].discard(_id_of(msg))
        return msg

    def release(self, bound: int) -> collections.deque[Record]:
        """Move the records before record time ``bound`` to ``ready``, in the merge's order (a
        key's records after one at or past ``bound`` wait); returns ``ready``."""
        least = self._least_time()
        if least is not None and least < bound:
            self.ready.extend(self._take(bound))
        return self.ready

    def take_below(self, bound: int) -> list[Record]:
        """Take the records before record time ``bound`` in the merge's order (those released
        first)."""
        taken = list(self.ready)
        self.ready.clear()
        least = self._least_time()
        if least is not None and least < bound:
            taken.extend(self._take(bound))
        return taken

    def _index(self) -> list[list[int]]:
        """Put the tail in place, a run of its indices sorted by time (in C); the runs waiting."""
        tail = self.tail
        if tail:
            base = len(self.arrived)
            if self.unnoted and self.unnoted_from is None:  # (else the tail is all unnoted)
                self.unnoted_from = base + len(tail) - self.unnoted
            self.unnoted = 0
            self.tail = []
            self.arrived.extend(tail)
            if self.out_of_offset_order:
                heap = self.offset_heap
                for offset in map(_OFFSET_OF, tail):
                    heapq.heappush(heap, offset)
            tail_times = self.tail_times
            self.times.extend(tail_times)
            self.tail_times = []
            run = list(range(base, base + len(tail)))
            if any(map(operator.gt, tail_times, itertools.islice(tail_times, 1, None))):
                run.sort(key=self.times.__getitem__)  # (else in time order as they came: mostly)
            self.runs.append(run)
            self.count += len(tail)
            if len(self.runs) > MAX_RUNS:
                self._merge_all()
        return self.runs

    def _merge_all(self) -> list[int]:
        """The runs merged into one (a stable sort of them in arrival order); returns it."""
        if len(self.runs) > 1:
            merged = list(itertools.chain.from_iterable(self.runs))
            merged.sort(key=self.times.__getitem__)
            self.runs = [merged]
        return self.runs[0] if self.runs else []

    def _least_time(self) -> int | None:
        """The least record time waiting (None: none)."""
        times = self.times
        runs = self._index()
        return min([times[run[0]] for run in runs]) if runs else None

    def _first(self) -> int | None:
        """The index of the record the merge takes next (None: none waiting)."""
        if self.disordered:
            order = self._merged(MAX_MS, 1)
            return order[0] if order else None
        self._index()
        waiting = self._merge_all()
        if not waiting:
            return None
        times = self.times
        end = bisect.bisect_right(waiting, times[waiting[0]], key=times.__getitem__)
        if end == 1:
            return waiting[0]
        arrived = self.arrived
        return min(waiting[:end], key=lambda i: tie_of(arrived[i]))

    def _take(self, bound: int) -> list[Record]:
        """Take the records waiting before ``bound``, in the merge's order."""
        if self.disordered:
            order = self._merged(bound, None)
            if not order:  # (the records before the bound wait behind their keys' later ones)
                return []
            gone = set(order)
            self._index()
            left = [i for i in self._merge_all() if i not in gone]
            self.runs = [left] if left else []
            return self._taken(order)
        times = self.times
        key = times.__getitem__
        parts = []
        for run in self._index():
            cut = bisect.bisect_left(run, bound, key=key)
            if cut:
                parts.append(run[:cut])
                del run[:cut]
        self.runs = [run for run in self.runs if run]
        if not parts:
            return []
        if len(parts) > 1:
            order = list(itertools.chain.from_iterable(parts))  # (each in time order; equal times in arrival order)
            taken_times = list(map(times.__getitem__, order))
            if len(set(taken_times)) * 2 <= len(order):  # (mostly ties: one sort by time and es-seq)
                taken = self._taken(order)
                self._sort_ties(taken, taken_times)
                return taken
            order.sort(key=key)
        else:
            order = parts[0]
        taken = self._taken(order)
        taken_times = list(map(times.__getitem__, order))
        if any(map(operator.eq, taken_times, itertools.islice(taken_times, 1, None))):
            self._order_ties(taken, taken_times)
        return taken

    def _taken(self, order: list[int]) -> list[Record]:
        """The records at the indices ``order`` (taken off ``runs``), taken off what waits."""
        arrived = self.arrived
        taken = list(map(arrived.__getitem__, order))
        if self.out_of_offset_order:
            offsets = [m.offset() for m in taken]
            to = max(offsets) + 1
            gone = self.gone
            gone.update(offsets)
            if len(gone) > self.count + 1024:  # (the heap mostly records taken: rebuilt, once in so many)
                self.offset_heap = [o for o in self.offset_heap if o not in gone]
                heapq.heapify(self.offset_heap)
                gone.clear()
        else:
            to = arrived[max(order)].offset() + 1  # (arrival order is offset order)
        if self.taken_to is None or to > self.taken_to:
            self.taken_to = to
        self.count -= len(order)
        self.first_index = None
        self._forget(taken)
        if not self.runs and not self.tail:
            self.arrived, self.times = [], []
            self.top_offset, self.out_of_offset_order = -1, False
            self.offset_heap, self.gone = [], set()
        elif len(arrived) > 4 * self.count + 1024:
            self._compact()  # (the records taken stay in ``arrived`` until then)
        return taken

    def _compact(self) -> None:
        """Drop the records taken from ``arrived`` (renumbering those waiting). (Called after
        ``_forget``, which noted any record of ``arrived`` not noted yet: ``unnoted_from`` is None.)"""
        live = sorted(itertools.chain.from_iterable(self._index()))
        renumbered = {old: new for new, old in enumerate(live)}
        self.arrived = list(map(self.arrived.__getitem__, live))
        self.times = list(map(self.times.__getitem__, live))
        self.runs = [list(map(renumbered.__getitem__, run)) for run in self.runs]
        self.first_index = None

    def _forget(self, taken: list[Record]) -> None:
        """The keys of ``taken`` have one record fewer waiting each."""
        last = self.last
        if not self.runs and not self.tail:  # (none waits: the common case once released)
            self.unnoted, self.unnoted_from = 0, None  # (nothing left to note them for)
            last.clear()
            self.several.clear()
            self.disordered.clear()
            self.same.clear()
            self.indexed = False
            return
        if len(taken) > self.count + len(self.tail):  # (fewer wait on: noted again, from scratch)
            self._note_keys(self.indexed)
            return
        if self.unnoted or self.unnoted_from is not None:
            self._note_tail()
        if not self.several:  # (no key's records indexed: a key goes with its last record)
            self.indexed = False
            keys = [m.key() for m in taken]
            for key, msg in dict(zip(keys, taken)).items():  # (each key's last taken)
                if last[key] is msg:
                    del last[key]
            if self.same:
                self._prune_same()
            return
        several = self.several
        for msg in taken:  # (a key's records are taken in their order: its first each time)
            key = msg.key()
            entry = several.get(key)
            if entry is None:
                del last[key]
                continue
            entry.popleft()
            if len(entry) == 1:  # (one left: its last, as for any key with one)
                del several[key]
                self.disordered.discard(key)
        self.indexed = bool(several)

    def _note_keys(self, index: bool) -> None:
        """Note the keys of the records waiting anew: each one's last, and with ``index`` the
        records of those with several (a key out of order stays so while it has several)."""
        arrived = self.arrived
        waiting = [*map(arrived.__getitem__, sorted(itertools.chain.from_iterable(self.runs))), *self.tail]
        keys = [m.key() for m in waiting]
        self.last = dict(zip(keys, waiting))
        self.unnoted, self.unnoted_from = 0, None
        self.indexed = index
        if not index:
            self.several = {}
            self.disordered.clear()
            self._prune_same()
            return
        self.same = {}  # (indexed: ``several`` holds every key's records)
        several: dict[bytes | None, collections.deque[Record]] = {
            key: collections.deque() for key, n in collections.Counter(keys).items() if n > 1
        }
        if several:
            for key, msg in zip(keys, waiting):
                entry = several.get(key)
                if entry is not None:
                    entry.append(msg)
        self.several = several
        self.disordered &= several.keys()

    def _prune_same(self) -> None:
        """Drop the entries of ``same`` whose key's last record is another now (taken)."""
        last = self.last
        self.same = {key: entry for key, entry in self.same.items() if last.get(key) is entry[0]}

    @staticmethod
    def _order_ties(taken: list[Record], times: list[int]) -> None:
        """Put the runs of ``taken`` (in time order; ``times``, their times) that share a record
        time in the tie order (``tie_of``; equal ones stay in offset order): by ``es-seq``
        first (``_tie_seq``), then only the records of one ``es-seq`` by their origin. The same
        order as a sort by ``tie_of``, whose origin parses the ``es-id`` of every record (~1.2 µs
        each): at ten records a millisecond every record shares its time, and that sort cost a
        reader more than the rest of its merge (issue 21). Where most records share their time,
        the whole of ``taken`` is sorted once by (time, ``es-seq``) (stable: the same order as a
        sort of each run) rather than run by run: a run of ten records paid more in the calls
        around its sort than in the sort (bench/worker_markers.py --per-ms 10, Zipf)."""
        shared = sum(map(operator.eq, times, itertools.islice(times, 1, None)))  # (of the one before's time)
        if shared * 2 < len(taken):
            for start, end in _equal_spans(times):
                WriterStreams._order_run(taken, start, end)
            return
        WriterStreams._sort_ties(taken, times)

    @staticmethod
    def _sort_ties(taken: list[Record], times: list[int]) -> None:
        """Sort ``taken`` (``times``, their times; equal times in arrival order, not necessarily
        sorted by time) into the merge's order: by time, then ``es-seq``, then only the records of
        one time and ``es-seq`` by their origin, equal ones in the order given. A release of
        several runs (writers) where most records share their ms is sorted so once, not by time
        and then again by ``es-seq`` (bench/event_time.py --per-ms 10)."""
        seqs = _tie_seqs(taken)
        if min(seqs) >= -_SEQ_HALF and max(seqs) < _SEQ_HALF:  # (one int: compared faster than a pair)
            base = times[0]
            keys: list[Any] = [((t - base) << _SEQ_BITS) + s for t, s in zip(times, seqs)]
        else:
            keys = list(zip(times, seqs))
        if any(map(operator.gt, keys, itertools.islice(keys, 1, None))):
            order = sorted(range(len(taken)), key=keys.__getitem__)
            taken[:] = map(taken.__getitem__, order)
            keys = list(map(keys.__getitem__, order))
        if any(map(operator.eq, keys, itertools.islice(keys, 1, None))):
            for first, last in _equal_spans(keys):  # (one time and es-seq: their origins decide)
                taken[first:last] = sorted(taken[first:last], key=tie_of)

    @staticmethod
    def _order_run(taken: list[Record], start: int, end: int) -> None:
        """Put ``taken[start:end]``, records of one record time, in the tie order."""
        run = taken[start:end]
        seqs = [_tie_seq(m) for m in run]
        order = sorted(range(len(run)), key=seqs.__getitem__)  # (stable: offset order kept)
        run = list(map(run.__getitem__, order))
        seqs = list(map(seqs.__getitem__, order))
        for first, last in _equal_spans(seqs):  # (one es-seq: their origins decide)
            run[first:last] = sorted(run[first:last], key=tie_of)
        taken[start:end] = run

    def _merged(self, bound: int, limit: int | None) -> list[int]:
        """The indices of the records before ``bound`` in the merge's order (the first
        ``limit``) while some key's records are out of that order: a merge of per-key queues,
        each in offset order (a key waits at its first record at or past ``bound``)."""
        arrived = self.arrived
        queues: dict[bytes | None, collections.deque[int]] = {}
        for i in sorted(itertools.chain.from_iterable(self._index())):
            key = arrived[i].key()
            queue = queues.get(key)
            if queue is None:
                queues[key] = collections.deque((i,))
            else:
                queue.append(i)
        heads = [(_merge_key(arrived[q[0]]), key) for key, q in queues.items()]
        heapq.heapify(heads)
        order: list[int] = []
        while heads and heads[0][0][0] < bound and (limit is None or len(order) < limit):
            _, key = heapq.heappop(heads)
            queue = queues[key]
            order.append(queue.popleft())
            if queue:
                heapq.heappush(heads, (_merge_key(arrived[queue[0]]), key))
        return order

    def waiting_offset(self) -> int | None:
        """The least offset still waiting, not counting those ready (None: none). Where the
        records came out of offset order, every one waiting is looked at: the first by index is
        not the least (a task killed after committing a position past a record still waiting loses
        it: tests/task/test_kept_out_of_offset_order.py)."""
        if self.out_of_offset_order:
            heap, gone = self.offset_heap, self.gone
            while heap and heap[0] in gone:
                gone.discard(heapq.heappop(heap))
            least = heap[0] if heap else None
            if self.tail:  # (not in the heap yet)
                first = min(map(_OFFSET_OF, self.tail))
                if least is None or first < least:
                    least = first
            return least
        if self.runs:
            if self.first_index is None:
                self.first_index = min([min(run) for run in self.runs])
            return self.arrived[self.first_index].offset()
        return self.tail[0].offset() if self.tail else None

    def first_offset(self) -> int | None:
        """The least offset still waiting or ready (None: none)."""
        first = self.waiting_offset()
        if self.ready:
            ready = min([m.offset() for m in self.ready])
            return ready if first is None or ready < first else first
        return first

    def clear(self) -> None:
        self.arrived, self.times, self.runs, self.tail, self.tail_times = [], [], [], [], []
        self.count, self.first_index = 0, None
        self.ready.clear()
        self.last.clear()
        self.unnoted, self.unnoted_from = 0, None
        self.several.clear()
        self.indexed = False
        self.top_ms = -1
        self.disordered.clear()
        self.same.clear()
        self.repeats.clear()
        self.top_offset, self.out_of_offset_order = -1, False
        self.offset_heap, self.gone = [], set()
        self.taken_to = None
