"""Record keys as users' producers write them (issue: Kafka as users run it).

Records keyed by their group key in the input's key format and placed by the producer's own
partitioner are already on the partition of their key: the worker must never re-publish them.
Outputs are keyed in the same format. Each program of one topology reads a topic written the way
one kind of producer writes it: a plain confluent-kafka producer with default settings (plain
string keys, librdkafka's consistent_random), a Java-style producer (murmur2) with plain string,
JSON and 8-byte long keys, and unkeyed records (every one re-published by its group key).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Producer
from kafka_helpers import Broker, read_many, run_in_thread, topology, unique

from eventscript.kafka.admin import Admin
from eventscript.kafka.config import load_topology
from eventscript.task.progress import read_marker

BY_NAME = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""
BY_ID = """
in {long id;} Hit group(Hit.id)
out {long id; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({id: group[0], n: n}); } )*
"""
PARTITIONS = 3
KEYS = 24

#: (name, program, input settings, producer settings, record key of a key k (or None), value of k)
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], Any, Any]] = [
    ("plain", BY_NAME, {"partitioner": "consistent_random"}, {}, lambda k: f"s{k}".encode(), lambda k: {"k": f"s{k}"}),
    ("java", BY_NAME, {}, {"partitioner": "murmur2_random"}, lambda k: f"s{k}".encode(), lambda k: {"k": f"s{k}"}),
    (
        "json",
        BY_NAME,
        {"key": "json"},
        {"partitioner": "murmur2_random"},
        lambda k: orjson.dumps([f"s{k}"]),
        lambda k: {"k": f"s{k}"},
    ),
    (
        "bytes",
        BY_ID,
        {"key": "bytes"},
        {"partitioner": "murmur2_random"},
        lambda k: struct.pack(">q", 1000 + k),
        lambda k: {"id": 1000 + k},
    ),
    ("none", BY_NAME, {"key": "none"}, {}, lambda k: None, lambda k: {"k": f"s{k}"}),
]


@pytest.mark.kafka
def test_records_on_the_partition_of_their_key_are_never_republished(broker: Broker, tmp_path: Path) -> None:
    base = unique("keys")
    programs = []
    for name, source, settings, _, _, _ in CASES:
        (tmp_path / f"{name}.es").write_text(source)
        programs.append(
            {
                "name": f"{base}-{name}",
                "source": f"{name}.es",
                "clock": "record",
                "inputs": [{"topic": f"{base}-{name}-in", "event": "Hit", **settings}],
                "outputs": {"default": f"{base}-{name}-out"},
                "errors": f"{base}-{name}-err",
            }
        )
    topo_path = topology(broker, tmp_path, programs, {f"{base}-{c[0]}-in": {"partitions": PARTITIONS} for c in CASES})
    topo = load_topology(topo_path)
    Admin(topo).prepare(topo.programs)
    for name, _, _, producer_settings, key_of, value_of in CASES:
        producer = Producer({"bootstrap.servers": broker.bootstrap, **producer_settings})
        for i in range(KEYS * 3):
            k = i % KEYS
            key = key_of(k)
            if key is None:
                producer.produce(f"{base}-{name}-in", value=orjson.dumps(value_of(k)), timestamp=1000 + i)
            else:
                producer.produce(f"{base}-{name}-in", key=key, value=orjson.dumps(value_of(k)), timestamp=1000 + i)
        producer.flush(30)
    assert run_in_thread(topo_path, until_idle=1.5) == 0

    for cfg, (name, _, _, _, key_of, value_of) in zip(topo.programs, CASES, strict=True):
        topics = [f"{base}-{name}-in", f"{base}-{name}-out", f"{base}-{name}-err", topo.repartition_topic(cfg)]
        got = read_many(broker, topics, dedupe=False)
        assert got[f"{base}-{name}-err"] == [], name
        # (the tasks' progress markers share the repartition topic: readers skip them by header)
        republished = len([m for m in got[topo.repartition_topic(cfg)] if read_marker(m.headers()) is None])
        counts: dict[str, list[int]] = {}
        for m in got[f"{base}-{name}-out"]:
            v = orjson.loads(m.value())
            k = v["k"] if "k" in v else v["id"]
            counts.setdefault(str(k), []).append(v["n"])
            k_index = int(str(k).lstrip("s")) - (1000 if "id" in v else 0)
            assert m.key() == key_of(k_index), f"{name}: output key {m.key()!r} is not in the input's format"
        if name == "none":  # unkeyed outputs are spread over the partitions: no order across them
            counts = {k: sorted(v) for k, v in counts.items()}
        assert counts == {str(next(iter(value_of(k).values()))): [1, 2, 3] for k in range(KEYS)}, name
        if name == "none":
            assert republished > 0, "unkeyed records are placed at random: most must be re-published"
        else:
            assert republished == 0, f"{name}: {republished} records already on their key's partition were re-published"
        if name == "plain":  # the records really were spread by librdkafka's own partitioner
            assert len({m.partition() for m in got[f"{base}-{name}-in"]}) == PARTITIONS
