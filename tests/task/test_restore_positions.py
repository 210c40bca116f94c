"""A restored task reads its inputs from the offsets its state was restored to (the fault harness's
exactly_once-record failure of 2026-11-26), through the worker's real ``TaskManager``, ``Task`` and
restore over an in-memory changelog, with a stand-in for the group member's consumer.

The restore reads the group's committed offsets and replays the changelog up to them. The
consumer's own position of a partition just assigned is what librdkafka fetched at the
assignment; when that fetch failed (the broker leading the group was down) it is the earliest
record (``auto.offset.reset``). Resuming there processed every record again on top of the restored
state: outputs repeated, under exactly-once, with other counts (``Count{count: 37}`` where the first
copy said 1). A committed offset answered with an error must not read as "none committed" either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from count_programs import COUNT_QUIET
from eventscript.automata.compile import compile_source
from eventscript.kafka import task_manager
from eventscript.kafka.task_manager import TaskManager
from eventscript.task.collector import OutRecord
from eventscript.topology.config import InputConfig
from eventscript.topology.progress import ProgressPlan

from .task_helpers import T0, build_task, program_config, tick
from .test_uncommitted_batches import CHANGELOG, ChangelogPartition

REPARTITION = "p-rep"


class Changelog(ChangelogPartition):
    """The in-memory changelog partition, with its end (read to check a local store against it)."""

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float, cached: bool) -> tuple[int, int]:
        return 0, len(self.records)


@dataclass
class Committed:
    """A committed offset as ``Consumer.committed`` answers it (its ``error`` can be set here)."""

    topic: str
    partition: int
    offset: int
    error: KafkaError | None = None


class GroupMember:
    """The group member's consumer as the task manager uses it. ``fallback``: where librdkafka
    starts a partition just assigned when its own fetch of the committed offset failed. The
    group's committed offsets are ``committed``; ``failing`` partitions answer with an error."""

    def __init__(self, records: list[Any], committed: dict[tuple[str, int], int], fallback: int = 0) -> None:
        self.records = records
        self.committed_offsets = committed
        self.fallback = fallback
        self.failing: set[tuple[str, int]] = set()
        self.position: dict[tuple[str, int], int] = {}
        self.paused: set[tuple[str, int]] = set()

    def incremental_assign(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self.position[(tp.topic, tp.partition)] = self.fallback

    def pause(self, tps: list[TopicPartition]) -> None:
        self.paused.update((tp.topic, tp.partition) for tp in tps)

    def resume(self, tps: list[TopicPartition]) -> None:
        self.paused.difference_update((tp.topic, tp.partition) for tp in tps)

    def committed(self, tps: list[TopicPartition], timeout: float) -> list[Committed]:
        out = []
        for tp in tps:
            where = (tp.topic, tp.partition)
            if where in self.failing:
                out.append(
                    Committed(tp.topic, tp.partition, -1001, KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS))
                )
            else:
                out.append(Committed(tp.topic, tp.partition, self.committed_offsets.get(where, -1001)))
        return out

    def seek(self, tp: TopicPartition) -> None:
        self.position[(tp.topic, tp.partition)] = 0 if tp.offset == OFFSET_BEGINNING else tp.offset

    def fetch(self) -> list[Any]:
        """The input records a poll would return now (every one from the position on)."""
        if ("in", 0) in self.paused:
            return []
        at = self.position[("in", 0)]
        self.position[("in", 0)] = len(self.records)
        return self.records[at:]


def first_owner(store: Path, log: ChangelogPartition, records: list[Any]) -> None:
    """The task's first owner processes ``records`` and commits: their changelog records are in
    ``log``, and its local store goes with it (the next owner has none)."""
    task = build_task(compile_source(COUNT_QUIET, name="p").require(), config(), store, changelog=CHANGELOG)
    task.load_from_store()
    for r in records:
        task.add(r)
    task.process(0)
    task.changelog_records()
    for r in task.take_outputs():
        if r.topic == CHANGELOG:
            log.append(r.key, r.value, r.headers)
    task.close()


def config(guarantee: str = "exactly_once") -> Any:
    return program_config([InputConfig(topic="in", event="Tick")]).model_copy(update={"guarantee": guarantee})


def next_owner(
    state: Path, log: ChangelogPartition, member: GroupMember, guarantee: str = "exactly_once"
) -> tuple[TaskManager, list[OutRecord]]:
    """A worker assigned task 0 (no local store): its task manager over ``log`` and ``member``,
    and where its outputs go."""
    sent: list[OutRecord] = []

    def send(topic: str, partition: int, key: Any, value: Any, headers: Any, ts: int, changelog: bool) -> None:
        sent.append(OutRecord(topic, partition, key, value, headers, ts, changelog))

    cfg = config(guarantee)
    manager = TaskManager(
        cfg, compile_source(COUNT_QUIET, name="p").require(), 1, REPARTITION, CHANGELOG, state, ProgressPlan("p", 1)
    )
    manager.open(log, None, lambda: member)  # type: ignore[arg-type]
    manager.assign(member, [TopicPartition(REPARTITION, 0)], (send, None))  # type: ignore[arg-type]
    return manager, sent


def run_turns(manager: TaskManager, member: GroupMember, turns: int = 5) -> None:
    """The worker's loop, as far as restores and processing go."""
    for _ in range(turns):
        task = manager.tasks[0]
        for r in member.fetch():
            task.add(r)
        manager.restore_pending(member)  # type: ignore[arg-type]
        task.process(0)


def counts(sent: list[OutRecord]) -> list[tuple[int, int]]:
    """(input offset, count) of each Count output."""
    values = [orjson.loads(r.value) for r in sent if r.topic == "out" and r.value is not None]
    return [(v["last"], v["count"]) for v in values if "last" in v]


def test_a_restored_task_reads_its_inputs_from_the_offsets_it_was_restored_to(tmp_path: Path) -> None:
    records = [tick(i, T0 + i * 1000, "k") for i in range(8)]
    log = Changelog()
    first_owner(tmp_path / "first", log, records[:5])  # committed: in:0 at 5, k's count 5
    member = GroupMember(records, {("in", 0): 5}, fallback=0)
    manager, sent = next_owner(tmp_path / "next", log, member)
    run_turns(manager, member)
    assert manager.ready
    assert member.position[("in", 0)] == len(records)
    assert counts(sent) == [(5, 6), (6, 7), (7, 8)]  # neither records 0-4 again nor a count from 1


def test_a_committed_offset_answered_with_an_error_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_manager, "RESTORE_RETRY", 0.0)  # (the turns below follow each other at once)
    records = [tick(i, T0 + i * 1000, "k") for i in range(8)]
    log = Changelog()
    first_owner(tmp_path / "first", log, records[:5])
    member = GroupMember(records, {("in", 0): 5}, fallback=5)
    member.failing.add(("in", 0))  # the group coordinator is loading after a broker outage
    manager, sent = next_owner(tmp_path / "next", log, member)
    run_turns(manager, member)
    assert not manager.ready and manager.restore_queue == [0] and sent == []
    member.failing.clear()
    run_turns(manager, member)
    assert manager.ready
    assert counts(sent) == [(5, 6), (6, 7), (7, 8)]  # k's state up to record 4 was restored
