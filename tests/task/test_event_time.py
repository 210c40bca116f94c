"""Event time that crosses topics (issue 21): every shipped topology, on several partitions per
topic, run task by task over an in-memory log in random schedules, gives per key the simulated
run's records in order, and every schedule gives them the same es-ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eventscript.task.progress import InputProgress, marker_headers, read_marker
from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.config import load_topology
from eventscript.topology.model import load_graph
from eventscript.topology.progress import topology_partitions

from .pipeline_log import PipelineRun, with_partitions

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
TOPOLOGY_FILES = sorted(TOPOLOGIES.glob("*/topology.yaml"))


def simulated(path: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """``eventscript test``'s records, per topic and key."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    simulate(
        load_graph(path),
        read_trace(str(path.parent / "sample.trace")),
        lambda line: out.setdefault((line.topic or "", repr(line.to_json().get("key"))), []).append(line.to_json()),
    )
    return out


def shown(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What must agree with the simulated run: time, event, value (an $error's code)."""
    return [(x["time"], x["event"], x["value"]["code"] if x["event"] == "$error" else x["value"]) for x in lines]


def run(path: Path, counts: dict[str, int] | None, seed: int, tmp: Path) -> PipelineRun:
    topo = load_topology(path)
    pipeline = PipelineRun(with_partitions(topo, counts or {}), path, tmp / f"seed-{seed}")
    pipeline.publish(path.parent / "sample.trace")
    pipeline.run(seed)
    return pipeline


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_the_shipped_partition_counts_give_the_simulated_records_per_key(path: Path, tmp_path: Path) -> None:
    want = {k: shown(v) for k, v in simulated(path).items()}
    ids = None
    for seed in (1, 2):
        pipeline = run(path, None, seed, tmp_path)
        got = pipeline.results()
        assert {k: shown(v) for k, v in got.items()} == want
        assert pipeline.held_back() == 0
        seed_ids = {k: [x["es-id"] for x in v] for k, v in got.items()}
        assert ids is None or seed_ids == ids
        ids = seed_ids


def test_every_shipped_topic_has_three_partitions_or_more_and_one_stage_its_own_count() -> None:
    counts = {}
    for path in TOPOLOGY_FILES:
        topo = load_topology(path)
        partitions_of = topology_partitions(topo)
        counts[path.parent.name] = {t: partitions_of(t) for t in load_graph(path).all_topics()}
    assert all(n >= 3 for c in counts.values() for n in c.values()), counts
    assert any(len(set(c.values())) > 1 for c in counts.values())


def test_other_partition_counts_per_stage(tmp_path: Path) -> None:
    path = TOPOLOGIES / "sensors" / "topology.yaml"
    counts = {"readings": 3, "sensor-events": 5, "site-alarms": 2, "sensor-errors": 4}
    pipeline = run(path, counts, 7, tmp_path)
    assert {k: shown(v) for k, v in pipeline.results().items()} == {k: shown(v) for k, v in simulated(path).items()}


def test_a_marker_names_its_writer_and_progress() -> None:
    assert read_marker(marker_headers("overheat", 2, 1_700_000_000_123)) == ("overheat/2", 1_700_000_000_123)
    assert read_marker([("es-event", b"X")]) is None
    assert read_marker(None) is None


def test_tail_shows_an_idle_marker_with_the_time_its_writer_reached() -> None:
    from eventscript.kafka.tools import progress_json
    from eventscript.task.progress import IDLE

    assert progress_json("p/0", 1_767_225_600_000, None) == {"writer": "p/0", "time": "2026-01-01T00:00:00.000000Z"}
    idle = marker_headers("p", 1, IDLE, 1_767_225_600_000)
    assert progress_json(*read_marker(idle), idle) == {  # type: ignore[misc]
        "writer": "p/1",
        "idle": True,
        "time": "2026-01-01T00:00:00.000000Z",
    }


def test_the_watermark_waits_for_every_writer_and_never_goes_back() -> None:
    progress = InputProgress(frozenset({"a/0", "a/1"}))
    progress.hear("a/0", 50)
    assert progress.watermark is None  # a/1 not heard from
    progress.hear("a/1", 30)
    assert progress.watermark == 30
    progress.hear("a/1", 20)  # an older marker read again
    assert progress.watermark == 30
    progress.hear("b/0", 10)  # not a writer of this partition
    assert progress.watermark == 30
    progress.hear("a/1", 70)
    assert progress.watermark == 50


def test_a_source_partition_read_to_its_end_stops_holding_time_back_after_its_idle_timeout() -> None:
    from eventscript.task.merge import MAX_FRONTIER, InputPartition
    from eventscript.topology.config import InputConfig

    from .task_helpers import PlainRecord

    at_once = InputPartition("in", 0, 0, InputConfig(topic="in", event="A"))
    patient = InputPartition("in", 0, 0, InputConfig(topic="in", event="A", idle_timeout_ms=60_000))
    for ip in (at_once, patient):
        assert ip.frontier(0.0) is None  # nothing read yet
        ip.buffer.append(PlainRecord("in", 0, 0, 1_000, None, b"{}"))
        ip.seen_ms, ip.seen_at = 1_000, 100.0
        assert ip.frontier(100.0) == 1_000  # its first buffered record
        ip.buffer.clear()
        assert ip.frontier(100.0) == 1_000  # not at its end: more may come at 1 s or later
        ip.eof = True
    assert at_once.frontier(100.0) == MAX_FRONTIER and at_once.idled
    assert patient.frontier(159.0) == 1_000 and not patient.idled
    assert patient.frontier(160.0) == MAX_FRONTIER and patient.idled
    assert patient.frontier(161.0) == MAX_FRONTIER and patient.times_idled == 1  # counted once


def test_a_writer_that_was_idle_holds_time_back_again_but_the_watermark_never_goes_back() -> None:
    from eventscript.task.progress import IDLE

    progress = InputProgress(frozenset({"a/0", "a/1"}))
    progress.hear("a/0", 50)
    progress.hear("a/1", IDLE)  # read to its ends: it holds nothing back
    assert progress.watermark == 50
    progress.hear("a/1", 40)  # records again: it counts again, from where it is
    progress.hear("a/0", 90)
    assert progress.watermark == 50  # not back to 40: what a/1 writes below 50 is late
    progress.hear("a/1", 70)
    assert progress.watermark == 70


def test_a_stage_that_keeps_its_upstreams_key_re_publishes_nothing(tmp_path: Path) -> None:
    """fridge-alerts' alert groups by the fridge debounce writes as its key (``topology/keyed.py``):
    its tasks forward nothing ahead, its repartition topic stays empty, no marker goes there, and
    it still gives the simulated records (above); debounce, on an external topic, re-publishes."""
    path = TOPOLOGIES / "fridge-alerts" / "topology.yaml"
    pipeline = run(path, None, 3, tmp_path)
    assert {k: shown(v) for k, v in pipeline.results().items()} == {k: shown(v) for k, v in simulated(path).items()}
    alert = [task for task, _ in pipeline.tasks if task.cfg.name == "alert"]
    assert len(alert) == 3 and not any(task.progress_plan.repartition for task in alert)  # type: ignore[union-attr]
    assert not any(any(part) for part in pipeline.log.topics[alert[0].repartition_topic])
    debounce = next(task for task, _ in pipeline.tasks if task.cfg.name == "debounce")
    assert debounce.progress_plan.repartition  # type: ignore[union-attr]


def test_an_output_with_no_key_goes_where_its_id_says(tmp_path: Path) -> None:
    """windows-alarm's programs are not grouped: their outputs carry no key. To a topic another
    program reads, each goes to the partition its ``es-id`` hashes to (``Task._keyless_partitions``),
    so that a writer restarted from its last commit writes a copy where its original is, and the
    reader's repeat rules see both (at random partitions they did not: tests/kafka/
    test_pipeline_kills.py, windows-alarm at-least-once, seed 31, took both copies)."""
    from eventscript.task.codec import HEADER_ID, header
    from eventscript.task.partitioner import partition_of

    path = TOPOLOGIES / "windows-alarm" / "topology.yaml"
    pipeline = run(path, None, 4, tmp_path)
    parts = pipeline.log.topics["windows"]
    assert len(parts) == 3 and sum(map(len, parts)) > 20
    for p, part in enumerate(parts):
        for rec in part:
            if rec.value() is not None:  # (markers go to every partition)
                assert rec.key() is None and p == partition_of(header(rec.headers(), HEADER_ID) or b"", 3)
    assert sum(1 for part in parts if any(r.value() is not None for r in part)) > 1
    assert {k: shown(v) for k, v in pipeline.results().items()} == {k: shown(v) for k, v in simulated(path).items()}
