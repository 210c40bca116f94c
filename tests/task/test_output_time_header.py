"""An output of a program on the wall clock carries its emission time to the microsecond in
``es-time`` when it is not a whole millisecond (docs/worker.md, "headers"): a reader gets the
time back from it (``codec.header_time``, what ``eventscript tail`` shows), and the record's
timestamp is its millisecond."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from eventscript.task import codec
from eventscript.task.task import Task

from .task_helpers import T0, make_task, tick

#: The wall clock's reading while the task runs (ns): 123,456 µs past T0.
NOW_NS = (T0 * 1000 + 123_456) * 1000


def test_a_wall_clock_output_carries_its_microsecond_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: NOW_NS)  # (read by the task's wall clock)
    task: Task = make_task(tmp_path, clock="wall")
    task.load_from_store()
    for offset, key in enumerate(["a", "b", "a"]):
        task.add(tick(offset, T0, key))
    task.process(0)
    outputs = [r for r in task.take_outputs() if r.topic == "out"]
    assert len(outputs) == 3
    for r in outputs:
        raw = codec.header(r.headers, codec.HEADER_TIME)
        assert raw == b"%d" % (T0 * 1000 + 123_456)
        assert codec.header_time(raw) == NOW_NS // 1000
        assert r.timestamp == T0 + 123  # (the millisecond)
