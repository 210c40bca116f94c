"""A pause in the input (issue 21): every shipped topology processes the first half of its trace
until every task is idle (every writer's marker ``IDLE``, holding nothing back), then gets the
second half. Once the writers have records again, a reader's watermark must hold time back again:
kept at ``IDLE``, it released every later record as it came, in whatever order the writers' commits
landed, and a timer fired before a slower writer's record (sensor-silence: site B silent at 08:20
instead of 08:26, issue 21's ``LATE_AFTER_KILL``)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from eventscript.task.progress import IDLE, InputProgress, read_marker
from eventscript.topology.config import load_topology

from .pipeline_log import PipelineRun
from .test_event_time import TOPOLOGY_FILES, shown, simulated


def halves(path: Path, tmp: Path) -> tuple[Path, Path]:
    """The sample trace cut at its middle timestamp, as two trace files (the second half's first
    timestamp written in full)."""
    lines = (path.parent / "sample.trace").read_text().splitlines()
    stamps = [i for i, line in enumerate(lines) if line.startswith("[")]
    cut = stamps[len(stamps) // 2]
    first, second = lines[:cut], lines[cut:]
    date = lines[stamps[0]][1:11]
    if not second[0][1:].startswith(date):
        second[0] = f"[{date} {second[0][1:-1]}]"
    (tmp / "first.trace").write_text("\n".join(first) + "\n")
    (tmp / "second.trace").write_text("\n".join(second) + "\n")
    return tmp / "first.trace", tmp / "second.trace"


def come_to_rest(pipeline: PipelineRun) -> None:
    """Full rounds until nothing more happens: every task has processed everything and is idle."""
    rng = random.Random(0)
    while sum(pipeline.step(task, cursors, rng, take_all=True) for task, cursors in pipeline.tasks):
        pass


def take_waiting(pipeline: PipelineRun, task: Any, cursors: dict[str, int]) -> None:
    """The task takes every record waiting for it on its inputs, and hears of their ends."""
    for topic in cursors:
        part = pipeline.log.partition_list(topic)[task.partition]
        for rec in part[cursors[topic] :]:
            task.add(rec)
        cursors[topic] = len(part)
        task.mark_eof(topic, task.partition)


def announce(pipeline: PipelineRun) -> None:
    """Stage after stage, every task takes what is waiting for it and marks its progress without
    processing a record: each writer says it has records again before any reader can take a later
    record of another writer (else that writer's last marker, ``IDLE``, rightly lets the reader
    take it: an idle writer holds nothing back, docs/topologies.md)."""
    for task, cursors in pipeline.tasks:
        take_waiting(pipeline, task, cursors)
        task.write_progress(force=True)


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_after_a_pause_every_topology_gives_the_simulated_records(path: Path, tmp_path: Path) -> None:
    first, second = halves(path, tmp_path)
    want = {k: shown(v) for k, v in simulated(path).items()}
    for seed in (1, 2, 3):
        pipeline = PipelineRun(load_topology(path), path, tmp_path / f"store-{seed}")
        pipeline.publish(first)
        come_to_rest(pipeline)
        pipeline.publish(second)
        announce(pipeline)
        pipeline.run(seed)
        assert {k: shown(v) for k, v in pipeline.results().items()} == want, seed
        assert pipeline.held_back() == 0


def process_before_any_reader(pipeline: PipelineRun) -> None:
    """Stage after stage, every task takes what is waiting for it and processes it, writing no
    marker of its own accord (a commit's): its records reach the readers with the markers it
    wrote before them only."""
    for task, cursors in pipeline.tasks:
        take_waiting(pipeline, task, cursors)
        task.process(0)


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_a_writer_that_was_idle_says_it_is_not_before_its_next_records(path: Path, tmp_path: Path) -> None:
    """Its last marker said ``IDLE``: a reader taking its next records before its next commit's
    marker would take them as they come. So the marker goes first."""
    first, second = halves(path, tmp_path)
    want = {k: shown(v) for k, v in simulated(path).items()}
    for seed in (1, 2, 3):
        pipeline = PipelineRun(load_topology(path), path, tmp_path / f"store-{seed}")
        pipeline.publish(first)
        come_to_rest(pipeline)
        pipeline.publish(second)
        process_before_any_reader(pipeline)
        pipeline.run(seed)
        assert {k: shown(v) for k, v in pipeline.results().items()} == want, seed
        assert pipeline.held_back() == 0


def test_the_watermark_comes_back_from_idle_when_a_writer_has_records_again() -> None:
    progress = InputProgress(frozenset({"a/0", "a/1"}))
    progress.hear("a/0", 50)
    progress.hear("a/1", 60)
    assert progress.watermark == 50
    progress.hear("a/0", IDLE)
    progress.hear("a/1", IDLE)
    assert progress.watermark == IDLE  # every writer idle: nothing held back
    progress.hear("a/1", 70)
    assert progress.watermark == 70  # a/1 has records again: what follows them waits for it
    progress.hear("a/0", 75)
    assert progress.watermark == 70
    progress.hear("a/1", 90)
    assert progress.watermark == 75
    progress.hear("a/0", 40)  # (a marker older than the last: read again after a rewind)
    assert progress.watermark == 75


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_a_host_that_commits_markers_first_has_them_committed_before_the_records(path: Path, tmp_path: Path) -> None:
    """A host whose records reach readers when it commits (the Kafka worker: a transaction, or
    a batch a kill may lose) sets ``commit_markers_first``: after an ``IDLE`` marker, the task's
    next ``process`` writes only the markers saying it is not idle and asks for a commit
    (``wants_commit``); the records are processed at the call after it. In one batch with their
    outputs, a worker killed -9 lost the markers with them and left ``IDLE`` standing, and the
    readers took other writers' later records first (sensors' SiteAlarm lost under exactly-once,
    CI 2026-11-26)."""
    first, second = halves(path, tmp_path)
    want = {k: shown(v) for k, v in simulated(path).items()}
    pipeline = PipelineRun(load_topology(path), path, tmp_path / "store")
    for task, _ in pipeline.tasks:
        assert task.progress_plan is not None
        task.set_progress(task.progress_plan, commit_markers_first=True)
    pipeline.publish(first)
    come_to_rest(pipeline)
    pipeline.publish(second)
    asked = 0
    for task, cursors in pipeline.tasks:  # stage after stage, as process_before_any_reader
        take_waiting(pipeline, task, cursors)
        sizes = {t: [len(p) for p in parts] for t, parts in pipeline.log.topics.items()}
        processed = task.process(0)
        if not task.wants_commit:
            continue
        asked += 1
        assert processed == 0, "records processed before the markers announcing them were committed"
        written = [
            rec
            for t, parts in pipeline.log.topics.items()
            for q, part in enumerate(parts)
            for rec in part[sizes.get(t, [0] * len(parts))[q] :]
        ]
        markers = [read_marker(rec.headers()) for rec in written]
        assert written and None not in markers, "only markers go before the commit"
        assert all(m is not None and m[1] < IDLE for m in markers), "the markers say the task is not idle"
        task.wants_commit = False  # (the host committed)
        task.process(0)  # (processes what its watermark lets through: maybe nothing yet)
        assert not task.wants_commit, "asked for a commit again after the markers were committed"
    assert asked > 0, "no task with records again after an idle marker asked for a commit"
    pipeline.run(1)
    assert {k: shown(v) for k, v in pipeline.results().items()} == want
