"""Every shipped topology, its tasks killed as a worker's are, gives per key the simulated run's
records with the ids of a run without kills: at-least-once once repeats are dropped by ``es-id``,
exactly-once with no repeat at all (issue 21, "also with workers killed -9 ... under both
guarantees").

The tasks run over an in-memory log in a random schedule (``pipeline_log.py``); each commits now
and then, and when it asks to (``Task.wants_commit``), as a worker does, and tasks are killed
(``kill_schedule.py``). At-least-once: a commit writes the state to the store at the input
position, then the markers (``test_upstream_repeats.commit``); what a killed task wrote stays in
the log. Exactly-once: what a task writes reaches the log when it commits, with its markers
(``Transactions``); a kill aborts it. Either way what it did since its last commit is lost, and its
next owner starts from that commit.

Two harnesses. The sample traces, killed at random only, on each topology's partition counts as
shipped and with the first program's source on one partition (one task writes each partition of
what it writes). And longer traces (``longer_trace.py``: the sample side by side with keys of its
own, in rounds), killed also at the moments that matter (records of its own kept waiting, right
after a commit, mid-commit, while taken on), on the shipped counts and with more upstream tasks
than downstream partitions: several upstream tasks write each partition a task reads, whose own
records it keeps in record-time order, not offset order (``Task._forward_in_time_order``). The
sample traces never reached that (none of their records came out of offset order: a fault there
was found on Kafka, tests/kafka/test_pipeline_kills.py, and fixed in 421f9fd).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from eventscript.task.streams import WriterStreams
from eventscript.topology.config import load_topology

from .kill_schedule import KillRates, KillSchedule
from .longer_trace import longer_trace
from .pipeline_log import PipelineRun, with_partitions
from .test_event_time import TOPOLOGY_FILES, shown, simulated
from .test_event_time import run as run_in_memory

#: The sample traces' runs: kills at random; the chance that a task commits after its turn.
RANDOM = KillRates(anywhere=0.02, most=8)
COMMIT = 0.1
#: The schedules run (``KILL_SEEDS="13 14 ..."`` for others). At 121c14c seeds 11-50 pass on
#: every layout at-least-once, and 11-40 exactly-once (at 2ff223e seven layouts failed seeds 13-22
#: at-least-once; at 425d027 seeds 30 and 34 still failed, and the harness wrote markers between
#: commits, which the Kafka host never does).
SEEDS = tuple(int(s) for s in os.environ.get("KILL_SEEDS", "11 12 13").split())
#: Exactly-once's (``KILL_SEEDS_EOS``): fewer, other schedules.
EOS_SEEDS = tuple(int(s) for s in os.environ.get("KILL_SEEDS_EOS", "15").split())

#: The longer traces' runs: the sample this many times side by side, in this many rounds; kills
#: at the moments that matter as well, a commit less often (more records kept between commits);
#: this many turns before the run goes to rest (the tasks have read the whole trace after two
#: thousand or so; the kills' rates spread them over those).
SIDE_BY_SIDE, ROUNDS = 3, 2
TARGETED = KillRates(anywhere=0.005, kept=0.02, after_commit=0.5, mid_commit=0.1, restoring=0.05, most=20)
LONGER_COMMIT = 0.05
LONGER_TURNS = 3_000
#: Their seeds (``LONGER_KILL_SEEDS``; each seed also shifts the copies of the trace). At 198724b
#: seeds 1-31 pass on every layout under both guarantees; with 421f9fd's streams.py fix reverted,
#: 30 of the 160 more-writers runs of seeds 1-10 fail (6 at-least-once, 24 exactly-once; every
#: topology that re-keys an intermediate topic). The shipped layouts never keep records out of
#: offset order here (seeds 1-5): where a stage keeps its upstream's partitioning and count, one
#: upstream task writes all a downstream partition gets.
LONGER_SEEDS = tuple(int(s) for s in os.environ.get("LONGER_KILL_SEEDS", "1").split())


def first_sources(path: Path) -> dict[str, int]:
    """The first program's input topics on one partition (co-partitioned, as its inputs must be)."""
    return {i.topic: 1 for i in load_topology(path).programs[0].inputs}


def more_writers(path: Path) -> dict[str, int]:
    """The first program's inputs on five partitions (five tasks), every other topic on two: five
    upstream tasks write each partition a downstream task reads."""
    topo = load_topology(path)
    firsts = {i.topic for i in topo.programs[0].inputs}
    return {t: 5 if t in firsts else 2 for t in topo.topics}


def layouts() -> list[Any]:
    """Each topology as shipped, and with its first program on one task (that task merges its
    source topics in record-time order, as several tasks do: ``PartitionGroup.order_sources``)."""
    return [
        pytest.param(path, counts, id=f"{path.parent.name}-{name}")
        for path in TOPOLOGY_FILES
        for name, counts in (("shipped", None), ("one-source-partition", first_sources(path)))
    ]


def longer_layouts() -> list[Any]:
    """Each topology as shipped, and with five upstream tasks writing each downstream partition."""
    return [
        pytest.param(path, counts, id=f"{path.parent.name}-{name}")
        for path in TOPOLOGY_FILES
        for name, counts in (("shipped", None), ("more-writers", more_writers(path)))
    ]


def once(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with repeated ids dropped (the first copy kept)."""
    seen: set[str] = set()
    return [x for x in lines if not (x["es-id"] in seen or seen.add(x["es-id"]))]  # type: ignore[func-returns-value]


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
@pytest.mark.parametrize(("path", "counts"), layouts())
def test_tasks_killed_at_random_give_the_simulated_records(
    path: Path, counts: dict[str, int] | None, guarantee: str, tmp_path: Path
) -> None:
    """At-least-once: per key, once repeats are dropped by id; exactly-once: with no repeat."""
    eos = guarantee == "exactly-once"
    for seed in EOS_SEEDS if eos else SEEDS:
        assert_kills_give_the_simulated_records(path, counts, eos, seed, tmp_path / f"seed-{seed}")


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
@pytest.mark.parametrize(("path", "counts"), longer_layouts())
def test_a_longer_trace_with_tasks_killed_where_it_matters_gives_the_simulated_records(
    path: Path, counts: dict[str, int] | None, guarantee: str, tmp_path: Path
) -> None:
    """As above, over a longer trace, with the kills that reach a task's own records kept out of
    offset order (``kill_schedule.py``)."""
    for seed in LONGER_SEEDS:
        folder = tmp_path / f"seed-{seed}"
        longer = with_a_longer_trace(path, folder, seed)
        assert_kills_give_the_simulated_records(
            longer, counts, guarantee == "exactly-once", seed, folder, TARGETED, LONGER_COMMIT, LONGER_TURNS
        )


def with_a_longer_trace(path: Path, folder: Path, seed: int) -> Path:
    """A copy of the topology at ``path`` in ``folder``, its sample trace made longer
    (``longer_trace``: the copies shifted by ``seed``); returns the copy's topology file."""
    shutil.copytree(path.parent, folder / path.parent.name)
    longer = folder / path.parent.name / path.name
    trace = longer.parent / "sample.trace"
    longer_trace(path.parent / "sample.trace", trace, side_by_side=SIDE_BY_SIDE, rounds=ROUNDS, seed=seed)
    return longer


def assert_kills_give_the_simulated_records(
    path: Path,
    counts: dict[str, int] | None,
    eos: bool,
    seed: int,
    tmp: Path,
    rates: KillRates = RANDOM,
    commit_chance: float = COMMIT,
    turns: int = 4_000,
) -> KillSchedule:
    """The topology at ``path`` (its trace beside it, ``sample.trace``), its partition counts
    changed by ``counts``, run in the schedule of ``seed`` with kills, gives per key the simulated
    run's records and the ids of a run without kills (exactly-once ``eos``: no repeat; else once
    repeats are dropped by id). Returns the schedule run (its kills)."""
    want = {k: shown(v) for k, v in simulated(path).items()}
    reference = run_in_memory(path, counts, 1, tmp / "reference").results()
    reference_ids = {k: [x["es-id"] for x in v] for k, v in reference.items()}
    stores = tmp / "run"
    pipeline = PipelineRun(with_partitions(load_topology(path), counts or {}), path, stores, commit_markers_first=True)
    pipeline.publish(path.parent / "sample.trace")
    schedule = KillSchedule(pipeline, stores, eos, rates, seed)
    schedule.run(turns, commit_chance)
    pipeline.run(seed)  # (no more kills: its markers need no commit)
    results = pipeline.results()
    got = results if eos else {k: once(v) for k, v in results.items()}
    assert {k: shown(v) for k, v in got.items()} == want, f"seed {seed}, kills {schedule.kills}"
    assert {k: [x["es-id"] for x in v] for k, v in got.items()} == reference_ids, f"seed {seed}, kills {schedule.kills}"
    return schedule


def test_the_longer_harness_keeps_records_out_of_offset_order_and_kills_after_a_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the longer harness is for, lest a change of it lose it: a task's own records kept
    out of offset order (``WriterStreams.append`` of an offset below one appended before), and a
    task killed right after a commit that left records kept waiting."""
    out_of_order = 0
    top: dict[int, int] = {}  # id of each WriterStreams -> the highest offset appended to it
    append = WriterStreams.append

    def counted(streams: WriterStreams, msg: Any, ts: int | None = None) -> bool:
        nonlocal out_of_order
        out_of_order += msg.offset() < top.get(id(streams), -1)
        top[id(streams)] = max(top.get(id(streams), -1), msg.offset())
        return append(streams, msg, ts)

    monkeypatch.setattr(WriterStreams, "append", counted)
    path = next(p for p in TOPOLOGY_FILES if p.parent.name == "sensor-silence")
    longer = with_a_longer_trace(path, tmp_path, 1)
    schedule = assert_kills_give_the_simulated_records(
        longer, more_writers(path), True, 1, tmp_path, TARGETED, LONGER_COMMIT, LONGER_TURNS
    )
    assert out_of_order > 0
    assert schedule.kills.get("after_commit", 0) > 0
