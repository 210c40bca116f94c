"""``task.clock.SimulatedClock`` (issue 19): the tester's time as a task clock. Tasks sharing one
fire their timers in one global order (deadline, then the order they were set, whichever task
set them), a record does not move it (the host does, in µs), and timers a record makes due at
once are left to the host to fire after the step."""

from __future__ import annotations

from pathlib import Path

import orjson

from eventscript.automata.compile import compile_source
from eventscript.task.clock import SimulatedClock
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig

from .task_helpers import T0, PlainRecord, program_config

#: Emits its name one second after each A, or at once after each B.
LATER = (
    "in long A, long B\nout long {name}\n"
    "( A(v) elapse[1 sec]() {{ !>{name}(v); }} | B(v) elapse[0 sec]() {{ !>{name}(v); }} )*"
)


def simulated_task(name: str, clock: SimulatedClock, store: Path) -> Task:
    cfg = program_config([InputConfig(topic=f"{name}-in", event_from={"header": "es-event"})], name=name)
    task = Task(
        0,
        compile_source(LATER.format(name=name), name=name).require(),
        cfg,
        cfg.inputs,
        f"{name}-rep",
        f"{name}-log",
        1,
        store / name,
        clock=clock,
    )
    task.load_from_store()
    return task


def record(topic: str, offset: int, name: str, value: int) -> PlainRecord:
    return PlainRecord(topic, 0, offset, T0, None, orjson.dumps(value), [("es-event", name.encode())])


def emitted(task: Task) -> list[tuple[str, int]]:
    return [(dict(r.headers)["es-event"].decode(), r.timestamp) for r in task.take_outputs()]


def test_tasks_sharing_one_clock_fire_their_timers_in_one_order(tmp_path: Path) -> None:
    clock = SimulatedClock()
    clock.set_now(T0 * 1000)
    first, second = simulated_task("P", clock, tmp_path), simulated_task("Q", clock, tmp_path)
    fired: list[str] = []
    for task in (first, second):
        task.attach(lambda topic, p, k, v, headers, ts, log: fired.append(dict(headers)["es-event"].decode()))
    # Q's timer is set first, then P's, with the same deadline: Q fires first though P is task 0.
    second.add(record("Q-in", 0, "A", 1))
    second.process(0)
    first.add(record("P-in", 0, "A", 2))
    first.process(0)
    assert clock.now() == T0 * 1000  # a record moves no simulated clock
    clock.advance_to(T0 * 1000 + 1_000_000)
    assert fired == ["Q", "P"]


def test_a_timer_due_at_once_waits_for_the_host(tmp_path: Path) -> None:
    clock = SimulatedClock()
    clock.set_now(T0 * 1000 + 250)  # (µs: finer than a record's ms)
    task = simulated_task("P", clock, tmp_path)
    task.add(record("P-in", 0, "B", 7))
    task.process(0)
    assert emitted(task) == []  # a record clock fires it after the record; here the host's step ends first
    assert clock.run_due() == 1
    assert emitted(task) == [("P", T0)]
    assert clock.now() == T0 * 1000 + 250
