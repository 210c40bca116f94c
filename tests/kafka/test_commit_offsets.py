"""Every exactly-once commit carries the input offsets, even when its batch consumed no input
(issue 20, fault 2).

The offsets sent to a transaction carry the consumer's group generation, which is what fences a
zombie member; a commit with none is checked by nothing. A restored task's position used to be
``{}`` until it consumed a record, so a batch holding only the outputs of wall-clock timers (the
zombie's overdue timers in the issue's scenario) committed no offsets. Here a worker processes a
record and stops; a second worker restores the task, whose timer is due, and fires it with no new
input. Each of its transactions must have sent the committed offsets before committing.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import Broker, KeyedProducer, topology, unique, wait_for
from test_zombie_commit import PROGRAM, _outputs


class OffsetsPerTransaction:
    """Wraps a transactional producer: for each committed transaction, the offsets it sent."""

    def __init__(self, client: Any, seen: list[list[Any]]) -> None:
        self._client = client
        self._seen = seen
        self._offsets: list[Any] = []

    def begin_transaction(self, *args: Any) -> Any:
        self._offsets = []
        return self._client.begin_transaction(*args)

    def send_offsets_to_transaction(self, positions: list[Any], *args: Any) -> Any:
        self._offsets.extend((tp.topic, tp.partition, tp.offset) for tp in positions)
        return self._client.send_offsets_to_transaction(positions, *args)

    def commit_transaction(self, *args: Any) -> Any:
        result = self._client.commit_transaction(*args)
        self._seen.append(self._offsets)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _events(broker: Broker, topic: str) -> list[str]:
    return [event for event, _ in _outputs(broker, topic)]


@pytest.mark.kafka
@pytest.mark.slow
def test_timer_only_commit_sends_the_committed_offsets(broker: Broker, tmp_path: Path) -> None:
    from eventscript.kafka.clients import ClientSupplier
    from eventscript.kafka.config import load_topology
    from eventscript.kafka.supervisor import TopologyRunner

    name = unique("offsets")
    (tmp_path / "p.es").write_text(PROGRAM)
    topo_path = topology(
        broker,
        tmp_path,
        [
            {
                "name": name,
                "source": "p.es",
                "clock": "wall",
                "guarantee": "exactly_once",
                "commit_interval_ms": 50,
                "inputs": [{"topic": f"{name}-in", "event": "Tick"}],
                "outputs": {"default": f"{name}-out"},
                "errors": f"{name}-err",
            }
        ],
        {f"{name}-in": {"partitions": 1}},
    )
    commits: list[list[Any]] = []

    class Supplier(ClientSupplier):
        def producer(self, conf: dict[str, Any]) -> Any:
            return OffsetsPerTransaction(super().producer(conf), commits)

    def start() -> tuple[TopologyRunner, threading.Thread]:
        runner = TopologyRunner(load_topology(topo_path), supplier=Supplier())
        runner.prepare()
        t = threading.Thread(target=lambda: runner.run(install_signals=False), daemon=True)
        t.start()
        wait_for(runner.ready, 60, what="the worker to own its task")
        return runner, t

    def stop(runner: TopologyRunner, t: threading.Thread) -> None:
        runner.stop()
        t.join(60)
        assert not t.is_alive(), "the worker did not stop"

    runner, t = start()
    try:
        producer = KeyedProducer(broker, f"{name}-in", 1)
        producer.send("k", {"k": "k", "n": 0}, 1_767_225_600_000)
        producer.producer.flush(30)
        wait_for(lambda: _events(broker, f"{name}-out") == ["Count"], 60, what="the Count output committed")
    finally:
        stop(runner, t)
    commits.clear()
    runner, t = start()  # restores the key, whose timer is due within seconds; no input comes
    try:
        wait_for(
            lambda: _events(broker, f"{name}-out") == ["Count", "Quiet"],
            60,
            what="the restored task's timer output committed",
        )
    finally:
        stop(runner, t)
    assert commits, "the second worker committed nothing"
    in_tp = (f"{name}-in", 0)
    for sent in commits:
        offsets = {(topic, p): off for topic, p, off in sent}
        assert offsets.get(in_tp) == 1, f"a transaction committed without the input's offset 1: {commits}"
