"""Restoring task state: from the changelog when the local store is gone, ignoring changelog
records of transactions that never committed, and from the local store alone when it is current."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Producer
from kafka_helpers import Broker, counts_by_key, run_in_thread, topology, unique

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
        p.produce(topic, key=kb, value=orjson.dumps({"k": k}), partition=partition_of(kb, PARTITIONS), timestamp=t0 + i)
    p.flush(30)


def _setup(broker: Broker, tmp_path: Path) -> tuple[str, Path, KafkaConfig]:
    name = unique("restore")
    (tmp_path / "p.es").write_text(PROGRAM)
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
            }
        ],
        {f"{name}-in": {"partitions": PARTITIONS}},
    )
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
    assert counts_by_key(broker, f"{name}-out") == {"a": [1, 2, 3, 4], "b": [1, 2, 3], "c": [1, 2], "d": [1]}


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
    producer.produce(
        t.changelog_topic(t.programs[0]),
        key=kb,
        value=engine.snapshot(ctx),
        partition=p,
        headers=[("es-pos", position_header({f"{name}-in:{p}": 10_000}))],
    )
    producer.flush(30)
    producer.abort_transaction(30)

    shutil.rmtree(tmp_path / "state" / name)
    _send(kafka, f"{name}-in", ["a"], 2_000)
    assert run_in_thread(topo, until_idle=1.0) == 0
    assert counts_by_key(broker, f"{name}-out") == {"a": [1, 2, 3, 4]}


def _changelog_write(t: Any, name: str, kafka: KafkaConfig, key: str, n: int, es_pos: dict[str, int]) -> None:
    """A changelog record for ``key``'s counter at ``n``, with ``es_pos`` as its batch's input
    position, written as another worker's commit (or its batch that never committed) would."""
    program = compile_source(PROGRAM, name="x").require()
    engine = Engine(program)
    engine.feed_json("Hit", {"k": key})
    ctx = engine.contexts[(key,)]
    ctx.vars[0] = n
    kb = key_bytes((key,), [STRING])
    assert kb is not None
    producer = Producer(clients.producer_config(kafka))
    producer.produce(
        t.changelog_topic(t.programs[0]),
        key=kb,
        value=engine.snapshot(ctx),
        partition=partition_of(key.encode(), PARTITIONS),
        headers=[("es-pos", position_header(es_pos))],
    )
    producer.flush(30)


@pytest.mark.kafka
def test_a_current_store_applies_another_owners_commit_that_moved_no_input(broker: Broker, tmp_path: Path) -> None:
    """Another worker owned the task meanwhile and committed state with no input record processed
    (a wall-clock timer): its changelog record carries the committed position, so the returning
    worker's store is at the committed position yet behind the changelog (issue 20, fault 2)."""
    name, topo, kafka = _setup(broker, tmp_path)
    t = load_topology(topo)
    from eventscript.kafka.admin import Admin

    Admin(t).prepare(t.programs)
    _send(kafka, f"{name}-in", ["a", "a", "a"], 1_000)
    assert run_in_thread(topo, until_idle=1.0) == 0
    p = partition_of(b"a", PARTITIONS)
    _changelog_write(t, name, kafka, "a", 99, {f"{name}-in:{p}": 3})
    _send(kafka, f"{name}-in", ["a"], 2_000)
    assert run_in_thread(topo, until_idle=1.0) == 0  # the same worker, its local store kept
    assert counts_by_key(broker, f"{name}-out") == {"a": [1, 2, 3, 100]}


@pytest.mark.kafka
def test_a_current_store_rewrites_the_keys_of_a_batch_that_never_committed(broker: Broker, tmp_path: Path) -> None:
    """A worker wrote a batch's changelog records and died before its commit; restarted with its
    store (at the committed position), it must write those keys again before its next commit
    covers their position, or a later replay from the changelog applies them (issue 20, fault 1)."""
    name, topo, kafka = _setup(broker, tmp_path)
    t = load_topology(topo)
    from eventscript.kafka.admin import Admin

    Admin(t).prepare(t.programs)
    _send(kafka, f"{name}-in", ["a", "a", "a"], 1_000)
    assert run_in_thread(topo, until_idle=1.0) == 0
    p = partition_of(b"a", PARTITIONS)
    ghost = next(f"g{i}" for i in range(100) if partition_of(f"g{i}".encode(), PARTITIONS) == p)
    _changelog_write(t, name, kafka, ghost, 50, {f"{name}-in:{p}": 4})  # the batch of the 4th record
    _send(kafka, f"{name}-in", ["a"], 2_000)  # the retry's batch (the ghost's record never came)
    assert run_in_thread(topo, until_idle=1.0) == 0  # its commit covers the uncommitted record
    shutil.rmtree(tmp_path / "state" / name)  # a new owner, without the store
    _send(kafka, f"{name}-in", [ghost], 3_000)
    assert run_in_thread(topo, until_idle=1.0) == 0
    assert counts_by_key(broker, f"{name}-out") == {"a": [1, 2, 3, 4], ghost: [1]}


@pytest.mark.kafka
def test_a_restart_with_its_local_store_replays_only_the_changelog_tail(
    broker: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
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
    # A current store is not rebuilt: it reads only the changelog past its checkpoint, which this
    # worker's own commits left empty (another owner's commits would be there: see below).
    tails = re.findall(r"changelog from offset (\d+): (\d+) applied, (\d+) skipped", caplog.text)
    assert tails and all(applied == skipped == "0" for _, applied, skipped in tails), caplog.text
    assert any(int(start) > 0 for start, _, _ in tails), "a current store must not replay from the start"
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
    assert counts_by_key(broker, f"{name}-out") == {"a": [1, 2, 3, 4], "b": [1, 2], "c": [1], "d": [1], "e": [1]}


@pytest.mark.kafka
@pytest.mark.slow
def test_a_restore_longer_than_max_poll_interval_keeps_the_worker_in_its_group(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The changelog replay runs a slice per turn of the loop, so a restore that takes longer than
    max.poll.interval.ms does not get the worker thrown out of its group."""
    import threading
    import time

    from eventscript.kafka import restore, task_manager
    from eventscript.kafka.supervisor import TopologyRunner

    name, topo_path, kafka = _setup(broker, tmp_path)
    t = load_topology(topo_path)
    from eventscript.kafka.admin import Admin

    Admin(t).prepare(t.programs)
    keys = [f"k{i}" for i in range(100)]
    _send(kafka, f"{name}-in", keys, 1_000)
    assert run_in_thread(topo_path, until_idle=1.0) == 0
    shutil.rmtree(tmp_path / "state" / name)  # the next start replays the whole changelog

    # A slow replay: 2 records a slice, 0.2 s each -> about 10 s, well past max.poll.interval.ms.
    real_step = restore.Restoration.step

    class SlowReader:
        """The restore consumer, slowed down: 0.2 s and at most 2 records a read."""

        def __init__(self, consumer: object) -> None:
            self.consumer = consumer

        def consume(self, num_messages: int = 1, timeout: float = -1) -> list[object]:
            time.sleep(0.2)
            return self.consumer.consume(num_messages=min(num_messages, 2), timeout=timeout)  # type: ignore[attr-defined]

        def __getattr__(self, name: str) -> object:
            return getattr(self.consumer, name)

    def slow_step(self: restore.Restoration, budget: float, batch: int = 2000) -> None:
        if not isinstance(self.restorer, SlowReader):
            self.restorer = SlowReader(self.restorer)
        real_step(self, budget, batch)

    monkeypatch.setattr(restore.Restoration, "step", slow_step)
    monkeypatch.setattr(task_manager, "RESTORE_SLICE", 0.01)
    doc = load_topology(topo_path)
    doc.kafka.consumer["max.poll.interval.ms"] = 3000
    runner = TopologyRunner(doc)
    runner.prepare()
    _send(kafka, f"{name}-in", ["k1", "k2"], 2_000)
    th = threading.Thread(target=lambda: runner.run(until_idle=1.5, install_signals=False), daemon=True)
    started = time.monotonic()
    th.start()
    th.join(120)
    assert not th.is_alive()
    assert runner.workers[0].failure is None
    samples = {
        (s.name, s.labels.get("kind")): s.value
        for fam in runner.metrics.registry.collect()
        for s in fam.samples
        if s.name == "eventscript_rebalances_total"
    }
    assert samples[("eventscript_rebalances_total", "lost")] == 0, samples
    assert samples[("eventscript_rebalances_total", "assigned")] == 1, samples
    assert time.monotonic() - started > 8, "the replay was not slow enough to test anything"
    counts = counts_by_key(broker, f"{name}-out")
    assert counts["k1"] == [1, 2] and counts["k2"] == [1, 2] and len(counts) == len(keys)
