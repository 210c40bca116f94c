"""A local store of a changelog that was recreated (issue 20 fault 5): a partition-count fix, a
forced hand-over, a new broker (the README's `eventscript dev ... --show` run twice with the same
state_dir). The store belongs to the old log. The restore and the standby wipe the store, replay
the new changelog from its start and say so in the log.

Two ways to see it: the store's checkpoint is beyond the new log's end (on db30bd4 they sought to
the old checkpoint and mixed the old instances with the new log's, or hung); or the new log is
already longer than the old checkpoint, which only the changelog topic's id (kept with the store's
checkpoint) tells apart -- on 6353945 the restore read the new log from the old checkpoint on top of
the old instances."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_helpers import Broker, counts_by_key, program_entry, run_in_thread, topology, unique

from eventscript.automata.compile import compile_source
from eventscript.kafka import clients
from eventscript.kafka.admin import Admin
from eventscript.kafka.config import load_topology
from eventscript.kafka.restore import Restoration, start_offset
from eventscript.kafka.standby import Standbys
from eventscript.kafka.topic_ids import topic_id
from eventscript.state.store import TaskStore
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig, KafkaConfig, ProgramConfig

PROGRAM = "in {string k;} Hit group(Hit.k)  out long N  ( Hit() { !>N(1); } )*"
#: The old log's checkpoint, far beyond the new log's end.
OLD_CHECKPOINT = 1000
NEW_RECORDS = {b"new-1": b"one", b"new-2": b"two"}


#: A new log longer than the old checkpoint (OLD_CHECKPOINT records of filler, then NEW_RECORDS).
LONG_FILLER = OLD_CHECKPOINT + 5


def _new_changelog(broker: Broker, filler: int = 0) -> str:
    """A changelog topic just made, holding ``filler`` records of one key, then NEW_RECORDS."""
    topic = unique("recreated-changelog")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for fut in admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})]).values():
        fut.result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(filler):
        producer.produce(topic, str(i).encode(), b"filler", 0)
    for k, v in NEW_RECORDS.items():
        producer.produce(topic, v, k, 0)
    assert producer.flush(30) == 0
    return topic


def _old_store(path: Path, changelog_id: str | None = None) -> None:
    """A store of the old log at OLD_CHECKPOINT (of the changelog whose topic id was ``changelog_id``)."""
    store = TaskStore(path)
    store.write({b"old-instance": b"from the old log"}, OLD_CHECKPOINT, {"in:0": 7})
    if changelog_id is not None:
        store.keep_changelog_id(changelog_id)
    store.close()


def _reader(broker: Broker, group: str) -> Consumer:
    return Consumer(clients.consumer_config(KafkaConfig(bootstrap_servers=broker.bootstrap), group))


def _restored(broker: Broker, path: Path, topic: str, changelog_id: str | None = None) -> tuple[Task, Restoration]:
    """A task of PROGRAM on the store at ``path``, restored from changelog ``topic`` (of topic id
    ``changelog_id``) as the worker restores, a slice at a time, to the changelog's end. Returns the
    task (open: the caller closes it) and the finished restoration."""
    cfg = ProgramConfig(
        name="p", source="p.es", inputs=[InputConfig(topic="in", event="Hit")], outputs={"default": "out"}
    )
    task = Task(0, compile_source(PROGRAM, name="p").require(), cfg, cfg.inputs, "p-rep", topic, 1, path)
    restorer = _reader(broker, unique("restore"))
    try:
        restoration = Restoration("p", restorer, topic, {0: task}, {0: {"in:0": 0}}, changelog_id)
        restoration.begin()
        deadline = time.monotonic() + 60
        while not restoration.done:
            assert time.monotonic() < deadline, "the restore did not reach the changelog's end"
            restoration.step(0.5)
        restoration.finish()
    finally:
        restorer.close()
    return task, restoration


def _standby_at(standbys: Standbys, checkpoint: int) -> TaskStore:
    """Task 0's standby store once ``standbys`` has read its changelog up to ``checkpoint``."""
    standbys.retarget({0})
    store = standbys.tasks[0].store
    deadline = time.monotonic() + 60
    while store.checkpoint != checkpoint:
        assert time.monotonic() < deadline, f"the standby is at {store.checkpoint}, not at the changelog's end"
        standbys.step()
        time.sleep(0.05)
    return store


@pytest.mark.kafka
def test_a_restore_wipes_a_store_beyond_the_changelog_end_and_replays_from_the_start(
    broker: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    topic = _new_changelog(broker)
    _old_store(tmp_path / "task-0")
    caplog.set_level(logging.WARNING, "eventscript.kafka.worker")
    task, _ = _restored(broker, tmp_path / "task-0", topic)
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
        store = _standby_at(standbys, len(NEW_RECORDS))
        assert store.get(b"old-instance") is None, "the old log's instance was kept"
        assert {k: store.get(k) for k in NEW_RECORDS} == NEW_RECORDS
    finally:
        standbys.close()
    assert any("beyond the end of changelog" in r.getMessage() for r in caplog.records)


def _kept_id_store(path: Path, broker: Broker, topic: str) -> str:
    """The old log: ``topic`` made, its id kept by a store at OLD_CHECKPOINT, then the topic deleted
    (what a recreation does first). Returns the old id."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for fut in admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})]).values():
        fut.result(30)
    old_id = _id_once_known(admin, topic)
    assert old_id is not None, "the broker gives no topic ids"
    _old_store(path, old_id)
    for fut in admin.delete_topics([topic]).values():
        fut.result(30)
    _wait_gone(admin, [topic])
    return old_id


def _id_once_known(admin: AdminClient, topic: str) -> str | None:
    """The id of a topic just created: the broker asked may not know it for a moment
    (UNKNOWN_TOPIC_OR_PART, seen under load)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return topic_id(admin, topic)
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _wait_gone(admin: AdminClient, topics: list[str]) -> None:
    deadline = time.monotonic() + 60
    while set(admin.list_topics(timeout=10).topics) & set(topics):
        assert time.monotonic() < deadline, f"topics {topics} still there 60 s after their deletion"
        time.sleep(0.2)


def _recreated_longer(broker: Broker, topic: str) -> None:
    """``topic`` made again (it may take the broker a moment to forget the deleted one), holding a
    log longer than OLD_CHECKPOINT."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    deadline = time.monotonic() + 60
    while True:
        fut = admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[topic]
        try:
            fut.result(30)
            break
        except KafkaException as exc:
            assert time.monotonic() < deadline, f"{topic} could not be made again: {exc}"
            time.sleep(0.5)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(LONG_FILLER):
        producer.produce(topic, str(i).encode(), b"filler", 0)
    for k, v in NEW_RECORDS.items():
        producer.produce(topic, v, k, 0)
    assert producer.flush(30) == 0


def _recreated_over_a_kept_store(broker: Broker, path: Path) -> tuple[str, str]:
    """A changelog deleted and made again, longer than OLD_CHECKPOINT, and a store at ``path``
    kept from the deleted one (with its topic id). Returns the topic and the deleted one's id."""
    topic = unique("recreated-changelog")
    old_id = _kept_id_store(path, broker, topic)
    _recreated_longer(broker, topic)
    return topic, old_id


@pytest.mark.kafka
def test_a_restore_wipes_a_store_of_a_recreated_changelog_longer_than_its_checkpoint(
    broker: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broker.require_real("deleting and making a topic again")
    topic, old_id = _recreated_over_a_kept_store(broker, tmp_path / "task-0")
    new_id = topic_id(AdminClient({"bootstrap.servers": broker.bootstrap}), topic)
    assert new_id is not None and new_id != old_id
    caplog.set_level(logging.WARNING, "eventscript.kafka.worker")
    task, restoration = _restored(broker, tmp_path / "task-0", topic, new_id)
    assert restoration.starts == {0: 0}, "the restore did not start from the new log's beginning"
    assert task.store.get(b"old-instance") is None, "the old log's instance was kept"
    assert {k: task.store.get(k) for k in NEW_RECORDS} == NEW_RECORDS
    assert task.store.checkpoint == LONG_FILLER + len(NEW_RECORDS)
    assert task.store.changelog_id == new_id
    assert any(
        old_id in r.getMessage() and new_id in r.getMessage() and "wiped" in r.getMessage() for r in caplog.records
    )
    task.close()


@pytest.mark.kafka
def test_a_standby_wipes_a_store_of_a_recreated_changelog_longer_than_its_checkpoint(
    broker: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broker.require_real("deleting and making a topic again")
    topic, old_id = _recreated_over_a_kept_store(broker, tmp_path / "task-0")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    reader = _reader(broker, unique("standby"))
    caplog.set_level(logging.WARNING, "eventscript.kafka.worker")
    standbys = Standbys(
        "p",
        topic,
        ["in"],
        tmp_path,
        reader,
        lambda tps: [TopicPartition(tp.topic, tp.partition, 100) for tp in tps],
        lambda: topic_id(admin, topic),
    )
    try:
        store = _standby_at(standbys, LONG_FILLER + len(NEW_RECORDS))
        assert store.get(b"old-instance") is None, "the old log's instance was kept"
        assert {k: store.get(k) for k in NEW_RECORDS} == NEW_RECORDS
    finally:
        standbys.close()
    assert any(old_id in r.getMessage() and "wiped" in r.getMessage() for r in caplog.records)


@pytest.mark.kafka
def test_a_store_of_the_same_changelog_is_kept(broker: Broker, tmp_path: Path) -> None:
    """The id check wipes nothing when the changelog is the one the store was written from."""
    topic = _new_changelog(broker, filler=LONG_FILLER)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    same = topic_id(admin, topic)
    _old_store(tmp_path / "task-0", same)
    store = TaskStore(tmp_path / "task-0")
    restorer = _reader(broker, unique("restore"))
    try:
        assert start_offset("p", restorer, topic, 0, store, "restore", same) == OLD_CHECKPOINT
    finally:
        restorer.close()
    assert store.get(b"old-instance") == b"from the old log"
    store.close()


COUNTER = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""


def _send(broker: Broker, topic: str, keys: list[str]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for k in keys:
        producer.produce(topic, orjson.dumps({"k": k}), k.encode(), 0, timestamp=1_767_225_600_000)
    assert producer.flush(30) == 0


@pytest.mark.kafka
def test_a_worker_with_the_store_of_a_recreated_changelog_counts_from_the_new_log(
    broker: Broker, tmp_path: Path
) -> None:
    """The worker's own path: its store (state "old") was written from a changelog since deleted
    with every topic of the application (a new cluster, or a reset run on another machine); another
    machine (state "other") ran on the new topics until the new changelog was longer than the old
    store's checkpoint; then the task comes back to the machine with the old store. Its counts must
    continue the new log's, not the old store's."""
    broker.require_real("deleting and making topics again")
    name = unique("recreated")
    (tmp_path / "p.es").write_text(COUNTER)
    program = program_entry(name, "Hit", clock="record")
    common = {"application": name, "topics": {f"{name}-in": {"partitions": 1}}}
    old = topology(broker, tmp_path, [program], file="old.yaml", state="old", **common)  # type: ignore[arg-type]
    other = topology(broker, tmp_path, [program], file="other.yaml", state="other", **common)  # type: ignore[arg-type]
    t = load_topology(old)
    Admin(t).prepare(t.programs)
    _send(broker, f"{name}-in", ["a", "a", "a"])
    assert run_in_thread(old, until_idle=1.0) == 0
    checkpoint = TaskStore(tmp_path / "old" / name / "task-0").checkpoint
    assert checkpoint > 0

    cfg = t.programs[0]
    topics = [f"{name}-in", f"{name}-out", t.changelog_topic(cfg), t.repartition_topic(cfg), cfg.error_topic]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    present = set(admin.list_topics(timeout=10).topics)
    for fut in admin.delete_topics([x for x in topics if x in present]).values():
        fut.result(30)
    # (the group's offsets of the deleted topics go with them; its static members stay a while)
    _wait_gone(admin, topics)
    deadline = time.monotonic() + 60
    while True:
        try:
            Admin(t).prepare(t.programs)
            break
        except Exception as exc:  # the broker may take a moment to forget the deleted topics
            assert time.monotonic() < deadline, f"the topics could not be made again: {exc}"
            time.sleep(0.5)

    _send(broker, f"{name}-in", ["a"])  # a's new snapshot: early in the new log
    assert run_in_thread(other, until_idle=1.0) == 0
    _send(broker, f"{name}-in", [f"z{i}" for i in range(checkpoint + 20)])
    assert run_in_thread(other, until_idle=1.0) == 0
    ends = _reader(broker, unique("ends"))
    try:
        _, end = ends.get_watermark_offsets(TopicPartition(t.changelog_topic(cfg), 0), 10)
    finally:
        ends.close()
    assert end > checkpoint, "the new changelog must be longer than the old store's checkpoint"

    _send(broker, f"{name}-in", ["a"])
    assert run_in_thread(old, until_idle=1.0) == 0
    assert counts_by_key(broker, f"{name}-out")["a"] == [1, 2], (
        "the old store's count of a was carried into the new log"
    )
