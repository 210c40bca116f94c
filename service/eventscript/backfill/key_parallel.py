"""Key-parallel mode: more parallelism than the inputs have partitions (``Plan.key_groups`` > 0).

Two stages, both running the worker's own task code:

1. **The key stage**, one Spark partition per input partition p (as in partition mode): a
   :class:`KeyProbe` — the worker's :class:`~eventscript.task.task.Task` with its program switched
   off — takes partition p's records. The task's own merge, decoders, group-key functions and
   record clock decide, for every record, the order task p processes it in (``seq``), the task's
   record clock after it (``clock``: what the worker's task p would read at that record), and its
   group key, hashed to one of N key groups. Records without a key (ticks, undecodable records,
   undeclared events, an ungrouped program's records) go to key group 0. After its last record
   the stage sends one *partition end* row to every key group, carrying p's final clock.
2. **The group stage**: the rows are repartitioned by key group and sorted within each group by
   (partition, seq); one :class:`KeyGroupStage` per group runs, for each input partition
   p, a worker task of partition p over the group's records of p, in task p's order.

Why every key gets the partition mode's outputs (values, order, ``es-id``): a key's records all
reach one group, in task p's order. The only thing a task of partition p shares between keys is
its record clock, which other keys' records move: before each record the group's task is ticked
(the worker's own tick record) to the clock task p had at that record, so the key's timers fire
at the same points of its history, each at its own deadline, and its records are processed at the
same record time. The partition end row ticks every group's task p to p's final clock, so timers
due by p's last record fire and none fire past it (``--until`` then works as in partition mode).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..task import codec
from ..task.keys import scheme_for
from ..task.record import PlainRecord
from ..task.routing import key_group
from ..task.task import Task
from .plan import Plan
from .records import INPUT_DDL, INPUT_SCHEMA, InputRow, input_batch, records_of, stats_batch
from .task_stage import (
    END_MARKER_OFFSET,
    WAIT_FOR_ALL_INPUTS_MS,
    BackfillError,
    TaskStage,
    TaskSummary,
    add_clocks,
)

#: The offset of a partition end row: "input partition p has no more records; its task's final
#: record clock is in ``clock``".
PARTITION_END_OFFSET = -2
#: The seq of a partition end row: after every record of its partition.
LAST_SEQ = 1 << 62
#: The key group of records that have no group key.
KEYLESS_GROUP = 0

#: route: the key group's route value; clock: task p's record clock (µs) just before the record;
#: seq: the record's place in task p's order; tick: whether the group's task must be ticked to
#: ``clock`` first (the record does not move the clock there itself: see ``KeyProbe``).
KEYED_SCHEMA = pa.schema(
    [*INPUT_SCHEMA, ("route", pa.int32()), ("clock", pa.int64()), ("seq", pa.int64()), ("tick", pa.bool_())]
)
KEYED_DDL = f"{INPUT_DDL}, route int, clock long, seq long, tick boolean"
#: The order of a key group's rows: each partition's in task p's order (partitions share nothing,
#: so any interleaving of them would do; one after the other gives long runs of one task's records).
GROUP_ORDER = ("partition", "seq")


# -- which Spark partition a key group lands on ------------------------------------------------------------


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF


def spark_int_hash(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of an int column (Murmur3_x86_32.hashInt with Spark's seed 42), signed."""
    k1 = (value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF
    k1 = _rotl32(k1, 15) * 0x1B873593 & 0xFFFFFFFF
    h1 = _rotl32(seed ^ k1, 13)
    h1 = (h1 * 5 + 0xE6546B64) & 0xFFFFFFFF
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & 0xFFFFFFFF
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def route_values(groups: int) -> list[int]:
    """For each key group g, a value whose Spark hash partitioning (``repartition(groups, col)``)
    puts it on Spark partition g: so every group gets a Spark task of its own. (Were the mapping
    off, groups would share Spark tasks: slower, never wrong — a group stage takes any rows.)"""
    found: dict[int, int] = {}
    v = 0
    while len(found) < groups:
        found.setdefault(spark_int_hash(v) % groups, v)
        v += 1
    return [found[g] for g in range(groups)]


# -- stage 1: keys, order and clock ---------------------------------------------------------------------------


class KeyProbe:
    """A worker task run dry (``Task.observe(..., dry_run=True)``): the task still decodes,
    computes group keys, checks partitions, merges its inputs and runs its record clock exactly
    as the worker's task does, and the probe logs each record as the task processes it: (record,
    group key, clock before it, whether it needs a tick: it does not move the clock to its own
    timestamp itself).

    Nothing reaches the engine (so no instance, no timer, no output): the key group's task runs
    the program. ``$error`` records are dropped here; the key group's task makes them again."""

    def __init__(self, task: Task) -> None:
        self.seen: list[tuple[PlainRecord, tuple[Any, ...] | None, int, bool]] = []
        task.observe(self, dry_run=True)

    def processed(self, msg: Any, key: tuple[Any, ...] | None, clock_before: int, moved_to: int) -> None:
        self.seen.append((msg, key, clock_before, moved_to != msg.timestamp()[1] * 1000))


class KeyStage(TaskStage):
    """Stage 1 for one task slice: the worker's task stage with a :class:`KeyProbe`; input
    batches in, rows in :data:`KEYED_SCHEMA` out."""

    def __init__(self, plan: Plan, index: int, store_dir: Path) -> None:
        super().__init__(plan, plan.slices[index], store_dir)
        self.probe = KeyProbe(self.task)
        self.groups = plan.key_groups
        self.routes = route_values(self.groups)
        self.grouped = self.task.grouped
        self.scheme = scheme_for(self.cfg, self.task.key_types)
        self.seq = 0
        self._route_of: dict[tuple[Any, ...], int] = {}

    def route(self, rec: PlainRecord, key: tuple[Any, ...] | None) -> int:
        """The route value of a record's key group: by its group key's bytes in the program's key
        scheme (the bytes that place it on its partition), or, for a record without a group key
        (undecodable, an undeclared event), by its record key — the same bytes when it was keyed
        as the key format says, so an ``$error`` about it stays in order with its key's outputs.
        Ticks, unkeyed records and every record of an ungrouped program go to group 0. The hash
        is stable: the same in every process."""
        if not self.grouped:
            return self.routes[KEYLESS_GROUP]
        if key is None:
            kb = rec.key()
            return self.routes[KEYLESS_GROUP if kb is None else key_group(kb, self.groups)]
        r = self._route_of.get(key)
        if r is None:
            if len(self._route_of) > 100_000:
                self._route_of.clear()
            r = self._route_of[key] = self.routes[key_group(self.scheme.routing_bytes(key), self.groups)]
        return r

    def finish(self) -> Iterator[pa.RecordBatch]:
        """The last records, then a partition end row for every key group (no ``--until`` here:
        the groups' tasks apply it)."""
        task, p = self.task, self.piece.partition
        for ip in task.inputs:
            task.mark_eof(ip.topic, p)
        task.process(WAIT_FOR_ALL_INPUTS_MS)
        out = self._drain()
        if out is not None:
            yield out
        topic = self.piece.ranges[0].topic if self.piece.ranges else ""
        final = task.clock.now()
        end: InputRow = (topic, p, PARTITION_END_OFFSET, final // 1000, None, None, None)
        ends = [end] * self.groups
        n = self.groups
        yield _keyed(input_batch(ends), self.routes, [final] * n, [LAST_SEQ] * n, [True] * n)

    def _drain(self) -> pa.RecordBatch | None:
        seen = self.probe.seen
        self.task.take_outputs()  # (a dry run keeps none)
        if not seen:
            return None
        route = self.route
        start = self.seq
        self.seq += len(seen)
        batch = _keyed(
            input_batch([rec.fields() for rec, _, _, _ in seen]),
            [route(rec, key) for rec, key, _, _ in seen],
            [before for _, _, before, _ in seen],
            list(range(start, self.seq)),
            [tick for _, _, _, tick in seen],
        )
        seen.clear()
        return batch


def _keyed(
    batch: pa.RecordBatch, routes: list[int], clocks: list[int], seqs: list[int], ticks: list[bool]
) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            *batch.columns,
            pa.array(routes, type=pa.int32()),
            pa.array(clocks, type=pa.int64()),
            pa.array(seqs, type=pa.int64()),
            pa.array(ticks, type=pa.bool_()),
        ],
        schema=KEYED_SCHEMA,
    )


# -- stage 2: one key group --------------------------------------------------------------------------------------


class MergedTaskStage(TaskStage):
    """A worker task of partition p in a key group: its records come already in task p's order,
    each with the clock task p had at it."""

    def __init__(self, plan: Plan, index: int, store_dir: Path) -> None:
        super().__init__(plan, plan.slices[index], store_dir)
        for ip in self.task.inputs:  # the order is decided: never wait for an input
            self.task.mark_eof(ip.topic, self.piece.partition)
        self.tick_topic = self.cfg.inputs[0].topic

    def tick(self, clock_us: int) -> None:
        """Move the task's record clock to ``clock_us`` (firing the timers due by then) with the
        worker's own tick record, as the records of other key groups move task p's clock."""
        task = self.task
        if clock_us > task.clock.now():
            task.add(
                PlainRecord(
                    self.tick_topic,
                    self.piece.partition,
                    END_MARKER_OFFSET,
                    clock_us // 1000,
                    None,
                    b"{}",
                    [(codec.HEADER_TICK, b"1")],
                )
            )
            task.process(0)

    def feed_records(self, records: list[PlainRecord]) -> None:
        """Records of one input topic, in task p's order, none needing a tick before it."""
        task, summary = self.task, self.summary
        for rec in records:
            task.add(rec)
        ts = records[-1].timestamp()[1]
        if summary.first_ms is None:
            summary.first_ms = records[0].timestamp()[1]
        summary.last_ms = ts
        summary.records += len(records)
        task.process(0)

    def drain(self) -> pa.RecordBatch | None:
        return self._drain()


class KeyGroupStage:
    """Stage 2 for one key group: rows in :data:`KEYED_SCHEMA`, sorted by :data:`GROUP_ORDER`."""

    def __init__(self, plan: Plan, group: int, store_dir: Path) -> None:
        self.plan = plan
        self.group = group
        self.store_dir = store_dir
        self.index = {piece.partition: i for i, piece in enumerate(plan.slices)}
        self.tasks: dict[int, MergedTaskStage] = {}
        #: Each partition's final record clock (ms), from its end row (every group has one, also
        #: a group with none of the partition's keys).
        self.ends: dict[str, int] = {}

    def _task(self, partition: int) -> MergedTaskStage:
        stage = self.tasks.get(partition)
        if stage is None:
            index = self.index.get(partition)
            if index is None:
                raise BackfillError(
                    f"key group {self.group} was given a record of partition {partition}, which the plan does not read"
                )
            stage = self.tasks[partition] = MergedTaskStage(self.plan, index, self.store_dir)
        return stage

    def feed(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        clocks = batch.column("clock").to_pylist()
        ticks = batch.column("tick").to_pylist()
        run: list[PlainRecord] = []
        run_stage: MergedTaskStage | None = None
        for rec, clock, tick in zip(records_of(batch), clocks, ticks):
            if run and (tick or rec.partition() != run[0].partition() or rec.topic() != run[0].topic()):
                assert run_stage is not None
                run_stage.feed_records(run)
                run = []
            if rec.offset() == PARTITION_END_OFFSET:
                self.ends[str(rec.partition())] = clock // 1000
                ended = self.tasks.get(rec.partition())
                if ended is not None:
                    ended.tick(clock)  # partition p's last record time: its timers due by then fire
                continue
            if not run:
                run_stage = self._task(rec.partition())
                if tick:
                    run_stage.tick(clock)
            run.append(rec)
        if run:
            assert run_stage is not None
            run_stage.feed_records(run)
        for stage in self.tasks.values():
            out = stage.drain()
            if out is not None:
                yield out

    def finish(self) -> Iterator[pa.RecordBatch]:
        """Each task's end (``--until``, hand-over state), then one summary for the whole group."""
        total = TaskSummary(self.group, clocks=dict(self.ends))
        for _, stage in sorted(self.tasks.items()):
            for batch in stage.finish():
                if batch.column(0)[0].as_py() != "stats":
                    yield batch
                    continue
                _add_summary(total, TaskSummary.from_json(batch.column("value")[0].as_py()))
        yield stats_batch(self.group, total.to_json())

    def close(self) -> None:
        for stage in self.tasks.values():
            stage.close()


def _add_summary(total: TaskSummary, s: TaskSummary) -> None:
    for name in ("records", "processed", "sent", "errors", "repartitioned", "keys"):
        setattr(total, name, getattr(total, name) + getattr(s, name))
    total.first_ms = min((x for x in (total.first_ms, s.first_ms) if x is not None), default=None)
    total.last_ms = max((x for x in (total.last_ms, s.last_ms) if x is not None), default=None)
    add_clocks(total.clocks, s.clocks)


# -- the stages' bodies ----------------------------------------------------------------------------------------


def run_key_stage(plan: Plan, index: int, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The key stage's ``mapInArrow`` body for task slice ``index``."""
    yield from _staged(lambda d: KeyStage(plan, index, d), batches, f"keys-{index}-")


def run_key_group(plan: Plan, group: int, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The group stage's ``mapInArrow`` body for key group ``group``."""
    yield from _staged(lambda d: KeyGroupStage(plan, group, d), batches, f"group-{group}-")


def _staged(make: Callable[[Path], Any], batches: Iterator[pa.RecordBatch], prefix: str) -> Iterator[pa.RecordBatch]:
    store_dir = Path(tempfile.mkdtemp(prefix=f"eventscript-backfill-{prefix}"))
    stage = make(store_dir)
    try:
        for batch in batches:
            out = stage.feed(batch)
            if isinstance(out, pa.RecordBatch):
                yield out
            elif out is not None:
                yield from out
        yield from stage.finish()
    finally:
        stage.close()
        shutil.rmtree(store_dir, ignore_errors=True)


def run_locally(plan: Plan, slice_batches: Callable[[int], Iterator[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
    """Both stages without Spark (tests, comparisons): the key stage over every slice, the rows
    bucketed by key group and sorted as Spark sorts them, then each group's stage."""
    routes = route_values(plan.key_groups)
    group_of = {r: g for g, r in enumerate(routes)}
    rows: list[list[pa.RecordBatch]] = [[] for _ in routes]
    for i in range(len(plan.slices)):
        for batch in run_key_stage(plan, i, slice_batches(i)):
            for g in range(plan.key_groups):
                mask = pa.compute.equal(batch.column("route"), routes[g])
                part = batch.filter(mask)
                if part.num_rows:
                    rows[group_of[routes[g]]].append(part)
    for g, parts in enumerate(rows):
        table = pa.Table.from_batches(parts, schema=KEYED_SCHEMA).sort_by([(c, "ascending") for c in GROUP_ORDER])
        yield from run_key_group(plan, g, iter(table.to_batches(max_chunksize=plan.batch_size)))
