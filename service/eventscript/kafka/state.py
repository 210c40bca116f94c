"""Task state: instance contexts in a local RocksDB store, mirrored to a compacted changelog topic.

Like a Kafka Streams state store: every change to an instance (a new snapshot, or a tombstone
when the instance terminates) is written to the program's changelog topic in the same
transaction as the outputs and the input offsets, and — once that transaction has committed —
to the task's local RocksDB store together with a checkpoint (how far into the changelog the
store is, and the committed input position it reflects). A restarted worker with its local store
only replays the changelog after the checkpoint; a worker without it replays from the start.

Each changelog record carries, in its ``es-pos`` header, the input position of the task after the
batch that wrote it. On restore a record is applied only if that position is not beyond the
committed input offsets: records of a transaction that never committed are ignored, even on a
broker that shows aborted transactions to read_committed readers. (Processing is
deterministic in which instances it touches, so any instance an aborted batch wrote is written
again, later in the changelog, by the batch that re-processes the same records.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from rocksdict import Options, Rdict, WriteBatch

#: Store keys of instances are canonical group keys (JSON arrays: they start with '[');
#: the one instance of an ungrouped program, and metadata, use keys that cannot clash.
SINGLE_KEY = b"\x01single"
#: Task state that is not an instance, kept in the changelog beside the instances: the
#: repartition high-water marks and the record clock (microseconds, decimal).
HWM_KEY = b"\x02repartition-hwm"
CLOCK_KEY = b"\x03record-clock"
_TASK_KEYS_FIRST = (b"\x00", b"\x02", b"\x03")
_META_CHECKPOINT = b"\x00checkpoint"
_META_POSITION = b"\x00position"

HEADER_POSITION = "es-pos"

Position = dict[str, int]  # "topic:partition" -> next offset


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


class TaskStore:
    """The local RocksDB store of one task (one partition of a program)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = Rdict(str(path), options=Options(raw_mode=True))

    @property
    def checkpoint(self) -> int:
        raw = self.db.get(_META_CHECKPOINT)
        return int(raw) if raw is not None else 0

    @property
    def position(self) -> Position | None:
        raw = self.db.get(_META_POSITION)
        return None if raw is None else orjson.loads(raw)

    def instances(self) -> Iterator[tuple[bytes, bytes]]:
        for k, v in self.db.items():
            if k[:1] not in _TASK_KEYS_FIRST:
                yield k, v

    def get(self, key: bytes) -> bytes | None:
        return self.db.get(key)

    def write(self, changes: dict[bytes, bytes | None], checkpoint: int | None, position: Position | None) -> None:
        """Apply changes and move the checkpoint, atomically."""
        wb = WriteBatch(raw_mode=True)
        for k, v in changes.items():
            if v is None:
                wb.delete(k)
            else:
                wb.put(k, v)
        if checkpoint is not None:
            wb.put(_META_CHECKPOINT, str(checkpoint).encode())
        if position is not None:
            wb.put(_META_POSITION, position_header(position))
        self.db.write(wb)

    def close(self) -> None:
        try:
            self.db.close()
        except Exception:  # closing twice, or after a failure: nothing left to do
            pass


def decode_position(raw: bytes | None) -> Position | None:
    if raw is None:
        return None
    try:
        pos = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return pos if isinstance(pos, dict) else None


def decode_clock(raw: bytes | None) -> int:
    """The persisted record clock (0, the epoch, before the first record)."""
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


def decode_hwm(raw: bytes | None) -> dict[str, int]:
    if raw is None:
        return {}
    data: Any = orjson.loads(raw)
    return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}
