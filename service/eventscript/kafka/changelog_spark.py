"""``eventscript state dump --spark MASTER``: the changelog dump of a large program on PySpark.

The driver reads what needs the group (the changelog's partitions, each task's committed input
position); each changelog partition is then folded and explained by one Spark task
(``changelog_dump.fold_partitions`` and ``dump_rows``, the same code as the one-process dump), so
neither the command's host nor one process holds every instance, and partitions are read in
parallel. The rows are written as a Parquet dataset (a directory, one file per Spark partition),
with the one-process dump's columns. Spark comes from the backfill's session setup
(``backfill.job.spark_session``: its Python workers run this interpreter).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..topology.config import ProgramConfig, Topology, TopologyError
from .changelog_dump import COLUMNS


def _rows_of_partitions(
    kafka: dict[str, Any],
    topic: str,
    name: str,
    program_json: str,
    committed: dict[int, dict[str, int]],
    partitions: Iterator[int],
) -> Iterator[tuple[Any, ...]]:
    """One Spark task: fold its changelog partitions and yield their rows (runs on an executor)."""
    import orjson

    from ..automata.compiled import CompiledProgram
    from ..topology.config import KafkaConfig
    from .changelog_dump import PARQUET_JSON_FIELDS, dump_rows, fold_partitions

    mine = {p: committed[p] for p in partitions}
    if not mine:
        return
    program = CompiledProgram.loads(program_json)
    tasks = fold_partitions(KafkaConfig.model_validate(kafka), topic, name, mine)
    for row in dump_rows(program, tasks, name):
        yield tuple(
            orjson.dumps(row[c]).decode() if c in PARQUET_JSON_FIELDS and row[c] is not None else row[c]
            for c in COLUMNS
        )


def dump_on_spark(spark: Any, topo: Topology, cfg: ProgramConfig, program: Any, output: Path) -> int:
    """Write every instance of ``cfg``'s program to the Parquet dataset ``output``; returns the
    number of rows."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    from .changelog_dump import changelog_partitions, committed_positions

    if output.suffix != ".parquet":
        raise TopologyError("state dump --spark writes a Parquet dataset: give --output DIR.parquet")
    topic, partitions = changelog_partitions(topo, cfg)
    committed = committed_positions(topo, cfg, partitions)
    kafka, name, program_json = topo.kafka.model_dump(), cfg.name, program.dumps()
    rdd = spark.sparkContext.parallelize(range(partitions), partitions).mapPartitions(
        lambda ps: _rows_of_partitions(kafka, topic, name, program_json, committed, ps)
    )
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
