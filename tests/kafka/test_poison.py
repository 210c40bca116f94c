"""Poison records (issue: the Kafka worker): bad JSON, wrong types, unknown names, huge values and
null keys never stop the worker; each lands on the error topic with its original bytes, and every
input record is accounted for: consumed = processed + error-topic records."""

from __future__ import annotations

import base64
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from kafka_helpers import Broker, read_many, run_in_thread, topology, unique

from eventscript.kafka import clients
from eventscript.kafka.config import KafkaConfig, load_topology
from eventscript.kafka.partitioner import partition_of

PROGRAM = """
in {string k; long n;} Reading group(Reading.k)
out {string k; long n;} Echo
( Reading(r) { !>Echo(r); } )*
"""


@pytest.mark.kafka
def test_poison_records_go_to_the_error_topic(broker: Broker, tmp_path: Path) -> None:
    name = unique("poison")
    (tmp_path / "p.es").write_text(PROGRAM)
    topo = topology(
        broker,
        tmp_path,
        [
            {
                "name": name,
                "source": "p.es",
                "clock": "record",
                "inputs": [{"topic": f"{name}-in", "event_from": {"header": "type"}}],
                "outputs": {"default": f"{name}-out"},
                "errors": f"{name}-err",
            }
        ],
        {f"{name}-in": {"partitions": 2}},
        kafka={
            "bootstrap_servers": broker.bootstrap,
            "consumer": {"session.timeout.ms": 3000, "heartbeat.interval.ms": 750},
        },
    )
    t = load_topology(topo)
    from eventscript.kafka.admin import Admin

    Admin(t).prepare(t.programs)
    producer = Producer(clients.producer_config(KafkaConfig(bootstrap_servers=broker.bootstrap)))
    kb = b"a"
    part = partition_of(kb, 2)
    good = orjson.dumps({"k": "a", "n": 1})
    huge = b'{"k": "a", "n": "' + b"x" * 2_000_000 + b'"}'
    poison = [
        (kb, b"{not json", [("type", b"Reading")]),
        (kb, orjson.dumps({"k": "a", "n": "seven"}), [("type", b"Reading")]),  # wrong type
        (kb, orjson.dumps({"k": "a"}), [("type", b"Reading")]),  # missing field
        (kb, good, [("type", b"Nope")]),  # an undeclared event name
        (kb, good, []),  # no header naming the event
        (kb, huge, [("type", b"Reading")]),  # a huge value of the wrong type
        (None, good, [("type", b"Reading")]),  # no key
        (kb, None, [("type", b"Reading")]),  # no value
    ]
    sent = []
    for i in range(30):
        producer.produce(
            f"{name}-in",
            key=kb,
            value=orjson.dumps({"k": "a", "n": i}),
            partition=part,
            headers=[("type", b"Reading")],
            timestamp=1000 + i,
        )
        sent.append(("good", i))
        if i % 4 == 1 and poison:
            key, value, headers = poison.pop(0)
            producer.produce(f"{name}-in", key=key, value=value, partition=part, headers=headers, timestamp=1000 + i)
            sent.append(("bad", value))
    assert not poison
    producer.flush(30)
    assert run_in_thread(topo, until_idle=1.0) == 0  # the worker keeps running and ends cleanly

    recs = read_many(broker, [f"{name}-in", f"{name}-out", f"{name}-err"], dedupe=False)
    consumed = recs[f"{name}-in"]
    outputs = recs[f"{name}-out"]
    # In the order of the records they are about: an error without a key (the undeclared event
    # name) may land on another partition of the error topic than the others.
    errors = sorted((orjson.loads(m.value()) for m in recs[f"{name}-err"]), key=lambda e: e["source"]["offset"])
    assert len(consumed) == len(sent) == 38
    assert len(outputs) + len(errors) == len(consumed)
    assert [orjson.loads(m.value())["n"] for m in outputs] == list(range(30))
    by_offset = {m.offset(): m for m in consumed}
    codes = []
    for e in errors:
        src = e["source"]
        original = by_offset[src["offset"]]
        assert src["topic"] == f"{name}-in" and src["partition"] == part
        want_value = None if original.value() is None else base64.b64encode(original.value()).decode()
        assert src["value"] == want_value, "the error record must carry the original bytes"
        assert src["key"] == (None if original.key() is None else base64.b64encode(original.key()).decode())
        assert e["program"] == name
        codes.append(e["code"])
    assert codes == [6, 6, 6, 1, 6, 6, 6, 6]
