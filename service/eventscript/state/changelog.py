"""Store keys, changelog positions and task-state records (shared by the store, the worker's
restore and the backfill's handover).

Each changelog record carries, in its ``es-pos`` header, the input position of the task after the
batch that wrote it. On restore a record is applied only if that position is not beyond the
committed input offsets: records of a transaction that never committed are ignored, even on a
broker that shows aborted transactions to read_committed readers. Once a later commit covers
that position a replay does apply them, and the batch that re-processed the same records need not
have written those keys again (its batch may hold more records: an instance created and ended
inside it writes nothing). So the task writes every such key again at its first commit after a
rewind or a restore (``Task.rewrite_at_next_commit``), later in the changelog than the records of
the batch that never committed (issue 20, fault 1).

Each record of a Kafka worker also carries its owner's epoch (``es-gen``): the consumer group's
generation when the owner took the task on, plus the task's epoch base (below). A worker frozen
past its session (a zombie) can send changelog records its producer had queued after the task's
new owner wrote newer ones; their ``es-pos`` is covered by the new owner's commits, so the
position rule applies them, and a replay would give the keys the zombie's older state. So a
record whose epoch is lower than the highest one applied before it in its partition is skipped
(:class:`EpochFence`). A group deleted and made again starts its generations at 1: an owner whose
generation is not above the highest epoch of its changelog raises the task's epoch base
(``EPOCH_BASE_KEY``, task state in the changelog) so that base + generation, which it writes, is
one above that epoch (:func:`owner_epoch`).

Both travel in front of the record's value (the batch frame, :func:`batch_frame`), not as
headers: every record of a commit has the same two, and librdkafka's ``produce`` converts a
header list for every record it is given one with (``bench/produce_cost.py``: ~830 ns a record
with the two headers, ~640 with the frame's concatenation instead). A tombstone keeps them as
headers (``es-pos``, ``es-gen``, with its key's ``es-key``): its value must stay null for
compaction. Records written before the frame, and the backfill's hand-over, carry headers; a
reader takes the headers when there are, the frame otherwise (:func:`split_batch_frame`). A build
before the frame cannot read a changelog written since (its snapshot decoder refuses the value):
a downgrade resets the program's state, as any newer format (``state.keyinfo``).
"""

from __future__ import annotations

from typing import Any

import orjson

#: Store keys of instances are canonical group keys (JSON arrays: they start with '['); the one
#: instance of an ungrouped program, and everything else, use keys that cannot clash:
#: ``\x00`` local metadata, ``\x02``/``\x03`` task state (in the changelog too), ``\x04`` the
#: timer index (local only: rebuilt from the snapshots on restore), ``\x05`` the markers of ended
#: keys and ``\x06`` their index (local, made from the tombstones' key information; a live key's
#: is inside its value: see ``state.keyinfo``).
SINGLE_KEY = b"\x01single"
#: Task state that is not an instance, kept in the changelog beside the instances: the
#: repartition high-water marks, the record clock (microseconds, decimal) and the next timer
#: sequence number (decimal), so that timers set after a restart sort after every stored one.
HWM_KEY = b"\x02repartition-hwm"
CLOCK_KEY = b"\x03record-clock"
SEQ_KEY = b"\x03timer-seq"
TASK_STATE_KEYS = (CLOCK_KEY, HWM_KEY, SEQ_KEY)
#: The task's epoch base (decimal): added to the owner's group generation to make the epoch its
#: changelog records carry (see the module and :func:`owner_epoch`). Kafka hosts only.
EPOCH_BASE_KEY = b"\x03epoch-base"
#: The program versions the task's snapshots were written by (task/versions.py): this prefix and
#: a snapshot's program tag in 8 hex digits → the version's fingerprint and compiled program
#: (zlib-compressed JSON), so that a later version can map the old one's states; UNTAGGED_KEY →
#: the tag that snapshots of formats 1 and 2 (which name no version) are read as.
VERSION_PREFIX = b"\x03program-"
UNTAGGED_KEY = b"\x03program-untagged"
#: The tag of the version every pending timer in the task's state belongs to (written with the
#: commit that holds the instances the upgrade's eager pass converted): a later load skips the pass.
TIMERS_KEY = b"\x03timers-version"
META_PREFIX = b"\x00"
INDEX_PREFIX = b"\x04"
INFO_PREFIX = b"\x05"
ENDED_PREFIX = b"\x06"
NOT_INSTANCE_FIRST = (b"\x00", b"\x02", b"\x03", b"\x04", b"\x05", b"\x06")

HEADER_POSITION = "es-pos"
#: The owner epoch of a changelog record (decimal): see the module and :class:`EpochFence`.
HEADER_EPOCH = "es-gen"

Position = dict[str, int]  # "topic:partition" -> next offset


def is_instance_key(key: bytes) -> bool:
    return key[:1] not in NOT_INSTANCE_FIRST


def tp_name(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def position_header(pos: Position) -> bytes:
    return orjson.dumps(pos, option=orjson.OPT_SORT_KEYS)


#: The first byte of a framed changelog value (never the first of a stored value: snapshots are
#: msgpack arrays or framed by ``state.keyinfo.INFO_FRAME``, task state decimal, JSON or zlib), then
#: the position (JSON: no NUL), NUL, the epoch (decimal; empty: none), NUL, the stored value.
BATCH_FRAME = b"\xc2"
_NUL = b"\x00"


def batch_frame(position: bytes, epoch: bytes | None) -> bytes:
    """What goes in front of each framed changelog value of one commit: the batch's input
    position (``position_header``'s bytes) and its owner's epoch (None: a host without one)."""
    return b"".join((BATCH_FRAME, position, _NUL, epoch or b"", _NUL))


def framed_batch(
    records: dict[bytes, bytes | None], frame: bytes, key_headers: dict[bytes, Any] | None
) -> list[tuple[bytes, bytes | None, Any]]:
    """A commit's changelog records as sent: (key, value, headers). A key with headers of its own
    (``key_headers``: a tombstone, whose value must stay null for compaction) is sent with them and
    its value as it is; any other live key with none, its value after the batch's ``frame``
    (``batch_frame``). The one place that rule is written: every ``SendChangelog`` sends this."""
    if not key_headers:
        return [(k, v, None) if v is None else (k, frame + v, None) for k, v in records.items()]
    own = key_headers
    return [
        (k, v, h) if (h := own.get(k)) is not None or v is None else (k, frame + v, None) for k, v in records.items()
    ]


def split_batch_frame(
    value: bytes | None, position: bytes | None, epoch: bytes | None
) -> tuple[bytes | None, bytes | None, bytes | None]:
    """(stored value, position, epoch) of a changelog record, from its value and its ``es-pos``
    and ``es-gen`` headers (None: absent): a record with a position header is as it came (written
    before the frame, a hand-over's, a tombstone); any other framed value is split. A value that
    does not parse is left whole, for the snapshot's decoder to say what is wrong with it."""
    if position is not None or value is None or value[:1] != BATCH_FRAME:
        return value, position, epoch
    end = value.find(_NUL, 1)
    gen_end = value.find(_NUL, end + 1) if end > 0 else -1
    if gen_end < 0:
        return value, position, epoch
    return value[gen_end + 1 :], value[1:end], (value[end + 1 : gen_end] or None)


def same_position(a: Position | None, b: Position) -> bool:
    """Equal positions, a partition never read counting as offset 0."""
    if a is None:
        return False
    return all(a.get(tp, 0) == b.get(tp, 0) for tp in {*a, *b})


def committed_covers(record_pos: Position | None, committed: Position) -> bool:
    """Whether a changelog record's batch is within the committed input position."""
    if record_pos is None:
        return True
    return all(off <= committed.get(tp, 0) for tp, off in record_pos.items())


class EpochFence:
    """The owner-epoch rule of one changelog partition, fed its records in log order: a record
    whose epoch (``es-gen``) is lower than the highest one admitted before it was written by an
    owner the task had left (a zombie) and is not applied; a record without one (a host without
    a group: the tester, a backfill hand-over; a worker before the header existed) is applied.
    ``highest`` starts at what a store continuing from its checkpoint had applied."""

    __slots__ = ("_last", "highest", "skipped")

    def __init__(self, highest: int = 0) -> None:
        self.highest = highest
        self.skipped = 0
        self._last: bytes | None = None  # the last header admitted (a batch's records share it)

    def admits(self, raw: bytes | None) -> bool:
        if raw is None or raw == self._last:
            return True
        epoch = decode_int(raw)
        if epoch < self.highest:
            self.skipped += 1
            return False
        self.highest = epoch
        self._last = raw
        return True


def owner_epoch(generation: int, base: int, highest: int) -> tuple[int, int]:
    """(epoch, base) of a task's owner whose group generation is ``generation``, given the task's
    epoch ``base`` and the ``highest`` epoch applied from its changelog. Within one group the
    generation grows at every rebalance, so a new owner's is above every earlier owner's; a
    generation not above ``highest`` means the group was deleted and made again (or a static
    member took its place with the same generation): the base is raised so that the owner's epoch
    is ``highest`` + 1, above every record of the changelog (a zombie of the earlier owner is
    fenced however far the generations start again) and no further: an owner of the next
    generation, whose restore did not see the raised base (the records carrying it may land after
    it read the changelog: a static member's first commit refused after they were sent), takes
    the stored base and its generation, and ties with it, where a raise of a whole ``highest``
    put the raised owner's late records above it and every replay skipped all it wrote (the
    review of 2026-11-28)."""
    if base + generation <= highest:
        base = highest - generation + 1
    return base + generation, base


def decode_position(raw: bytes | None) -> Position | None:
    if raw is None:
        return None
    try:
        pos = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return pos if isinstance(pos, dict) else None


def decode_int(raw: bytes | None) -> int:
    """A persisted decimal counter (the record clock, the timer sequence); 0 when absent."""
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


#: The persisted record clock (0, the epoch, before the first record).
decode_clock = decode_int


def decode_hwm(raw: bytes | None) -> dict[str, int]:
    """The repartition topic's marks per source partition: the offset below which a copy is a
    repeat (``task/copies.py``, which also keeps the offsets processed above it: ``[bound, [...]]``,
    and under ``"#..."`` what ``task/repeats.py`` watches, left out here)."""
    if raw is None:
        return {}
    data: Any = orjson.loads(raw)
    if not isinstance(data, dict):
        return {}
    return {str(k): int(v[0] if isinstance(v, list) else v) for k, v in data.items() if not str(k).startswith("#")}


def compact(raw: bytes) -> bytes:
    """A copy of ``raw`` in an allocation of its own size. ``orjson.dumps`` returns bytes that
    keep its whole write buffer (~4 KiB even for ``["k1"]``); any such bytes kept for long (key
    caches, pending changes) must be compacted, or each one costs 4 KiB of memory."""
    return bytes(memoryview(raw))
