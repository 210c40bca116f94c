"""The tester run as tasks gives the worker's output ids (issue 19): every shipped topology, its
sample trace published as ``eventscript produce`` writes it and run by the worker's tasks over an
in-memory log (one partition per topic; each task takes all that is written before it merges,
as a worker that has fetched its inputs does), writes each result and ``$error`` record under the
``es-id`` that the simulated run (``tester/task_host.py``) gives the same line. (In a random
schedule a task may take one source topic ahead of another's earlier records, and its record
clock then gives other times: ``test_event_time`` covers schedules, per key.)
The tester's engines give no ids at all: only tasks name their outputs' causes."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from eventscript.task.codec import HEADER_ID, header
from eventscript.tester.task_host import TaskLine, topology_simulation
from eventscript.tester.trace import read_trace
from eventscript.topology.config import load_topology
from eventscript.topology.model import load_graph

from .pipeline_log import PipelineRun, with_partitions

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
TOPOLOGY_FILES = sorted(TOPOLOGIES.glob("*/topology.yaml"))


def seen(line: dict[str, Any]) -> tuple[Any, ...]:
    """What both runs say of a record: time, event, value (an $error's code) and key."""
    value = line["value"]["code"] if line["event"] == "$error" else line["value"]
    return (line["time"], line["event"], repr(value), repr(line.get("key")))


def simulated_ids(path: Path) -> dict[str, tuple[Any, ...]]:
    out: list[TaskLine] = []
    sim = topology_simulation(load_graph(path), out.append)
    sim.run(read_trace(path.parent / "sample.trace"))
    sim.close()
    ids: dict[str, tuple[Any, ...]] = {}
    for o in out:
        assert o.record is not None, o.line  # (the host's own $error: none in a sample)
        ids[(header(o.record.headers(), HEADER_ID) or b"").decode()] = seen(o.line)
    return ids


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_the_simulated_run_gives_the_workers_ids(path: Path, tmp_path: Path) -> None:
    topo = load_topology(path)
    graph = load_graph(path)
    topics = {*graph.reads, *graph.writes, *graph.error_writers, *topo.topics}
    pipeline = PipelineRun(with_partitions(topo, dict.fromkeys(topics, 1)), path, tmp_path)
    pipeline.publish(path.parent / "sample.trace")
    rng = random.Random(0)  # (unused: every step takes all)
    while sum(pipeline.step(task, cursors, rng, take_all=True) for task, cursors in pipeline.tasks):
        pass
    worker = {line["es-id"]: seen(line) for lines in pipeline.results().values() for line in lines}
    assert worker and "" not in worker
    assert simulated_ids(path) == worker
