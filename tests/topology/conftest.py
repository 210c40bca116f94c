"""Small topologies written into a temporary folder, for the wiring tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from eventscript.topology.check import Finding, check
from eventscript.topology.model import load_graph

READINGS = """
in {string site; string sensor; double celsius;} Reading group(Reading.sensor)
out {string site; string sensor; double peak;} Hot
( Reading(r) { !>Hot({site: r.site, sensor: r.sensor, peak: r.celsius}); } )*
"""

ALARM = """
in {string site; string sensor; double peak;} Hot group(Hot.site)
out {string site; double peak;} Alarm
( Hot(h) { !>Alarm({site: h.site, peak: h.peak}); } )*
"""

#: Both programs, fitting the two-stage topology as it is.
OK = {"first.es": READINGS, "second.es": ALARM}


def two_stage(first: str = "first.es", second: str = "second.es", **overrides: Any) -> dict[str, Any]:
    """A two-program topology: readings → first → hot → second → alarms."""
    topo: dict[str, Any] = {
        "application": "t",
        "programs": [
            {
                "name": "first",
                "source": first,
                "inputs": [{"topic": "readings", "event": "Reading"}],
                "outputs": {"default": "hot"},
            },
            {
                "name": "second",
                "source": second,
                "inputs": [{"topic": "hot", "event_from": {"header": "es-event"}}],
                "outputs": {"default": "alarms"},
            },
        ],
        "topics": {"readings": {"partitions": 2, "external": True}},
    }
    topo.update(overrides)
    return topo


@pytest.fixture
def write_topology(tmp_path: Path) -> Callable[..., Path]:
    """Write programs (name → text) and a topology (a dict) into tmp_path; returns the YAML path."""

    def write(topology: dict[str, Any], programs: dict[str, str]) -> Path:
        for name, text in programs.items():
            (tmp_path / name).write_text(text, encoding="utf-8")
        path = tmp_path / "topology.yaml"
        path.write_text(yaml.safe_dump(topology, sort_keys=False), encoding="utf-8")
        return path

    return write


def findings(write: Callable[..., Path], topo: dict[str, Any], programs: dict[str, str] | None = None) -> list[Finding]:
    """What 'topology check' finds in ``topo`` (written with ``programs``, by default both fitting),
    but for the programs' own compiler warnings: the wiring tests' programs are grouped and never
    end an instance, which ``eventscript check`` warns of (test_program_warnings.py checks those)."""
    return [f for f in check(load_graph(write(topo, programs or OK))) if f.code != "program-warning"]


def only(found: list[Finding], code: str) -> Finding:
    """The one finding with ``code`` (the test fails, showing them all, if there is not exactly one)."""
    hits = [f for f in found if f.code == code]
    assert len(hits) == 1, [f.render() for f in found]
    return hits[0]
