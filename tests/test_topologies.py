"""The shipped examples compile, and their sample traces give their expected outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventscript.automata.compile import compile_file
from eventscript.cli.main import main
from eventscript.kafka.config import load_topology

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"
PIPELINES = {"sensors": ["overheat.es", "site_alarm.es"], "doors": ["left_open.es"]}


@pytest.mark.parametrize("program", sorted(TOPOLOGIES.glob("*/*.es")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_programs_compile_without_errors(program: Path) -> None:
    comp = compile_file(program)
    assert comp.ok, [str(d) for d in comp.diagnostics.errors]


@pytest.mark.parametrize("folder", sorted(PIPELINES))
def test_sample_traces_give_the_expected_output(folder: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = TOPOLOGIES / folder
    status = main(["test", "--trace", str(d / "sample.trace"), *[str(d / p) for p in PIPELINES[folder]],
                   "--expect", str(d / "expected.jsonl")])
    assert status == 0, capsys.readouterr().out


def test_shipped_topology_is_valid() -> None:
    topo = load_topology(TOPOLOGIES / "sensors" / "topology.yaml")
    assert [p.name for p in topo.programs] == ["overheat", "site-alarm"]
    for p in topo.programs:
        assert topo.source_path(p).exists()
