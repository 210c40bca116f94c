"""A task's markers with a time go out only as it commits (issue 21, at-least-once).

A marker says its writer has written everything before its time; an at-least-once host writes
them after the commit of what the task processed (``Checkpoint._mark_committed_progress``), so a
kill never makes the next owner write again what a marker already passed. The one marker a task
writes between commits is the one saying it has records again after an ``IDLE`` one, before it
processes them (``Task.process``). That one went out on every topic the task marks, also those
it had marked with a time, with the time of what it had processed since its last commit: the
readers took those records, and after a kill the next owner wrote them again, later, from its
commit (sensor-silence's random-kills schedule 34: an average taken twice, a SiteBack four
minutes early). It was so whenever the task was idle on one topic (its repartition topic) and not
on another (its output).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from eventscript.task.progress import IDLE, read_marker
from eventscript.topology.config import load_topology

from .pipeline_log import PipelineRun
from .test_event_time import TOPOLOGY_FILES
from .test_random_kills import COMMIT
from .test_upstream_repeats import commit

Coordinates = tuple[str, int]


def markers_since(pipeline: PipelineRun, sizes: dict[str, list[int]]) -> list[tuple[Coordinates, str, int]]:
    """The markers written since the log had ``sizes``: (topic, partition), writer, progress."""
    found = []
    for topic, parts in pipeline.log.topics.items():
        for q, part in enumerate(parts):
            for rec in part[sizes.get(topic, [0] * len(parts))[q] :]:
                marker = read_marker(rec.headers())
                if marker is not None:
                    found.append(((topic, q), *marker))
    return found


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_between_commits_a_task_marks_only_the_topics_it_was_idle_on(path: Path, tmp_path: Path) -> None:
    pipeline = PipelineRun(load_topology(path), path, tmp_path / "store", commit_markers_first=True)
    pipeline.publish(path.parent / "sample.trace")
    rng = random.Random(7)
    last: dict[tuple[Coordinates, str], int] = {}
    ahead: list[str] = []
    for _ in range(3_000):
        task, cursors = rng.choice(pipeline.tasks)
        sizes = {t: [len(p) for p in parts] for t, parts in pipeline.log.topics.items()}
        pipeline.step(task, cursors, rng, mark=False)  # (the task writes no marker but as it must)
        for where, writer, progress in markers_since(pipeline, sizes):
            before = last.get((where, writer), IDLE)
            if progress < IDLE and before < IDLE:
                ahead.append(f"{writer} on {where}: {progress} after {before}, before its commit")
            last[(where, writer)] = progress
        if rng.random() < COMMIT or task.wants_commit:  # (as the Kafka host: ``Checkpoint``)
            sizes = {t: [len(p) for p in parts] for t, parts in pipeline.log.topics.items()}
            commit(task)
            for where, writer, progress in markers_since(pipeline, sizes):
                last[(where, writer)] = progress
    assert last, "no marker written"
    assert not ahead, ahead[:5]
