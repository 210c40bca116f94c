"""Workers on the embedded Tansu broker join their groups as dynamic members, whoever started them.

Tansu gives a static group member (``group.instance.id``) that joins a group no tasks. ``dev``
turned static membership off for the broker it starts, but a second worker started with
``eventscript run --bootstrap-servers`` at ``dev``'s broker (as the walk through the docs did)
joined as a static member and never got a task. The supervisor now tells Tansu by the cluster id
its metadata answers with; on Apache Kafka static membership stays on.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from eventscript.kafka.broker import EmbeddedBroker
from eventscript.kafka.runner import TopologyRunner
from eventscript.topology.config import load_topology

PROGRAM = "in string S\nout string O\n( S(s) { !>O(s); } )*\n"


def prepared(tmp_path: Path, bootstrap: str) -> tuple[TopologyRunner, Any]:
    """A one-program topology on ``bootstrap``, its runner prepared (topics made, workers built)."""
    (tmp_path / "echo.es").write_text(PROGRAM)
    name = tmp_path.name.replace("_", "-")[-40:]
    (tmp_path / "topology.yaml").write_text(
        f"application: static-{name}\n"
        "programs:\n"
        "  - name: echo\n"
        "    source: echo.es\n"
        f"    inputs: [{{topic: words-{name}, event: S}}]\n"
        f"    outputs: {{O: echoed-{name}}}\n"
        f"topics:\n  words-{name}: {{external: true, events: [S]}}\n"
        f"state_dir: {tmp_path / 'state'}\n"
    )
    topo = load_topology(tmp_path / "topology.yaml")
    topo.use_address(bootstrap, "the test")
    runner = TopologyRunner(topo)
    runner.prepare()
    return runner, topo


def test_workers_on_the_embedded_broker_join_as_dynamic_members(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with EmbeddedBroker() as broker, caplog.at_level(logging.INFO, logger="eventscript.kafka"):
        runner, topo = prepared(tmp_path, broker.bootstrap)
        assert runner.workers, "no worker was built"
    assert topo.kafka.static_membership is False
    assert any("embedded Tansu broker" in r.getMessage() for r in caplog.records), caplog.text


def test_workers_on_apache_kafka_keep_static_membership(
    tmp_path: Path, broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    if broker.kind != "apache":
        pytest.skip(f"the session's broker is {broker.kind}, not Apache Kafka")
    with caplog.at_level(logging.INFO, logger="eventscript.kafka"):
        runner, topo = prepared(tmp_path, broker.bootstrap)
    assert runner.workers and topo.kafka.static_membership is True
    assert not any("embedded Tansu broker" in r.getMessage() for r in caplog.records)
