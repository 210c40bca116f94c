"""A worker started while the broker is stalled (SIGSTOP: connections accepted, nothing answered)
or between its calls: ``TopologyRunner.prepare`` must neither hang nor fail with a traceback,
but say in one line what is wrong -- Kafka at the bootstrap servers did not answer -- and what to
check; the command then exits with status 2 (docs/worker.md, "Starting").

A stalled broker is the hard case: a refused connection (no broker at all) fails at once, while a
stalled one lets each request wait for its timeout.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import Broker, topology, unique

PROGRAM = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count;} Count

{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count}); } )*
"""


def _runner(broker: Broker, tmp_path: Path) -> Any:
    from eventscript.kafka.config import load_topology
    from eventscript.kafka.supervisor import TopologyRunner

    name = unique("start")
    (tmp_path / "p.es").write_text(PROGRAM)
    topo = topology(
        broker,
        tmp_path,
        [
            {
                "name": name,
                "source": "p.es",
                "inputs": [{"topic": f"{name}-in", "event": "Tick"}],
                "outputs": {"default": f"{name}-out"},
            }
        ],
        {f"{name}-in": {"partitions": 2}},
    )
    return TopologyRunner(load_topology(topo))


def _prepare(runner: Any, limit: float) -> BaseException | None:
    """Run ``runner.prepare()`` in a thread; what it raised (None: it returned). It must end
    within ``limit`` seconds."""
    outcome: list[BaseException | None] = []

    def call() -> None:
        try:
            runner.prepare()
            outcome.append(None)
        except BaseException as exc:  # the test inspects it
            outcome.append(exc)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"prepare() hung for {limit:.0f} s while the broker was stalled"
    return outcome[0]


def _assert_clear(exc: BaseException | None, broker: Broker) -> None:
    from eventscript.kafka.config import TopologyError

    assert isinstance(exc, TopologyError), f"not a clear error but {exc!r}"
    text = str(exc)
    assert "\n" not in text and "KafkaError{" not in text, text
    assert broker.bootstrap in text and "check" in text, text


@pytest.mark.kafka
@pytest.mark.slow
def test_started_while_the_broker_is_stalled(broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The broker stalled before the worker asks for anything: one clear line naming the
    bootstrap servers and what to check."""
    from eventscript.kafka import admin

    if broker.pid is None:
        pytest.skip("needs a broker process this test can stop (one the tests started)")
    monkeypatch.setattr(admin, "METADATA_TIMEOUT", 2.0)
    runner = _runner(broker, tmp_path)
    os.kill(broker.pid, signal.SIGSTOP)
    try:
        exc = _prepare(runner, 30)
    finally:
        os.kill(broker.pid, signal.SIGCONT)
    _assert_clear(exc, broker)
    assert runner.workers == []


@pytest.mark.kafka
@pytest.mark.slow
def test_broker_stalls_while_topics_are_created(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker answers the metadata request, then stalls just before the topics are created:
    the creation must give up within its timeout with the same clear line (it waited on a future
    with no timeout), and a second start once the broker is back must succeed."""
    from eventscript.kafka import admin

    if broker.pid is None:
        pytest.skip("needs a broker process this test can stop (one the tests started)")
    monkeypatch.setattr(admin, "METADATA_TIMEOUT", 2.0)
    monkeypatch.setattr(admin, "CREATE_TIMEOUT", 3.0)
    real = admin.AdminClient
    stalled = threading.Event()

    class Stalling:
        """The admin client, stopping the broker just before its first create_topics."""

        def __init__(self, conf: dict[str, Any]) -> None:
            self._client = real(conf)

        def __getattr__(self, name: str) -> Any:
            if name == "create_topics" and not stalled.is_set():
                stalled.set()
                assert broker.pid is not None
                os.kill(broker.pid, signal.SIGSTOP)
            return getattr(self._client, name)

    monkeypatch.setattr(admin, "AdminClient", Stalling)
    runner = _runner(broker, tmp_path)
    try:
        exc = _prepare(runner, 40)
    finally:
        os.kill(broker.pid, signal.SIGCONT)
    assert stalled.is_set()
    _assert_clear(exc, broker)
    monkeypatch.setattr(admin, "AdminClient", real)
    assert _prepare(runner, 60) is None
    assert len(runner.workers) == 1
