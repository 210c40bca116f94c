"""``eventscript export`` (issue 27): a backfill export written from a trace, with no broker, that
the backfill reads to the tester's outputs; and the same records read back from Kafka topics."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

CLI = [sys.executable, "-m", "eventscript.cli.main"]


def eventscript(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def big_trades(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "topologies" / "big-trades", tmp_path / "bt")
    return tmp_path / "bt"


def _lines(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text().splitlines()]


def _quick_start() -> tuple[list[str], str]:
    """docs/backfill.md's quick start: its commands (after the cd) and the output line it shows."""
    text = (ROOT / "docs" / "backfill.md").read_text(encoding="utf-8")
    section = text[text.index("## Quick start") : text.index("## When to backfill")]
    blocks = re.findall(r"^```\n(.*?)^```$", section, re.S | re.M)
    commands = [line for line in blocks[0].splitlines() if line.startswith("eventscript ")]
    return commands, blocks[1].strip()


def test_the_backfill_quick_start_runs_and_prints_what_the_tester_prints(big_trades: Path) -> None:
    """The quick start's export of the README's trace, backfilled, gives the tester's outputs, and
    the line the guide shows."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("the backfill needs Java")
    (export, backfill), shown = _quick_start()
    done = eventscript(*shlex.split(export)[1:], cwd=big_trades)
    assert done.returncode == 0, done.stderr
    # 17 timestamps, each a tick on every partition of the trades topic (3): what `produce` writes
    assert done.stderr.strip() == "wrote 68 records to trades.jsonl (17 events, 51 ticks: the trace's timestamps)"
    rows = _lines(big_trades / "trades.jsonl")
    offsets: dict[int, list[int]] = {}
    for r in rows:
        offsets.setdefault(r["partition"], []).append(r["offset"])
    assert {r["topic"] for r in rows} == {"trades"} and sorted(offsets) == [0, 1, 2]
    assert all(o == list(range(len(o))) for o in offsets.values())
    ran = eventscript(*shlex.split(backfill)[1:], cwd=big_trades, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    # Spark's start-up lines are hidden without -v (the JVM's own module warning is not Spark's to hide).
    lines = [line for line in ran.stderr.splitlines() if not line.startswith("WARNING: Using incubator modules")]
    assert [line.split(",")[0] for line in lines] == [
        "backfill: 1/3 partitions done",
        "backfill: 2/3 partitions done",
        "backfill: 3/3 partitions done",
        "wrote 15 records to filtered.jsonl",
    ]
    output = big_trades / "filtered.jsonl"
    assert output.read_text().splitlines()[0] == shown
    tested = eventscript("test", "--trace", "sample.trace", "filter.es", cwd=big_trades)
    expected = [json.loads(line) for line in tested.stdout.splitlines()]
    got = [{k: line[k] for k in ("time", "event", "value")} for line in _lines(output)]
    assert got == expected and len(got) > 5


def test_an_export_from_a_topic_holds_what_was_produced(big_trades: Path) -> None:
    from eventscript.kafka.broker import EmbeddedBroker

    assert (
        eventscript(
            "export", "topology.yaml", "--trace", "sample.trace", "-o", "from-trace.jsonl", cwd=big_trades
        ).returncode
        == 0
    )
    with EmbeddedBroker() as broker:
        kafka = ["--bootstrap-servers", broker.bootstrap]
        produced = eventscript("produce", "topology.yaml", "--trace", "sample.trace", *kafka, cwd=big_trades)
        assert produced.returncode == 0, produced.stderr
        done = eventscript(
            "export",
            "topology.yaml",
            "--topic",
            "trades",
            "-o",
            "from-topic.jsonl",
            "--idle",
            "1",
            *kafka,
            cwd=big_trades,
        )
    assert done.returncode == 0, done.stderr

    def records(name: str) -> list[tuple]:  # type: ignore[type-arg]
        return [
            (r["topic"], r["partition"], r.get("key"), r["value"], r.get("headers")) for r in _lines(big_trades / name)
        ]

    def by_partition(rows: list[tuple]) -> dict[tuple[str, int], list[tuple]]:  # type: ignore[type-arg]
        # Kafka orders records within a partition only: the topic's export reads its partitions in
        # the order the consumer fetched them, the trace's in the order they were produced.
        out: dict[tuple[str, int], list[tuple]] = {}  # type: ignore[type-arg]
        for row in rows:
            out.setdefault((row[0], row[1]), []).append(row)
        return out

    assert by_partition(records("from-topic.jsonl")) == by_partition(records("from-trace.jsonl"))


def test_export_needs_a_jsonl_file_and_says_so(big_trades: Path) -> None:
    done = eventscript("export", "topology.yaml", "--trace", "sample.trace", "-o", "trades.csv", cwd=big_trades)
    assert done.returncode == 2
    assert done.stderr.strip() == "error: trades.csv: write the export as JSON lines, FILE.jsonl"


def test_time_order_sorts_a_key_parallel_backfill_by_record_time(big_trades: Path) -> None:
    """The second stage over the first's captured output (a JSON-lines trace, exported), in key
    groups: --time-order gives the tester's outputs in record-time order."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("the backfill needs Java")
    filtered = eventscript("test", "--trace", "sample.trace", "filter.es", cwd=big_trades)
    (big_trades / "filtered.jsonl").write_text(filtered.stdout)
    assert (
        eventscript(
            "export",
            "topology.yaml",
            "--trace",
            "filtered.jsonl",
            "--program",
            "three-big-trades",
            "-o",
            "big.jsonl",
            cwd=big_trades,
        ).returncode
        == 0
    )
    ran = eventscript(
        "backfill",
        "topology.yaml",
        "--program",
        "three-big-trades",
        "--input",
        "big.jsonl",
        "--key-groups",
        "3",
        "--output",
        "three.jsonl",
        "--time-order",
        "--no-ui",
        cwd=big_trades,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "sorted 5 records of three.jsonl by record time" in ran.stderr
    got = [{k: line[k] for k in ("time", "event", "value", "key")} for line in _lines(big_trades / "three.jsonl")]
    times = [line["time"] for line in got]
    assert times == sorted(times)
    tested = eventscript("test", "--trace", "sample.trace", "filter.es", "three_big_trades.es", cwd=big_trades)
    expected = [json.loads(line) for line in tested.stdout.splitlines()]
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, expected)) and len(got) == 5


def test_time_order_needs_an_output_file(big_trades: Path) -> None:
    done = eventscript("backfill", "topology.yaml", "--program", "filter", "--time-order", cwd=big_trades)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: --time-order applies to --output FILE")
