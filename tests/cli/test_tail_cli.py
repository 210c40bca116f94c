"""``eventscript tail`` on a topic the broker does not have: a misspelt name said only "topic alert
does not exist", and the user had to find the real names elsewhere."""

from __future__ import annotations

import json
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


ECHO = "in string S\nout string O\n( S(x) { !>O(x); } )*\n"
TOPOLOGY = """\
application: tailtest
programs:
  - name: echo
    source: echo.es
    inputs:
      - topic: words
        event: S
    outputs:
      O: echoed
topics:
  words: {partitions: 2, external: true, events: [S]}
"""


def test_tail_of_a_traced_input_leaves_ticks_out_and_names_events_as_the_topology_reads_them(tmp_path: Path) -> None:
    """`tail` of the topic `produce` wrote printed the trace's ticks as events named null, and every
    event as null (its name is the input's `event: S`, not a header): `test --trace` refused the
    lines that the README says it takes."""
    from eventscript.kafka.broker import EmbeddedBroker

    (tmp_path / "echo.es").write_text(ECHO)
    (tmp_path / "topology.yaml").write_text(TOPOLOGY)
    (tmp_path / "t.trace").write_text('[2026-01-01 00:00:00]\nS("a")\n[00:01]\nS("b")\n')
    with EmbeddedBroker() as broker:
        address = ["--bootstrap-servers", broker.bootstrap]
        produced = _run(["produce", "topology.yaml", "--trace", "t.trace", *address], tmp_path)
        assert produced.returncode == 0, produced.stderr
        bare = _run(["tail", "words", *address], tmp_path)
        named = _run(["tail", "words", "--topology", "topology.yaml", *address], tmp_path)
        ticks = _run(["tail", "words", "--markers", *address], tmp_path)
    assert bare.returncode == named.returncode == ticks.returncode == 0
    assert bare.stdout.splitlines() == [
        '{"time":"2026-01-01T00:00:00.000000Z","event":null,"value":"a"}',
        '{"time":"2026-01-01T00:01:00.000000Z","event":null,"value":"b"}',
    ]
    assert bare.stderr == (
        "note: records of words carry no event name in an es-event header (records written outside the "
        "topology): give --topology FILE to name them as the programs reading the topic do\n"
    )
    assert named.stdout == bare.stdout.replace('"event":null', '"event":"S"') and named.stderr == ""
    assert sum('"tick":' in line for line in ticks.stdout.splitlines()) == 4  # two times, two partitions
    (tmp_path / "t.jsonl").write_text(named.stdout)
    replay = _run(["test", "--trace", "t.jsonl", "echo.es"], tmp_path)
    assert replay.returncode == 0, replay.stderr
    assert [json.loads(line)["value"] for line in replay.stdout.splitlines()] == ["a", "b"]
