"""The tester's programs run as the worker's tasks (issue 19, ``tester/task_host.py``): every
conformance case, every case of the project's own and every shipped topology gives, line for
line, what the tester prints (``$error`` messages included), when each program runs as a
``task.Task`` on one shared simulated clock. And where the two differ, how: the worker's task
refuses an unkeyed record on a grouped program's keyed input, which the tester takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_one_host import CASE_DIRS, chain_topology, stages

from eventscript.automata.compile import compile_file
from eventscript.tester.pipeline import run_trace
from eventscript.tester.task_host import run_pipeline, run_topology
from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.model import load_graph

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
TOPOLOGY_FILES = sorted(TOPOLOGIES.glob("*/topology.yaml"))


def printed_by_tester(programs: list[Any], items: list[Any]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    run_trace(programs, items, lambda line: lines.append(line.to_json()))
    return lines


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_a_pipeline_run_as_tasks_prints_the_testers_lines(case: Path) -> None:
    programs = [compile_file(p).require() for p in stages(case)]
    items = read_trace(case / "input.trace")
    assert run_pipeline(programs, items) == printed_by_tester(programs, items)


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_a_topology_run_as_tasks_prints_the_testers_lines(path: Path) -> None:
    items = read_trace(path.parent / "sample.trace")
    want: list[dict[str, Any]] = []
    simulate(load_graph(path), items, lambda line: want.append(line.to_json()))
    got = run_topology(load_graph(path), items)
    assert got == want
    assert any(line["event"] != "$error" for line in got)  # (a sample that shows something)


def test_the_tester_takes_unkeyed_records_that_the_worker_refuses(tmp_path: Path) -> None:
    """Where the tester and the worker's task differ: a grouped program reading what an ungrouped
    one writes (records without a key) from an input not set ``keyed: false``. ``topology check``
    asks for the setting; without it the worker's task gives $error 6 for each record, where the
    tester's engines take the events. The pipeline run as tasks sets it (a pipeline's links carry
    what their writer keys, or not), so it prints the tester's lines."""
    folder = TOPOLOGIES / "big-trades"
    programs = [folder / "filter.es", folder / "three_big_trades.es"]
    items = read_trace(folder / "sample.trace")
    path = chain_topology(programs, tmp_path)
    tester: list[dict[str, Any]] = []
    simulate(load_graph(path), items, lambda line: tester.append(line.to_json()))
    as_tasks = run_topology(load_graph(path), items)
    refused = [x for x in as_tasks if x["event"] == "$error"]
    assert refused and all(x["value"]["code"] == 6 and "has no key" in x["value"]["message"] for x in refused)
    assert not [x for x in tester if x["event"] == "$error"]
    assert [x for x in as_tasks if x["event"] != "$error"] == []
    topo = yaml.safe_load(path.read_text(encoding="utf-8"))
    topo["programs"][1]["inputs"][0]["keyed"] = False
    path.write_text(yaml.safe_dump(topo), encoding="utf-8")
    assert run_topology(load_graph(path), items) == tester
    compiled = [compile_file(p).require() for p in programs]
    assert run_pipeline(compiled, items) == printed_by_tester(compiled, items)
