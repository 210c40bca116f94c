"""The task manager's answers to two librdkafka stalls seen after broker outages (on Apache Kafka
in tests/kafka/test_outages.py, where they show only now and then): here with stand-in clients, so
that each is shown every time.

- librdkafka issue 5586: its own query of a newly assigned partition's committed offset, answered
  NOT_COORDINATOR for the whole request, leaves the partition unfetched for good. A restored task
  therefore assigns its inputs again at the committed offsets its restore read.
- The group coordinator's connection stays broken: every read of the committed offsets fails. After
  ``COORDINATOR_STALL`` seconds the member ends (a new consumer joins) instead of waiting forever.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from eventscript.automata.compile import compile_source
from eventscript.kafka import task_manager as task_manager_mod
from eventscript.kafka.config import InputConfig
from eventscript.kafka.task_manager import TaskManager
from eventscript.kafka.worker_errors import MemberEnded
from eventscript.topology.progress import ProgressPlan

from .task_helpers import program_config

PROGRAM = """
in {string k;} Tick group(Tick.k)
out {string k;} Seen
( Tick() { !>Seen({k: group[0]}); } )*
"""
REP = "p-rep"
#: The producer side: nothing is produced in these tests.
SENDERS = (lambda *a, **k: None, lambda *a, **k: None)


class Member:
    """The group member's consumer: records what the task manager asks of it."""

    def __init__(
        self, committed: dict[tuple[str, int], int] | None = None, failing: bool = False, started: bool = True
    ) -> None:
        self.offsets = committed or {}
        self.failing = failing
        #: False: librdkafka never started the partitions (its offset query stuck, issue 5586).
        self.started = started
        self.calls: list[tuple[str, list[tuple[str, int, int]]]] = []

    def _log(self, what: str, tps: list[TopicPartition]) -> None:
        self.calls.append((what, [(tp.topic, tp.partition, tp.offset) for tp in tps]))

    def incremental_assign(self, tps: list[TopicPartition]) -> None:
        self._log("assign", tps)

    def incremental_unassign(self, tps: list[TopicPartition]) -> None:
        self._log("unassign", tps)

    def seek(self, tp: TopicPartition) -> None:
        if not self.started:
            raise KafkaException(KafkaError(KafkaError._STATE, "Partition not being fetched"))
        self._log("seek", [tp])

    def pause(self, tps: list[TopicPartition]) -> None:
        self._log("pause", tps)

    def resume(self, tps: list[TopicPartition]) -> None:
        self._log("resume", tps)

    def committed(self, tps: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        if self.failing:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed while waiting for controller"))
        return [TopicPartition(tp.topic, tp.partition, self.offsets.get((tp.topic, tp.partition), -1001)) for tp in tps]


class _Eof:
    def __init__(self, partition: int) -> None:
        self._partition = partition

    def error(self) -> KafkaError:
        return KafkaError(KafkaError._PARTITION_EOF)

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return 0  # (the changelog is empty)


class Restorer:
    """The changelog reader: an empty changelog, at its end at once."""

    def __init__(self) -> None:
        self.assigned: list[int] = []

    def assign(self, tps: list[TopicPartition]) -> None:
        self.assigned = [tp.partition for tp in tps]

    def unassign(self) -> None:
        self.assigned = []

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        eofs, self.assigned = [_Eof(p) for p in self.assigned], []
        return eofs

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float, cached: bool) -> tuple[int, int]:
        return 0, 0


def _manager(tmp_path: Path, member: Member) -> TaskManager:
    cfg = program_config([InputConfig(topic="in", event="Tick")])
    program = compile_source(PROGRAM, name="p").require()
    manager = TaskManager(cfg, program, 1, REP, "p-changelog", tmp_path / "state", ProgressPlan("p", 1))
    manager.open(Restorer(), None, lambda: member)  # type: ignore[arg-type]
    return manager


def _restore(manager: TaskManager, member: Member) -> None:
    manager.assign(member, [TopicPartition(REP, 0)], SENDERS)  # type: ignore[arg-type]
    for _ in range(20):
        manager.restore_pending(member)  # type: ignore[arg-type]
        if manager.ready:
            return
    raise AssertionError("the task was not restored")


def test_inputs_librdkafka_never_started_are_assigned_again_at_the_committed_offsets(tmp_path: Path) -> None:
    member = Member({("in", 0): 42}, started=False)  # the repartition partition has no committed offset
    manager = _manager(tmp_path, member)
    _restore(manager, member)
    assigned = [tps for what, tps in member.calls if what == "assign"]
    # First as the rebalance gives them (librdkafka would query the offsets), then at the offsets.
    assert sorted(assigned[-1]) == sorted([("in", 0, 42), (REP, 0, OFFSET_BEGINNING)])
    assert member.calls[-1][0] == "resume"
    assert {(t, p) for t, p, _ in member.calls[-1][1]} == {("in", 0), (REP, 0)}


def test_started_inputs_are_moved_by_a_seek_without_a_new_assignment(tmp_path: Path) -> None:
    member = Member({("in", 0): 42})
    manager = _manager(tmp_path, member)
    _restore(manager, member)
    assert len([c for c in member.calls if c[0] == "assign"]) == 1  # the rebalance's only
    seeks = sorted(tps[0] for what, tps in member.calls if what == "seek")
    assert seeks == sorted([("in", 0, 42), (REP, 0, OFFSET_BEGINNING)])


def test_a_coordinator_that_never_answers_ends_the_member(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(task_manager_mod, "COORDINATOR_STALL", 0.2)
    monkeypatch.setattr(task_manager_mod, "RESTORE_RETRY", 0.0)
    member = Member(failing=True)
    manager = _manager(tmp_path, member)
    manager.assign(member, [TopicPartition(REP, 0)], SENDERS)  # type: ignore[arg-type]
    manager.restore_pending(member)  # type: ignore[arg-type]  # fails, retried on the next turn
    assert not manager.ready
    time.sleep(0.3)
    with pytest.raises(MemberEnded) as ended:
        manager.restore_pending(member)  # type: ignore[arg-type]
    assert ended.value.consumer_failed
    assert "could not be read for" in str(ended.value)


def test_a_coordinator_that_answers_again_in_time_ends_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(task_manager_mod, "COORDINATOR_STALL", 0.2)
    monkeypatch.setattr(task_manager_mod, "RESTORE_RETRY", 0.0)
    member = Member(failing=True)
    manager = _manager(tmp_path, member)
    manager.assign(member, [TopicPartition(REP, 0)], SENDERS)  # type: ignore[arg-type]
    manager.restore_pending(member)  # type: ignore[arg-type]
    member.failing = False
    _restore(manager, member)
    assert manager.ready
