"""The hand-over against live workers and against its own failed attempts (issue 20 fault 3),
without Spark: ``handover.write`` and ``handover.check`` driven directly on the session's broker.

- A worker started while the hand-over's transaction is open gets no task until it commits: the
  hand-over holds the program's consumer group (on db30bd4 the worker took the tasks, read from
  the earliest with nothing restored, and the hand-over then overwrote its offsets).
- A hand-over whose attempt was aborted can be made again (on db30bd4 the aborted records made
  the changelog count as "not empty").
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from kafka_helpers import Broker, wait_for
from test_kafka_sink import program_topology

from eventscript.backfill import handover as ho
from eventscript.backfill.kafka_sink import Transaction, transactional_id
from eventscript.kafka.supervisor import TopologyRunner

T0 = 1_767_225_600_000  # ms


def _target(topo: Any) -> ho.HandoverTarget:
    cfg = topo.programs[0]
    return ho.HandoverTarget(
        topo.group_id(cfg), topo.changelog_topic(cfg), repartition_topic=topo.repartition_topic(cfg)
    )


@pytest.mark.kafka
def test_a_handover_whose_attempt_aborted_can_be_made_again(broker: Broker, tmp_path: Path) -> None:
    broker.require_real("transactions and read_committed")
    _, topo = program_topology(broker, tmp_path)
    target = _target(topo)
    txn = Transaction(topo.kafka, transactional_id(topo, topo.programs[0]))
    txn.produce([(target.changelog_topic, 0, b"k", b"an aborted attempt's state", None, T0)])
    assert txn.producer.flush(30) == 0  # on the broker, not only queued: the abort then writes its marker
    txn.abort()
    ho.check(topo, target, force=False)  # raised "not empty" on db30bd4

    txn = Transaction(topo.kafka, transactional_id(topo, topo.programs[0]))
    txn.produce([(target.changelog_topic, 1, b"k", b"committed state", None, T0)])
    txn.commit()
    with pytest.raises(ho.HandoverError, match=r"is not empty \(partitions 1\)"):
        ho.check(topo, target, force=False)


class _StateStartingAWorker:
    """Hand-over state whose records start a worker of the program first, as if one were started
    while the transaction is open, and note whether it got tasks before the commit."""

    def __init__(self, path: Path, caplog: pytest.LogCaptureFixture) -> None:
        self.path = path
        self.caplog = caplog
        self.runner: TopologyRunner | None = None
        self.thread: threading.Thread | None = None
        self.tasks_before_commit: set[int] = set()

    def refused(self) -> bool:
        return any(
            "INCONSISTENT_GROUP_PROTOCOL" in r.getMessage() or "inconsistent group protocol" in r.getMessage().lower()
            for r in self.caplog.records
        )

    def records(self) -> Any:
        from eventscript.kafka.config import load_topology

        self.runner = TopologyRunner(load_topology(self.path))
        self.runner.prepare()
        self.thread = threading.Thread(
            target=lambda: self.runner and self.runner.run(install_signals=False), daemon=True
        )
        self.thread.start()
        worker = self.runner.workers[0]
        wait_for(lambda: worker.tasks or self.refused(), 90, what="the worker joining or being refused")
        self.tasks_before_commit = set(worker.tasks)
        yield (worker.changelog_topic, 0, b"k", b"handed-over state", None, T0)


@pytest.mark.kafka
def test_a_worker_started_during_a_handover_gets_no_task_until_it_commits(
    broker: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broker.require_real("consumer groups as Apache Kafka runs them")
    caplog.set_level(logging.WARNING)
    path, topo = program_topology(broker, tmp_path)
    cfg = topo.programs[0]
    target = _target(topo)
    target.offsets = [TopicPartition(i.topic, p, 0) for i in cfg.inputs for p in range(2)] + [
        TopicPartition(target.repartition_topic, p, 0) for p in range(2)
    ]
    state = _StateStartingAWorker(path, caplog)
    txn = Transaction(topo.kafka, transactional_id(topo, cfg))
    try:
        ho.write(txn, topo, target, state, force=False)  # type: ignore[arg-type]
        assert state.tasks_before_commit == set(), "a worker took tasks while the hand-over was open"
        assert state.runner is not None
        worker = state.runner.workers[0]
        wait_for(
            lambda: len(worker.tasks) == 2 and not worker.restore_queue,
            120,
            what="the worker taking its tasks after the hand-over",
        )
        assert worker.tasks[0].store.get(b"k") == b"handed-over state", "the worker did not restore the hand-over"
    finally:
        if state.runner is not None:
            state.runner.stop()
        if state.thread is not None:
            state.thread.join(60)
