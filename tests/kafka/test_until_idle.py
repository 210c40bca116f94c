"""``--until-idle`` ends a worker only once nothing more can come: every input read to its end,
every task restored, and no input's end held back by a transaction left open. A
``read_committed`` reader is told of the end at the first record of the oldest transaction still
open; a writer killed mid-transaction leaves it open until the broker aborts it, and what was
committed after it is still to come. A worker that counted itself idle there (or kept counting
while a rebalance brought it tasks to restore) ended with those records unread: the event-time
killed-midway runs lost outputs under exactly-once in CI (2026-11-26)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from kafka_helpers import Broker, RunnerThread, counts_by_key, program_topology, unique

from eventscript.kafka.admin import Admin
from eventscript.kafka.config import load_topology

COUNT = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""

#: Seconds the test keeps the writer's transaction open once the worker holds its task: well
#: past the worker's idle time.
HELD = 5.0


@pytest.mark.kafka
@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_a_transaction_left_open_on_an_input_is_waited_out(broker: Broker, tmp_path: Path, guarantee: str) -> None:
    broker.require_real("a transaction left open holding back the last stable offset")
    name, path = program_topology(
        broker, tmp_path, COUNT, "idle", "Hit", partitions=1, settings={"clock": "record", "guarantee": guarantee}
    )
    topo = load_topology(path)
    Admin(topo).prepare(topo.programs)
    topic = f"{name}-in"
    hit = orjson.dumps({"k": "a"})
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, key=b"a", value=hit)
    plain.flush(30)
    # A writer that stopped mid-transaction (killed, frozen): its record is written, not committed.
    stalled = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": unique("stalled")})
    stalled.init_transactions(30)
    stalled.begin_transaction()
    stalled.produce(topic, key=b"a", value=hit)
    stalled.flush(30)
    plain.produce(topic, key=b"a", value=hit)  # committed after it: unreadable until it ends
    plain.flush(30)
    worker = RunnerThread(path, until_idle=2.0).start(timeout=120)  # (returns once it holds its task)
    ended = threading.Timer(HELD, lambda: stalled.abort_transaction(30))
    started = time.monotonic()
    ended.start()
    try:
        assert worker.finish(timeout=120) == 0
    finally:
        ended.join()
    took = time.monotonic() - started
    # The aborted record never counts; the one committed after it does, once the abort freed it.
    assert counts_by_key(broker, f"{name}-out") == {"a": [1, 2]}
    assert took >= HELD, f"the worker ended after {took:.1f} s, before the open transaction did"
