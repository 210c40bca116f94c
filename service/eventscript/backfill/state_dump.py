"""``eventscript state dump --spark MASTER``: the changelog dump of a large program on PySpark.

The changelog is read by the backfill's own Python Data Source (``backfill.source``,
``eventscript_backfill``), as a backfill reads input topics: the driver fixes the cut (each
changelog partition from its low watermark to its end as read_committed sees it, the
end-of-partition signal: ``backfill.kafka_source.log_ends``) in a backfill plan with one slice per
changelog partition, and each Spark partition reads exactly its slice — read_committed, failing
loudly if a partition ends before its range does. The driver also reads each task's committed
input position (the restore's apply rule needs it). Each Spark partition then folds its changelog
partition and explains every instance (``changelog_dump.fold_records`` and ``dump_rows``, the same
code as the one-process dump), so neither the command's host nor one process holds every instance.
The rows are written as a Parquet dataset (a directory, one file per Spark partition), with the
one-process dump's columns. Spark comes from the backfill's session setup
(``backfill.job.spark_session``: its Python workers run this interpreter, and the data source is
registered).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..kafka.changelog_dump import COLUMNS
from ..kafka.restore import ChangelogRecord
from ..topology.config import ProgramConfig, Topology, TopologyError


def _changelog_record(row: Any) -> ChangelogRecord:
    """A data source row (``backfill.records.INPUT_SCHEMA``) as the restore reads a changelog record."""
    from ..state.changelog import HEADER_EPOCH, HEADER_POSITION, split_batch_frame
    from ..state.keyinfo import HEADER_KEY_INFO, stored_value

    es_pos = info = gen = None
    for h in row["headers"] or ():
        if h["key"] == HEADER_POSITION:
            es_pos = h["value"]
        elif h["key"] == HEADER_KEY_INFO:
            info = h["value"]
        elif h["key"] == HEADER_EPOCH:
            gen = h["value"]
    value, pos, epoch = split_batch_frame(
        bytes(row["value"]) if row["value"] is not None else None,
        bytes(es_pos) if es_pos is not None else None,
        bytes(gen) if gen is not None else None,
    )
    value, info = stored_value(value, bytes(info) if info is not None else None)
    return (row["partition"], row["offset"], bytes(row["key"]), value, pos, info, epoch)


def _rows_of_partition(
    name: str, program_json: str, committed: dict[int, dict[str, int]], rows: Iterator[Any]
) -> Iterator[tuple[Any, ...]]:
    """One Spark partition: the data source's rows of one changelog partition (end markers have
    offset -1), folded and explained (runs on an executor)."""
    import orjson

    from ..automata.compiled import CompiledProgram
    from ..kafka.changelog_dump import PARQUET_JSON_FIELDS, FoldedTask, dump_rows, fold_records
    from ..kafka.restore import Coverage

    tasks: dict[int, FoldedTask] = {}
    rules: dict[int, Coverage] = {}
    records: list[ChangelogRecord] = []
    for row in rows:
        p = row["partition"]
        if p not in tasks:
            position = committed.get(p, {})
            tasks[p], rules[p] = FoldedTask(p, position), Coverage(position)
        if row["offset"] >= 0:
            records.append(_changelog_record(row))
        if len(records) >= 10_000:
            fold_records(tasks, rules, records)
            records = []
    fold_records(tasks, rules, records)
    if not tasks:
        return
    program = CompiledProgram.loads(program_json)
    for row in dump_rows(program, [tasks[p] for p in sorted(tasks)], name):
        yield tuple(
            orjson.dumps(row[c]).decode() if c in PARQUET_JSON_FIELDS and row[c] is not None else row[c]
            for c in COLUMNS
        )


def changelog_plan(topo: Topology, cfg: ProgramConfig, topic: str, partitions: int) -> Any:
    """A backfill plan (``backfill.plan.Plan``) whose slices are the changelog's partitions, each
    from its low watermark to its read_committed end."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    from ..kafka import clients
    from .kafka_source import log_ends
    from .plan import OffsetRange, Plan, SourceSpec, TaskSlice, program_spec

    consumer = Consumer(clients.consumer_config(topo.kafka, f"{cfg.name}.dump-cut", **{"enable.partition.eof": True}))
    try:
        try:
            marks = {
                (topic, p): consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
                for p in range(partitions)
            }
        except KafkaException as exc:
            raise TopologyError(
                f"program {cfg.name}: cannot read the offsets of changelog {topic} on "
                f"{topo.kafka.bootstrap_servers}: {exc}"
            ) from None
        ends = log_ends(consumer, marks, 30.0)
    finally:
        consumer.close()
    slices = [
        TaskSlice(p, [OffsetRange(topic, p, marks[(topic, p)][0], max(marks[(topic, p)][0], ends[(topic, p)]))])
        for p in range(partitions)
    ]
    return Plan(
        program=program_spec(topo, cfg, partitions),
        source=SourceSpec("kafka", kafka=topo.kafka.model_dump()),
        slices=slices,
    )


def dump_on_spark(spark: Any, topo: Topology, cfg: ProgramConfig, program: Any, output: Path) -> int:
    """Write every instance of ``cfg``'s program to the Parquet dataset ``output``, reading the
    changelog through the backfill's data source; returns the number of rows."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    from ..kafka.changelog_dump import changelog_partitions, committed_positions
    from .job import register_source
    from .source import SOURCE_NAME

    if output.suffix != ".parquet":
        raise TopologyError("state dump --spark writes a Parquet dataset: give --output DIR.parquet")
    topic, partitions = changelog_partitions(topo, cfg)
    committed = committed_positions(topo, cfg, partitions)
    plan = changelog_plan(topo, cfg, topic, partitions)
    register_source(spark)  # (a session not made by backfill.job.spark_session)
    name, program_json = cfg.name, program.dumps()
    changelog = spark.read.format(SOURCE_NAME).option("plan", plan.to_json()).load()
    rdd = changelog.rdd.mapPartitions(lambda rows: _rows_of_partition(name, program_json, committed, rows))
    schema = StructType(
        [
            StructField("program", StringType()),
            StructField("task", IntegerType()),
            StructField("key", StringType()),
            StructField("status", StringType()),
            StructField("changelog_offset", LongType()),
            StructField("instance", StringType()),
            StructField("ended", StringType()),
            StructField("last_record", StringType()),
            StructField("committed", StringType()),
        ]
    )
    frame = spark.createDataFrame(rdd, schema).cache()
    frame.write.mode("overwrite").parquet(str(output))
    n = int(frame.count())
    frame.unpersist()
    return n
