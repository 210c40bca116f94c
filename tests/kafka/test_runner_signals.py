"""A SIGTERM while ``eventscript run`` is still starting (its topics checked, which takes seconds on a
slow broker) is an orderly stop: the process exits 0 and starts no worker, rather than dying of the
signal (-15), which an orchestrator that scales down a starting pod, or the fault harness, sees."""

from __future__ import annotations

import os
import signal
from types import SimpleNamespace
from typing import Any

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


def test_a_sigterm_while_an_input_topic_is_waited_for_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    """``eventscript run`` waits for an input topic that does not exist yet (its writer, another
    worker, has not started): an orchestrator's SIGTERM then ends the wait, and the process, as
    an orderly stop (exit 0) rather than dying of the signal (-15)."""
    from eventscript.kafka import supervisor
    from eventscript.kafka.admin import Admin, StoppedWaiting

    runner = TopologyRunner.__new__(TopologyRunner)
    runner.topo, runner.cfgs = SimpleNamespace(), []
    runner.workers, runner.health, runner.health_port = [], None, None
    runner._signals, runner._first_signal = 0, None
    waits: list[int] = []

    class WaitingAdmin:
        """Admin whose input topic never comes; the orchestrator's SIGTERM arrives meanwhile."""

        def __init__(self, topo: object) -> None:
            pass

        def prepare(self, programs: object, wait_for_inputs: bool, stopping: Any) -> dict[str, int]:
            assert wait_for_inputs
            while not stopping():
                waits.append(1)
                if len(waits) == 3:
                    os.kill(os.getpid(), signal.SIGTERM)
            raise StoppedWaiting("stopped while waiting for input topic(s) in")

    monkeypatch.setattr(supervisor, "compile_programs", lambda topo, cfgs: {})
    monkeypatch.setattr(supervisor, "Admin", WaitingAdmin)
    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        runner.stop_on_sigterm()
        runner.prepare()
        assert runner.workers == [] and len(waits) == 3
        monkeypatch.setattr(supervisor, "Admin", Admin)  # (run must not prepare again)
        assert runner.run() == 0
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    assert not runner.interrupted
