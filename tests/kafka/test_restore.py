"""Restoring task state: from the changelog when the local store is gone, ignoring changelog
records of transactions that never committed, and from the local store alone when it is current."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from kafka_helpers import Broker, read_many, run_in_thread, topology, unique

from eventscript.automata.compile import compile_source
from eventscript.engine.engine import Engine
from eventscript.kafka import clients
from eventscript.kafka.config import KafkaConfig, load_topology
from eventscript.kafka.partitioner import key_bytes, partition_of
from eventscript.kafka.state import position_header
from eventscript.language.types import STRING

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
        kb = k.encode()  # plain string keys, as producers write them (key: string)
        p.produce(topic, key=kb, value=orjson.dumps({"k": k}), partition=partition_of(kb, PARTITIONS),
                  timestamp=t0 + i)
    p.flush(30)


def _counts(broker: Broker, topic: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for m in read_many(broker, [topic])[topic]:
        v = orjson.loads(m.value())
        out.setdefault(v["k"], []).append(v["n"])
    return out


def _setup(broker: Broker, tmp_path: Path) -> tuple[str, Path, KafkaConfig]:
    name = unique("restore")
    (tmp_path / "p.es").write_text(PROGRAM)
    topo = topology(broker, tmp_path, [{
        "name": name, "source": "p.es", "clock": "record",
        "inputs": [{"topic": f"{name}-in", "event": "Hit"}], "outputs": {"default": f"{name}-out"},
    }], {f"{name}-in": {"partitions": PARTITIONS}})
    return name, topo, KafkaConfig(bootstrap_servers=broker.bootstrap)


@pytest.mark.kafka
def test_restore_from_changelog_after_losing_the_local_store(broker: Broker, tmp_path: Path) -> None:
    name, topo, kafka = _setup(broker, tmp_path)
    t = load_topology(topo)
    from eventscript.kafka.admin import Admin

    Admin(t).prepare(t.programs)
    _send(kafka, f"{name}-in", ["a", "b", "a", "c", "a", "b"], 1_000)
    assert run_in_thread(topo, until_idle=1.0) == 0
    shutil.rmtree(tmp_path / "state" / name)  # the worker moves to a machine without the store
    _send(kafka, f"{name}-in", ["a", "b", "c", "d"], 2_000)
    assert run_in_thread(topo, until_idle=1.0) == 0
    assert _counts(broker, f"{name}-out") == {"a": [1, 2, 3, 4], "b": [1, 2, 3], "c": [1, 2], "d": [1]}


@pytest.mark.kafka
def test_uncommitted_changelog_records_are_ignored(broker: Broker, tmp_path: Path) -> None:
    name, topo, kafka = _setup(broker, tmp_path)
    t = load_topology(topo)
    from eventscript.kafka.admin import Admin

    Admin(t).prepare(t.programs)
    _send(kafka, f"{name}-in", ["a", "a", "a"], 1_000)
    assert run_in_thread(topo, until_idle=1.0) == 0

    # A transaction that never commits writes a state for "a" claiming n = 99, as a crashed batch
    # would: its position is beyond the committed input offsets.
    program = compile_source(PROGRAM, name="x").require()
    engine = Engine(program)
    engine.feed_json("Hit", {"k": "a"})
    ctx = engine.contexts[("a",)]
    ctx.vars[0] = 99
    kb = key_bytes(("a",), [STRING])  # the changelog keys instances by the canonical form
    assert kb is not None
    p = partition_of(b"a", PARTITIONS)  # ... on the partition of the task that owns "a"
    producer = Producer(clients.producer_config(kafka, f"intruder-{name}"))
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(t.changelog_topic(t.programs[0]), key=kb, value=engine.snapshot(ctx), partition=p,
                     headers=[("es-pos", position_header({f"{name}-in:{p}": 10_000}))])
    producer.flush(30)
    producer.abort_transaction(30)

    shutil.rmtree(tmp_path / "state" / name)
    _send(kafka, f"{name}-in", ["a"], 2_000)
    assert run_in_thread(topo, until_idle=1.0) == 0
    assert _counts(broker, f"{name}-out") == {"a": [1, 2, 3, 4]}


@pytest.mark.kafka
def test_a_restart_with_its_local_store_replays_only_the_changelog_tail(
        broker: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A store that is current is used as it is; one that is behind (a worker killed between the
    commit and the store write, or a store restored from an older volume snapshot) replays the
    changelog from its checkpoint, not from the start."""
    import logging
    import re

    name, topo, kafka = _setup(broker, tmp_path)
    t = load_topology(topo)
    from eventscript.kafka.admin import Admin

    Admin(t).prepare(t.programs)
    _send(kafka, f"{name}-in", ["a", "b", "a", "c"], 1_000)
    assert run_in_thread(topo, until_idle=1.0) == 0
    old = tmp_path / "old-state"
    shutil.copytree(tmp_path / "state" / name, old)  # the store as it was after the first run
    _send(kafka, f"{name}-in", ["a", "b", "d"], 2_000)
    with caplog.at_level(logging.INFO, logger="eventscript.kafka"):
        assert run_in_thread(topo, until_idle=1.0) == 0
    assert "changelog from offset" not in caplog.text, "a current store must not replay the changelog"
    shutil.rmtree(tmp_path / "state" / name)
    shutil.copytree(old, tmp_path / "state" / name)
    caplog.clear()
    _send(kafka, f"{name}-in", ["a", "e"], 3_000)
    with caplog.at_level(logging.INFO, logger="eventscript.kafka"):
        assert run_in_thread(topo, until_idle=1.0) == 0
    # A task whose old store had state replays from its checkpoint (a task that had none yet
    # replays from 0, which is its checkpoint too).
    starts = [int(n) for n in re.findall(r"changelog from offset (\d+)", caplog.text)]
    assert any(n > 0 for n in starts), caplog.text
    assert _counts(broker, f"{name}-out") == {"a": [1, 2, 3, 4], "b": [1, 2], "c": [1], "d": [1], "e": [1]}
