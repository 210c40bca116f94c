"""The tester decodes a program's records as the worker's task does (issue 19): a grouped program
reading what an ungrouped one writes (records without a key) from an input not set ``keyed:
false`` gets ``$error`` 6 for each record, as on the worker (``topology check`` asks for the
setting). The tester's engines used to take such events. A pipeline's links take what their
writer keys, or not, so the same programs as a pipeline print their outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from test_one_host import chain_topology

from eventscript.automata.compile import compile_file
from eventscript.tester.pipeline import run_trace
from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.model import load_graph

BIG_TRADES = Path(__file__).resolve().parents[2] / "topologies" / "big-trades"
PROGRAMS = [BIG_TRADES / "filter.es", BIG_TRADES / "three_big_trades.es"]


def topology_lines(path: Path, items: list[Any]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    simulate(load_graph(path), items, lambda line: lines.append(line.to_json()))
    return lines


def test_unkeyed_records_on_a_keyed_input_are_refused_as_on_the_worker(tmp_path: Path) -> None:
    items = read_trace(BIG_TRADES / "sample.trace")
    path = chain_topology(PROGRAMS, tmp_path)
    topo = yaml.safe_load(path.read_text(encoding="utf-8"))
    del topo["programs"][1]["inputs"][0]["keyed"]
    path.write_text(yaml.safe_dump(topo), encoding="utf-8")
    refused = topology_lines(path, items)
    assert refused and all(x["event"] == "$error" for x in refused)
    assert all(x["value"]["code"] == 6 and "has no key" in x["value"]["message"] for x in refused)
    assert {x["program"] for x in refused} == {"three_big_trades"}

    topo["programs"][1]["inputs"][0]["keyed"] = False
    path.write_text(yaml.safe_dump(topo), encoding="utf-8")
    taken = topology_lines(path, items)
    assert taken and not [x for x in taken if x["event"] == "$error"]
    as_pipeline: list[dict[str, Any]] = []
    run_trace([compile_file(p).require() for p in PROGRAMS], items, lambda line: as_pipeline.append(line.to_json()))
    assert [{k: v for k, v in x.items() if k not in ("program", "topic")} for x in taken] == as_pipeline
