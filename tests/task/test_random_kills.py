"""Every shipped topology, its tasks killed at random and taken on from their last commits as a
worker's are, gives per key the simulated run's records with the ids of a run without kills:
at-least-once once repeats are dropped by ``es-id``, exactly-once with no repeat at all (issue 21,
"also with workers killed -9 ... under both guarantees").

The tasks run over an in-memory log in a random schedule (``pipeline_log.py``); each commits now
and then, and when it asks to (``Task.wants_commit``), as a worker does, and now and then one is
killed. At-least-once: a commit writes the state to the store at the input position, then the
markers (``test_upstream_repeats.commit``); what a killed task wrote stays in the log. Exactly-once:
what a task writes reaches the log when it commits, with its markers (``Transactions``); a kill
aborts it. Either way what it did since its last commit is lost, and its next owner starts from
that commit. Upstream stages on their own partition counts (the first program's source on one
partition: one task writes each partition of what it writes) and as shipped.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from eventscript.task.task import Task
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
#: The schedules run (``KILL_SEEDS="13 14 ..."`` for others). At 121c14c seeds 11-50 pass on
#: every layout at-least-once, and 11-40 exactly-once (at 2ff223e seven layouts failed seeds 13-22
#: at-least-once; at 425d027 seeds 30 and 34 still failed, and the harness wrote markers between
#: commits, which the Kafka host never does).
SEEDS = tuple(int(s) for s in os.environ.get("KILL_SEEDS", "11 12 13").split())
#: Exactly-once's (``KILL_SEEDS_EOS``): fewer, other schedules.
EOS_SEEDS = tuple(int(s) for s in os.environ.get("KILL_SEEDS_EOS", "15").split())


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


class Transactions:
    """Exactly-once: what a task sends reaches the log when it commits (its transaction); a kill
    aborts it (a ``read_committed`` reader never sees it)."""

    def __init__(self, pipeline: PipelineRun) -> None:
        self.log = pipeline.log
        self.pending: dict[int, list[tuple[Any, ...]]] = {}

    def begin(self, task: Task) -> None:
        batch = self.pending.setdefault(id(task), [])
        task.attach(lambda *record: batch.append(record))

    def commit(self, task: Task) -> None:
        """The host's exactly-once commit (``Checkpoint``): the markers in the transaction, the
        state in the store at the input position, and the transaction's records to the log."""
        task.write_progress()
        commit(task, markers=False)
        for record in self.pending.pop(id(task), []):
            self.log.send(*record)
        self.begin(task)

    def abort(self, task: Task) -> None:
        self.pending.pop(id(task), None)

    def end(self, tasks: list[tuple[Task, dict[str, int]]]) -> None:
        """Every task commits, then writes to the log directly (no more kills)."""
        for task, _ in tasks:
            self.commit(task)
            task.attach(self.log.send)


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
@pytest.mark.parametrize(("path", "counts"), layouts())
def test_tasks_killed_at_random_give_the_simulated_records(
    path: Path, counts: dict[str, int] | None, guarantee: str, tmp_path: Path
) -> None:
    """At-least-once: per key, once repeats are dropped by id; exactly-once: with no repeat."""
    eos = guarantee == "exactly-once"
    assert_kills_give_the_simulated_records(path, counts, eos, EOS_SEEDS if eos else SEEDS, tmp_path)


def assert_kills_give_the_simulated_records(
    path: Path, counts: dict[str, int] | None, eos: bool, seeds: tuple[int, ...], tmp_path: Path
) -> None:
    """The topology at ``path`` (its trace beside it, ``sample.trace``), its partition counts
    changed by ``counts``, run in each schedule of ``seeds`` with kills, gives per key the
    simulated run's records and the ids of a run without kills (exactly-once ``eos``: no repeat;
    else once repeats are dropped by id)."""
    want = {k: shown(v) for k, v in simulated(path).items()}
    reference = run_in_memory(path, counts, 1, tmp_path / "reference").results()
    reference_ids = {k: [x["es-id"] for x in v] for k, v in reference.items()}
    for seed in seeds:
        stores = tmp_path / f"run-{seed}"
        topo = with_partitions(load_topology(path), counts or {})
        pipeline = PipelineRun(topo, path, stores, commit_markers_first=True)
        pipeline.publish(path.parent / "sample.trace")
        transactions = Transactions(pipeline) if eos else None
        for task, _ in pipeline.tasks if transactions is not None else ():
            transactions.begin(task)  # type: ignore[union-attr]
        rng = random.Random(seed)
        kills = 0
        for _ in range(4_000):
            i = rng.randrange(len(pipeline.tasks))
            task, cursors = pipeline.tasks[i]
            pipeline.step(task, cursors, rng, mark=False)
            if rng.random() < COMMIT or task.wants_commit:  # (as the Kafka host: ``Checkpoint``)
                if transactions is None:
                    commit(task)
                else:
                    transactions.commit(task)
            if kills < KILLS and rng.random() < KILL:
                j = rng.randrange(len(pipeline.tasks))
                if transactions is not None:
                    transactions.abort(pipeline.tasks[j][0])
                restart(pipeline, j, stores)
                if transactions is not None:
                    transactions.begin(pipeline.tasks[j][0])
                kills += 1
        if transactions is not None:
            transactions.end(pipeline.tasks)
        for task, _ in pipeline.tasks:  # every writer marks again within ``RESEND_S``: a reader
            task.write_progress(force=True)  # restarted after a writer's last marker hears from it
        pipeline.run(seed)  # (no more kills: its markers need no commit)
        results = pipeline.results()
        got = results if eos else {k: once(v) for k, v in results.items()}
        assert {k: shown(v) for k, v in got.items()} == want, f"seed {seed}, {kills} kills"
        assert {k: [x["es-id"] for x in v] for k, v in got.items()} == reference_ids, f"seed {seed}"
