"""The Spark job, on the driver: plan (the cut), read, run the worker's tasks, write the outputs.

Shape: the data source has one Spark partition per Kafka partition number p (all
co-partitioned inputs of p together); ``mapInArrow`` streams each through one worker task
(``task_stage.py``); the driver writes the outputs, task after task, to the sink. Records whose
group key belongs to another partition (the worker would re-publish them through its
repartition topic, in an order only the running worker knows) stop the backfill with an error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..topology.config import ProgramConfig, Topology
from . import cut, export
from .executor import packed
from .plan import OffsetRange, Plan, SourceSpec, program_spec
from .records import OUTPUT_DDL, OutputRow
from .sink import unpack_rows
from .stages import run_partition
from .task_stage import BackfillError, TaskSummary, add_clocks

DEFAULT_MASTER = "local[*]"


@dataclass
class Totals:
    """What the tasks reported, summed as their summaries arrive."""

    tasks: int = 0
    records: int = 0
    sent: int = 0
    errors: int = 0
    repartitioned: int = 0
    keys: int = 0
    summaries: list[TaskSummary] = field(default_factory=list)
    #: Each input partition's final record clock (ms), by partition number (text).
    clocks: dict[str, int] = field(default_factory=dict)

    def add(self, s: TaskSummary) -> None:
        self.summaries.append(s)
        self.tasks += 1
        self.records += s.records
        self.sent += s.sent
        self.errors += s.errors
        self.repartitioned += s.repartitioned
        self.keys += s.keys
        add_clocks(self.clocks, s.clocks)


# -- the session ------------------------------------------------------------------------------------


def submitted() -> bool:
    """Whether this driver was started by ``spark-submit`` (which hands it a gateway to its JVM,
    configured with the submitted ``--master`` and ``--conf``)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(master: str | None = DEFAULT_MASTER, ui: bool = True, conf: dict[str, str] | None = None) -> Any:
    """A SparkSession whose Python workers run this interpreter (so they import eventscript).

    ``master`` None: the master ``spark-submit`` was given, else ``local[*]``. A master set here
    would override the submitted one, and the job would silently run on the submitting host."""
    if master is None and not submitted():
        master = DEFAULT_MASTER
    if not submitted():
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    local = master is not None and master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # one machine: stay on the loopback interface
    from pyspark.sql import SparkSession

    builder = SparkSession.builder if master is None else SparkSession.builder.master(master)
    if local:
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    builder = (
        builder.appName("eventscript-backfill")
        .config("spark.ui.enabled", "true" if ui else "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.worker.reuse", "true")
    )
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    register_source(spark)
    return spark


def register_source(spark: Any) -> None:
    from .source import BackfillSource, FusedSource

    spark.dataSource.register(BackfillSource)
    spark.dataSource.register(FusedSource)


# -- plans ------------------------------------------------------------------------------------------------


def export_plan(
    topo: Topology,
    cfg: ProgramConfig,
    paths: list[str],
    *,
    partitions: int | None = None,
    start: str | None = None,
    stop: str | None = None,
    until_us: int | None = None,
    batch_size: int = 10_000,
) -> Plan:
    """The plan for a backfill over topic exports: the cut is what the export holds."""
    # Executors run in working directories of their own: hand them absolute paths.
    paths = [p if "://" in p else str(Path(p).resolve()) for p in paths]
    for p in paths:
        export.export_format(p)
        if not Path(p).exists():
            raise BackfillError(f"{p}: no such export file")
    topics = [i.topic for i in cfg.inputs]
    lo, hi = cut.Bound.parse(start, "--from"), cut.Bound.parse(stop, "--to")
    by_time = any(b is not None and b.time_ms is not None for b in (lo, hi))
    found = export.extents(paths, set(topics), with_times=by_time)
    if not found:
        raise BackfillError(_nothing_to_read(topo, cfg, paths))
    n = partitions or _declared_partitions(topo, cfg) or (max((p for _, p in found), default=0) + 1)
    beyond = sorted(f"{t}:{p}" for t, p in found if p >= n)
    if beyond:
        raise BackfillError(
            f"the export has records of partitions {', '.join(beyond)}, but the inputs have {n} "
            f"partitions; give the right count with --partitions"
        )
    ranges: dict[tuple[str, int], OffsetRange] = {}
    for (topic, part), e in found.items():
        assert e.first is not None and e.last is not None
        ranges[(topic, part)] = cut.bounded(topic, part, e.first, e.last + 1, lo, hi, e.times)
    return Plan(
        program=program_spec(topo, cfg, n),
        source=SourceSpec("export", paths=list(paths)),
        slices=cut.slices(topics, n, ranges),
        until_us=until_us,
        batch_size=batch_size,
    )


def _nothing_to_read(topo: Topology, cfg: ProgramConfig, paths: list[str]) -> str:
    """Why an export gives the program no record: the usual slip is the export of another stage's
    input (the first stage's, for the second), which ran to "wrote 0 records" and exit 0."""
    held = sorted({row[0] for row in export.rows(paths)})
    files = ", ".join(paths)
    reads = ", ".join(i.topic for i in cfg.inputs)
    if not held:
        return f"{files}: the export holds no records; program {cfg.name} reads {reads}: export those topics"
    readers = [c.name for c in topo.programs if any(i.topic in held for i in c.inputs)]
    other = f", or backfill the program that reads it: --program {' or '.join(readers)}" if readers else ""
    return (
        f"{files}: the export holds records of topic {', '.join(held)} only, and program {cfg.name} reads "
        f"{reads}: nothing to backfill; export the program's inputs "
        f"('eventscript export TOPOLOGY.yaml --topic {cfg.inputs[0].topic} -o FILE', or from a trace: "
        f"'--trace T --program {cfg.name}'){other}"
    )


def _declared_partitions(topo: Topology, cfg: ProgramConfig) -> int | None:
    counts = {topo.topics[i.topic].partitions for i in cfg.inputs if i.topic in topo.topics}
    if len(counts) > 1:
        raise BackfillError(
            f"program {cfg.name}: its input topics are declared with different partition counts "
            f"({', '.join(map(str, sorted(counts)))}); inputs must be co-partitioned"
        )
    return next(iter(counts), None)


# -- running --------------------------------------------------------------------------------------------------


def _stage_function(
    plan_json: str, stage: str, fmt: str | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function: ``stage`` ("tasks", "keys" or "groups") of Spark partition i,
    its outputs packed in ``fmt`` (None: one row per record)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from eventscript.backfill import key_parallel, stages
        from eventscript.backfill.executor import packed, worker_setup
        from eventscript.backfill.plan import Plan

        worker_setup()
        ctx = TaskContext.get()
        assert ctx is not None
        plan = Plan.from_json(plan_json)
        body = {
            "tasks": stages.run_partition,
            "keys": key_parallel.run_key_stage,
            "groups": key_parallel.run_key_group,
        }[stage]
        yield from packed(body(plan, ctx.partitionId(), batches), fmt, plan.program.repartition_topic)

    return run


def output_frame(spark: Any, plan: Plan, fused: bool = False, pack: str | None = None) -> Any:
    """The DataFrame of every task's output rows (lazy: nothing runs until it is read).

    Partition mode: one task per input partition. Key-parallel mode (``plan.key_groups`` > 0):
    the key stage, a shuffle by key group, a sort, and one task per key group
    (``key_parallel.py``). ``pack``: the tasks encode their outputs (``sink.PACK_FORMATS``), a
    batch per row. ``fused``: the data source runs the first stage (each slice's task, or its key
    stage) itself, in the Python worker that reads the slice, so records never cross into the JVM
    and back."""
    from .key_parallel import GROUP_ORDER, KEYED_DDL

    plan_json = plan.to_json()
    if fused:
        first = spark.read.format("eventscript_backfill_fused").option("plan", plan_json)
        first = first.option("pack", "" if plan.key_groups else pack or "").load()
    else:
        df = spark.read.format("eventscript_backfill").option("plan", plan_json).load()
        if not plan.key_groups:
            return df.mapInArrow(_stage_function(plan_json, "tasks", pack), OUTPUT_DDL)
        first = df.mapInArrow(_stage_function(plan_json, "keys"), KEYED_DDL)
    if not plan.key_groups:
        return first
    grouped = first.repartition(plan.key_groups, "route").sortWithinPartitions(*GROUP_ORDER)
    return grouped.mapInArrow(_stage_function(plan_json, "groups", pack), OUTPUT_DDL)


def _bytes(v: Any) -> bytes | None:
    return None if v is None else bytes(v)


class JobOutputs:
    """The output records of a backfill job, in task order, each task's in the order it sent them
    (iterate: :class:`OutputRow` objects), or packed by the tasks (:meth:`packed`, what
    ``FileSink.write_all`` takes: the fast path). Task summaries go to ``totals`` (and
    ``on_summary``) as they arrive; rows of kind "state" (a task's final changelog records, sent
    with ``plan.handover``) go to ``on_state``."""

    def __init__(
        self,
        spark: Any,
        plan: Plan,
        totals: Totals,
        on_summary: Callable[[TaskSummary], None],
        on_state: Callable[[OutputRow], None] | None,
        fused: bool = False,
    ) -> None:
        self.spark, self.plan, self.totals = spark, plan, totals
        self.on_summary, self.on_state, self.fused = on_summary, on_state, fused

    def packed(self, fmt: str) -> Iterator[tuple[bytes, int]]:
        """(bytes, how many records) in ``fmt`` (``sink.pack``), in task order."""
        all_at_once = self.spark.sparkContext.defaultParallelism > 2
        for row in self._rows(output_frame(self.spark, self.plan, fused=self.fused, pack=fmt), all_at_once):
            kind = row.kind
            if kind == "packed":
                yield bytes(row.value), row.partition
            elif kind == "stats":
                s = TaskSummary.from_json(bytes(row.value))
                self.totals.add(s)
                self.on_summary(s)
            elif kind == "state":
                if self.on_state is not None:
                    self.on_state(
                        OutputRow(
                            row.task,
                            row.topic,
                            row.partition,
                            _bytes(row.key),
                            _bytes(row.value),
                            [(h.key, _bytes(h.value)) for h in row.headers or []],
                            row.timestamp,
                        )
                    )
            else:
                raise BackfillError(f"a task sent a row of unknown kind {kind!r}")

    @staticmethod
    def _rows(frame: Any, all_at_once: bool) -> Iterator[Any]:
        """The frame's rows in task order, with every task running at once.

        ``toLocalIterator`` alone runs one Spark job per partition, at most two at a time: key
        groups (or partitions) beyond that would wait however many cores the cluster has. So,
        ``all_at_once`` (more than two slots), a job computes every partition at once into Spark's cache
        (packed outputs: small) while the iterator reads them in order, each as soon as it is
        there (a partition is computed once: a task that needs a block being computed waits for
        it, Spark's block lock)."""
        import threading

        from pyspark import StorageLevel

        if not all_at_once:
            # Two slots: the iterator's prefetch keeps both busy, and a second job's tasks waiting
            # for a block would only take a slot from the tasks that compute.
            yield from frame.toLocalIterator(prefetchPartitions=True)
            return
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        failure: list[BaseException] = []

        def compute_all() -> None:
            try:
                frame.count()
            except BaseException as exc:
                failure.append(exc)

        worker = threading.Thread(target=compute_all, name="backfill-tasks", daemon=True)
        worker.start()
        try:
            yield from frame.toLocalIterator()
            worker.join()
            if failure:
                raise failure[0]
        finally:
            frame.unpersist()

    def __iter__(self) -> Iterator[OutputRow]:
        from .sink import unpack_rows

        for data, _ in self.packed("arrow"):
            yield from unpack_rows(data)


def outputs(
    spark: Any,
    plan: Plan,
    totals: Totals,
    on_summary: Callable[[TaskSummary], None] = lambda s: None,
    on_state: Callable[[OutputRow], None] | None = None,
    fused: bool = True,
) -> JobOutputs:
    """The output records (see :class:`JobOutputs`): iterate them, or hand them to
    ``FileSink.write_all``, which takes them packed. The data source runs the first stage itself
    (``fused``: records never cross into the JVM and back; see "Performance" in
    docs/backfill.md)."""
    return JobOutputs(spark, plan, totals, on_summary, on_state, fused)


def run_locally(plan: Plan, on_summary: Callable[[TaskSummary], None] = lambda s: None) -> Iterator[OutputRow]:
    """The same tasks without Spark, one after the other (for tests and comparisons); each
    task's summary goes to ``on_summary``."""
    from . import key_parallel
    from .source import slice_batches

    if plan.key_groups:
        batches = key_parallel.run_locally(plan, lambda i: slice_batches(plan, plan.slices[i]))
    else:
        batches = (b for i in range(plan.reads) for b in run_partition(plan, i, slice_batches(plan, plan.slice_of(i))))
    for batch in packed(batches, "arrow", plan.program.repartition_topic):
        kind = batch.column(0)[0].as_py()
        if kind == "packed":
            yield from unpack_rows(batch.column("value")[0].as_py())
        elif kind == "stats":
            on_summary(TaskSummary.from_json(batch.column("value")[0].as_py()))


def check_totals(totals: Totals, plan: Plan) -> None:
    if totals.repartitioned:
        raise BackfillError(
            f"{totals.repartitioned} record(s) are on a partition their group key does not hash to (the worker "
            f"re-publishes such records through its repartition topic, in an order only a running worker decides); "
            f"the backfill cannot reproduce that: check the inputs' key format and partitioner in the topology "
            f"(docs/worker.md), or publish records keyed as they say (as 'eventscript produce' does)"
        )
    if totals.tasks != plan.tasks:
        raise BackfillError(f"only {totals.tasks} of {plan.tasks} tasks reported their end")
