"""Event time keeps moving while input keeps flowing (issue 21, the fault found after the merge):
the tasks of a record-clock program on several partitions exchange records through their
repartition topic, and each waits on the others' repartition markers. A task's marker there must
speak only of what it has re-published, never be held back by records it holds back itself, or
the tasks wait on each other and crawl one record time per commit while input piles up."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

from eventscript.topology.config import load_topology

from .pipeline_log import PipelineRun

SENSORS = Path(__file__).resolve().parents[2] / "topologies" / "sensors" / "topology.yaml"

#: Record time a round of input covers (ms), and rounds the tasks may lag behind the input.
ROUND_MS = 60_000
LAG_ROUNDS = 3


def readings(round_no: int, rng: random.Random, start_ms: int) -> str:
    """One minute of readings from 24 sensors on 8 sites (some hot), as a trace."""
    lines = []
    for second in range(0, 60, 5):
        ms = start_ms + round_no * ROUND_MS + second * 1000
        h, rem = divmod(ms // 1000 % 86_400, 3600)
        lines.append(f"[2026-03-01 {h:02d}:{rem // 60:02d}:{rem % 60:02d}]")
        for _ in range(3):
            sensor = rng.randrange(24)
            celsius = 85.0 if rng.random() < 0.4 else 60.0
            lines.append(f'Reading({{site: "S{sensor % 8}", sensor: "S{sensor % 8}/{sensor}", celsius: {celsius}}})')
    return "\n".join(lines) + "\n"


def test_the_tasks_keep_up_with_continuous_input_through_their_repartition_topic(tmp_path: Path) -> None:
    topo = load_topology(SENSORS)
    assert topo.event_time_markers
    pipeline = PipelineRun(topo, SENSORS, tmp_path / "store")
    site_alarm = [task for task, _ in pipeline.tasks if task.cfg.name == "site-alarm"]
    assert len(site_alarm) > 1 and all(task.progress_plan and task.progress_plan.repartition for task in site_alarm)
    rng = random.Random(5)
    start_ms = int(datetime(2026, 3, 1, 8, tzinfo=UTC).timestamp() * 1000)
    repartitioned = 0
    for round_no in range(30):
        chunk = tmp_path / f"round-{round_no}.trace"
        chunk.write_text(readings(round_no, rng, start_ms))
        pipeline.publish(chunk)
        for task, cursors in pipeline.tasks:  # every task fetches, processes and commits once
            pipeline.step(task, cursors, rng, take_all=True)
            repartitioned += task.counts.pop("repartitioned", 0)
        if round_no < LAG_ROUNDS:
            continue
        behind_ms = start_ms + (round_no - LAG_ROUNDS) * ROUND_MS
        clocks = {f"{task.cfg.name}/{task.partition}": task.clock.now() // 1000 for task, _ in pipeline.tasks}
        assert all(ms >= behind_ms for ms in clocks.values()), (round_no, behind_ms, clocks, pipeline.held_back())
    assert repartitioned > 0  # the sites' records did cross the repartition topic
