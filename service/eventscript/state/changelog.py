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
"""

from __future__ import annotations

from typing import Any

import orjson

#: Store keys of instances are canonical group keys (JSON arrays: they start with '['); the one
#: instance of an ungrouped program, and everything else, use keys that cannot clash:
#: ``\x00`` local metadata, ``\x02``/``\x03`` task state (in the changelog too), ``\x04`` the
#: timer index (local only: rebuilt from the snapshots on restore), ``\x05`` per-key information
#: and ``\x06`` the index of ended keys (local, made from the changelog records' ``es-key``
#: headers: see ``state.keyinfo``).
SINGLE_KEY = b"\x01single"
#: Task state that is not an instance, kept in the changelog beside the instances: the
#: repartition high-water marks, the record clock (microseconds, decimal) and the next timer
#: sequence number (decimal), so that timers set after a restart sort after every stored one.
HWM_KEY = b"\x02repartition-hwm"
CLOCK_KEY = b"\x03record-clock"
SEQ_KEY = b"\x03timer-seq"
TASK_STATE_KEYS = (CLOCK_KEY, HWM_KEY, SEQ_KEY)
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

Position = dict[str, int]  # "topic:partition" -> next offset


def is_instance_key(key: bytes) -> bool:
    return key[:1] not in NOT_INSTANCE_FIRST


def tp_name(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def position_header(pos: Position) -> bytes:
    return orjson.dumps(pos, option=orjson.OPT_SORT_KEYS)


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
    repeat (``task/copies.py``, which also keeps the offsets processed above it: ``[bound, [...]]``)."""
    if raw is None:
        return {}
    data: Any = orjson.loads(raw)
    if not isinstance(data, dict):
        return {}
    return {str(k): int(v[0] if isinstance(v, list) else v) for k, v in data.items()}


def compact(raw: bytes) -> bytes:
    """A copy of ``raw`` in an allocation of its own size. ``orjson.dumps`` returns bytes that
    keep its whole write buffer (~4 KiB even for ``["k1"]``); any such bytes kept for long (key
    caches, pending changes) must be compacted, or each one costs 4 KiB of memory."""
    return bytes(memoryview(raw))
