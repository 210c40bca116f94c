"""The backfill's PySpark Python Data Source (``pyspark.sql.datasource``): Kafka topics or topic exports.

The Kafka connector jar is not in the pyspark wheel, so records are read in Python. The plan
(``plan.py``, an option of the source) holds the cut: ``partitions()`` returns one input
partition per task slice, in the plan's order, and each reader reads exactly its slice's offset
ranges, as Arrow batches in :data:`~eventscript.backfill.records.INPUT_SCHEMA`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .plan import Plan, TaskSlice
from .records import INPUT_DDL, input_batch

SOURCE_NAME = "eventscript_backfill"


class SliceInput(InputPartition):
    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def slice_index(partition: InputPartition) -> int:
    """The slice a partition reads: Spark hands ``BackfillReader.partitions``' own back to ``read``."""
    if not isinstance(partition, SliceInput):
        raise TypeError(f"not a backfill slice: {partition!r}")
    return partition.index


def slice_rows(plan: Plan, piece: TaskSlice) -> Iterator[Any]:
    """The records (and end markers) of one task slice, from the plan's source."""
    if plan.source.kind == "export":
        from .export import read_ranges

        return read_ranges(plan.source.paths, piece.ranges)
    if plan.source.kind == "kafka":
        from .kafka_source import read_ranges as read_kafka

        return read_kafka(plan.source.kafka, piece.ranges)
    raise ValueError(f"unknown source kind {plan.source.kind!r}")


def slice_batches(plan: Plan, piece: TaskSlice) -> Iterator[pa.RecordBatch]:
    """The records (and end markers) of one task slice as input batches."""
    if plan.source.kind == "export":
        from .export import range_batches

        direct = range_batches(plan.source.paths, piece.ranges, plan.batch_size)
        if direct is not None:
            yield from direct
            return
    rows: list[Any] = []
    size = plan.batch_size
    for row in slice_rows(plan, piece):
        rows.append(row)
        if len(rows) >= size:
            yield input_batch(rows)
            rows = []
    if rows:
        yield input_batch(rows)


class BackfillReader(DataSourceReader):
    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def partitions(self) -> list[InputPartition]:
        return [SliceInput(i) for i in range(self.plan.reads)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from slice_batches(self.plan, self.plan.slice_of(slice_index(partition)))


class BackfillSource(DataSource):
    """``spark.read.format("eventscript_backfill").option("plan", plan.to_json()).load()``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return INPUT_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        return BackfillReader(Plan.from_json(self.options["plan"]))


class FusedReader(BackfillReader):
    """Reads a slice and runs its first stage in the same Python worker, so records never cross
    into the JVM and back: the task stage (partition and key-split modes) or the key stage
    (key-parallel mode)."""

    def __init__(self, plan: Plan, pack: str | None) -> None:
        super().__init__(plan)
        self.pack = pack

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from .executor import packed, worker_setup
        from .key_parallel import run_key_stage
        from .stages import run_partition

        worker_setup()
        plan = self.plan
        stage = run_key_stage if plan.key_groups else run_partition
        index = slice_index(partition)
        batches = stage(plan, index, slice_batches(plan, plan.slice_of(index)))
        yield from packed(batches, self.pack, plan.program.repartition_topic)


class FusedSource(BackfillSource):
    """``eventscript_backfill_fused``: the first stage's rows straight from the data source
    (partition mode: the tasks' output rows; key-parallel mode: the key stage's rows)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME + "_fused"

    def schema(self) -> str:
        from .key_parallel import KEYED_DDL
        from .records import OUTPUT_DDL

        return KEYED_DDL if Plan.from_json(self.options["plan"]).key_groups else OUTPUT_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        return FusedReader(Plan.from_json(self.options["plan"]), self.options.get("pack") or None)
