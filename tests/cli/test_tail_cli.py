"""``eventscript tail`` on a topic the broker does not have: a misspelt name said only "topic alert
does not exist", and the user had to find the real names elsewhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

CLI = [sys.executable, "-m", "eventscript.cli.main"]


def _tail(topic: str, bootstrap: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "tail", topic, "--bootstrap-servers", bootstrap],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_tail_of_a_misspelt_topic_names_the_close_ones_and_otherwise_lists_them() -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    from eventscript.kafka.broker import EmbeddedBroker

    with EmbeddedBroker() as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_topics([NewTopic(t, 1) for t in ("alerts", "door-events")]).values():
            future.result(30)
        misspelt = _tail("alert", broker.bootstrap)
        unrelated = _tail("zzz", broker.bootstrap)
    assert misspelt.returncode == 2
    assert misspelt.stderr == "error: topic alert does not exist; did you mean alerts?\n"
    assert unrelated.returncode == 2
    assert unrelated.stderr == "error: topic zzz does not exist; the broker has: alerts, door-events\n"


def test_tail_on_a_changelog_says_what_reads_it(tmp_path: Path) -> None:
    """``eventscript tail doors.left-open-changelog`` printed the snapshots' compressed bytes as
    JSON strings of mojibake; the runbooks name the changelog topic, so an operator tails it."""
    from eventscript.cli.kafka_cmds import changelog_note
    from eventscript.topology.config import parse_topology

    topo = parse_topology(
        {
            "application": "doors",
            "programs": [{"name": "left-open", "source": "d.es", "inputs": [{"topic": "t", "event": "E"}]}],
        }
    )
    assert changelog_note("doors.left-open-changelog", topo, "topology.yaml") == (
        "doors.left-open-changelog is the changelog of program left-open: its values are binary instance "
        "snapshots; 'eventscript state dump topology.yaml --program left-open' reads them as JSON"
    )
    assert "named as a program's changelog" in (changelog_note("doors.left-open-changelog", None, None) or "")
    assert changelog_note("alerts", topo, "topology.yaml") is None
    assert changelog_note("door-events-changelog", None, None) is None
