"""Where a backfill's outputs go: a JSON-lines or a Parquet file.

- ``FILE.jsonl``: one line per output and ``$error`` record in the tester's encoding (``time``,
  ``event``, ``value``, ``key``; what ``eventscript tail`` prints for the worker's topics, so
  ``$error`` values carry the worker's details of the source record), plus ``id``: the record's
  ``es-id``, identical to the one the worker gives it.
- ``FILE.parquet``: the records as the worker would produce them: ``topic``, ``partition`` (null:
  placed by key), ``timestamp`` (ms), ``key``, ``value``, ``headers``, and for convenience
  ``event`` and ``id`` taken from the headers.

A file appears only when the whole backfill succeeded: it is written beside its final name
and renamed at the end.

The fast path (:meth:`FileSink.write_all` given a job's outputs, ``job.JobOutputs``): the Spark
tasks encode their outputs themselves (:func:`pack`: JSON lines, or Parquet-ready Arrow IPC), a
batch of records per row, so the driver only appends bytes in task order; it never makes a Python
object per output record.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..engine.encoding import json_line
from ..task import codec
from ..task.codec import record_to_json
from .records import HEADER_TYPE, OutputRow, output_rows

PARQUET_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("timestamp", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", HEADER_TYPE),
        ("event", pa.string()),
        ("id", pa.string()),
    ]
)
PARQUET_ROWS_PER_GROUP = 50_000


class SinkError(Exception):
    pass


def sink_format(path: str | Path) -> str:
    name = str(path).lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    raise SinkError(f"--output {path}: give a .jsonl (JSON lines) or a .parquet file")


def output_json(row: OutputRow) -> dict[str, Any]:
    """An output record as a JSON-lines object (see the module docstring)."""
    obj = record_to_json(row)
    rid = codec.header(row.headers(), codec.HEADER_ID)
    if rid is not None:
        obj["id"] = rid.decode()
    return obj


def _header_text(headers: Any, name: str) -> str | None:
    v = codec.header(headers, name)
    return None if v is None else v.decode("utf-8", "replace")


def parquet_batch(rows: list[OutputRow]) -> pa.RecordBatch:
    """Output records as a batch of the Parquet sink's rows."""
    headers = [r.headers() for r in rows]
    return pa.RecordBatch.from_arrays(
        [
            pa.array([r.topic() for r in rows], type=pa.string()),
            pa.array([r.partition() for r in rows], type=pa.int32()),
            pa.array([r.timestamp()[1] for r in rows], type=pa.int64()),
            pa.array([r.key() for r in rows], type=pa.binary()),
            pa.array([r.value() for r in rows], type=pa.binary()),
            pa.array([[{"key": k, "value": v} for k, v in h] for h in headers], type=HEADER_TYPE),
            pa.array([_header_text(h, codec.HEADER_EVENT) for h in headers], type=pa.string()),
            pa.array([_header_text(h, codec.HEADER_ID) for h in headers], type=pa.string()),
        ],
        schema=PARQUET_SCHEMA,
    )


def jsonl_text(rows: Iterable[OutputRow]) -> str:
    return "".join(json_line(output_json(row)) + "\n" for row in rows)


def ipc_bytes(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def ipc_batches(data: bytes) -> Iterator[pa.RecordBatch]:
    yield from pa.ipc.open_stream(data)


#: Formats of packed outputs: a file sink's two, and "arrow" (output rows, for any other consumer).
PACK_FORMATS = ("jsonl", "parquet", "arrow")


def pack(batch: pa.RecordBatch, fmt: str) -> bytes:
    """An output batch (records of kind "out"), encoded where it was made, in a Spark task:
    ``jsonl``: the file's lines; ``parquet``: the Parquet sink's rows as Arrow IPC; ``arrow``:
    the output rows as Arrow IPC (:func:`unpack_rows` reads them)."""
    if fmt == "jsonl":
        return jsonl_text(output_rows(batch)).encode()
    if fmt == "parquet":
        return ipc_bytes(parquet_batch(output_rows(batch)))
    if fmt == "arrow":
        return ipc_bytes(batch)
    raise ValueError(f"unknown pack format {fmt!r}")


def unpack_rows(data: bytes) -> Iterator[OutputRow]:
    for batch in ipc_batches(data):
        yield from output_rows(batch)


class FileSink:
    """Writes rows to ``path`` through a temporary file; ``commit`` puts it in place."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.format = sink_format(path)
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        self.count = 0
        self._file: Any = None
        self._writer: Any = None
        self._pending: list[OutputRow] = []

    def __enter__(self) -> FileSink:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.format == "jsonl":
            self._file = open(self.tmp, "wb")
        else:
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(str(self.tmp), PARQUET_SCHEMA)
        return self

    def write_all(self, rows: Iterable[OutputRow]) -> int:
        """Write every row; given a job's outputs (``job.JobOutputs``), take them packed in this
        sink's format (see the module docstring)."""
        packed = getattr(rows, "packed", None)
        if packed is not None:
            for data, count in packed(self.format):
                self.write_packed(data, count)
            return self.count
        for row in rows:
            self.write(row)
        return self.count

    def write_packed(self, data: bytes, count: int) -> None:
        """``count`` records, as :func:`pack` encoded them in this sink's format."""
        self.count += count
        if self._file is not None:
            self._file.write(data)
            return
        self._flush()
        for batch in ipc_batches(data):
            self._writer.write_batch(batch, row_group_size=PARQUET_ROWS_PER_GROUP)

    def write(self, row: OutputRow) -> None:
        self.count += 1
        if self._file is not None:
            self._file.write((json_line(output_json(row)) + "\n").encode())
            return
        self._pending.append(row)
        if len(self._pending) >= PARQUET_ROWS_PER_GROUP:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            rows, self._pending = self._pending, []
            self._writer.write_batch(parquet_batch(rows))

    def commit(self) -> None:
        self.close()
        os.replace(self.tmp, self.path)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._writer is not None:
            self._flush()
            self._writer.close()
            self._writer = None

    def __exit__(self, *exc: object) -> None:
        self.close()
        if self.tmp.exists():
            self.tmp.unlink()


def read_parquet_outputs(path: str | Path) -> list[dict[str, Any]]:
    """A Parquet sink's rows as dicts (headers as (name, bytes) pairs): for tests and tools."""
    import pyarrow.parquet as pq

    rows = pq.read_table(str(path)).to_pylist()
    for r in rows:
        r["headers"] = [(h["key"], h["value"]) for h in r["headers"]]
    return rows
