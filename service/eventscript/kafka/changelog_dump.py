"""``eventscript state dump``: every instance of a program, read from its changelog topic without
running the program, explained like one key's answer (state/query.py).

The changelog is read as a restore reads it (kafka/restore.py): read_committed, from the start of
every partition to its end-of-partition signal, a record applying only if the input position its
batch reached (``es-pos``) is within the group's committed offsets (``Coverage``) and its owner
epoch (``es-gen``) is not below one applied before it (``EpochFence``). What it folds
to is therefore what a worker restoring each task now would hold. A tombstone still in the log
(compaction removes them after ``delete.retention.ms``) shows its key as ``ended``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from ..automata.compiled import CompiledProgram
from ..engine.timeutil import format_time
from ..explain.terms import ProgramTerms
from ..state.changelog import CLOCK_KEY, SINGLE_KEY, EpochFence, Position, decode_clock, is_instance_key, tp_name
from ..state.keyinfo import decode_info, split_value
from ..state.program_versions import WrittenBy
from ..state.query import ended_fields, explain_snapshot, last_record_fields
from ..topology.config import KafkaConfig, ProgramConfig, Topology, TopologyError
from . import clients
from .admin import Admin, KafkaUnavailable
from .restore import ChangelogRecord, Coverage, keep_info, open_transaction_end, read_changelog

log = logging.getLogger("eventscript.kafka.state")

#: Seconds to wait for a changelog to report the end of all its partitions.
READ_TIMEOUT = 120.0


@dataclass
class FoldedTask:
    """One task's state as a restore would rebuild it now: store key → (value or None for a
    tombstone, changelog offset of the record; a live key's information in its value:
    ``state.keyinfo``), the markers of ended keys (tombstones' ``es-key`` headers), the records
    applied and skipped (not covered by the committed offsets; ``fence.skipped``: an earlier
    owner's, written after a later one's)."""

    partition: int
    committed: Position
    records: dict[bytes, tuple[bytes | None, int]] = field(default_factory=dict)
    infos: dict[bytes, bytes | None] = field(default_factory=dict)
    end: int = 0
    applied: int = 0
    skipped: int = 0
    fence: EpochFence = field(default_factory=EpochFence)

    def lookup(self, key: bytes) -> bytes | None:
        """A task-state record's value (the program versions: ``state.program_versions``)."""
        return self.records.get(key, (None, 0))[0]


def committed_positions(topo: Topology, cfg: ProgramConfig, partitions: int) -> dict[int, Position]:
    """The group's committed input position of every task (inputs and repartition topic), as the
    worker reads it before a restore (``TaskManager.restore_pending``). The consumer does not join
    the group: it only reads its offsets."""
    consumer = Consumer(clients.consumer_config(topo.kafka, topo.group_id(cfg)))
    try:
        topics = [i.topic for i in cfg.inputs] + [topo.repartition_topic(cfg)]
        tps = [TopicPartition(t, p) for p in range(partitions) for t in topics]
        out: dict[int, Position] = {p: {} for p in range(partitions)}
        try:
            answer = consumer.committed(tps, timeout=30)
        except KafkaException as exc:
            raise KafkaUnavailable.of(topo, "reading committed offsets", exc.args[0]) from None
        for tp in answer:
            out[tp.partition][tp_name(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else 0
        return out
    finally:
        consumer.close()


def changelog_partitions(topo: Topology, cfg: ProgramConfig) -> tuple[str, int]:
    """The program's changelog topic and its partition count (TopologyError when it has none)."""
    topic = topo.changelog_topic(cfg)
    counts = Admin(topo).partition_counts()
    if topic not in counts:
        raise TopologyError(
            f"program {cfg.name}: no changelog topic {topic} on {topo.kafka.bootstrap_servers}: "
            f"has the program run here (application {topo.application!r})?"
        )
    return topic, counts[topic]


def fold_changelog(topo: Topology, cfg: ProgramConfig) -> list[FoldedTask]:
    """Read a program's changelog to its end and fold it per task with the restore's apply rule."""
    topic, partitions = changelog_partitions(topo, cfg)
    committed = committed_positions(topo, cfg, partitions)
    return fold_partitions(topo.kafka, topic, cfg.name, committed)


def fold_partitions(kafka: KafkaConfig, topic: str, program: str, committed: dict[int, Position]) -> list[FoldedTask]:
    """Fold the changelog partitions ``committed`` names (each with its task's committed input
    position) from their start to their end-of-partition signal. Runs on the command's host, or
    (the Spark dump, backfill/state_dump.py, folds the records its data source reads: ``fold_records``)."""
    tasks = {p: FoldedTask(p, pos) for p, pos in committed.items()}
    rules = {p: Coverage(pos) for p, pos in committed.items()}
    reader = Consumer(clients.consumer_config(kafka, f"{program}.dump.{uuid.uuid4().hex[:8]}"))
    try:
        reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in tasks])
        remaining = set(tasks)
        deadline = time.monotonic() + READ_TIMEOUT
        while remaining:
            if time.monotonic() > deadline:
                raise TopologyError(
                    f"program {program}: the changelog {topic} did not report its end within "
                    f"{READ_TIMEOUT:.0f} s (partitions {sorted(remaining)}); is the broker busy?"
                )
            records, at_end = read_changelog(program, reader, 2000, 0.5)
            for p in sorted(remaining & set(at_end)):
                _warn_if_held(reader, topic, program, p, at_end[p])
            remaining.difference_update(at_end)
            fold_records(tasks, rules, records)
    finally:
        reader.close()
    return [tasks[p] for p in sorted(tasks)]


def _warn_if_held(reader: Any, topic: str, program: str, partition: int, end: int) -> None:
    """Say so when a transaction still open holds a partition's end back: a ``read_committed``
    reader is told it ends at the transaction's first record, and records committed after it are
    not in the dump (a worker's restore waits for that transaction instead: kafka/restore.py)."""
    high = open_transaction_end(reader, topic, partition, end)
    if high is not None:
        log.warning(
            "program %s task %d: changelog %s:%d has a transaction still open from offset %d (the partition "
            "ends at %d): the dump holds the task's state before it, without what was committed after it. "
            "Dump again once it ends (the broker aborts it after its writer's transaction.timeout.ms; a "
            "hanging one is found and aborted with Kafka's kafka-transactions.sh)",
            program,
            partition,
            topic,
            partition,
            end,
            high,
        )


def fold_records(tasks: dict[int, FoldedTask], rules: dict[int, Coverage], records: Iterable[ChangelogRecord]) -> None:
    """Fold changelog records (in offset order per partition) into their tasks, with the
    restore's apply rule; records of partitions not in ``tasks`` are ignored."""
    for p, offset, key, value, es_pos, info, gen in records:
        task = tasks.get(p)
        if task is None:
            continue
        task.end = offset + 1
        if not rules[p].covers(es_pos):
            task.skipped += 1
        elif task.fence.admits(gen):
            task.records[key] = (value, offset)
            keep_info(task.infos, key, value, info)
            task.applied += 1


def dump_rows(program: CompiledProgram, tasks: list[FoldedTask], name: str | None = None) -> Iterator[dict[str, Any]]:
    """One row per instance (and per tombstone: ``ended``), explained in program terms; ``name``
    is the program's name in the topology (the compiled program is named after its file)."""
    name = name or program.name
    terms = ProgramTerms(program)
    types = program.program.key_types
    for task in tasks:
        written_by = WrittenBy(terms, task.lookup)  # (once per task: it keeps the versions it read)
        raw_clock = task.records.get(CLOCK_KEY, (None, 0))[0]
        committed = {
            "position": task.committed,
            "changelog_end": task.end,
            "record_clock": format_time(decode_clock(raw_clock)) if raw_clock else None,
        }
        for kb in sorted(task.records):
            if not is_instance_key(kb):
                continue
            value, offset = task.records[kb]
            key = None if kb == SINGLE_KEY or types is None else orjson.loads(kb)
            if value is None:
                info = decode_info(task.infos.get(kb))
                yield {
                    "program": name,
                    "task": task.partition,
                    "key": key,
                    "status": "ended",
                    "changelog_offset": offset,
                    "instance": None,
                    "ended": ended_fields(info),
                    "last_record": last_record_fields(info),
                    "committed": committed,
                }
                continue
            info = decode_info(split_value(value, None)[1])
            instance = explain_snapshot(terms, value, written_by)
            yield {
                "program": name,
                "task": task.partition,
                "key": key,
                "status": "ended" if instance["ended"] else "present",
                "changelog_offset": offset,
                "instance": instance,
                "ended": None,
                "last_record": last_record_fields(info),
                "committed": committed,
            }


def write_rows(rows: Iterator[dict[str, Any]], output: Path | None, out: Any) -> int:
    """Write rows as JSON lines (to ``output``, or ``out``), or as Parquet for a ``.parquet``
    file: one row per instance, nested fields as JSON text. Returns the number of rows."""
    if output is not None and output.suffix == ".parquet":
        return _write_parquet(list(rows), output)
    n = 0
    handle = output.open("wb") if output is not None else None
    try:
        for row in rows:
            line = orjson.dumps(row) + b"\n"
            if handle is not None:
                handle.write(line)
            else:
                out.write(line.decode())
            n += 1
    finally:
        if handle is not None:
            handle.close()
    return n


#: The dump's columns (JSON lines and Parquet alike).
COLUMNS = ("program", "task", "key", "status", "changelog_offset", "instance", "ended", "last_record", "committed")
PARQUET_JSON_FIELDS = ("key", "instance", "ended", "last_record", "committed")


def _write_parquet(rows: list[dict[str, Any]], output: Path) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise TopologyError(
            "writing Parquet needs pyarrow: pip install 'eventscript[backfill]', or write --output FILE.jsonl"
        ) from None
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for row in rows:
        for name, values in columns.items():
            v = row[name]
            values.append(orjson.dumps(v).decode() if name in PARQUET_JSON_FIELDS and v is not None else v)
    schema = pa.schema(
        [
            ("program", pa.string()),
            ("task", pa.int32()),
            ("key", pa.string()),
            ("status", pa.string()),
            ("changelog_offset", pa.int64()),
            ("instance", pa.string()),
            ("ended", pa.string()),
            ("last_record", pa.string()),
            ("committed", pa.string()),
        ]
    )
    pq.write_table(pa.table(columns, schema=schema), output)
    return len(rows)
