"""The shipped examples compile, and their sample traces give their expected outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventscript.automata.compile import compile_file
from eventscript.cli.main import main
from eventscript.kafka.config import load_topology
from long_runs import chosen

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"
PIPELINES = {"sensors": ["overheat.es", "site_alarm.es"], "doors": ["left_open.es"]}


@pytest.mark.parametrize("program", sorted(TOPOLOGIES.glob("*/*.es")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_programs_compile_without_errors(program: Path) -> None:
    comp = compile_file(program)
    assert comp.ok, [str(d) for d in comp.diagnostics.errors]


@pytest.mark.parametrize("folder", sorted(PIPELINES))
def test_sample_traces_give_the_expected_output(folder: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = TOPOLOGIES / folder
    status = main(
        [
            "test",
            "--trace",
            str(d / "sample.trace"),
            *[str(d / p) for p in PIPELINES[folder]],
            "--expect",
            str(d / "expected.jsonl"),
        ]
    )
    assert status == 0, capsys.readouterr().out


def test_shipped_topology_is_valid() -> None:
    topo = load_topology(TOPOLOGIES / "sensors" / "topology.yaml")
    assert [p.name for p in topo.programs] == ["overheat", "site-alarm"]
    for p in topo.programs:
        assert topo.source_path(p).exists()


TOPOLOGY_FILES = sorted(TOPOLOGIES.glob("*/topology.yaml"))


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_shipped_topologies_pass_topology_check(path: Path) -> None:
    from eventscript.topology.check import check
    from eventscript.topology.model import load_graph

    found = check(load_graph(path))
    # (the programs' own warnings, such as a grouped program on a fixed set of fridges that never
    # ends an instance, are accepted by allow comments where meant: tests/topology/test_shipped_strict.py)
    assert found == [], [f.render() for f in found]


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_shipped_topologies_give_their_expected_output_in_simulated_time(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = path.parent
    status = main(["test", "--trace", str(d / "sample.trace"), str(path), "--expect", str(d / "expected.jsonl")])
    assert status == 0, capsys.readouterr().out


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_shipped_topologies_have_a_readme_with_their_picture(path: Path) -> None:
    readme = path.parent / "README.md"
    assert readme.exists()
    assert "topology.svg" in readme.read_text(encoding="utf-8")
    assert (path.parent / "topology.svg").exists()


def test_at_least_six_pipelines_ship() -> None:
    assert {p.parent.name for p in TOPOLOGY_FILES} >= {
        "sensors",
        "big-trades",
        "radiation",
        "visitor-escort",
        "fridge-alerts",
        "sensor-silence",
        "windows-alarm",
        "sector-divergence",
    }


def _show_sections(text: str) -> dict[str, list[dict[str, object]]]:
    """The records ``eventscript dev --show`` prints, by topic (``== topic`` headers)."""
    import json

    sections: dict[str, list[dict[str, object]]] = {}
    current: list[dict[str, object]] | None = None
    for line in text.splitlines():
        if line.startswith("== "):
            current = sections.setdefault(line[3:].strip(), [])
        elif line.strip().startswith("{") and current is not None:
            current.append(json.loads(line))
    return sections


#: The topologies ``make test`` runs on the embedded broker (``long_runs``: every one with
#: ``ALL_TOPOLOGIES=1``); every one runs on Apache Kafka in tests/kafka/test_event_time_kafka.py.
ON_THE_EMBEDDED_BROKER = chosen(TOPOLOGY_FILES, ("sensors", "sector-divergence", "visitor-escort"))


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.parametrize("path", ON_THE_EMBEDDED_BROKER, ids=lambda p: p.parent.name)
def test_shipped_topologies_give_the_same_output_on_the_embedded_broker(path: Path, tmp_path: Path) -> None:
    """`eventscript dev` (embedded broker, clock: record) gives the simulated run's records; only
    their order across keys (partitions) may differ."""
    import json
    import os
    import subprocess
    import sys

    from eventscript.tester.expect import read_expected
    from eventscript.topology.model import load_graph

    d = path.parent
    env = {**os.environ, "EVENTSCRIPT_STATE_DIR": str(tmp_path / "state")}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "eventscript.cli.main",
            "dev",
            str(path),
            "--trace",
            str(d / "sample.trace"),
            "--until-idle",
            "5",
            "--show",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown = _show_sections(done.stdout)
    results = load_graph(path).sink_topics

    def canon(lines: list[dict[str, object]]) -> list[str]:
        return sorted(
            json.dumps({k: x.get(k) for k in ("time", "event", "value", "key")}, sort_keys=True) for x in lines
        )

    got = [x for t in results for x in shown.get(t, [])]
    want = read_expected((d / "expected.jsonl").read_text(encoding="utf-8"))
    assert canon(got) == canon(want)
