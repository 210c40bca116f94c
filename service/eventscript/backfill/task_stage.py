"""The task stage: one Spark partition's records streamed through the worker's own task.

This is where the backfill does not re-implement the worker: a real
:class:`eventscript.task.task.Task` (decoding adapters, group keys, the check that a key belongs
to its partition, the timestamp merge of co-partitioned inputs, the record clock, timers,
``$error`` records, output records and their ``es-id``) processes the records, batch by batch,
so that no partition's history has to fit in memory. The clock is always the record clock.

The merge across input topics needs to know when an input has no more records: the reader
sends, after the last record of each range, an *end marker* row (offset -1), and the task is
told ``mark_eof`` for that input. Until then it buffers the inputs that are ahead (the reader
interleaves its inputs by timestamp, so that buffer stays small).

With ``plan.handover`` the stage also does what the worker does at each commit: after every
batch it takes the task's ``changelog_records()`` and keeps the latest value per key in the
task's own local store; at the end it sends the final records (every live instance and the
task state: record clock, timer sequence, repartition marks) as rows of kind "state", for the
driver to write to the program's changelog topic (``handover.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa

from ..automata.compile import compile_source
from ..automata.compiled import CompiledProgram
from ..language.source import SourceFile
from ..state.changelog import TASK_STATE_KEYS, VERSION_PREFIX, Position, position_header, tp_name
from ..task import codec
from ..task.collector import OutRecord
from ..task.record import PlainRecord
from ..task.task import Task
from ..topology.config import ProgramConfig
from .plan import Plan, ProgramSpec, TaskSlice
from .records import output_batch, records_of, stats_batch

#: Task.process waits for every input that has not ended (its idle wait never runs out here:
#: a backfill knows exactly when each input ends).
WAIT_FOR_ALL_INPUTS_MS = 1 << 62

#: The offset of an end marker row: "this task's range of that topic has no more records".
END_MARKER_OFFSET = -1

#: Hand-over state rows per Arrow batch.
STATE_ROWS_PER_BATCH = 10_000

_compiled: dict[str, CompiledProgram] = {}


class BackfillError(Exception):
    """A backfill that cannot go on; the message says what is wrong and what to do."""


def compiled_program(spec: ProgramSpec) -> CompiledProgram:
    """The program, compiled once per Python worker process (Spark reuses its workers)."""
    digest = hashlib.sha256(f"{spec.state_limit}\0{spec.source_path}\0{spec.source_text}".encode()).hexdigest()
    program = _compiled.get(digest)
    if program is None:
        path = Path(spec.source_path)
        comp = compile_source(
            SourceFile(name=spec.source_path, text=spec.source_text, path=path), state_limit=spec.state_limit
        )
        if not comp.ok or comp.program is None:
            raise BackfillError(
                "\n".join(d.render() for d in comp.diagnostics.errors)
                or f"{spec.source_path}: the program does not compile"
            )
        program = _compiled[digest] = comp.program
    return program


def record_clock_config(spec: ProgramSpec) -> ProgramConfig:
    """The program's configuration with ``clock: record``: a backfill replays record time."""
    cfg = ProgramConfig.model_validate_json(spec.config_json)
    cfg.clock = "record"
    return cfg


@dataclass
class TaskSummary:
    task: int
    records: int = 0  # input records read (ticks included)
    processed: int = 0
    sent: int = 0  # records the task sent: outputs and $error records
    errors: int = 0
    repartitioned: int = 0  # records whose group key belongs to another partition
    keys: int = 0  # live instances at the end
    first_ms: int | None = None
    last_ms: int | None = None
    #: Each input partition's final record clock (ms), by partition number (text: JSON keys): the
    #: backfill's final progress markers say it (``markers.py``).
    clocks: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))

    @staticmethod
    def from_json(raw: bytes) -> TaskSummary:
        return TaskSummary(**orjson.loads(raw))


def add_clocks(total: dict[str, int], clocks: dict[str, int]) -> None:
    """Take ``clocks`` (partition → final record clock, ms) into ``total``: the latest of each
    partition's (the tasks of one partition in key-split and key-parallel modes end at its last
    record time, and those given ``--until`` there)."""
    for p, ms in clocks.items():
        if ms > total.get(p, ms - 1):
            total[p] = ms


class TaskStage:
    """Runs one task slice; feed it input batches, collect output batches."""

    def __init__(self, plan: Plan, piece: TaskSlice, store_dir: Path) -> None:
        spec = plan.program
        self.plan = plan
        self.piece = piece
        self.cfg = record_clock_config(spec)
        self.task = Task(
            piece.partition,
            compiled_program(spec),
            self.cfg,
            self.cfg.inputs,
            spec.repartition_topic,
            spec.changelog_topic,
            spec.partitions,
            store_dir / f"task-{piece.partition}",
        )
        self.task.load_from_store()  # an empty store: the task starts with no instance
        if spec.names_timers:
            # Its timers' outputs say what set them (``es-armed``), as the worker's tasks do where
            # other programs read them: a reader takes those of one time, across key groups and
            # partitions, in the order the timers were set.
            self.task.name_timers()
        self.summary = TaskSummary(piece.partition)
        self.task.mark_eof(spec.repartition_topic, piece.partition)  # nothing comes through it here
        ends = {r.topic: r for r in piece.ranges}
        for inp in self.cfg.inputs:
            r = ends.get(inp.topic)
            if r is None or r.empty:
                self.task.mark_eof(inp.topic, piece.partition)

    def feed(self, batch: pa.RecordBatch) -> pa.RecordBatch | None:
        task, p, summary = self.task, self.piece.partition, self.summary
        add = task.add
        for rec in records_of(batch):
            if rec.offset() == END_MARKER_OFFSET:
                task.mark_eof(rec.topic(), p)
                continue
            if rec.partition() != p:
                raise BackfillError(
                    f"task {p} was given record {rec.topic()}:{rec.partition()}:{rec.offset()} "
                    f"of another partition (the source's partitions are out of order)"
                )
            ts = rec.timestamp()[1]
            if summary.first_ms is None:
                summary.first_ms = ts
            summary.last_ms = ts
            summary.records += 1
            add(rec)
        task.process(WAIT_FOR_ALL_INPUTS_MS)
        return self._drain()

    def finish(self) -> Iterator[pa.RecordBatch]:
        """After the last batch: process what is left, fire timers up to ``until``, and summarize."""
        task, p = self.task, self.piece.partition
        for ip in task.inputs:
            task.mark_eof(ip.topic, p)
        task.process(WAIT_FOR_ALL_INPUTS_MS)
        self.end_of_records()
        until = self.plan.until_us
        if until is not None and self.had_records():
            # A tick, as ``produce`` writes them: the worker's own way to move record time.
            tick = PlainRecord(
                self.cfg.inputs[0].topic, p, END_MARKER_OFFSET, until // 1000, None, b"{}", [(codec.HEADER_TICK, b"1")]
            )
            task.add(tick)
            task.process(WAIT_FOR_ALL_INPUTS_MS)
        out = self._drain()
        if out is not None:
            yield out
        s = self.summary
        s.clocks[str(p)] = task.clock.now() // 1000
        s.processed = task.counts["processed"]
        s.errors = task.counts["errors"]
        s.repartitioned = task.counts["repartitioned"]
        s.keys = task.engine.instance_count
        if self.plan.handover:
            yield from self._state_batches()
        yield stats_batch(p, s.to_json())

    def end_of_records(self) -> None:
        """Called once every record is processed, before ``--until`` (a key-split task moves its
        clock to its partition's last record time here)."""

    def had_records(self) -> bool:
        """Whether the task's slice had any record (``--until`` fires timers only then)."""
        return self.summary.records > 0

    def cut_position(self) -> Position:
        """The input position at the cut: the end of the task's partition of every input."""
        p = self.task.partition
        return {tp_name(r.topic, r.partition): r.end for r in self.piece.ranges if r.partition == p}

    def final_state(self) -> Iterator[OutRecord]:
        """The task's final changelog records: one per live instance and per task state key (the
        program version records too, task/versions.py), as the worker writes them, with the cut as
        their input position (``es-pos``)."""
        task = self.task
        headers: codec.Headers = [("es-pos", position_header(self.cut_position()))]
        now_ms = task.clock.now() // 1000
        topic, p = task.changelog_topic, task.partition
        for key in TASK_STATE_KEYS:
            value = task.store.get(key)
            if value is not None:
                yield OutRecord(topic, p, key, value, headers, now_ms, True)
        for key, value in task.store.with_prefix(VERSION_PREFIX):  # the program version its snapshots name
            yield OutRecord(topic, p, key, value, headers, now_ms, True)
        for key, value in task.store.instances():
            yield OutRecord(topic, p, key, value, headers, now_ms, True)

    def _state_batches(self) -> Iterator[pa.RecordBatch]:
        rows: list[OutRecord] = []
        for rec in self.final_state():
            rows.append(rec)
            if len(rows) >= STATE_ROWS_PER_BATCH:
                yield state_batch(self.piece.partition, rows)
                rows = []
        if rows:
            yield state_batch(self.piece.partition, rows)

    def _drain(self) -> pa.RecordBatch | None:
        task = self.task
        if self.plan.handover:
            # What the worker does at a commit: the changed instances' records, kept (latest per
            # key) in the task's local store; terminated instances become deletions.
            changes = task.changelog_records()
            if changes:
                task.store.write(changes, None, None)
        else:
            task.discard_changes()  # no changelog here: let go of terminated instances
        kept = task.take_outputs()
        if not kept:
            return None
        changelog = task.changelog_topic
        sent = [r for r in kept if r.topic != changelog]
        self.summary.sent += len(sent)
        return output_batch(self.piece.partition, sent)

    def close(self) -> None:
        self.task.close()


def state_batch(task: int, records: list[OutRecord]) -> pa.RecordBatch:
    """Hand-over records as output rows of kind "state"."""
    batch = output_batch(task, records)
    return batch.set_column(0, "kind", pa.array(["state"] * len(records), type=pa.string()))
