"""A SIGTERM while ``eventscript run`` is still starting (its topics checked, which takes seconds on a
slow broker) is an orderly stop: the process exits 0 and starts no worker, rather than dying of the
signal (-15), which an orchestrator that scales down a starting pod, or the fault harness, sees."""

from __future__ import annotations

import os
import signal
from types import SimpleNamespace

import pytest

from eventscript.kafka.supervisor import TopologyRunner


def test_a_sigterm_while_starting_exits_0_without_starting_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = TopologyRunner.__new__(TopologyRunner)  # no topology: prepare is the stand-in below
    runner.workers, runner.health, runner.health_port = [], None, None
    runner._signals, runner._first_signal = 0, None
    started: list[str] = []
    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)

    def prepare() -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # the orchestrator's stop, while the topics are checked
        runner.workers = [SimpleNamespace(cfg=SimpleNamespace(name="p"), run=lambda _: started.append("p"))]

    monkeypatch.setattr(runner, "prepare", prepare)
    try:
        assert runner.run() == 0
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    assert started == [] and not runner.interrupted
