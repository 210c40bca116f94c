"""A pipeline of programs is a chain topology (issue 19: one simulated host): every case the
tester runs as ``eventscript test stage1.es stage2.es ...`` gives the same lines when its
programs are written as a topology (program k reads program k-1's topic) and run as
``eventscript test TOPOLOGY.yaml``. Both are ``tester.host.SimulatedHost`` wired two ways; this
pins that the wirings agree wherever a chain can be said both ways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import CASES
from eventscript.automata.compile import compile_file
from eventscript.tester.pipeline import run_trace
from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.model import load_graph

OWN_CASES = Path(__file__).resolve().parents[1] / "cases"
CASE_DIRS = sorted(
    [p for root in (CASES, OWN_CASES) if root.exists() for p in root.iterdir() if (p / "input.trace").exists()],
    key=lambda p: p.name,
)


def stages(case: Path) -> list[Path]:
    single = case / "program.es"
    if single.exists():
        return [single]
    return sorted(case.glob("stage*.es"), key=lambda p: int("".join(c for c in p.stem if c.isdigit()) or 0))


def chain_topology(programs: list[Path], folder: Path) -> Path:
    """The programs as a topology: a source topic for the trace, then one topic per link, every
    event under its own name (the ``es-event`` header), keyed or not as its writer keys it
    (``keyed: false``, as a pipeline's links are: ``tester.pipeline.chain_configs``), the last
    program's events the result."""
    entries: list[dict[str, Any]] = []
    for k, program in enumerate(programs):
        entries.append(
            {
                "name": program.stem,
                "source": str(program),
                "inputs": [
                    {"topic": "trace" if k == 0 else f"link-{k}", "event_from": {"header": "es-event"}, "keyed": False}
                ],
                "outputs": {"default": "results" if k == len(programs) - 1 else f"link-{k + 1}"},
            }
        )
    topo = {"application": "chain", "programs": entries, "topics": {"trace": {"partitions": 1, "external": True}}}
    path = folder / "topology.yaml"
    path.write_text(yaml.safe_dump(topo), encoding="utf-8")
    return path


def without_places(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines without what only one wiring says: the topic, and the program (the topology
    names it on every line, the pipeline on errors of a stage before the last)."""
    return [{k: v for k, v in line.items() if k not in ("program", "topic")} for line in lines]


def said_as_a_pipeline(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A trace event no program reads is $error 1 in both, at the same time and place; the
    topology says it in its own words (no program reads it from a source topic), the pipeline
    in the first stage's (it does not declare it). The topology's lines in the pipeline's words."""
    out = []
    for line in lines:
        value = line["value"]
        if line["event"] == "$error" and value["code"] == 1:
            name = value["message"].removeprefix("no program reads ").removesuffix(" from a source topic")
            if name != value["message"]:
                line = {**line, "value": {**value, "message": f"undeclared input event {name}"}}
        out.append(line)
    return out


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_a_pipeline_and_its_chain_topology_give_the_same_lines(case: Path, tmp_path: Path) -> None:
    programs = stages(case)
    items = read_trace(case / "input.trace")
    as_pipeline: list[dict[str, Any]] = []
    run_trace([compile_file(p).require() for p in programs], items, lambda line: as_pipeline.append(line.to_json()))
    as_topology: list[dict[str, Any]] = []
    simulate(load_graph(chain_topology(programs, tmp_path)), items, lambda line: as_topology.append(line.to_json()))
    assert said_as_a_pipeline(without_places(as_topology)) == without_places(as_pipeline)
