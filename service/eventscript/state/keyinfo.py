"""What a task keeps about a key beside its instance: the last record it took, and whether (when,
why) its instance ended.

A grouped instance that ends leaves a tombstone in the changelog and nothing in the store, so the
store alone cannot tell "ended" from "never seen"; and an instance's snapshot does not say which
record it last took. Both ride, at no extra produce, on the changelog record that carries the
key's change (JSON): a tombstone's in its ``es-key`` header (its value must stay null, for
compaction to remove it), a snapshot's inside the record's value, ahead of the snapshot
(``framed_value``: one header fewer on nearly every changelog record; a changelog written before,
with the header on every record, still reads — ``split_value``)::

    {"ended": [1767225660000000, "terminated"], "wall": 1767225661000, "last": ["orders", 3, 1042, 1767225600000]}

- ``last``: the input record (topic, partition, offset, record time in ms) the key's instance
  last took — the original input's coordinates for a record that came through the repartition
  topic; absent when no record reached it since the task started (a change by a timer keeps the
  one before);
- ``ended`` (tombstones only): the task clock (µs) when the instance ended and why: ``terminated``
  (the program reached its end) or ``retired`` (back at its start, where it equals a fresh
  instance: the key's next event starts one);
- ``wall``: the wall clock (ms) of the commit that wrote an ended marker: its retention counts
  from there.

The store keeps a live key's information the same way, inside its stored value (the changelog
record's value as it is: the task builds it once for both, and the restore, the standbys and the
backfill's hand-over write a record's value with no split — one RocksDB entry per changed live
key). An ended key has no value: its marker is kept under ``\\x05`` + key (``info_key``), with an
index entry ``\\x06`` + wall time + key, so that markers older than ``ENDED_RETENTION_MS`` are
dropped a few at each write. A key's information is therefore its stored value's frame when it
has a value (``stored_info``: a live value always wins, and a marker left under ``\\x05`` from an
earlier end is not read), else its ``\\x05`` marker; a key that comes back writes its value
without deleting the old marker (that would be a second entry per change), which its index entry
prunes in time. Stores written before (the information of live keys under ``\\x05`` too) are
converted when opened (``state.store``, ``_META_FORMAT``).

Every reader of a changelog record's value goes through ``stored_value`` or ``split_value`` (the
restore, the standbys and the state dumps read records through ``kafka.restore.read_changelog``,
the Spark dump through ``backfill.state_dump``): a build before the value carried the information
cannot read a changelog written since, nor a store (a downgrade resets the program's state, as
any newer format).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from .changelog import ENDED_PREFIX, INFO_PREFIX

HEADER_KEY_INFO = "es-key"

#: How long an ended marker is kept (wall clock from the commit that wrote it): Kafka's default
#: ``delete.retention.ms`` of the changelog's tombstones (one day), so that a restore from the
#: changelog and a store that was never lost know the same ended keys for as long.
ENDED_RETENTION_MS = 24 * 3600 * 1000
#: Ended markers past their retention dropped per store write at most (the rest at later writes).
PRUNE_PER_WRITE = 500

TERMINATED = "terminated"
RETIRED = "retired"
WHY = {
    TERMINATED: "the program reached its end for this key",
    RETIRED: "back at its start, where it equals a fresh instance (the key's next event starts one)",
}

#: topic, partition, offset, record time (ms).
LastRecord = tuple[str, int, int, int]


@dataclass(frozen=True)
class KeyInfo:
    """A key's information as kept (see the module's docstring)."""

    last: LastRecord | None = None
    ended_at: int | None = None  # task clock, µs
    why: str | None = None
    wall: int | None = None  # ms

    def encode(self) -> bytes:
        """The header's value: an ended marker starts with ``{"ended"`` (``ENDED_HEAD``)."""
        out: dict[str, Any] = {}
        if self.ended_at is not None:
            out["ended"] = [self.ended_at, self.why]
            out["wall"] = self.wall
        if self.last is not None:
            out["last"] = list(self.last)
        return orjson.dumps(out)

    @property
    def ended(self) -> bool:
        return self.ended_at is not None


def decode_info(raw: bytes | None) -> KeyInfo | None:
    """A kept ``es-key`` value; None for none, or bytes that are not one (never raises: the
    information is for people, a bad one must not fail a restore)."""
    if not raw:
        return None
    try:
        data = orjson.loads(raw)
        last = data.get("last")
        ended = data.get("ended")
        return KeyInfo(
            (str(last[0]), int(last[1]), int(last[2]), int(last[3])) if last else None,
            int(ended[0]) if ended else None,
            str(ended[1]) if ended else None,
            int(data["wall"]) if ended and data.get("wall") is not None else None,
        )
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError, IndexError, KeyError):
        return None


#: How an ended marker's value starts (``KeyInfo.encode`` writes "ended" first).
ENDED_HEAD = b'{"ended"'


def last_record_head(topic: str) -> bytes:
    """The start of the value of a live key's information whose last record is of ``topic``:
    the task appends ``partition,offset,time]}`` (``KeyInfo((topic, ...)).encode()``, without
    building it for every changed key at every commit)."""
    return b'{"last":[' + orjson.dumps(topic) + b","


def info_key(store_key: bytes) -> bytes:
    """The store key of an ended key's marker (a live key's information is inside its value)."""
    return INFO_PREFIX + store_key


def ended_index_key(wall_ms: int, store_key: bytes) -> bytes:
    """The index entry of an ended marker, in order of its wall time."""
    return ENDED_PREFIX + max(wall_ms, 0).to_bytes(8, "big") + store_key


def parse_ended_index_key(entry: bytes) -> tuple[int, bytes]:
    """(wall ms, store key) of an ended index entry."""
    return int.from_bytes(entry[1:9], "big"), entry[9:]


def info_header(headers: Any) -> bytes | None:
    """The ``es-key`` header of a changelog record's headers (None: none)."""
    for k, v in headers or ():
        if k == HEADER_KEY_INFO:
            return bytes(v) if v is not None else None
    return None


#: The first byte of a changelog value that carries its key's information ahead of the snapshot
#: (``framed_value``). MessagePack never starts a value with 0xc1 (its one "never used" byte), so
#: no snapshot (a msgpack array) starts with it, nor any other changelog value (task state: JSON
#: and decimals).
INFO_FRAME = b"\xc1"
#: What ends the information in a framed value: JSON as written here never holds a NUL byte
#: (control characters in strings are escaped).
INFO_END = b"\x00"


def framed_value(info: bytes, snapshot: bytes) -> bytes:
    """A changelog record's value for an instance's ``snapshot`` with its key's information
    (``KeyInfo.encode``'s bytes) in front: ``\\xc1`` + information + NUL + snapshot."""
    return b"".join((INFO_FRAME, info, INFO_END, snapshot))


def split_value(value: bytes | None, header_info: bytes | None) -> tuple[bytes | None, bytes | None]:
    """(value, key information) of a changelog record: the snapshot and the information of a
    framed value (``framed_value``); any other value as it is, with the information of its
    ``es-key`` header (``header_info``: a tombstone's, or any record of a changelog written before
    the information moved into the value)."""
    if value is None or value[:1] != INFO_FRAME:
        return value, header_info
    end = value.find(INFO_END, 1)
    if end < 0:  # (not one: left whole, for the snapshot's decoder to say what is wrong with it)
        return value, header_info
    return value[end + 1 :], value[1:end]


def snapshot_of(value: bytes) -> bytes:
    """The snapshot of a stored or changelog value (``framed_value``'s, or the value as it is)."""
    if value[:1] != INFO_FRAME:
        return value
    end = value.find(INFO_END, 1)
    return value if end < 0 else value[end + 1 :]


def stored_value(value: bytes | None, header_info: bytes | None) -> tuple[bytes | None, bytes | None]:
    """(value, information) of a changelog record as a store keeps them: a snapshot's value with
    its information inside it (framed as it came, or framed here from the ``es-key`` header of a
    changelog written before the information moved into the value: one put either way), and no
    separate information; a tombstone's information (its ended marker, None: none) beside it."""
    if value is None:
        return None, header_info
    if header_info is None or value[:1] == INFO_FRAME:
        return value, None
    return framed_value(header_info, value), None


def stored_info(value: bytes | None, marker: bytes | None) -> bytes | None:
    """A key's information from what its store holds: its value's frame when it has a value (a
    live instance: an ended ``marker`` left from an earlier end is stale), else its marker."""
    if value is not None:
        return split_value(value, None)[1]
    return marker
