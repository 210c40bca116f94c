"""An output of a program on the wall clock carries its emission time in its record timestamp
alone: the worker's wall clock reads whole milliseconds, so no output needs the finer
``es-time`` header (docs/worker.md, "headers"), and its timers still fire at their deadlines.
The header is kept for a time that is not a whole millisecond (``codec.header_time`` reads it)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from eventscript.automata.compile import compile_source
from eventscript.task import codec
from eventscript.task.clock import WallClock
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig

from .task_helpers import T0, PlainRecord, build_task, make_task, program_config, tick

#: The wall clock's reading while the task runs (ns): 123,456.789 µs past T0.
NOW_NS = (T0 * 1000 + 123_456) * 1000 + 789


def test_a_wall_clock_output_carries_no_time_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: NOW_NS)  # (read by the task's wall clock)
    task: Task = make_task(tmp_path, clock="wall")
    task.load_from_store()
    for offset, key in enumerate(["a", "b", "a"]):
        task.add(tick(offset, T0, key))
    task.process(0)
    outputs = [r for r in task.take_outputs() if r.topic == "out"]
    assert len(outputs) == 3
    for r in outputs:
        assert codec.header(r.headers, codec.HEADER_TIME) is None
        assert [name for name, _ in r.headers] == [codec.HEADER_EVENT, codec.HEADER_PROGRAM, codec.HEADER_ID]
        assert r.timestamp == T0 + 123  # (the millisecond the clock read)
    assert task.clock.now() == (T0 + 123) * 1000


def test_the_wall_clock_reads_whole_milliseconds_and_never_goes_back() -> None:
    now = [NOW_NS]
    clock = WallClock(lambda: now[0])
    assert clock.now() == (T0 + 123) * 1000
    now[0] += 500_000  # 0.5 ms later: still the same millisecond
    assert clock.refresh() == (T0 + 123) * 1000
    now[0] += 100_000  # crosses into the next one
    assert clock.refresh() == (T0 + 124) * 1000
    now[0] -= 5_000_000  # the machine's clock stepped back: the task's does not
    assert clock.refresh() == (T0 + 124) * 1000


def test_a_wall_clock_timer_fires_at_its_deadline_between_readings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2-second timer armed at a reading of 123.456789 ms past T0 is due at T0 + 2,123 ms (the
    armed reading, truncated, plus 2 s): it fires on the first poll at or after that, its output
    stamped with the deadline, also when the poll comes late and off the millisecond."""
    program = """
    in {string k;} Arm group(Arm.k)
    out {string k; time armed;} Fired
    ( Arm() { armed = now(); } elapse[2 seconds]() { !>Fired({k: group[0], armed: armed}); } )*
    """
    now = [NOW_NS]
    monkeypatch.setattr(time, "time_ns", lambda: now[0])  # (read by the task's wall clock)
    cfg = program_config([InputConfig(topic="in", event="Arm")], "wall")
    task = build_task(compile_source(program, name="p").require(), cfg, tmp_path)
    task.load_from_store()
    task.add(PlainRecord("in", 0, 0, T0, b"a", orjson.dumps({"k": "a"})))
    task.process(0)
    assert [r for r in task.take_outputs() if r.topic == "out"] == []
    now[0] += 2_000_000_000 - 457_000  # 1 µs short of the deadline (T0 + 2,123 ms)
    assert task.fire_timers() == 0
    now[0] += 1_000 + 333_333  # past it, off the millisecond
    assert task.fire_timers() == 1
    fired: list[Any] = [r for r in task.take_outputs() if r.topic == "out"]
    assert len(fired) == 1
    assert fired[0].timestamp == T0 + 2_123
    assert codec.header(fired[0].headers, codec.HEADER_TIME) is None
    assert orjson.loads(fired[0].value)["k"] == "a"


def test_a_time_finer_than_a_millisecond_is_read_back_from_its_header() -> None:
    raw = b"%d" % (T0 * 1000 + 123_456)
    assert codec.header_time(raw) == T0 * 1000 + 123_456
