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
