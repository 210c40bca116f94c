"""Records on the wrong partition (issue: the Kafka worker): a record whose group key does not
belong to the partition it arrived on is re-published, keyed by its group key, to the program's
repartition topic and processed by the task that owns the key; an ungrouped program's records
all go to its one instance."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from kafka_helpers import Broker, read_many, run_in_thread, topology, unique

from eventscript.kafka import clients
from eventscript.kafka.config import KafkaConfig, load_topology
from eventscript.kafka.partitioner import partition_of
from eventscript.task.progress import read_marker

COUNT = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""
TOTAL = """
in {string k;} Hit
out long Total
{ n = 0; }
( Hit() { n = n + 1; !>Total(n); } )*
"""
PARTITIONS = 3


def _run(broker: Broker, tmp_path: Path, program: str, records: list[tuple[bytes, int, str]]) -> tuple[str, Path]:
    name = unique("rep")
    (tmp_path / "p.es").write_text(program)
    topo = topology(
        broker,
        tmp_path,
        [
            {
                "name": name,
                "source": "p.es",
                "clock": "record",
                "inputs": [{"topic": f"{name}-in", "event": "Hit"}],
                "outputs": {"default": f"{name}-out"},
                "errors": f"{name}-err",
            }
        ],
        {f"{name}-in": {"partitions": PARTITIONS}},
    )
    t = load_topology(topo)
    from eventscript.kafka.admin import Admin

    Admin(t).prepare(t.programs)
    p = Producer(clients.producer_config(KafkaConfig(bootstrap_servers=broker.bootstrap)))
    for i, (key, partition, k) in enumerate(records):
        p.produce(f"{name}-in", key=key, value=orjson.dumps({"k": k}), partition=partition, timestamp=1000 + i)
    p.flush(30)
    assert run_in_thread(topo, until_idle=1.5) == 0
    return name, topo


@pytest.mark.kafka
def test_misplaced_records_reach_the_task_of_their_key(broker: Broker, tmp_path: Path) -> None:
    keys = [f"k{i}" for i in range(12)]
    # Keyed by the plain string but spread round-robin: most records are on a partition that
    # does not own their key.
    records = [(k.encode(), i % PARTITIONS, k) for i, k in enumerate(keys * 5)]
    wrong = sum(1 for _, part, k in records if part != partition_of(k.encode(), PARTITIONS))
    assert wrong > len(records) // 2
    name, topo = _run(broker, tmp_path, COUNT, records)
    t = load_topology(topo)
    repartition = t.repartition_topic(t.programs[0])
    got = read_many(broker, [f"{name}-out", f"{name}-err", repartition], dedupe=False)
    assert got[f"{name}-err"] == []
    counts: dict[str, list[int]] = {}
    for m in got[f"{name}-out"]:
        v = orjson.loads(m.value())
        counts.setdefault(v["k"], []).append(v["n"])
        # Outputs are keyed by the group key in the inputs' format, so they land where it belongs.
        assert m.key() == v["k"].encode()
    assert counts == {k: [1, 2, 3, 4, 5] for k in keys}
    # The tasks' progress markers (task/progress.py) share the topic: readers skip them by header.
    repartitioned = [m for m in got[repartition] if read_marker(m.headers()) is None]
    assert len(repartitioned) == wrong
    for m in repartitioned:
        k = orjson.loads(m.value())["k"]
        assert m.key() == k.encode()
        assert m.partition() == partition_of(m.key(), PARTITIONS)


@pytest.mark.kafka
def test_an_ungrouped_program_sees_every_partition(broker: Broker, tmp_path: Path) -> None:
    records = [(None, i % PARTITIONS, f"k{i}") for i in range(30)]  # unkeyed: fine for ungrouped
    name, _ = _run(broker, tmp_path, TOTAL, records)
    out = read_many(broker, [f"{name}-out", f"{name}-err"], dedupe=False)
    assert out[f"{name}-err"] == []
    assert sorted(orjson.loads(m.value()) for m in out[f"{name}-out"]) == list(range(1, 31))


@pytest.mark.kafka
def test_consumed_repartition_records_are_purged(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a commit the worker deletes the repartition records it has consumed (DeleteRecords),
    so the internal topic does not grow without bound."""
    broker.require_real("DeleteRecords (Tansu 0.6 drops the connection)")
    from eventscript.kafka import checkpoint

    monkeypatch.setattr(checkpoint, "PURGE_INTERVAL", 0.0)
    keys = [f"k{i}" for i in range(12)]
    records = [(k.encode(), i % PARTITIONS, k) for i, k in enumerate(keys * 3)]
    wrong = sum(1 for _, part, k in records if part != partition_of(k.encode(), PARTITIONS))
    name, topo = _run(broker, tmp_path, COUNT, records)
    t = load_topology(topo)
    repartition = t.repartition_topic(t.programs[0])
    got = read_many(broker, [f"{name}-out", repartition], dedupe=False)
    assert len(got[f"{name}-out"]) == len(records)
    assert wrong > 0 and len([m for m in got[repartition] if read_marker(m.headers()) is None]) < wrong, (
        "consumed repartition records were not deleted"
    )
    # DeleteRecords moved the log start: the deleted records are gone, not merely skipped.
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique("marks")})
    try:
        starts = [reader.get_watermark_offsets(TopicPartition(repartition, p), 10)[0] for p in range(PARTITIONS)]
    finally:
        reader.close()
    # (At least: the tasks' progress markers between the re-published records were deleted too.)
    copies_left = [m for m in got[repartition] if read_marker(m.headers()) is None]
    assert sum(starts) >= wrong - len(copies_left) > 0, f"log starts {starts}; {wrong} re-published"
