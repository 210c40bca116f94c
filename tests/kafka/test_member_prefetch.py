"""The worker's group member fetches at most 128 KiB a partition (``clients.MEMBER_PREFETCH``, to
bound its prefetch: bench/SPEED.md, "The worker's memory"); a record, or a batch, larger than that
still arrives whole and in order, as the broker returns a partition's first batch at any size."""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_helpers import Broker, unique

from eventscript.kafka import clients
from eventscript.topology.config import KafkaConfig


@pytest.mark.kafka
def test_records_larger_than_the_members_fetch_size_arrive_whole(broker: Broker) -> None:
    topic = unique("prefetch")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # (kept alive until the topic is made)
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
    conf = clients.member_consumer_config(kafka, unique("member"))
    fetch = conf["max.partition.fetch.bytes"]
    sizes = [10, 7 * fetch, 20, 5 * fetch // 2]  # (under the broker's default 1 MiB a record)
    values = [os.urandom(n) for n in sizes]
    producer = Producer(clients.producer_config(kafka))
    failed: list[KafkaError] = []
    for i, value in enumerate(values):
        producer.produce(topic, value=value, key=b"k%d" % i, on_delivery=lambda err, _m: err and failed.append(err))
        producer.flush(30)  # (each record a batch of its own)
    assert failed == []
    consumer = Consumer({k: v for k, v in conf.items() if k != "logger"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < len(values) and time.monotonic() < deadline:
            got += [m.value() for m in consumer.consume(10, 1.0) if m.error() is None]
    finally:
        consumer.close()
    assert [len(v) for v in got] == sizes and got == values
