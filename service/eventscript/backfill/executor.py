"""What every Spark task of a backfill does in its Python worker, whichever stage it runs: the
process's one-time setup, and the packing of a task's output batches. Apart from ``job.py`` (the
driver's side) so that the data source (``source.py``), which runs stages in the workers, and the
driver's job import it one way only."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from .records import packed_batch
from .sink import pack

_worker_ready = False


def worker_setup() -> None:
    """Once per Python worker process: the garbage-collector setting every engine host uses
    (``engine/tuning.py``; CPython's default costs a Spark task about a fifth more CPU)."""
    global _worker_ready
    if not _worker_ready:
        from ..engine.tuning import configure_gc

        configure_gc()
        _worker_ready = True


def packed(batches: Iterator[pa.RecordBatch], fmt: str | None, repartition_topic: str) -> Iterator[pa.RecordBatch]:
    """A task's output batches with its records (kind "out") encoded in ``fmt`` (``sink.pack``),
    one row per batch; re-published copies are left out (the task's summary counts them)."""
    for batch in batches:
        if fmt is None or not batch.num_rows or batch.column(0)[0].as_py() != "out":
            yield batch
            continue
        out = batch.filter(pc.not_equal(batch.column("topic"), repartition_topic))
        if out.num_rows:
            yield packed_batch(out.column("task")[0].as_py(), pack(out, fmt), out.num_rows)
