"""An exactly-once worker whose ``send_offsets_to_transaction`` never returns gives the batch up
and goes on (issue 20: the fault harness's exactly-once stalls; librdkafka issues 5456 and 5511).

After a broker kill, thread dumps showed a worker blocked in librdkafka's
``rd_kafka_send_offsets_to_transaction``, an untimed wait: its log went silent and its consumer
unpolled, and the group kept its tasks until ``max.poll.interval.ms`` (5 minutes). Here the
worker's real producer (made through a wrapping ``ClientSupplier``) blocks in that call once
armed, until the end of the test, as librdkafka did. The worker must give the batch up within
``HANG_GRACE`` past the call's timeout, never call the hung producer again, rejoin with a new
producer (whose ``init_transactions`` aborts the hung transaction), become ready again, and give
every output exactly once: a read_committed reader sees no repeat, and per key the outputs equal
an uninterrupted run (``kafka_helpers.Oracle``).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import (
    Broker,
    KeyedProducer,
    Oracle,
    RunnerThread,
    outputs_by_key,
    program_topology,
    read_many,
    wait_for,
)

from count_programs import COUNT

PROGRAM = COUNT
PARTITIONS = 2
KEYS = 20
RECORDS = 1200
RATE = 400.0
#: The transactional calls' timeout and the grace past it (the defaults: 5 s and 15 s).
TXN_TIMEOUT = 1.0
HANG_GRACE = 3.0


class HangingProducer:
    """The worker's real producer, whose first ``send_offsets_to_transaction`` after ``arm`` blocks
    until ``release`` (librdkafka's untimed wait). Every call made on it once it hung is noted."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.armed = threading.Event()
        self.hanging = threading.Event()
        self.released = threading.Event()
        #: Calls made on the producer after its call hung (the worker must make none).
        self.after_hang: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.hanging.is_set():
                self.after_hang.append(name)
            elif name == "send_offsets_to_transaction" and self.armed.is_set():
                self.hanging.set()
                self.released.wait()
                raise AssertionError("the hung call was released: the test is over")
            return attr(*args, **kwargs)

        return call


@pytest.mark.kafka
@pytest.mark.slow
def test_a_send_offsets_that_never_returns_gives_the_batch_up(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eventscript.kafka import waiting
    from eventscript.kafka.clients import ClientSupplier

    monkeypatch.setattr(waiting, "TXN_TIMEOUT", TXN_TIMEOUT)
    monkeypatch.setattr(waiting, "HANG_GRACE", HANG_GRACE)
    name, topo_path = program_topology(
        broker,
        tmp_path,
        PROGRAM,
        "hung",
        "Tick",
        partitions=PARTITIONS,
        settings={"clock": "record", "guarantee": "exactly_once", "commit_interval_ms": 50},
    )
    producers: list[HangingProducer] = []

    class Supplier(ClientSupplier):
        def producer(self, conf: dict[str, Any]) -> Any:
            producers.append(HangingProducer(super().producer(conf)))
            return producers[-1]

    run = RunnerThread(topo_path, supplier=Supplier()).start()
    hung = producers[0]
    try:
        producer = KeyedProducer(broker, f"{name}-in", PARTITIONS)
        writing = producer.start(RECORDS, KEYS, rate=RATE)
        wait_for(lambda: producer.sent >= RECORDS // 3, 60, what="a third of the records written")
        hung.armed.set()
        wait_for(hung.hanging.is_set, 30, what="send_offsets_to_transaction to hang")
        since = time.monotonic()
        wait_for(lambda: len(producers) >= 2, TXN_TIMEOUT + HANG_GRACE + 30, what="a new producer")
        gave_up = time.monotonic() - since
        wait_for(run.runner.ready, 60, what="readiness with the new producer")
        ready_after = time.monotonic() - since
        writing.join(60)
        assert run.finish(180) == 0, [w.failure for w in run.runner.workers]
        print(f"gave the batch up after {gave_up:.1f} s, ready again after {ready_after:.1f} s")
        assert gave_up >= TXN_TIMEOUT + HANG_GRACE - 0.5, "the call was given up before its grace"
        assert hung.after_hang == [], f"the hung producer was used again: {hung.after_hang}"
    finally:
        hung.released.set()
    raw = read_many(broker, [f"{name}-in", f"{name}-out", f"{name}-err"], dedupe=False)
    assert len(raw[f"{name}-in"]) == RECORDS
    assert raw[f"{name}-err"] == []
    oracle = Oracle(PROGRAM, "Tick", raw[f"{name}-in"])
    got, repeats = outputs_by_key(raw[f"{name}-out"])
    assert repeats == 0, f"a read_committed reader saw {repeats} outputs twice"
    assert set(got) == set(oracle.outputs)
    for key, lines in oracle.outputs.items():
        assert got[key] == lines, f"key {key}: outputs differ from the uninterrupted run"
    faults = run.faults()
    assert faults["rejoined"] == 1, faults
