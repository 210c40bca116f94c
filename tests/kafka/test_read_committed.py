"""What a read_committed reader sees on the broker the tests run on (docs/worker.md's table):
the records of an aborted transaction never, a committed transaction's once; a
read_uncommitted reader sees both. Tansu 0.6 shows aborted records to both readers."""

from __future__ import annotations

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_helpers import Broker, unique


def _values(broker: Broker, topic: str, isolation: str) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": unique("iso"),
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got: list[bytes] = []
    try:
        while True:
            msgs = consumer.consume(100, 10)
            assert msgs, f"no end-of-partition signal from {topic} within 10 s"
            for m in msgs:
                if m.error() is None:
                    got.append(m.value())
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    return got
    finally:
        consumer.close()


@pytest.mark.kafka
def test_read_committed_reader_sees_committed_records_once_and_aborted_never(broker: Broker) -> None:
    broker.require_real("hiding aborted transactions")
    topic = unique("iso")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": unique("txn")})
    producer.init_transactions(30)
    for values, commit in (([b"c1", b"c2"], True), ([b"a1", b"a2"], False), ([b"c3"], True)):
        producer.begin_transaction()
        for v in values:
            producer.produce(topic, value=v)
        producer.flush(30)  # the aborted records are written to the log, not merely dropped
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    assert _values(broker, topic, "read_committed") == [b"c1", b"c2", b"c3"]
    assert _values(broker, topic, "read_uncommitted") == [b"c1", b"c2", b"a1", b"a2", b"c3"]
