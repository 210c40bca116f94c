"""The backfill's plan, sources, task stage and sinks, without Spark (the task stage is what
each Spark partition runs; tests/backfill/test_spark_backfill.py runs the same through Spark)."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from trace_export import trace_rows, write_jsonl_export, write_parquet_export

from count_programs import COUNT_QUIET
from eventscript.automata.compile import compile_source
from eventscript.backfill import export
from eventscript.backfill.export import ExportError
from eventscript.backfill.job import Totals, check_totals, export_plan, run_locally
from eventscript.backfill.sink import FileSink, output_json, read_parquet_outputs
from eventscript.backfill.source import slice_batches
from eventscript.backfill.stages import run_partition
from eventscript.backfill.task_stage import BackfillError, TaskSummary
from eventscript.engine.timeutil import format_time, parse_time
from eventscript.kafka import codec
from eventscript.kafka.config import Topology, parse_topology
from eventscript.language.source import SourceFile
from eventscript.tester.pipeline import run_trace
from eventscript.tester.trace import parse_trace

PROGRAM = COUNT_QUIET
T0 = parse_time("2026-01-01T00:00:00Z")


def topology(tmp: Path, partitions: int, program: str = PROGRAM) -> Topology:
    src = tmp / "ticks.es"
    src.write_text(program)
    return parse_topology(
        {
            "programs": [
                {
                    "name": "ticks",
                    "source": str(src),
                    "inputs": [{"topic": "ticks-in", "event": "Tick"}],
                    "outputs": {"default": "ticks-out"},
                    "errors": "ticks-err",
                    "clock": "record",
                }
            ],
            "topics": {"ticks-in": {"partitions": partitions}},
        }
    )


def trace_time(t: int) -> str:
    """A time as a trace writes it: [2026-01-01 00:00:05]."""
    return format_time(t).replace("T", " ").removesuffix("Z")


def random_trace(seed: int, keys: int = 12, events: int = 300) -> str:
    rnd = random.Random(seed)
    t = T0
    lines = []
    for i in range(events):
        t += rnd.choice([0, 1, 2, 5, 20, 40]) * 1_000_000  # some keys fall silent for > 30 s
        lines.append(f"[{trace_time(t)}]")
        lines.append(f'Tick({{k: "k{rnd.randrange(keys)}", n: {i}}})')
    return "\n".join(lines) + "\n"


def run_tester(program: str, trace: str) -> list[dict[str, Any]]:
    compiled = compile_source(program, name="ticks").require()
    out: list[dict[str, Any]] = []
    run_trace([compiled], parse_trace(SourceFile("<trace>", trace)), lambda line: out.append(line.to_json()))
    return out


def by_key(lines: list[dict[str, Any]]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for x in lines:
        out[orjson.dumps(x.get("key")).decode()].append((x["time"], x["event"], orjson.dumps(x["value"])))
    return dict(out)


def export_of(
    tmp: Path, topo: Topology, trace: str, monkeypatch: pytest.MonkeyPatch, partitions: int, fmt: str = "jsonl"
) -> Path:
    path = tmp / "trace.txt"
    path.write_text(trace)
    rows = trace_rows(topo, path, monkeypatch, partitions)
    if fmt == "parquet":
        return write_parquet_export(rows, tmp / "export.parquet")
    return write_jsonl_export(rows, tmp / "export.jsonl")


@pytest.mark.parametrize("partitions", [1, 3])
def test_each_key_gets_the_testers_events_in_the_testers_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partitions: int
) -> None:
    trace = random_trace(7)
    topo = topology(tmp_path, partitions)
    plan = export_plan(topo, topo.programs[0], [str(export_of(tmp_path, topo, trace, monkeypatch, partitions))])
    assert len(plan.slices) == partitions
    got = [output_json(r) for r in run_locally(plan)]
    want = run_tester(PROGRAM, trace)
    assert by_key(got) == by_key(want)
    assert len(got) == len(want) > 300


def test_ids_name_the_input_record_or_the_timer_firing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ids the worker gives (Task._next_id_bytes): one run's are unique, and a Quiet's names
    the instance's own history, not the record that moved the clock."""
    topo = topology(tmp_path, 3)
    plan = export_of(tmp_path, topo, random_trace(3), monkeypatch, 3)
    got = [output_json(r) for r in run_locally(export_plan(topo, topo.programs[0], [str(plan)]))]
    ids = [x["id"] for x in got]
    assert len(set(ids)) == len(ids)
    counts = [x for x in got if x["event"] == "Count"]
    quiet = [x for x in got if x["event"] == "Quiet"]
    assert quiet and all(x["id"].startswith("ticks/ticks-in:") and x["id"].endswith("/1") for x in counts)
    assert all("~" in x["id"] for x in quiet)


def test_parquet_and_jsonl_exports_give_the_same_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topo = topology(tmp_path, 2)
    trace = random_trace(11, events=80)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    j = export_of(tmp_path / "a", topo, trace, monkeypatch, 2)
    p = export_of(tmp_path / "b", topo, trace, monkeypatch, 2, fmt="parquet")
    assert list(export.rows([str(j)])) == list(export.rows([str(p)]))
    from_j = [output_json(r) for r in run_locally(export_plan(topo, topo.programs[0], [str(j)]))]
    from_p = [output_json(r) for r in run_locally(export_plan(topo, topo.programs[0], [str(p)]))]
    assert from_j == from_p and from_j


def test_until_fires_the_timers_pending_after_the_last_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topo = topology(tmp_path, 1)
    trace = '[2026-01-01 00:00:00]\nTick({k: "a", n: 1})\n'
    path = str(export_of(tmp_path, topo, trace, monkeypatch, 1))
    plain = [output_json(r) for r in run_locally(export_plan(topo, topo.programs[0], [path]))]
    assert [x["event"] for x in plain] == ["Count"]  # as the worker: nothing fires past the last record
    until = parse_time("2026-01-01T00:01:00Z")
    later = [output_json(r) for r in run_locally(export_plan(topo, topo.programs[0], [path], until_us=until))]
    assert [(x["event"], x["time"]) for x in later] == [
        ("Count", "2026-01-01T00:00:00.000000Z"),
        ("Quiet", "2026-01-01T00:00:30.000000Z"),
    ]


def test_from_and_to_narrow_every_partition_by_offset_or_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topo = topology(tmp_path, 1)
    trace = "".join(f'[2026-01-01 00:00:{i:02d}]\nTick({{k: "a", n: {i}}})\n' for i in range(10))
    path = [str(export_of(tmp_path, topo, trace, monkeypatch, 1))]
    # Each second is a tick then an event: offsets 2i and 2i + 1.
    by_offset = export_plan(topo, topo.programs[0], path, start="4", stop="10")
    assert [(r.start, r.end) for s in by_offset.slices for r in s.ranges] == [(4, 10)]
    got = [output_json(r)["value"]["last"] for r in run_locally(by_offset)]
    assert got == [2, 3, 4]
    by_time = export_plan(topo, topo.programs[0], path, start="2026-01-01T00:00:03Z", stop="2026-01-01T00:00:06Z")
    assert [output_json(r)["value"]["last"] for r in run_locally(by_time)] == [3, 4, 5]


def test_undecodable_records_are_the_workers_error_records(tmp_path: Path) -> None:
    topo = topology(tmp_path, 1)
    rows: list[export.Row] = [
        ("ticks-in", 0, 0, 1_767_225_600_000, b'["a"]', b'{"k": "a", "n": 1}', None),
        ("ticks-in", 0, 1, 1_767_225_601_000, b'["a"]', b"not json", [("h", b"\xff")]),
        ("ticks-in", 0, 2, 1_767_225_602_000, None, b'{"k": "a", "n": 2}', None),
    ]
    path = write_jsonl_export(rows, tmp_path / "e.jsonl")
    got = [output_json(r) for r in run_locally(export_plan(topo, topo.programs[0], [str(path)]))]
    assert [x["event"] for x in got] == ["Count", "$error", "$error"]
    bad = got[1]["value"]
    assert bad["code"] == 6 and bad["source"]["offset"] == 1 and bad["source"]["topic"] == "ticks-in"
    assert got[1]["id"] == "ticks/ticks-in:0:1/1"
    assert "no key" in got[2]["value"]["message"]


def test_a_record_on_the_wrong_partition_stops_the_backfill(tmp_path: Path) -> None:
    """The worker would re-publish it through its repartition topic; the backfill refuses."""
    topo = topology(tmp_path, 2)
    rows = [("ticks-in", p, 0, 1_767_225_600_000, b'["x"]', b'{"k": "a", "n": 1}', None) for p in (0, 1)]
    plan = export_plan(topo, topo.programs[0], [str(write_jsonl_export(rows, tmp_path / "e.jsonl"))])
    totals = Totals()
    for i, piece in enumerate(plan.slices):
        for batch in run_partition(plan, i, slice_batches(plan, piece)):
            d = batch.to_pydict()
            for kind, value in zip(d["kind"], d["value"]):
                if kind == "stats":
                    totals.add(TaskSummary.from_json(value))
    assert totals.repartitioned == 1
    with pytest.raises(BackfillError, match="1 record\\(s\\) are on a partition their group key does not hash to"):
        check_totals(totals, plan)


def test_exports_that_cannot_be_read_say_where(tmp_path: Path) -> None:
    topo = topology(tmp_path, 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"topic": "ticks-in", "partition": 0, "offset": 0, "timestamp": 1, "value": "{}"}\nnot json\n')
    with pytest.raises(ExportError, match=r"bad\.jsonl:2:1: not JSON"):
        export_plan(topo, topo.programs[0], [str(bad)])
    unordered = write_jsonl_export(
        [("ticks-in", 0, 5, 1, None, b"{}", None), ("ticks-in", 0, 3, 1, None, b"{}", None)], tmp_path / "u.jsonl"
    )
    with pytest.raises(ExportError, match="offset 3 comes after offset 5"):
        export_plan(topo, topo.programs[0], [str(unordered)])
    with pytest.raises(ExportError, match=r"a \.parquet or a \.jsonl"):
        export_plan(topo, topo.programs[0], [str(tmp_path / "x.csv")])


def test_sinks_write_the_worker_records_and_appear_only_when_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topo = topology(tmp_path, 2)
    plan = export_plan(
        topo, topo.programs[0], [str(export_of(tmp_path, topo, random_trace(5, events=50), monkeypatch, 2))]
    )
    rows = list(run_locally(plan))
    with FileSink(tmp_path / "out.parquet") as sink:
        sink.write_all(rows)
        assert not (tmp_path / "out.parquet").exists()
        sink.commit()
    back = read_parquet_outputs(tmp_path / "out.parquet")
    assert [(r["topic"], r["key"], r["value"], r["headers"], r["timestamp"]) for r in back] == [
        (r.topic(), r.key(), r.value(), r.headers(), r.timestamp()[1]) for r in rows
    ]
    assert [r["id"] for r in back] == [codec.header(r.headers(), codec.HEADER_ID).decode() for r in rows]  # type: ignore[union-attr]
    with FileSink(tmp_path / "never.jsonl") as sink:
        sink.write_all(rows)  # no commit: a failed backfill leaves no file
    assert not (tmp_path / "never.jsonl").exists()
    assert not list(tmp_path.glob(".never*"))


def test_an_unreachable_broker_is_said_once_before_spark_starts(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "ticks.es").write_text(PROGRAM)
    (tmp_path / "topology.yaml").write_text(
        "kafka:\n  bootstrap_servers: 127.0.0.1:1\nprograms:\n  - name: ticks\n    source: ticks.es\n"
        "    inputs:\n      - topic: ticks-in\n        event: Tick\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "eventscript.cli.main",
            "backfill",
            str(tmp_path / "topology.yaml"),
            "--output",
            str(tmp_path / "out.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach Kafka at 127.0.0.1:1"), proc.stderr[:2000]
