"""Which stage runs a Spark partition of partition mode (or key-split mode): the ``mapInArrow``
body of the first stage, apart from the stages themselves so that ``task_stage.py``
and ``key_split.py`` (its key-split variant, built on it) import one way only."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from .key_split import SplitStage
from .plan import Plan
from .task_stage import TaskStage


def run_partition(plan: Plan, index: int, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function's body for Spark partition ``index`` (``plan.slice_of(index)``;
    in key-split mode, one of its key groups: ``key_split.py``)."""
    piece = plan.slice_of(index)
    store_dir = Path(tempfile.mkdtemp(prefix=f"eventscript-backfill-{piece.partition}-"))
    if plan.splits_of(plan.read_at(index)[0]) > 1:
        stage: TaskStage = SplitStage(plan, index, store_dir)
    else:
        stage = TaskStage(plan, piece, store_dir)
    try:
        for batch in batches:
            out = stage.feed(batch)
            if out is not None:
                yield out
        yield from stage.finish()
    finally:
        stage.close()
        shutil.rmtree(store_dir, ignore_errors=True)
