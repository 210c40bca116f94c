"""Progress counts only records that move record time (issue 21: why the backfill and the worker
differed with markers on). A record that gives an ``$error`` (here: not JSON) moves no task's
clock, in the worker as in the backfill and the tester; were its timestamp counted as its
partition's progress, a task's repartition marker would carry it, and another task of the program,
read to its own end, would move its clock there and fire timers nobody else fires.
``tests/backfill/test_kafka_sink.py`` showed it on Kafka: two ``Quiet`` outputs more in the live
worker than in the backfill, when the worker's task 0 reached its end before task 1 did."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml

from count_programs import COUNT_QUIET
from eventscript.task.partitioner import murmur2_partition
from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.config import load_topology
from eventscript.topology.model import load_graph

from .pipeline_log import PipelineRun
from .task_helpers import T0, PlainRecord

#: Far ahead of the trace (2033): the time a record that cannot be decoded claims.
FAR_AHEAD_MS = 2_000_000_000_000


def ticks_topology(tmp: Path) -> Path:
    """COUNT_QUIET (a ``Quiet`` 30 s after a key's last record) on two partitions, markers on."""
    (tmp / "ticks.es").write_text(COUNT_QUIET)
    doc = {
        "application": "untimed",
        "event_time_markers": True,
        "programs": [
            {
                "name": "ticks",
                "source": "ticks.es",
                "clock": "record",
                "inputs": [{"topic": "ticks-in", "event": "Tick"}],
                "outputs": {"default": "ticks-out"},
                "errors": "ticks-err",
            }
        ],
        "topics": {"ticks-in": {"partitions": 2}},
    }
    path = tmp / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def trace_text() -> str:
    """Eight keys ticking every 10 s for two minutes, two of them quiet for 50 s in the middle:
    every key's Quiet is still pending at the end."""
    lines = []
    for i in range(12):
        lines.append(f"[2026-01-01 00:{i * 10 // 60:02d}:{i * 10 % 60:02d}]")
        lines += [f'Tick({{k: "k{k}", n: {i}}})' for k in range(8) if k >= 2 or not 3 <= i <= 7]
    return "\n".join(lines) + "\n"


def per_key(lines: list[dict[str, Any]]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for x in lines:
        out.setdefault(repr(x["key"]), []).append((x["time"], x["event"], x["value"]))
    return out


def test_a_record_that_moves_no_clock_is_no_partitions_progress(tmp_path: Path) -> None:
    path = ticks_topology(tmp_path)
    (tmp_path / "sample.trace").write_text(trace_text())
    pipeline = PipelineRun(load_topology(path), path, tmp_path / "store")
    pipeline.publish(tmp_path / "sample.trace")
    part = pipeline.log.partition_list("ticks-in")[1]
    key = next(b"k%d" % k for k in range(8) if murmur2_partition(b"k%d" % k, 2) == 1)
    part.append(PlainRecord("ticks-in", 1, len(part), FAR_AHEAD_MS, key, b"not json"))
    (task0, cursors0), (task1, cursors1) = pipeline.tasks
    rng = random.Random(0)
    # Task 1 takes everything, the bad record last, and is not at its end yet (no end-of-partition
    # event): it marks its progress. Task 0 takes everything and is at its end.
    pipeline.step(task1, cursors1, rng, take_all=True)
    pipeline.step(task0, cursors0, rng, take_all=True)
    for ip in task0.inputs:
        task0.mark_eof(ip.topic, 0)
    for _ in range(3):  # the markers cross over
        pipeline.step(task1, cursors1, rng, take_all=True)
        pipeline.step(task0, cursors0, rng, take_all=True)

    last_ms = T0 + 110_000  # the trace's last time
    assert task0.clock.now() // 1000 == last_ms
    want: list[dict[str, Any]] = []
    simulate(load_graph(path), read_trace(str(tmp_path / "sample.trace")), lambda line: want.append(line.to_json()))
    got = [line for (topic, _), lines in pipeline.results().items() if topic == "ticks-out" for line in lines]
    assert per_key(got) == per_key(want)
    assert any(line["event"] == "Quiet" for line in want)  # (Quiets inside the trace, none after it)
