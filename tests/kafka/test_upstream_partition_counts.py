"""A reader gated on a topic waits on a marker from each task of the programs writing it, and a
writer's task count is its inputs' partition count. The worker counted those tasks from the
topology's ``topics:`` (or 1 for a topic it does not declare), not from the brokers: a writer's
input made before with more partitions than declared, or not there yet when the reader started,
made the reader wait on too few writers, and release the others' records without waiting on
their progress (ignoring their markers), silently out of record-time order."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic
from kafka_helpers import Broker, create_topics, stage_entry, topology, unique

from eventscript.automata.compile import compile_source
from eventscript.kafka import input_partitions
from eventscript.kafka.admin import Admin, StoppedWaiting
from eventscript.kafka.config import load_topology, parse_topology
from eventscript.kafka.worker import ProgramWorker
from eventscript.topology.progress import counts_awaited

WRITER = "in {string k;} Hit group(Hit.k)\nout long N\n( Hit() { !>N(1); } )*"
READER = "in long N\nout long M\n( N(n) { !>M(n); } )*"


def _programs(name: str, writer_clock: str = "record") -> list[dict[str, Any]]:
    """The writer w ({name}-in to {name}-mid, on ``writer_clock``) and the reader r of its output
    ({name}-mid to {name}-out, on record time: gated on the writer's progress when it is too)."""
    return [
        stage_entry("w", f"{name}-in", "Hit", f"{name}-mid", f"{name}-err", clock=writer_clock),
        stage_entry("r", f"{name}-mid", "N", f"{name}-out", f"{name}-err", clock="record"),
    ]


def _doc(programs: list[dict[str, Any]], topics: dict[str, Any], tmp: Path) -> Any:
    (tmp / "w.es").write_text(WRITER)
    (tmp / "r.es").write_text(READER)
    return parse_topology(
        {
            "application": "a",
            "kafka": {"bootstrap_servers": "localhost:1"},
            "programs": programs,
            "topics": topics,
            "state_dir": str(tmp / "state"),
        }
    )


def test_the_inputs_of_a_gated_inputs_writers_are_awaited_where_not_declared(tmp_path: Path) -> None:
    topo = _doc(_programs("x"), {"x-mid": {"partitions": 3}}, tmp_path)
    reader, writer = topo.program("r"), topo.program("w")
    assert list(counts_awaited(topo, reader, {})) == ["x-in"]
    assert "the programs writing x-mid program r waits on" in counts_awaited(topo, reader, {})["x-in"]
    assert counts_awaited(topo, reader, {"x-in": 2}) == {}  # on the brokers: known
    assert counts_awaited(topo, writer, {}) == {}  # its own input is awaited as an input
    declared = _doc(_programs("x"), {"x-in": {"partitions": 2}}, tmp_path)
    assert counts_awaited(declared, declared.program("r"), {}) == {}  # created by every worker's prepare
    wall = _doc(_programs("x", writer_clock="wall"), {}, tmp_path)
    assert counts_awaited(wall, wall.program("r"), {}) == {}  # not gated: no markers to wait on


def test_a_chain_is_followed_only_as_far_as_a_count_is_unknown(tmp_path: Path) -> None:
    """x -> v (wall clock) -> y -> w -> g -> r: w's task count is y's partition count; only
    where y is not on the brokers is it v's task count, x's (the review's staged rollout: v not
    deployed, y made by hand, r must start)."""
    (tmp_path / "v.es").write_text(WRITER.replace("Hit", "Pass").replace("out long N", "out {string k;} Hit"))
    programs = [
        stage_entry("v", "x", "Pass", "y", "err", clock="wall"),
        stage_entry("w", "y", "Hit", "g", "err", clock="record"),
        stage_entry("r", "g", "N", "out", "err", clock="record"),
    ]
    topo = _doc(programs, {}, tmp_path)
    reader = topo.program("r")
    assert counts_awaited(topo, reader, {"y": 2, "g": 2, "err": 2}) == {}
    assert list(counts_awaited(topo, reader, {"g": 2, "err": 2})) == ["x"]


def test_a_reader_waits_for_its_writers_input_before_it_plans(tmp_path: Path) -> None:
    topo = _doc(_programs("x"), {"x-mid": {"partitions": 3}}, tmp_path)
    with pytest.raises(StoppedWaiting) as stopped:
        Admin(topo).await_inputs([topo.program("r")], {"x-mid": 3}, stopping=lambda: True)
    assert "x-in (its partition count sets how many tasks of the programs writing x-mid" in str(stopped.value)
    assert Admin(topo).await_inputs([topo.program("r")], {"x-mid": 3, "x-in": 3}) == {"x-mid": 3, "x-in": 3}


def _plan_writers(topo: Any, counts: dict[str, int] | None) -> list[str]:
    program = compile_source(READER, name="r").require()
    worker = ProgramWorker(topo, topo.program("r"), program, 3, "me", topic_partitions=counts)
    return sorted(worker.task_manager.progress_plan.writers[f"{topo.program('r').inputs[0].topic}"])


def test_the_readers_plan_counts_the_writers_tasks_from_the_brokers(tmp_path: Path) -> None:
    topo = _doc(_programs("x"), {"x-in": {"partitions": 2}, "x-mid": {"partitions": 3}}, tmp_path)
    assert _plan_writers(topo, None) == ["w/0", "w/1"]  # from topics: alone (what it did)
    assert _plan_writers(topo, {"x-in": 3, "x-mid": 3}) == ["w/0", "w/1", "w/2"]


@pytest.mark.kafka
def test_a_reader_started_on_the_brokers_counts_waits_on_every_writer_task(
    broker: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """End to end through the runner's prepare: the writer's input exists with 3 partitions, the
    topology declares 2; the reader's worker waits on the writer's 3 tasks, and says the count
    differs."""
    from eventscript.kafka.supervisor import TopologyRunner

    name = unique("upstream")
    (tmp_path / "w.es").write_text(WRITER)
    (tmp_path / "r.es").write_text(READER)
    path = topology(
        broker, tmp_path, _programs(name), {f"{name}-in": {"partitions": 2}, f"{name}-mid": {"partitions": 3}}
    )
    create_topics(broker, [NewTopic(f"{name}-in", 3, 1)])
    topo = load_topology(path)
    runner = TopologyRunner(topo, ["r"], health_port=0)
    with caplog.at_level(logging.WARNING, logger="eventscript.kafka.admin"):
        runner.prepare()
    assert (
        f"topic {name}-in has 3 partitions on the brokers, but the topology's topics: gives it 2: the brokers' count "
        f"is the one used; write 3 there to say what runs"
    ) in caplog.messages
    try:
        [worker] = runner.workers
        assert sorted(worker.task_manager.progress_plan.writers[f"{name}-mid"]) == ["w/0", "w/1", "w/2"]
    finally:
        runner.stop()


class _Listing:
    """What ``list_topics`` answers: each topic with its partitions."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def list_topics(self, topic: str, timeout: float) -> Any:
        parts = {p: object() for p in range(self.counts[topic])}
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions=parts)})


def test_a_reader_stops_when_its_writers_input_changes_its_partition_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer stops on its own input's new count (and is started over on it); the reader,
    waiting on the tasks it counted, would release a new task's records without waiting on it."""
    monkeypatch.setattr(input_partitions, "CHECK_INTERVAL", 0.0)
    topo = _doc(_programs("x"), {"x-in": {"partitions": 2}, "x-mid": {"partitions": 3}}, tmp_path)
    program = compile_source(READER, name="r").require()
    worker = ProgramWorker(topo, topo.program("r"), program, 3, "me", topic_partitions={"x-in": 2, "x-mid": 3})
    watch = worker._input_watch
    assert watch.upstream == {"x-in": (2, "w", "x-mid")}
    watch.check(_Listing({"x-mid": 3, "x-in": 2}))  # unchanged: goes on
    with pytest.raises(input_partitions.InputPartitionsChanged) as changed:
        watch.check(_Listing({"x-mid": 3, "x-in": 4}))
    assert str(changed.value).startswith(
        "program r: topic x-in, an input of program w, now has 4 partitions, but this program reads x-mid, "
        "which w writes, waiting on the progress of w's 2 tasks"
    )
    wall = _doc(_programs("x", writer_clock="wall"), {"x-in": {"partitions": 2}}, tmp_path)
    assert ProgramWorker(wall, wall.program("r"), program, 3, "me")._input_watch.upstream == {}
