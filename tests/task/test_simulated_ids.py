"""The tester runs the worker's tasks (issue 19): its outputs are the records a task sends, with
the worker's ``es-id``. Every shipped topology, its sample trace published as ``eventscript
produce`` writes it and run by the worker's tasks over an in-memory log (one partition per topic;
each task takes all that is written before it merges, as a worker that has fetched its inputs
does), writes each result and ``$error`` record under the id that ``eventscript test`` gives the
same line; a pipeline too, as the chain topology it is. (In a random schedule a task may take one
source topic ahead of another's earlier records, and its record clock then gives other times:
``test_event_time`` covers schedules, per key.)"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from eventscript.automata.compile import compile_file
from eventscript.task.codec import HEADER_ID, header
from eventscript.tester.pipeline import run_trace
from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.config import load_topology
from eventscript.topology.model import load_graph

from .pipeline_log import PipelineRun, with_partitions

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tester"))
from test_one_host import chain_topology

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
TOPOLOGY_FILES = sorted(TOPOLOGIES.glob("*/topology.yaml"))


def seen(line: dict[str, Any]) -> tuple[Any, ...]:
    """What both runs say of a record: time, event, value (an $error's code) and key."""
    value = line["value"]["code"] if line["event"] == "$error" else line["value"]
    return (line["time"], line["event"], repr(value), repr(line.get("key")))


def by_id(lines: list[Any]) -> dict[str, tuple[Any, ...]]:
    """The tester's output lines by the ``es-id`` of the record each is."""
    ids: dict[str, tuple[Any, ...]] = {}
    for line in lines:
        assert line.record is not None, line.to_json()  # (the host's own $error: none here)
        ids[(header(line.record.headers(), HEADER_ID) or b"").decode()] = seen(line.to_json())
    return ids


def by_the_worker(path: Path, trace: Path, tmp_path: Path) -> dict[str, tuple[Any, ...]]:
    """The result and $error records of the topology's tasks, by ``es-id``."""
    topo = load_topology(path)
    graph = load_graph(path)
    topics = {*graph.reads, *graph.writes, *graph.error_writers, *topo.topics}
    pipeline = PipelineRun(with_partitions(topo, dict.fromkeys(topics, 1)), path, tmp_path)
    pipeline.publish(trace)
    rng = random.Random(0)  # (unused: every step takes all)
    while sum(pipeline.step(task, cursors, rng, take_all=True) for task, cursors in pipeline.tasks):
        pass
    worker = {line["es-id"]: seen(line) for lines in pipeline.results().values() for line in lines}
    assert worker and "" not in worker
    return worker


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_the_tester_gives_the_workers_ids(path: Path, tmp_path: Path) -> None:
    trace = path.parent / "sample.trace"
    lines: list[Any] = []
    simulate(load_graph(path), read_trace(trace), lines.append)
    assert by_id(lines) == by_the_worker(path, trace, tmp_path)


def test_a_pipeline_gives_the_ids_of_its_chain_topology_on_the_worker(tmp_path: Path) -> None:
    folder = TOPOLOGIES / "big-trades"
    programs = [folder / "filter.es", folder / "three_big_trades.es"]
    trace = folder / "sample.trace"
    lines: list[Any] = []
    run_trace([compile_file(p).require() for p in programs], read_trace(trace), lines.append)
    ids = by_id(lines)
    assert all(i.startswith("three_big_trades/filter/trace:0:") for i in ids), ids  # named by the upstream id
    path = chain_topology(programs, tmp_path)
    topo = yaml.safe_load(path.read_text(encoding="utf-8"))
    for program in topo["programs"]:
        program["clock"] = "record"  # (the worker's replayable time: the trace's)
    path.write_text(yaml.safe_dump(topo), encoding="utf-8")
    assert ids == by_the_worker(path, trace, tmp_path / "state")
