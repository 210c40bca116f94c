"""A local store whose checkpoint is beyond its changelog's end (issue 20 fault 5): the changelog
was recreated (a partition-count fix, a forced hand-over, a new broker: the README's `eventscript
dev ... --show` run twice with the same state_dir) and the store belongs to the old log. The
restore and the standby wipe the store, replay the new changelog from its start and say so in
the log; on db30bd4 they sought to the old checkpoint and mixed the old instances with the new
log's (or hung)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_helpers import Broker, unique

from eventscript.automata.compile import compile_source
from eventscript.kafka import clients
from eventscript.kafka.restore import Restoration
from eventscript.kafka.standby import Standbys
from eventscript.state.store import TaskStore
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig, KafkaConfig, ProgramConfig

PROGRAM = "in {string k;} Hit group(Hit.k)  out long N  ( Hit() { !>N(1); } )*"
#: The old log's checkpoint, far beyond the new log's end.
OLD_CHECKPOINT = 1000
NEW_RECORDS = {b"new-1": b"one", b"new-2": b"two"}


def _new_changelog(broker: Broker) -> str:
    """A changelog topic just made, holding NEW_RECORDS."""
    topic = unique("recreated-changelog")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for fut in admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})]).values():
        fut.result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for k, v in NEW_RECORDS.items():
        producer.produce(topic, v, k, 0)
    assert producer.flush(30) == 0
    return topic


def _old_store(path: Path) -> None:
    store = TaskStore(path)
    store.write({b"old-instance": b"from the old log"}, OLD_CHECKPOINT, {"in:0": 7})
    store.close()


def _reader(broker: Broker, group: str) -> Consumer:
    return Consumer(clients.consumer_config(KafkaConfig(bootstrap_servers=broker.bootstrap), group))


@pytest.mark.kafka
def test_a_restore_wipes_a_store_beyond_the_changelog_end_and_replays_from_the_start(
    broker: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    topic = _new_changelog(broker)
    _old_store(tmp_path / "task-0")
    cfg = ProgramConfig(
        name="p", source="p.es", inputs=[InputConfig(topic="in", event="Hit")], outputs={"default": "out"}
    )
    task = Task(0, compile_source(PROGRAM, name="p").require(), cfg, cfg.inputs, "p-rep", topic, 1, tmp_path / "task-0")
    restorer = _reader(broker, unique("restore"))
    caplog.set_level(logging.WARNING, "eventscript.kafka.worker")
    try:
        restoration = Restoration("p", restorer, topic, {0: task}, {0: {"in:0": 0}})
        restoration.begin()
        deadline = time.monotonic() + 60
        while not restoration.done:
            assert time.monotonic() < deadline, "the restore did not reach the changelog's end"
            restoration.step(0.5)
        restoration.finish()
    finally:
        restorer.close()
    assert task.store.get(b"old-instance") is None, "the old log's instance was kept"
    assert {k: task.store.get(k) for k in NEW_RECORDS} == NEW_RECORDS
    assert task.store.checkpoint == len(NEW_RECORDS)
    assert any("beyond the end of changelog" in r.getMessage() and "wiped" in r.getMessage() for r in caplog.records)
    task.close()


@pytest.mark.kafka
def test_a_standby_wipes_a_store_beyond_the_changelog_end_and_reads_from_the_start(
    broker: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    topic = _new_changelog(broker)
    _old_store(tmp_path / "task-0")
    reader = _reader(broker, unique("standby"))
    caplog.set_level(logging.WARNING, "eventscript.kafka.worker")
    standbys = Standbys(
        "p", topic, ["in"], tmp_path, reader, lambda tps: [TopicPartition(tp.topic, tp.partition, 100) for tp in tps]
    )
    try:
        standbys.retarget({0})
        store = standbys.tasks[0].store
        deadline = time.monotonic() + 60
        while store.checkpoint != len(NEW_RECORDS):
            assert time.monotonic() < deadline, f"the standby is at {store.checkpoint}, not at the changelog's end"
            standbys.step()
            time.sleep(0.05)
        assert store.get(b"old-instance") is None, "the old log's instance was kept"
        assert {k: store.get(k) for k in NEW_RECORDS} == NEW_RECORDS
    finally:
        standbys.close()
    assert any("beyond the end of changelog" in r.getMessage() for r in caplog.records)
