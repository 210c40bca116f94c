"""Key-parallel output to a topic another program reads is warned about (docs/backfill.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from eventscript.backfill.main import _order_warnings
from eventscript.kafka.config import load_topology

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def test_a_topic_read_downstream_is_warned_about_and_a_sink_topic_is_not() -> None:
    topo = load_topology(TOPOLOGIES / "sensors" / "topology.yaml")
    first, second = topo.programs
    read = sorted({i.topic for i in second.inputs})
    warned = _order_warnings(topo, first, read)
    assert len(warned) == 1 and f"program {second.name} reads {', '.join(read)}" in warned[0]
    sinks = sorted(second.outputs.values())
    assert sinks == ["site-alarms"]  # read by no program of the topology
    assert _order_warnings(topo, second, sinks) == []
