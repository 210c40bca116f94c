"""Records between the backfill's stages, as Arrow batches and as the objects the worker's task takes.

The source yields input records in :data:`INPUT_SCHEMA` (one row per Kafka record: the columns of
a topic export). The task stage turns each row into a :class:`~eventscript.task.record.PlainRecord`
(its columns converted once per batch, so nothing is left to decode lazily), what
:class:`eventscript.task.task.Task` reads — so the worker's own code decodes, routes, merges and
processes it. What the task sends comes back as :class:`~eventscript.task.collector.OutRecord`
and leaves as :data:`OUTPUT_SCHEMA` rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ..task.codec import Headers
from ..task.collector import OutRecord
from ..task.record import CREATE_TIME, PlainRecord

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

INPUT_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),  # ms since the epoch (Kafka's record timestamp)
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", HEADER_TYPE),
    ]
)
INPUT_DDL = (
    "topic string, partition int, offset long, timestamp long, key binary, value binary, "
    "headers array<struct<key:string,value:binary>>"
)

#: kind "out": a record the task sent (an output, an $error, or a re-published copy);
#: kind "stats": one per task at its end, value = JSON counts (see ``runner.TaskSummary``);
#: kind "state": a hand-over changelog record; kind "packed": a batch of "out" records encoded
#: by the task (``sink.pack``; value = the bytes, partition = how many records).
OUTPUT_SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("task", pa.int32()),
        ("topic", pa.string()),
        ("partition", pa.int32()),  # None: the producer's partitioner places it by key
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", HEADER_TYPE),
        ("timestamp", pa.int64()),  # ms
    ]
)
OUTPUT_DDL = (
    "kind string, task int, topic string, partition int, key binary, value binary, "
    "headers array<struct<key:string,value:binary>>, timestamp long"
)


def _headers_from_arrow(raw: list[dict[str, Any]] | None) -> Headers | None:
    if not raw:
        return None  # as confluent-kafka reports a record without headers
    return [(h["key"], h["value"]) for h in raw]


def records_of(batch: pa.RecordBatch) -> Iterator[PlainRecord]:
    """The rows of an input batch as task records (columns converted once per batch)."""
    cols = [batch.column(name).to_pylist() for name in INPUT_SCHEMA.names]
    for topic, partition, offset, ts, key, value, headers in zip(*cols):
        yield PlainRecord(topic, partition, offset, ts, key, value, _headers_from_arrow(headers))


def _headers_to_arrow(headers: Headers | None) -> list[dict[str, Any]]:
    return [{"key": k, "value": v} for k, v in (headers or [])]


#: An input record as the backfill reads it: (topic, partition, offset, timestamp ms, key, value,
#: headers), as ``PlainRecord.fields`` gives it.
InputRow = tuple[str, int, int, int, bytes | None, bytes | None, Headers | None]


def input_batch(rows: list[InputRow]) -> pa.RecordBatch:
    """An input batch from (topic, partition, offset, timestamp ms, key, value, headers) tuples."""
    cols: list[Any] = list(zip(*rows)) if rows else [[] for _ in INPUT_SCHEMA.names]
    arrays = [pa.array(list(c), type=f.type) for c, f in zip(cols[:6], INPUT_SCHEMA)]
    arrays.append(pa.array([_headers_to_arrow(h) for h in cols[6]], type=HEADER_TYPE))
    return pa.RecordBatch.from_arrays(arrays, schema=INPUT_SCHEMA)


def output_batch(task: int, records: list[OutRecord]) -> pa.RecordBatch:
    """The records a task sent, as an output batch."""
    n = len(records)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(["out"] * n, type=pa.string()),
            pa.array([task] * n, type=pa.int32()),
            pa.array([r.topic for r in records], type=pa.string()),
            pa.array([r.partition for r in records], type=pa.int32()),
            pa.array([r.key for r in records], type=pa.binary()),
            pa.array([r.value for r in records], type=pa.binary()),
            pa.array([_headers_to_arrow(r.headers) for r in records], type=HEADER_TYPE),
            pa.array([r.timestamp for r in records], type=pa.int64()),
        ],
        schema=OUTPUT_SCHEMA,
    )


def _one_row(kind: str, task: int, value: bytes, partition: int | None = None) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([kind], type=pa.string()),
            pa.array([task], type=pa.int32()),
            pa.array([None], type=pa.string()),
            pa.array([partition], type=pa.int32()),
            pa.array([None], type=pa.binary()),
            pa.array([value], type=pa.binary()),
            pa.array([[]], type=HEADER_TYPE),
            pa.array([None], type=pa.int64()),
        ],
        schema=OUTPUT_SCHEMA,
    )


def stats_batch(task: int, summary_json: bytes) -> pa.RecordBatch:
    return _one_row("stats", task, summary_json)


def packed_batch(task: int, data: bytes, count: int) -> pa.RecordBatch:
    return _one_row("packed", task, data, count)


def output_rows(batch: pa.RecordBatch) -> list[OutputRow]:
    """The rows of an output batch as :class:`OutputRow` objects (columns converted once)."""
    cols = [
        batch.column(name).to_pylist()
        for name in ("task", "topic", "partition", "key", "value", "headers", "timestamp")
    ]
    return [
        OutputRow(task, topic, partition, key, value, [(h["key"], h["value"]) for h in headers or []], ts)
        for task, topic, partition, key, value, headers, ts in zip(*cols)
    ]


class OutputRow:
    """An output row with the ``Message`` accessors (so the worker's ``record_to_json`` reads it)."""

    __slots__ = ("_headers", "_key", "_partition", "_ts", "_value", "task", "topic_name")

    def __init__(
        self,
        task: int,
        topic: str,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        ts_ms: int,
    ) -> None:
        self.task, self.topic_name, self._partition = task, topic, partition
        self._key, self._value, self._headers, self._ts = key, value, headers, ts_ms

    def topic(self) -> str:
        return self.topic_name

    def partition(self) -> int | None:
        return self._partition

    def timestamp(self) -> tuple[int, int]:
        return (CREATE_TIME, self._ts)

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> Headers:
        return self._headers
