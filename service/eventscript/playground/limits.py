"""What one playground request may use. A playground is reachable by whoever can reach its port
(127.0.0.1 unless ``--host``), so a request cannot hold the server for long or fill its memory."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..engine.timeutil import format_time


class LimitExceeded(Exception):
    """A request went past a limit; the message says which, and what to do."""


@dataclass(frozen=True)
class Limits:
    program_bytes: int = 200_000  # per program (the document's largest is under 2 kB)
    programs: int = 12  # programs of a pipeline or topology
    trace_bytes: int = 5_000_000  # about 100,000 events of the shipped samples' size
    run_seconds: float = 10.0
    outputs: int = 20_000
    steps: int = 250_000  # recorded steps (events, timer firings, stage-to-stage events)
    allow_externals: bool = False

    def check_program(self, name: str, text: str) -> None:
        size = len(text.encode("utf-8"))
        if size > self.program_bytes:
            raise LimitExceeded(
                f"{name}: the program is {size} bytes, over the playground's limit of "
                f"{self.program_bytes}; run it with 'eventscript test' instead"
            )

    def check_programs(self, count: int) -> None:
        if count > self.programs:
            raise LimitExceeded(f"{count} programs, over the playground's limit of {self.programs}")

    def check_trace(self, text: str) -> None:
        size = len(text.encode("utf-8"))
        if size > self.trace_bytes:
            raise LimitExceeded(
                f"the trace is {size} bytes, over the playground's limit of {self.trace_bytes}; "
                f"shorten it, or run it with 'eventscript test'"
            )

    def run_guard(self) -> RunGuard:
        return RunGuard(self)


#: A run's limit is met by a long trace, or by timers firing often over a long span of time.
_WHAT_TO_DO = "shorten the trace (or the time it spans, if timers fire often), or run it with 'eventscript test'"


class RunGuard:
    """Called with the recorder before each step of a run: stops it past the time, output or
    step limit (a single step's actions are not interrupted). Keeps the recorder, so that what a
    stopped run did can be shown."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.deadline = 0.0  # set at the run's first step: reading the trace is not its time
        self.recorder: Any = None

    def __call__(self, recorder: Any) -> None:
        if self.recorder is None:
            self.deadline = time.monotonic() + self.limits.run_seconds
        self.recorder = recorder
        lim = self.limits
        if len(recorder.outputs) > lim.outputs:
            met = f"the run emitted more than {lim.outputs} events"
        elif len(recorder.steps) >= lim.steps:
            met = f"the run took more than {lim.steps} steps"
        elif time.monotonic() > self.deadline:
            met = f"the run took longer than {lim.run_seconds:g} s"
        else:
            return
        recorder.drop_unfinished()  # (what is shown are whole steps: this one may be a later stage's)
        raise LimitExceeded(f"{met}, the playground's limit{_where(recorder)}; {_WHAT_TO_DO}")


def _where(recorder: Any) -> str:
    """Where a stopped run had got to, in the trace's time: a timer that fires every millisecond
    stops within the first seconds of the trace, a long trace near its end."""
    steps = recorder.steps
    if not steps:
        return ""
    return (
        f" (stopped at {format_time(steps[-1].time)}, after {len(steps)} steps and "
        f"{len(recorder.outputs)} outputs: the run up to there is shown)"
    )
