"""A zombie's changelog record under at-least-once, on a real broker (issue 20; the fault harness's
at_least_once-wall failure of 2026-11-26: five keys one count short after a freeze).

A worker frozen while its producer held a commit's changelog records sends them when it resumes,
after the task's new owner wrote newer ones, and the new owner's commits cover their input
position. Here the late record is produced by hand: the first owner's record of a key, with its
headers (its ``es-pos`` and its owner epoch ``es-gen``), written again after the second owner's.
The restore that follows, and the state dump, must keep the second owner's state.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Producer
from kafka_helpers import Broker, counts_by_key, read_records, run_in_thread, topology, unique

from eventscript.kafka import clients
from eventscript.kafka.admin import Admin
from eventscript.kafka.changelog_dump import fold_changelog
from eventscript.kafka.config import KafkaConfig, load_topology
from eventscript.kafka.partitioner import key_bytes, partition_of
from eventscript.language.types import STRING
from eventscript.state.changelog import HEADER_EPOCH

PROGRAM = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""
PARTITIONS = 2


def _send(kafka: KafkaConfig, topic: str, keys: list[str], t0: int) -> None:
    p = Producer(clients.producer_config(kafka))
    for i, k in enumerate(keys):
        kb = k.encode()
        p.produce(topic, key=kb, value=orjson.dumps({"k": k}), partition=partition_of(kb, PARTITIONS), timestamp=t0 + i)
    p.flush(30)


def _last_record_of(broker: Broker, changelog: str, key: bytes) -> Any:
    """The key's last changelog record."""
    return [m for m in read_records(broker, changelog) if m.key() == key][-1]


def _epoch(record: Any) -> int:
    return int(dict(record.headers())[HEADER_EPOCH])


@pytest.mark.kafka
def test_a_zombies_changelog_record_sent_after_the_new_owners_is_not_restored(broker: Broker, tmp_path: Path) -> None:
    name = unique("zombie-cl")
    (tmp_path / "p.es").write_text(PROGRAM)
    path = topology(
        broker,
        tmp_path,
        [
            {
                "name": name,
                "source": "p.es",
                "clock": "record",
                "inputs": [{"topic": f"{name}-in", "event": "Hit"}],
                "outputs": {"default": f"{name}-out"},
            }
        ],
        {f"{name}-in": {"partitions": PARTITIONS}},
    )
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
    topo = load_topology(path)
    Admin(topo).prepare(topo.programs)
    changelog = topo.changelog_topic(topo.programs[0])
    kb = key_bytes(("a",), [STRING])
    assert kb is not None

    _send(kafka, f"{name}-in", ["a", "a", "a"], 1_000)
    assert run_in_thread(path, until_idle=1.0) == 0  # the first owner: a's count at 3
    stale = _last_record_of(broker, changelog, kb)
    _send(kafka, f"{name}-in", ["a", "a"], 2_000)
    assert run_in_thread(path, until_idle=1.0) == 0  # the next owner (a new member): a at 5
    newer = _last_record_of(broker, changelog, kb)
    assert _epoch(newer) > _epoch(stale)

    # The first owner's record arrives late, as a frozen worker's queued record does.
    producer = Producer(clients.producer_config(kafka))
    producer.produce(changelog, key=kb, value=stale.value(), partition=stale.partition(), headers=list(stale.headers()))
    assert producer.flush(30) == 0

    (task,) = [t for t in fold_changelog(topo, topo.programs[0]) if kb in t.records]
    assert task.records[kb][0] == newer.value()  # the state dump keeps the newer owner's
    assert task.fence.skipped == 1

    shutil.rmtree(tmp_path / "state" / name)  # the next owner restores from the changelog
    _send(kafka, f"{name}-in", ["a"], 3_000)
    assert run_in_thread(path, until_idle=1.0) == 0
    assert counts_by_key(broker, f"{name}-out") == {"a": [1, 2, 3, 4, 5, 6]}
