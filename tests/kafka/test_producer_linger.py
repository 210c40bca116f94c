"""The premise of the worker's longer ``linger.ms`` (kafka/clients.py ``LINGER_MS``,
``TRANSACTIONAL_LINGER_MS``): a commit does not wait for it. The at-least-once commit flushes the
producer before committing offsets, the exactly-once commit commits the transaction; librdkafka
sends what is queued at once on either, whatever the linger, so the linger adds no latency to a
commit, and under exactly-once none to an output (visible only at the commit)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_helpers import Broker, unique

from eventscript.kafka.clients import producer_config
from eventscript.topology.config import KafkaConfig

#: Far longer than any commit should take, so that a commit waiting for it cannot pass.
LINGER_MS = 5_000


@pytest.mark.kafka
@pytest.mark.parametrize("transactional", [False, True], ids=["at_least_once", "exactly_once"])
def test_a_commit_sends_at_once_whatever_the_linger(broker: Broker, transactional: bool) -> None:
    if transactional:
        broker.require_real("transactions")
    topic = unique("linger")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    txid = unique("linger-txn") if transactional else None
    conf = producer_config(KafkaConfig(bootstrap_servers=broker.bootstrap), txid, **{"linger.ms": LINGER_MS})
    producer = Producer({k: v for k, v in conf.items() if k != "logger"})
    if transactional:
        producer.init_transactions(30)
    for _ in range(3):  # (the first round connects; each later one must be quick too)
        started = time.monotonic()
        if transactional:
            producer.begin_transaction()
        producer.produce(topic, key=b"k", value=b"v")
        if transactional:
            producer.commit_transaction(30)
        else:
            assert producer.flush(30) == 0
        took = time.monotonic() - started
        assert took < LINGER_MS / 1000 / 2, f"the commit took {took:.2f} s: it waited for linger.ms"
