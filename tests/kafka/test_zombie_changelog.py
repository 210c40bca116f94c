"""A zombie's changelog record under at-least-once, on a real broker (issue 20; the fault harness's
at_least_once-wall failure of 2026-11-26: five keys one count short after a freeze).

A worker frozen while its producer held a commit's changelog records sends them when it resumes,
after the task's new owner wrote newer ones, and the new owner's commits cover their input
position. The restore that follows, and the state dump, must keep the new owner's state. Two
ways: the first owner's record of a key produced again by hand after the next owner's; and a
worker that freezes itself in the middle of a commit with its changelog records held
(late_changelog_worker.py) while a second worker takes its task over.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Producer
from kafka_helpers import (
    ROOT,
    Broker,
    KeyedProducer,
    counts_by_key,
    read_records,
    run_in_thread,
    start_worker,
    told,
    topology,
    unique,
    wait_for,
)

from eventscript.kafka import clients
from eventscript.kafka.admin import Admin
from eventscript.kafka.changelog_dump import fold_changelog
from eventscript.kafka.config import KafkaConfig, load_topology
from eventscript.kafka.partitioner import key_bytes, partition_of
from eventscript.language.types import STRING

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "task"))
from task_helpers import changelog_fields

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
    return int(changelog_fields(record)[2] or b"")


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
    producer.produce(
        changelog, key=kb, value=stale.value(), partition=stale.partition(), headers=list(stale.headers() or ())
    )
    assert producer.flush(30) == 0

    (task,) = [t for t in fold_changelog(topo, topo.programs[0]) if kb in t.records]
    # The state dump keeps the newer owner's (as a store keeps it).
    assert task.records[kb][0] == changelog_fields(newer)[0]
    assert task.fence.skipped == 1

    shutil.rmtree(tmp_path / "state" / name)  # the next owner restores from the changelog
    _send(kafka, f"{name}-in", ["a"], 3_000)
    assert run_in_thread(path, until_idle=1.0) == 0
    assert counts_by_key(broker, f"{name}-out") == {"a": [1, 2, 3, 4, 5, 6]}


LATE_WORKER = Path(__file__).with_name("late_changelog_worker.py")
COUNT = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""


def _epochs_of(broker: Broker, changelog: str, key: bytes) -> list[int]:
    """The owner epochs of the key's changelog records, in log order."""
    return [_epoch(m) for m in read_records(broker, changelog, idle=0.5) if m.key() == key]


def _owners_and_positions(broker: Broker, changelog: str, key: bytes, input_partition: str) -> list[tuple[int, int]]:
    """(owner epoch, position in ``input_partition``) of the key's changelog records, in log order."""
    return [
        (_epoch(m), orjson.loads(changelog_fields(m)[1] or b"")[input_partition])
        for m in read_records(broker, changelog, idle=0.5)
        if m.key() == key
    ]


@pytest.mark.kafka
@pytest.mark.slow
def test_a_worker_frozen_mid_commit_sends_its_changelog_records_late(broker: Broker, tmp_path: Path) -> None:
    broker.require_real("a zombie's records sent late, after a new owner of a real consumer group")
    name = unique("late-cl")
    app = unique("app")
    (tmp_path / "p.es").write_text(COUNT)
    program = {
        "name": name,
        "source": "p.es",
        "clock": "record",
        "guarantee": "at_least_once",
        "commit_interval_ms": 100,
        "inputs": [{"topic": f"{name}-in", "event": "Hit"}],
        "outputs": {"default": f"{name}-out"},
    }
    topics = {f"{name}-in": {"partitions": 1}}
    topos = {
        w: topology(broker, tmp_path, [program], topics, file=f"{w}.yaml", application=app, state=f"state-{w}")
        for w in ("a", "b", "c")
    }
    topo = load_topology(topos["a"])
    Admin(topo).prepare(topo.programs)
    changelog = topo.changelog_topic(topo.programs[0])
    kb = key_bytes(("k",), [STRING])
    assert kb is not None
    out = f"{name}-out"
    producer = KeyedProducer(broker, f"{name}-in", 1)
    logs = {w: tmp_path / f"{w}.log" for w in ("a", "b")}

    def hit(n: int) -> None:
        producer.send("k", {"k": "k"}, 1_767_225_600_000 + n)
        producer.producer.flush(30)

    def counted() -> list[int]:
        return counts_by_key(broker, out).get("k", [])

    a = subprocess.Popen(
        [sys.executable, str(LATE_WORKER), "run", str(topos["a"]), "-v"],
        stdout=open(logs["a"], "ab"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    b = None
    try:
        wait_for(lambda: "assigned tasks [0]" in logs["a"].read_text(), 90, what="A to own the task")
        for n in range(3):
            hit(n)
        wait_for(lambda: len(_epochs_of(broker, changelog, kb)) > 0 and counted() == [1, 2, 3], 60, what="A's commits")
        a.send_signal(signal.SIGUSR1)
        wait_for(lambda: "late changelog: armed" in logs["a"].read_text(), 30, what="A armed")
        hit(3)  # A counts 4, produces its changelog records and freezes before they are sent
        wait_for(lambda: "late changelog: frozen" in logs["a"].read_text(), 60, what="A frozen mid-commit")
        first = _epochs_of(broker, changelog, kb)[-1]
        b = start_worker(topos["b"], "-v", log=logs["b"])
        wait_for(lambda: "assigned tasks [0]" in logs["b"].read_text(), 90, what="B to take the task over")
        for n in range(4, 6):
            hit(n)  # B: 4 (again), 5, 6
        wait_for(
            lambda: any(e > first for e in _epochs_of(broker, changelog, kb)) and counted()[-1:] == [6],
            60,
            what="B's commits",
        )
        # A's held commit (its count 4, input position 4) must not have left while it was frozen:
        # a stop that came late let it out first, B restored over it, and nothing was late.
        assert (first, 4) not in _owners_and_positions(broker, changelog, kb, f"{name}-in:0"), (
            "A's held changelog records reached the broker before B took the task over: A was not frozen mid-commit"
        )
        a.send_signal(signal.SIGCONT)
        wait_for(lambda: "late changelog: released" in logs["a"].read_text(), 60, what="A to send its records")
        wait_for(lambda: _epochs_of(broker, changelog, kb)[-1] == first, 60, what="A's record after B's")
        a.send_signal(signal.SIGKILL)  # before it rejoins and perhaps takes the task back
        a.wait(30)
        b.send_signal(signal.SIGTERM)
        assert b.wait(60) in (0, 130), logs["b"].read_text()[-3000:]
        assert _epochs_of(broker, changelog, kb)[-1] == first, "the late record is not the key's last one"
    except AssertionError as exc:
        raise told(exc, *logs.values()) from exc
    finally:
        for w in (a, b):
            if w is not None and w.poll() is None:
                w.kill()
                w.wait()
    hit(6)  # a third worker restores the task from the changelog alone
    assert run_in_thread(topos["c"], until_idle=1.0) == 0
    assert counted()[-1] == 7, counted()
