"""The backfill's final progress markers (issue 21, ``backfill/markers.py``): a topic a backfill
wrote in key-parallel mode (key group after key group, not in record-time order), followed by
the markers its Kafka sink writes after every record, gives a downstream program on the worker's
tasks the simulated run's records per key, in order, with the worker's es-ids. Without Spark or
a broker: the first stage runs as ``run_locally``, the second stage's tasks over an in-memory
log in random schedules (tests/task/pipeline_log.py)."""

from __future__ import annotations

import dataclasses
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from trace_export import trace_rows, write_jsonl_export

from eventscript.backfill.job import export_plan, run_locally
from eventscript.backfill.kafka_sink import row_record
from eventscript.backfill.markers import final_markers, read_topics, reading_order
from eventscript.backfill.records import OutputRow
from eventscript.backfill.task_stage import TaskSummary, add_clocks
from eventscript.task.codec import HEADER_SOURCE, HEADER_SOURCE_BELOW, header
from eventscript.task.partitioner import murmur2_partition
from eventscript.task.progress import IDLE, read_marker, read_reached
from eventscript.topology.config import load_topology
from eventscript.topology.progress import topology_partitions
from task.pipeline_log import PipelineRun
from task.test_event_time import TOPOLOGIES, shown, simulated
from task.test_event_time import run as run_in_memory

SENSORS = TOPOLOGIES / "sensors" / "topology.yaml"
KEY_GROUPS = 3


def sensors_with_a_longer_trace(tmp: Path, seed: int = 21) -> Path:
    """The shipped sensors pipeline over 90 minutes of 12 sensors on 3 sites, a reading a minute,
    hot episodes at random (as bench/sensors_partitions.py, smaller): enough Overheat and
    Recovered records of many keys that key group after key group is not record-time order."""
    folder = tmp / "sensors"
    shutil.copytree(SENSORS.parent, folder)
    rng = random.Random(seed)
    sensors = [(f"S{i % 3}", f"S{i % 3}/{i}") for i in range(12)]
    celsius = {sensor: 60.0 for _, sensor in sensors}
    lines = []
    for minute in range(90):
        lines.append(f"[2026-03-01 {8 + minute // 60:02d}:{minute % 60:02d}:00]")
        for site, sensor in sensors:
            if rng.random() < 0.05:
                celsius[sensor] = 90.0
            elif celsius[sensor] > 80 and rng.random() < 0.2:
                celsius[sensor] = 60.0
            lines.append(f'Reading({{site: "{site}", sensor: "{sensor}", celsius: {celsius[sensor]:.1f}}})')
    (folder / "sample.trace").write_text("\n".join(lines) + "\n")
    return folder / "topology.yaml"


def backfilled_first_stage(path: Path, monkeypatch: Any, tmp: Path) -> tuple[list[OutputRow], dict[int, int]]:
    """The first program over the sample trace in key-parallel mode: its output records in the
    order the backfill writes them, and each task's final record clock (ms)."""
    topo = load_topology(path)
    cfg = topo.programs[0]
    partitions = topology_partitions(topo)(cfg.inputs[0].topic)
    export = write_jsonl_export(
        trace_rows(topo, path.parent / "sample.trace", monkeypatch, partitions), tmp / "in.jsonl"
    )
    plan = dataclasses.replace(export_plan(topo, cfg, [str(export)]), key_groups=KEY_GROUPS)
    clocks: dict[str, int] = {}

    def summary(s: TaskSummary) -> None:
        add_clocks(clocks, s.clocks)

    rows = list(run_locally(plan, summary))
    return rows, {int(p): ms for p, ms in clocks.items()}


def in_record_time_order(rows: list[OutputRow], partitions: int) -> bool:
    """Whether every partition the worker's producer would put ``rows`` on gets them in
    record-time order."""
    last: dict[int, int] = {}
    for r in rows:
        p = murmur2_partition(r.key(), partitions) if r.key() is not None else 0
        if r.timestamp()[1] < last.get(p, 0):
            return False
        last[p] = r.timestamp()[1]
    return True


def downstream(path: Path, records: list[Any], tmp: Path) -> PipelineRun:
    """The topology's later programs, on the worker's tasks, over a log holding ``records`` (as
    the Kafka sink produces them: topic, partition or None to place by key, key, value, headers,
    timestamp) in that order."""
    pipeline = PipelineRun(load_topology(path), path, tmp / "store")
    first = pipeline.topo.programs[0].name
    pipeline.tasks = [(task, cursors) for task, cursors in pipeline.tasks if task.cfg.name != first]
    for topic, partition, key, value, headers, ts in records:
        pipeline.log.send(topic, -1 if partition is None else partition, key, value, headers, ts, False)
    return pipeline


@pytest.mark.parametrize("seed", [1, 2])
def test_a_key_parallel_backfill_with_its_final_markers_gives_a_downstream_worker_the_simulated_records(
    seed: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = sensors_with_a_longer_trace(tmp_path)
    topo = load_topology(path)
    rows, clocks = backfilled_first_stage(path, monkeypatch, tmp_path)
    assert not in_record_time_order([r for r in rows if r.topic() == "sensor-events"], partitions=4)
    partitions_of = topology_partitions(topo)
    tasks = partitions_of(topo.programs[0].inputs[0].topic)
    assert sorted(clocks) == list(range(tasks))
    markers = final_markers(topo, topo.programs[0], tasks, clocks, partitions_of, handover=False)
    assert {m[0] for m in markers} == {"sensor-events"}  # the topic site-alarm reads (not the error topic)
    as_written = list(reading_order(map(row_record, rows), read_topics(topo, topo.programs[0])))
    pipeline = downstream(path, [*as_written, *markers], tmp_path)
    pipeline.run(seed)
    got = pipeline.results()
    want = simulated(path)
    assert any(t == "site-alarms" for t, _ in want)  # (the trace raises alarms)
    assert {k: shown(v) for k, v in got.items()} == {k: shown(v) for k, v in want.items()}
    assert pipeline.held_back() == 0
    reference = run_in_memory(path, None, 1, tmp_path / "memory").results()
    assert {k: [x["es-id"] for x in v] for k, v in got.items()} == {
        k: [x["es-id"] for x in v] for k, v in reference.items()
    }


def test_a_regrouping_reader_gives_the_simulated_records_whatever_order_the_writers_records_come_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The key-parallel output as the backfill gives it (key group after key group), with its
    markers: site-alarm (grouped by site) re-publishes the records of other tasks' sites."""
    path = sensors_with_a_longer_trace(tmp_path)
    topo = load_topology(path)
    rows, clocks = backfilled_first_stage(path, monkeypatch, tmp_path)
    partitions_of = topology_partitions(topo)
    markers = final_markers(topo, topo.programs[0], 3, clocks, partitions_of, handover=False)
    pipeline = downstream(path, [*map(row_record, rows), *markers], tmp_path)
    pipeline.run(1)
    got = pipeline.results()
    assert {k: shown(v) for k, v in got.items()} == {k: shown(v) for k, v in simulated(path).items()}


def copies_by_source(pipeline: PipelineRun) -> dict[tuple[int, str], list[Any]]:
    """The re-published copies on each partition of site-alarm's repartition topic, per source
    partition, in the order they were written (markers left out)."""
    by_source: dict[tuple[int, str], list[Any]] = {}
    for q, part in enumerate(pipeline.log.topics[pipeline.topo.repartition_topic(pipeline.topo.programs[1])]):
        for rec in part:
            source = header(rec.headers(), HEADER_SOURCE)
            if source is not None:
                by_source.setdefault((q, source.decode().rpartition(":")[0]), []).append(rec)
    return by_source


def test_copies_of_a_partition_several_tasks_write_go_in_record_time_order_and_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Why the reader above gets the simulated order: each source partition's copies are written
    in record-time order (not in the order the writers' records came), each saying below which
    offset its partition is re-published; copies written again (as after the forwarding task
    restarted) are taken for repeats, though they are not in offset order."""
    path = sensors_with_a_longer_trace(tmp_path)
    topo = load_topology(path)
    rows, clocks = backfilled_first_stage(path, monkeypatch, tmp_path)
    markers = final_markers(topo, topo.programs[0], 3, clocks, topology_partitions(topo), handover=False)
    pipeline = downstream(path, [*map(row_record, rows), *markers], tmp_path)
    pipeline.run(1)
    by_source = copies_by_source(pipeline)
    assert len(by_source) > 1
    out_of_offset_order = 0
    for copies in by_source.values():
        times = [rec.timestamp()[1] for rec in copies]
        assert times == sorted(times)
        offsets = [int(header(rec.headers(), HEADER_SOURCE).rpartition(b":")[2]) for rec in copies]  # type: ignore[union-attr]
        out_of_offset_order += offsets != sorted(offsets)  # (the writers' order: not record-time order)
        assert all(header(rec.headers(), HEADER_SOURCE_BELOW) is not None for rec in copies)
    assert out_of_offset_order
    got = pipeline.results()
    # Every copy written again: the readers take none of them.
    first_times: list[Any] = []
    for task, _ in pipeline.tasks:
        real = task.copies.first_time
        task.copies.first_time = lambda *a, real=real: first_times.append(a) or real(*a)  # type: ignore[method-assign]
    rep = pipeline.topo.repartition_topic(pipeline.topo.programs[1])
    for q, part in enumerate(pipeline.log.topics[rep]):
        again = [rec for rec in part if header(rec.headers(), HEADER_SOURCE) is not None]
        for rec in again:
            pipeline.log.send(rep, q, rec.key(), rec.value(), rec.headers(), rec.timestamp()[1], False)
    pipeline.run(2)
    assert len(first_times) == sum(len(c) for c in by_source.values())
    assert pipeline.results() == got


def test_without_the_markers_a_downstream_worker_waits_for_the_backfills_writers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Why the sink writes them: site-alarm waits to hear from every task of overheat."""
    rows, _ = backfilled_first_stage(SENSORS, monkeypatch, tmp_path)
    pipeline = downstream(SENSORS, [row_record(r) for r in rows], tmp_path)
    pipeline.run(1)
    assert not any(t == "site-alarms" for t, _ in pipeline.results())
    assert pipeline.held_back() > 0


def test_markers_before_a_hand_over_mark_each_tasks_clock_as_its_progress() -> None:
    """With a hand-over the workers go on as the same writers, from each task's clock: the
    markers hold back what they may still write (not idle), and say nothing more."""
    topo = load_topology(SENSORS)
    cfg = topo.programs[0]
    partitions_of = topology_partitions(topo)
    clocks = {0: 1_000, 1: 2_000, 2: 3_000}
    handed = final_markers(topo, cfg, 3, clocks, partitions_of, handover=True)
    idle = final_markers(topo, cfg, 3, clocks, partitions_of, handover=False)
    assert len(handed) == len(idle) == 3 * partitions_of("sensor-events")
    assert {(read_marker(m[4]), read_reached(m[4])) for m in handed} == {
        (("overheat/0", 1_000), None),
        (("overheat/1", 2_000), None),
        (("overheat/2", 3_000), None),
    }
    assert {(read_marker(m[4]), read_reached(m[4])) for m in idle} == {
        (("overheat/0", IDLE), 1_000),
        (("overheat/1", IDLE), 2_000),
        (("overheat/2", IDLE), 3_000),
    }
    assert {(m[1], m[5]) for m in handed if m[4] == handed[0][4]} == {(q, 1_000) for q in range(4)}


def test_no_markers_for_a_program_no_record_time_reader_waits_on(tmp_path: Path) -> None:
    topo = load_topology(SENSORS)
    last = topo.programs[-1]  # site-alarm: its topics are results, read by no program
    assert final_markers(topo, last, 4, {0: 1}, topology_partitions(topo), handover=False) == []
    off = topo.model_copy(update={"event_time_markers": False})
    assert final_markers(off, topo.programs[0], 3, {0: 1}, topology_partitions(off), handover=False) == []
