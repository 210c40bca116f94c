"""Every shipped topology, its tasks killed at random and taken on from their last commits as an
at-least-once worker's are, gives per key the simulated run's records once repeats are dropped
by ``es-id``, with the ids of a run without kills (issue 21, "also with workers killed -9 ...
under both guarantees").

The tasks run over an in-memory log in a random schedule (``pipeline_log.py``); each commits now
and then as an at-least-once worker does (its state to its store at its input position, then its
markers: ``test_upstream_repeats.commit``), and now and then one is killed: what it wrote stays in
the log (at-least-once), what it did since its last commit is lost, and its next owner starts from
that commit. Upstream stages on their own partition counts (the first program's source on one
partition: one task writes each partition of what it writes) and as shipped.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from eventscript.topology.config import load_topology

from .pipeline_log import PipelineRun, with_partitions
from .test_event_time import TOPOLOGY_FILES, shown, simulated
from .test_event_time import run as run_in_memory
from .test_upstream_repeats import commit, restart

#: Kills per run, at most; the chance that a task commits after its turn, and that one is
#: killed after a turn.
KILLS = 8
COMMIT = 0.1
KILL = 0.02
#: The schedules run (``KILL_SEEDS="13 14 ..."`` for others). Seeds 11-42 pass on every layout
#: but two (at 2ff223e seven layouts failed seeds 13-22), known open (issue 21): seed 30 on
#: big-trades with one source partition (a ThreeBigTrades of other trades) and seed 34 on
#: sensor-silence as shipped (a SiteSilent after another average).
SEEDS = tuple(int(s) for s in os.environ.get("KILL_SEEDS", "11 12 13 14").split())


def first_sources(path: Path) -> dict[str, int]:
    """The first program's input topics on one partition (co-partitioned, as its inputs must be)."""
    return {i.topic: 1 for i in load_topology(path).programs[0].inputs}


def layouts() -> list[Any]:
    """Each topology as shipped, and with its first program on one task (that task merges its
    source topics in record-time order, as several tasks do: ``PartitionGroup.order_sources``)."""
    return [
        pytest.param(path, counts, id=f"{path.parent.name}-{name}")
        for path in TOPOLOGY_FILES
        for name, counts in (("shipped", None), ("one-source-partition", first_sources(path)))
    ]


def once(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with repeated ids dropped (the first copy kept)."""
    seen: set[str] = set()
    return [x for x in lines if not (x["es-id"] in seen or seen.add(x["es-id"]))]  # type: ignore[func-returns-value]


@pytest.mark.parametrize(("path", "counts"), layouts())
def test_tasks_killed_at_random_give_the_simulated_records(
    path: Path, counts: dict[str, int] | None, tmp_path: Path
) -> None:
    want = {k: shown(v) for k, v in simulated(path).items()}
    reference = run_in_memory(path, counts, 1, tmp_path / "reference").results()
    reference_ids = {k: [x["es-id"] for x in v] for k, v in reference.items()}
    for seed in SEEDS:
        stores = tmp_path / f"run-{seed}"
        pipeline = PipelineRun(with_partitions(load_topology(path), counts or {}), path, stores)
        pipeline.publish(path.parent / "sample.trace")
        rng = random.Random(seed)
        kills = 0
        for _ in range(4_000):
            i = rng.randrange(len(pipeline.tasks))
            task, cursors = pipeline.tasks[i]
            pipeline.step(task, cursors, rng, mark=False)
            if rng.random() < COMMIT:
                commit(task)
            if kills < KILLS and rng.random() < KILL:
                restart(pipeline, rng.randrange(len(pipeline.tasks)), stores)
                kills += 1
        for task, _ in pipeline.tasks:  # every writer marks again within ``RESEND_S``: a reader
            task.write_progress(force=True)  # restarted after a writer's last marker hears from it
        pipeline.run(seed)  # (no more kills: its markers need no commit)
        got = {k: once(v) for k, v in pipeline.results().items()}
        assert {k: shown(v) for k, v in got.items()} == want, f"seed {seed}, {kills} kills"
        assert {k: [x["es-id"] for x in v] for k, v in got.items()} == reference_ids, f"seed {seed}"
