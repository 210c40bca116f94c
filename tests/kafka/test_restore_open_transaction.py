"""A restore reads past a transaction another worker left open (the fault harness's exactly-once
failure of 2026-11-26, 1 run in 7, first suspected to be two workers committing one task; found
in its records and brokers' logs).

A worker that hung or was killed while committing (a broker outage, a frozen process) leaves its
transaction open until the broker aborts it, up to ``transaction.timeout.ms`` (60 s) later. A
``read_committed`` reader is told that the partition ends at the first record of that transaction
(the last stable offset), and records committed after it by the task's next owner stay unreadable
until it ends. A restore that stopped there gave the task a state older than the committed offsets
it resumed from: in the harness, every overdue timer fired a second time (outputs twice under
exactly-once, with other counts) and the keys started over at 1.

Here, on Apache Kafka: a zombie's transaction holds one changelog record, open; the task's next
owner commits another after it; the restore must not end before the zombie's transaction does,
and must then have the next owner's record, not the zombie's.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import NewTopic
from kafka_helpers import Broker, create_topics, unique, wait_for
from task_builder import stored_task

from eventscript.kafka import clients, restore
from eventscript.kafka.config import KafkaConfig

PROGRAM = """
in {string k;} Tick group(Tick.k)
out {string k;} Seen
( Tick() { !>Seen({k: group[0]}); } )*
"""

#: How long the restore is given to show it does not end while the zombie's transaction is open.
HELD_FOR = 3.0


def _transactional(kafka: KafkaConfig, txid: str) -> Producer:
    producer = Producer(clients.producer_config(kafka, txid))
    producer.init_transactions(30)
    return producer


def _commit_one(producer: Producer, topic: str, key: bytes) -> None:
    producer.begin_transaction()
    producer.produce(topic, key=key, value=b"snapshot", partition=0)
    producer.commit_transaction(30)


def _open_transaction_between(broker: Broker, kafka: KafkaConfig, name: str) -> tuple[str, Producer, Producer]:
    """A changelog whose owner committed b"before", then a zombie's transaction left open with one
    record, then the task's next owner committed b"after". Returns it, the owner and the zombie."""
    changelog = unique(name)
    create_topics(broker, [NewTopic(changelog, num_partitions=1, replication_factor=1)])
    owner = _transactional(kafka, unique("owner"))
    zombie = _transactional(kafka, unique("zombie"))
    _commit_one(owner, changelog, b"before")
    zombie.begin_transaction()  # the zombie's commit never ends: it hangs with one record written
    zombie.produce(changelog, key=b"zombie", value=b"snapshot", partition=0)
    assert zombie.flush(30) == 0
    _commit_one(owner, changelog, b"after")  # the task's next owner commits after it
    return changelog, owner, zombie


@pytest.mark.kafka
def test_restore_waits_for_a_transaction_left_open_and_reads_what_was_committed_after_it(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broker.require_real("a transaction left open holding back the last stable offset")
    monkeypatch.setattr(restore, "HELD_WARNING_INTERVAL", 1.0)  # (a minute in a worker)
    caplog.set_level(logging.WARNING, logger="eventscript.kafka.worker")
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
    changelog, _owner, zombie = _open_transaction_between(broker, kafka, "open-txn-changelog")

    reader = clients.consumer_config(kafka, unique("restorer"), **{"partition.assignment.strategy": "range"})
    restorer = Consumer(reader)
    task = stored_task(tmp_path / "store", PROGRAM)
    restoration = restore.Restoration("p", restorer, changelog, {0: task}, {0: {}})
    try:
        restoration.begin()
        held_until = time.monotonic() + HELD_FOR
        while time.monotonic() < held_until:
            restoration.step(0.2)
            assert not restoration.done, (
                f"the restore ended while the zombie's transaction was open, with keys "
                f"{sorted(restoration.pending[0])}: the records committed after that transaction were never read"
            )
        assert 0 in restoration.held_since
        said = [r.getMessage() for r in caplog.records if r.name == "eventscript.kafka.worker"]
        assert len(said) >= 2 and "has a transaction still open" in said[0], said
        assert "still has a transaction open" in said[-1] and "kafka-transactions.sh" in said[-1], said
        zombie.abort_transaction(30)  # (the broker does the same once transaction.timeout.ms has passed)

        def restored() -> bool:
            restoration.step(0.2)
            return restoration.done

        wait_for(restored, 60, what="the restore to end once the zombie's transaction was aborted")
        assert sorted(restoration.pending[0]) == [b"after", b"before"]
    finally:
        restorer.close()
        task.close()


@pytest.mark.kafka
def test_a_state_dump_held_back_by_an_open_transaction_says_so(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    """``state dump`` reads to the end a read_committed reader is told of, as a restore does; it
    does not wait for a transaction left open, but says that what was committed after it is not in
    the dump, and what to do."""
    from eventscript.kafka.changelog_dump import fold_partitions

    broker.require_real("a transaction left open holding back the last stable offset")
    caplog.set_level(logging.WARNING, logger="eventscript.kafka.state")
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
    changelog, owner, zombie = _open_transaction_between(broker, kafka, "open-txn-dump")
    try:
        [held] = fold_partitions(kafka, changelog, "p", {0: {}})
        assert sorted(held.records) == [b"before"]
        # (offsets: 0 "before", 1 its commit marker, 2 the zombie's record, 3 "after", 4 its marker)
        said = [r.getMessage() for r in caplog.records if r.name == "eventscript.kafka.state"]
        assert len(said) == 1 and "transaction still open from offset 2" in said[0], said
        assert "ends at 5" in said[0] and "kafka-transactions.sh" in said[0], said
        zombie.abort_transaction(30)
        caplog.clear()
        [whole] = fold_partitions(kafka, changelog, "p", {0: {}})
        assert sorted(whole.records) == [b"after", b"before"]
        assert not [r for r in caplog.records if r.name == "eventscript.kafka.state"]
    finally:
        owner.flush(5)
