"""Static membership as deployed (the chart's StatefulSet relies on it): a worker restarted
within its session timeout rejoins as the same member (group.instance.id) and gets its tasks
back, and the other worker sees no rebalance at all: no task revoked, none assigned. Counted in
the workers' logs ("assigned tasks", "revoked tasks"); outputs stay exact under exactly-once.
One scenario checks it all, with the worker's default consumer settings and the worker away as
long as a pod restart (an immediate restart within a 45 s session, once a test of its own, is the
same check with less time away).

Needs Apache Kafka: Tansu 0.6 mishandles static members (a member that joins gets no tasks)."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import (
    Broker,
    KeyedProducer,
    Oracle,
    TopicWatcher,
    outputs_by_key,
    program_entry,
    read_many,
    start_worker,
    stop_workers,
    tasks_held,
    told,
    unique,
    wait_for,
    worker_topologies,
    write_then_stop,
)

PROGRAM = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count;} Count
{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count}); } )*
"""
PARTITIONS = 4


def _assignments(log: Path) -> list[tuple[str, list[int]]]:
    """("assigned"|"revoked", partitions) lines of a worker's log, in order."""
    return [
        (kind, [int(p) for p in parts.split(",") if p.strip()])
        for kind, parts in re.findall(r": (assigned|revoked) tasks \[([\d, ]*)\]", log.read_text())
    ]


def _two_workers(broker: Broker, tmp: Path, prefix: str, consumer: dict[str, Any]) -> tuple[str, list[Path]]:
    """Workers a and b of one application (files a.yaml and b.yaml, topics created) running
    PROGRAM on PARTITIONS partitions with the consumer settings ``consumer`` (none: the worker's)."""
    name = unique(prefix)
    (tmp / "p.es").write_text(PROGRAM)
    program = program_entry(name, "Tick", clock="record", commit_interval_ms=100)
    topics = {f"{name}-in": {"partitions": PARTITIONS}}
    return name, worker_topologies(broker, tmp, [program], topics, ["a", "b"], consumer=consumer)


#: How long the restarted worker stays away: a pod rescheduled and started again (the image
#: pulled, the store opened) takes longer than librdkafka's old 10 s session timeout.
POD_RESTART_S = 15


@pytest.mark.kafka
@pytest.mark.slow
def test_the_default_session_timeout_outlasts_a_pod_restart_and_outputs_stay_exact(
    broker: Broker, tmp_path: Path
) -> None:
    """Issue 20 fault 9: with the worker's default consumer settings (no session.timeout.ms in
    the topology), a worker away for POD_RESTART_S gets its tasks back and the other worker sees
    no rebalance (failed with the old 10 s default: b took a's tasks, then gave them back); the
    outputs equal an uninterrupted run's, each once."""
    broker.require_real("static membership")
    name, files = _two_workers(broker, tmp_path, "static-default", {})  # the worker's defaults, as deployed
    from eventscript.kafka.config import load_topology

    t = load_topology(files[0])
    assert t.kafka.static_membership and "session.timeout.ms" not in t.kafka.consumer
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    producer = KeyedProducer(broker, f"{name}-in", PARTITIONS)
    # Records keep coming until worker a is back at work (then 300 more), at least 1200.
    writing = producer.start(40_000, 40, rate=60)
    watcher = TopicWatcher(broker, f"{name}-out")
    workers = [start_worker(files[0], "-v", log=logs[0]), start_worker(files[1], "-v", log=logs[1])]

    def split_between_both() -> bool:
        a, b = tasks_held(logs[0]), tasks_held(logs[1])
        return bool(a and b) and a | b == set(range(PARTITIONS)) and not a & b

    try:
        wait_for(split_between_both, 180, what="both workers holding tasks")
        watcher.wait_for_more(20)
        a_tasks, b_before = tasks_held(logs[0]), _assignments(logs[1])

        workers[0].send_signal(signal.SIGTERM)  # a rolling restart of worker a
        assert workers[0].wait(60) == 0, logs[0].read_text()[-3000:]
        restarted_at = len(_assignments(logs[0]))
        # Away as long as a pod restart: the duration is the scenario, not a wait for a condition.
        time.sleep(POD_RESTART_S)
        workers[0] = start_worker(files[0], "-v", log=logs[0])
        wait_for(lambda: len(_assignments(logs[0])) > restarted_at, 90, what="worker a assigned again")
        watcher.wait_for_more(20)
        write_then_stop(producer, writing, 1200)
        in_records = read_many(broker, [f"{name}-in"], dedupe=False)[f"{name}-in"]
        assert len(in_records) == producer.sent >= 1200
        oracle = Oracle(PROGRAM, "Tick", in_records)
        total = sum(len(v) for v in oracle.outputs.values())
        wait_for(lambda: watcher.distinct() >= total, 180, what="all outputs")
        b_after = _assignments(logs[1])  # before the workers stop (stopping revokes their tasks)
    except AssertionError as exc:
        raise told(exc, *logs) from exc
    finally:
        watcher.close()
        producer.stop.set()
        writing.join(30)
        stop_workers(workers)

    after = _assignments(logs[0])[restarted_at:]
    assert after and after[0] == ("assigned", sorted(a_tasks)), f"worker a got {after} back, had {sorted(a_tasks)}"
    rebalances_of_b = b_after[len(b_before) :]
    assert rebalances_of_b == [], f"worker b was rebalanced while a was away {POD_RESTART_S} s: {rebalances_of_b}"
    got, repeats = outputs_by_key(read_many(broker, [f"{name}-out"], dedupe=False)[f"{name}-out"])
    assert repeats == 0, "a read_committed reader saw a record twice"
    wrong = {k: (len(got.get(k, [])), len(v)) for k, v in oracle.outputs.items() if got.get(k) != v}
    assert not wrong, f"keys whose outputs differ from an uninterrupted run (got, want): {wrong}"
