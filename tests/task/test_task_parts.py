"""The parts of the host-neutral task (service/eventscript/task/), each on its own, and the
hooks the backfill drives the task through instead of replacing its methods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import confluent_kafka
import orjson
import pytest

from eventscript.backfill import key_parallel, key_split
from eventscript.engine.timeutil import MAX_TIME
from eventscript.task import routing
from eventscript.task.clock import RecordClock, WallClock
from eventscript.task.lifecycle import TaskState
from eventscript.task.record import Record

from .task_helpers import T0, PlainRecord, make_task, tick


def kafka_message(
    topic: str, partition: int, offset: int, ts: int, key: bytes | None, value: bytes | None, headers: Any
) -> confluent_kafka.Message:
    """A confluent-kafka ``Message``, built as a ``PlainRecord`` is."""
    return confluent_kafka.Message(
        topic=topic, partition=partition, offset=offset, key=key, value=value, timestamp=(1, ts), headers=headers
    )


def test_kafka_messages_and_plain_records_are_records() -> None:
    assert isinstance(tick(0, T0, "a", kafka_message), Record)
    assert isinstance(tick(0, T0, "a"), Record)
    assert not isinstance(object(), Record)


def test_a_plain_record_reads_as_the_kafka_message_of_the_same_fields() -> None:
    headers = [("es-seq", b"3"), ("x", None)]
    plain = PlainRecord("in", 2, 5, T0, b"k", b"v", headers)
    message = kafka_message("in", 2, 5, T0, b"k", b"v", headers)
    reads = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")
    assert [getattr(plain, r)() for r in reads] == [getattr(message, r)() for r in reads]
    assert PlainRecord("in", 0, 0, T0, None, None).headers() is None  # (as a Message without headers)
    assert plain == PlainRecord("in", 2, 5, T0, b"k", b"v", list(headers))
    assert plain != PlainRecord("in", 2, 6, T0, b"k", b"v", headers)


def test_a_plain_record_runs_through_a_task_as_a_kafka_message_does(tmp_path: Path) -> None:
    outputs = []
    for i, make in enumerate((PlainRecord, kafka_message)):
        task = make_task(tmp_path / f"t{i}")
        task.load_from_store()
        for n in range(3):
            task.add(tick(n, T0 + n, "a", make))
        task.process(0)
        outputs.append([(r.topic, r.key, r.value, r.headers) for r in task.take_outputs() if not r.changelog])
        task.close()
    assert outputs[0] == outputs[1]
    assert [orjson.loads(v)["count"] for _, _, v, _ in outputs[0]] == [1, 2, 3]


def test_the_record_clock_moves_forward_only_and_persists_each_move_once() -> None:
    clock = RecordClock()
    assert clock.to_record(T0) == 0 and clock.now() == T0 * 1000
    assert clock.unsaved() == b"%d" % (T0 * 1000)
    assert clock.unsaved() is None  # nothing moved since
    clock.to_record(T0 - 5)  # a late record is processed at the current time
    assert clock.now() == T0 * 1000 and clock.moved_to == T0 * 1000
    assert clock.max_record_ms * 1000 <= MAX_TIME < (clock.max_record_ms + 1) * 1000
    again = RecordClock()
    again.restore(b"%d" % (T0 * 1000))
    assert again.now() == T0 * 1000 and again.unsaved() is None


def test_the_wall_clock_fires_due_timers_on_poll_and_wakes_at_the_next_deadline() -> None:
    now = [T0 * 1_000_000]  # ns
    clock = WallClock(lambda: now[0])
    fired: list[int] = []

    class Target:
        def fire_timer(self, ctx: Any, deadline: int) -> None:
            fired.append(deadline)

    class Ctx:  # what the timer queue keeps on an instance
        timer = None

    deadline = clock.now() + 1_000
    clock.set_timer(Target(), Ctx(), deadline)
    assert clock.next_wake() == deadline
    assert clock.poll() == 0 and not fired
    now[0] += 2_000_000
    assert clock.poll() == 1 and fired == [deadline]
    assert not clock.fire_due() and RecordClock().next_wake() is None


def test_a_dry_run_feeds_nothing_and_tells_the_observer_keys_and_clocks(tmp_path: Path) -> None:
    seen: list[tuple[int, Any, int, int]] = []

    class Observer:
        def processed(self, msg: Any, key: Any, clock_before: int, moved_to: int) -> None:
            seen.append((msg.offset(), key, clock_before, moved_to))

    task = make_task(tmp_path / "dry")
    task.observe(Observer(), dry_run=True)
    task.load_from_store()
    records = [tick(0, T0, "a"), tick(1, T0 + 40_000, "b"), tick(2, T0 + 10, "a")]  # the last one is late
    for r in records:
        task.add(r)
    assert task.process(0) == 3
    assert seen == [
        (0, ("a",), 0, T0 * 1000),
        (1, ("b",), T0 * 1000, (T0 + 40_000) * 1000),
        (2, ("a",), (T0 + 40_000) * 1000, -1),
    ]
    assert task.engine.instance_count == 0  # no instance, so no timer of "a" fired at +30 s
    assert task.take_outputs() == []
    task.close()


def test_a_task_processes_only_while_running(tmp_path: Path) -> None:
    task = make_task(tmp_path / "life")
    assert task.state is TaskState.CREATED
    task.add(tick(0, T0, "a"))
    assert task.process(0) == 0  # its committed state is not loaded yet
    task.load_from_store()
    assert task.state is TaskState.RUNNING and task.process(0) == 1
    assert task.position == {"in:0": 1}
    task.rewind()
    assert task.state is TaskState.RESTORING and task.position == {} and task.take_outputs() == []
    task.add(tick(0, T0, "a"))
    task.resume()  # records fetched before the seek are dropped
    assert task.state is TaskState.RUNNING and task.process(0) == 0
    task.close()
    assert task.state is TaskState.CLOSED


def test_one_key_group_hash() -> None:
    assert key_parallel.key_group is routing.key_group and key_split.key_group is routing.key_group
    keys = [f"key-{i}".encode() for i in range(200)]
    groups = [routing.key_group(k, 4) for k in keys]
    assert set(groups) == {0, 1, 2, 3}  # it spreads keys
    assert routing.key_group(b"key-7", 4) == groups[7]  # and is a function of the key alone


@pytest.mark.parametrize("clock", ["record", "wall"])
def test_the_task_has_no_clock_branch(clock: str, tmp_path: Path) -> None:
    """The task asks its clock; which clock it is shows only in what the clock answers."""
    import inspect

    from eventscript.task import task as task_module

    source = inspect.getsource(task_module)
    assert "clock ==" not in source and "record_clock" not in source and "type: ignore[attr-defined]" not in source
    task = make_task(tmp_path / clock, clock)
    assert isinstance(task.clock, RecordClock if clock == "record" else WallClock)
    task.close()
