"""Topic exports: Parquet or JSON-lines files of Kafka records, a source the backfill reads like a topic.

Columns (Parquet) or fields (one JSON object per line):

- ``topic`` (string), ``partition`` (int), ``offset`` (int), ``timestamp`` (ms since the epoch;
  in Parquet also a timestamp column);
- ``key``, ``value``: bytes (Parquet binary), or text (UTF-8); in JSON lines text or null, or
  ``key_base64`` / ``value_base64`` for bytes that are not UTF-8;
- ``headers`` (optional): a list of ``[name, value]`` pairs (JSON lines: value text, or null) or of
  ``{key, value}`` structs (Parquet).

Within one topic partition, records must be in offset order (as a consumer reads them); several
files are read in the order given.
"""

from __future__ import annotations

import base64
import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from .plan import OffsetRange
from .records import INPUT_SCHEMA

Row = tuple[str, int, int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]


class ExportError(Exception):
    """An export that cannot be read; the message says where (file:line) and what to do."""


def export_format(path: str | Path) -> str:
    name = str(path).lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    raise ExportError(f"{path}: an export is a .parquet or a .jsonl file (JSON lines)")


# -- JSON lines ---------------------------------------------------------------------------------


def _bytes_field(obj: dict[str, Any], name: str, where: str) -> bytes | None:
    b64 = obj.get(f"{name}_base64")
    if b64 is not None:
        try:
            return base64.b64decode(b64, validate=True)
        except (ValueError, TypeError):
            raise ExportError(f"{where}: {name}_base64 is not base64") from None
    raw = obj.get(name)
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw.encode()
    raise ExportError(f"{where}: {name} must be text or null (use {name}_base64 for bytes), got {orjson.dumps(raw)!r}")


def _headers_field(raw: Any, where: str) -> list[tuple[str, bytes | None]] | None:
    if raw is None:
        return None
    pairs = raw.items() if isinstance(raw, dict) else raw
    out: list[tuple[str, bytes | None]] = []
    for h in pairs:
        if not (
            isinstance(h, (list, tuple))
            and len(h) == 2
            and isinstance(h[0], str)
            and (h[1] is None or isinstance(h[1], str))
        ):
            raise ExportError(f"{where}: headers must be [name, text or null] pairs, got {orjson.dumps(h)!r}")
        out.append((h[0], None if h[1] is None else h[1].encode()))
    return out or None


def _int_field(obj: dict[str, Any], name: str, where: str) -> int:
    v = obj.get(name)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ExportError(f"{where}: field {name!r} must be a whole number, got {orjson.dumps(v).decode()}")
    return v


def jsonl_rows(path: str | Path) -> Iterator[Row]:
    """Every record of a JSON-lines export, in file order."""
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{n}:1"
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ExportError(f"{where}: not JSON: {exc}") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("topic"), str):
                raise ExportError(
                    f"{where}: each line is an object with a 'topic' (text), 'partition', 'offset', "
                    f"'timestamp', 'key', 'value' and 'headers'"
                )
            yield (
                obj["topic"],
                _int_field(obj, "partition", where),
                _int_field(obj, "offset", where),
                _int_field(obj, "timestamp", where),
                _bytes_field(obj, "key", where),
                _bytes_field(obj, "value", where),
                _headers_field(obj.get("headers"), where),
            )


def jsonl_line(row: Row) -> bytes:
    """A record as a JSON-lines export line (the inverse of ``jsonl_rows``)."""
    topic, partition, offset, ts, key, value, headers = row
    obj: dict[str, Any] = {"topic": topic, "partition": partition, "offset": offset, "timestamp": ts}
    for name, raw in (("key", key), ("value", value)):
        if raw is None:
            obj[name] = None
            continue
        try:
            obj[name] = raw.decode()
        except UnicodeDecodeError:
            obj[f"{name}_base64"] = base64.b64encode(raw).decode()
    if headers:
        obj["headers"] = [[k, None if v is None else v.decode("utf-8", "replace")] for k, v in headers]
    return orjson.dumps(obj) + b"\n"


# -- Parquet ------------------------------------------------------------------------------------


def _normalized(table: pa.Table | pa.RecordBatch, path: str | Path) -> pa.Table:
    """An export's columns cast to the input schema (text keys become bytes, times become ms)."""
    cols = []
    for f in INPUT_SCHEMA:
        if f.name not in table.schema.names:
            if f.name in ("key", "headers"):
                cols.append(pa.nulls(table.num_rows, f.type))
                continue
            raise ExportError(f"{path}: the export has no column {f.name!r} (columns: {', '.join(table.schema.names)})")
        col = table.column(f.name)
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("ms")).cast(pa.int64())
        try:
            cols.append(col.cast(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ExportError(f"{path}: column {f.name!r} is {col.type}, expected {f.type}: {exc}") from None
    return pa.Table.from_arrays(cols, schema=INPUT_SCHEMA)


def parquet_rows(path: str | Path, topic: str | None = None, partition: int | None = None) -> Iterator[Row]:
    """The records of a Parquet export (of one topic partition, when given), in file order."""
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(path), format="parquet")
    flt = None
    if topic is not None:
        flt = (ds.field("topic") == topic) & (ds.field("partition") == partition)
    for batch in dataset.to_batches(filter=flt):
        t = _normalized(batch, path)
        cols = [t.column(n).to_pylist() for n in INPUT_SCHEMA.names]
        for topic_, part, off, ts, key, value, headers in zip(*cols):
            yield (topic_, part, off, ts, key, value, [(h["key"], h["value"]) for h in headers] if headers else None)


def rows(paths: list[str], topic: str | None = None, partition: int | None = None) -> Iterator[Row]:
    for path in paths:
        if export_format(path) == "parquet":
            yield from parquet_rows(path, topic, partition)
        else:
            for row in jsonl_rows(path):
                if topic is None or (row[0] == topic and row[1] == partition):
                    yield row


# -- the cut ----------------------------------------------------------------------------------------


@dataclass
class PartitionExtent:
    """What an export holds of one topic partition."""

    first: int | None = None
    last: int | None = None
    count: int = 0
    #: (offset, timestamp) of every record: to find offsets by time (kept only when asked for).
    times: list[tuple[int, int]] = field(default_factory=list)


def extents(paths: list[str], topics: set[str], with_times: bool = False) -> dict[tuple[str, int], PartitionExtent]:
    """First and last offsets of each partition of the given topics (one pass over the export)."""
    out: dict[tuple[str, int], PartitionExtent] = {}
    for topic, partition, offset, ts, *_ in rows(paths):
        if topic not in topics:
            continue
        e = out.get((topic, partition))
        if e is None:
            e = out[(topic, partition)] = PartitionExtent(first=offset)
        elif e.last is not None and offset <= e.last:
            raise ExportError(_out_of_order(topic, partition, offset, e.last))
        e.last = offset
        e.count += 1
        if with_times:
            e.times.append((offset, ts))
    return out


# -- reading one task's ranges --------------------------------------------------------------------------


def _out_of_order(topic: str, partition: int, offset: int, last: int) -> str:
    return (
        f"{topic}:{partition}: offset {offset} comes after offset {last}; an export must list each "
        f"partition's records in offset order, each offset once"
    )


def _range_rows(paths: list[str], r: OffsetRange) -> Iterator[tuple[int, Row]]:
    """(timestamp, row) of one range, in offset order, then an end marker keyed by the last time."""
    last_offset: int | None = None
    last_ts = -(1 << 62)
    for row in rows(paths, r.topic, r.partition):
        offset = row[2]
        if last_offset is not None and offset <= last_offset:
            raise ExportError(_out_of_order(r.topic, r.partition, offset, last_offset))
        last_offset = offset
        if offset < r.start:
            continue
        if offset >= r.end:
            break
        last_ts = row[3]
        yield last_ts, row
    if last_offset is None or last_offset < r.end - 1:
        seen = "no record" if last_offset is None else f"its last record at offset {last_offset}"
        raise ExportError(
            f"{r.topic}:{r.partition}: the export ends ({seen}) before the end of the range "
            f"[{r.start}, {r.end}) to read"
        )
    yield last_ts, (r.topic, r.partition, -1, last_ts, None, None, None)


def _parquet_range(paths: list[str], r: OffsetRange, batch_size: int) -> Iterator[pa.RecordBatch]:
    """One range of Parquet exports as input batches, never a row in Python: the same records,
    checks and end marker as :func:`_range_rows`."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    last_offset: int | None = None
    last_ts = -(1 << 62)
    flt = (ds.field("topic") == r.topic) & (ds.field("partition") == r.partition)
    done = False
    for path in paths:
        for raw in ds.dataset(str(path), format="parquet").to_batches(filter=flt, batch_size=batch_size):
            if done:
                break
            table = _normalized(raw, path)
            offsets = table.column("offset")
            beyond = pc.index(pc.greater_equal(offsets, r.end), True).as_py()
            if beyond >= 0:  # the range ends in this batch: read up to and including its end's record
                table, done = table.slice(0, beyond + 1), True
                offsets = table.column("offset")
            if len(offsets):
                ordered = offsets if last_offset is None else pa.chunked_array([[last_offset], *offsets.chunks])
                back = pc.index(pc.less_equal(ordered[1:], ordered[:-1]), True).as_py()
                if back >= 0:
                    raise ExportError(
                        _out_of_order(r.topic, r.partition, ordered[back + 1].as_py(), ordered[back].as_py())
                    )
                last_offset = offsets[-1].as_py()
            table = table.filter(pc.and_(pc.greater_equal(offsets, r.start), pc.less(offsets, r.end)))
            if table.num_rows:
                last_ts = table.column("timestamp")[-1].as_py()
                yield from table.combine_chunks().to_batches()
        if done:
            break
    if last_offset is None or last_offset < r.end - 1:
        seen = "no record" if last_offset is None else f"its last record at offset {last_offset}"
        raise ExportError(
            f"{r.topic}:{r.partition}: the export ends ({seen}) before the end of the range "
            f"[{r.start}, {r.end}) to read"
        )
    from .records import input_batch

    yield input_batch([(r.topic, r.partition, -1, last_ts, None, None, None)])


def range_batches(paths: list[str], ranges: list[OffsetRange], batch_size: int) -> Iterator[pa.RecordBatch] | None:
    """A task's ranges of Parquet exports as input batches read by Arrow (else None: the row
    path, :func:`read_ranges`). Several ranges (co-partitioned inputs) are interleaved batch by
    batch, the one whose next batch starts earliest first: the task merges its inputs by
    timestamp itself, waiting for a record of every input that has not ended, so what it does
    does not depend on how they are interleaved, and it holds about a batch per input."""
    ranges = [r for r in ranges if not r.empty]
    if not ranges or any(export_format(p) != "parquet" for p in paths):
        return None
    if len(ranges) == 1:
        return _parquet_range(paths, ranges[0], batch_size)
    return heapq.merge(*(_parquet_range(paths, r, batch_size) for r in ranges), key=_first_time)


def _first_time(batch: pa.RecordBatch) -> int:
    first = batch.column("timestamp")[0].as_py() if batch.num_rows else None
    return first if first is not None else -(1 << 62)


def read_ranges(paths: list[str], ranges: list[OffsetRange]) -> Iterator[Row]:
    """A task's records of every range, interleaved by timestamp (each range in offset order),
    with an end marker (offset -1) after each range's last record."""
    streams = [_range_rows(paths, r) for r in ranges if not r.empty]
    for _, row in heapq.merge(*streams, key=lambda item: item[0]):
        yield row
