"""Partitions added to an input topic while the program runs (issue 20 fault 6): the worker
stops with a message that says what happened and what to do. On db30bd4 it ran on and never read
the new partition's records (and a restart then refused to start)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions
from kafka_helpers import Broker, program_topology, wait_for

from eventscript.kafka import input_partitions
from eventscript.kafka.config import load_topology
from eventscript.kafka.supervisor import TopologyRunner

PROGRAM = "in {string k;} Hit group(Hit.k)  out long N  ( Hit() { !>N(1); } )*"


@pytest.mark.kafka
def test_a_worker_stops_when_an_input_gets_more_partitions(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker.require_real("adding partitions (CreatePartitions)")
    monkeypatch.setattr(input_partitions, "CHECK_INTERVAL", 0.5)
    name, path = program_topology(broker, tmp_path, PROGRAM, "addparts", "Hit", partitions=2)
    runner = TopologyRunner(load_topology(path))
    runner.prepare()
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(runner.run(install_signals=False)), daemon=True)
    thread.start()
    try:
        worker = runner.workers[0]
        wait_for(lambda: len(worker.tasks) == 2, 120, what="the worker holding both tasks")
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce(f"{name}-in", orjson.dumps({"k": "a"}), b"a", 0)
        assert producer.flush(30) == 0
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for fut in admin.create_partitions([NewPartitions(f"{name}-in", 3)]).values():
            fut.result(30)
        started = time.monotonic()
        thread.join(60)
        assert not thread.is_alive(), "the worker ran on with an input partition no task reads"
    finally:
        if thread.is_alive():
            runner.stop()
            thread.join(30)
    assert status == [1]
    message = str(worker.failure)
    assert isinstance(worker.failure, input_partitions.InputPartitionsChanged), worker.failure
    assert f"input topic {name}-in now has 3 partitions" in message and "made for 2" in message
    assert "eventscript reset" in message and f"--program {name}" in message
    assert time.monotonic() - started < 60
