"""Every shipped pipeline on Apache Kafka, its two workers killed -9 again and again while a
longer trace is published at a steady pace, gives per key the simulated run's records, in order,
with the es-ids of the in-memory run (issue 21: "also with workers killed -9 and rebalancing,
under both guarantees"). Each kill loses the worker's uncommitted work (aborted under exactly-once,
done again by its next owner under at-least-once: repeats dropped by es-id there, none allowed
under exactly-once); the worker is started again at once (static membership: it takes its tasks
back), or, every other kill, after its session timed out (a rebalance: the other worker takes its
tasks, then gives them back). A worker is killed only once it has said it is ready (holds its
tasks, restored), so that each kill lands on a working worker. Each topology runs as shipped:
three partitions per topic or more, sensors' stages on 3 and 4.

The trace is the topology's sample made longer (tests/task/longer_trace.py): copies side by side
with keys of their own, in rounds shifted in time past each other's timers.

Slow (a minute or two a run): ``make chaos`` runs it, or ``PIPELINE_KILLS=1``; ``make test``
leaves it out (test_event_time_kafka.py kills one worker once per shipped topology there).
``PIPELINE_KILLS_SEED`` picks the kills' moments and the copies' offsets (several, space
separated, run one after the other: ``PIPELINE_KILLS_SEED="21 22"``). Two variants:
``PIPELINE_KILLS_EARLY=1`` kills about half its victims again right after their restart (while
they join, restore or take tasks on), and ``PIPELINE_KILLS_WORKERS=3`` runs three
workers (a kill's tasks spread over the others).
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import FAST_GROUP, read_many, start_worker, wait_for
from test_event_time_kafka import (
    GUARANTEES,
    IDLE_AFTER_MS,
    all_idle,
    assert_simulated_with_memory_ids,
    on_broker,
    produce_items,
    results,
)

from eventscript.task.codec import HEADER_ID, header

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from task.longer_trace import longer_trace  # noqa: E402
from task.test_event_time import TOPOLOGY_FILES, simulated  # noqa: E402

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

RUN = bool(os.environ.get("PIPELINE_KILLS") or os.environ.get("CHAOS_LONG"))
SEEDS = [int(s) for s in os.environ.get("PIPELINE_KILLS_SEED", "21").split()]
#: The longer trace: the sample this many times side by side (``PIPELINE_KILLS_SIDE_BY_SIDE``:
#: more keys, busier workers when they are killed), in this many rounds.
SIDE_BY_SIDE = int(os.environ.get("PIPELINE_KILLS_SIDE_BY_SIDE", "3"))
ROUNDS = 8
#: The trace is published in this many slices, one every ``PACE_S``; a worker is killed after
#: every ``KILL_EVERY`` slices.
SLICES, PACE_S, KILL_EVERY = 24, 0.5, 4
#: Every other killed worker is started again only after its session timed out: the other worker
#: takes its tasks (restored from their changelogs), and gives them back when it rejoins.
SESSION_S = FAST_GROUP["session.timeout.ms"] / 1000
#: ``PIPELINE_KILLS_EARLY=1``: about half the victims are killed again right after their restart,
#: within ``3 * PACE_S``: while they join their group, restore their tasks from the changelogs, take
#: them on (a worker is ready a second or two after its start, before the next kill otherwise).
EARLY = bool(os.environ.get("PIPELINE_KILLS_EARLY"))
#: How many workers run the topology (``PIPELINE_KILLS_WORKERS``): with more, a kill's tasks
#: spread over several others, and come back from several.
WORKERS = int(os.environ.get("PIPELINE_KILLS_WORKERS", "2"))


def with_a_longer_trace(original: Path, folder: Path, seed: int) -> Path:
    """A copy of the shipped topology's folder, its sample trace made longer; the simulated run
    of it must mean something: a round gives as many outputs as the sample at least (the copies
    side by side of an unkeyed topology's sample share its one instance), and if the sample's run
    has outputs only a timer gives (at a time no record has), so does every round."""
    shutil.copytree(original.parent, folder)
    trace = folder / "sample.trace"
    longer_trace(original.parent / "sample.trace", trace, side_by_side=SIDE_BY_SIDE, rounds=ROUNDS, seed=seed)
    path = folder / original.name
    (outputs, timed), (sample, sample_timed) = outputs_and_timer_outputs(path), outputs_and_timer_outputs(original)
    assert outputs >= ROUNDS * sample, (
        f"the longer trace gives {outputs} outputs in {ROUNDS} rounds, the sample {sample}"
    )
    if sample_timed:
        assert timed >= ROUNDS, f"the longer trace gives {timed} outputs of timers in {ROUNDS} rounds"
    return path


def outputs_and_timer_outputs(path: Path) -> tuple[int, int]:
    """The simulated run's outputs, and those at a time no record of the trace has (a timer's)."""
    from eventscript.engine.timeutil import parse_time
    from eventscript.tester.trace import Timestamp, read_trace

    record_times, now = set(), 0
    for item in read_trace(str(path.parent / "sample.trace")):
        if isinstance(item, Timestamp):
            now = item.time
        else:
            record_times.add(now)
    lines = [x for v in simulated(path).values() for x in v]
    return len(lines), sum(1 for x in lines if parse_time(x["time"]) not in record_times)


def slices(trace: Path, n: int) -> list[list[Any]]:
    """The trace cut at timestamps into ``n`` slices (each starts with its timestamp)."""
    from eventscript.tester.trace import Timestamp, read_trace

    items = read_trace(str(trace))
    stamps = [i for i, item in enumerate(items) if isinstance(item, Timestamp)]
    cuts = [stamps[len(stamps) * k // n] for k in range(n)] + [len(items)]
    return [items[a:b] for a, b in itertools.pairwise(cuts) if b > a]


def ready_lines(log: Path) -> int:
    """How many times the workers logging to ``log`` said they held their tasks, restored."""
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return sum(1 for line in lines if line.startswith("ready: "))


def no_repeats(broker: Any, topology: Path, original: Path) -> list[str]:
    """The es-ids found more than once on the result and error topics (exactly-once: none)."""
    import yaml

    from eventscript.topology.model import load_graph

    names = yaml.safe_load(topology.with_suffix(".names").read_text())
    graph = load_graph(original)
    topics = [names[t] for t in {*graph.sink_topics, *graph.error_writers}]
    seen: set[bytes] = set()
    twice = []
    for records in read_many(broker, topics, dedupe=False).values():
        for m in records:
            rid = header(m.headers(), HEADER_ID) or b""
            if rid in seen:
                twice.append(rid.decode())
            seen.add(rid)
    return twice


@pytest.mark.timeout(900)
@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed{s}")
@pytest.mark.parametrize("guarantee", GUARANTEES)
@pytest.mark.parametrize("original", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_a_pipeline_whose_workers_are_killed_again_and_again(
    original: Path, guarantee: str, seed: int, broker: Any, tmp_path: Path
) -> None:
    if not RUN:
        pytest.skip("slow: make chaos runs it (or PIPELINE_KILLS=1)")
    path = with_a_longer_trace(original, tmp_path / original.parent.name, seed)
    # (sources idle only well after their last record: a worker restarted after a kill takes
    # longer than the pace of the slices to fetch again; docs/topologies.md, "Sources")
    a = on_broker(path, broker, tmp_path, guarantee, worker="a", idle_timeout_ms=IDLE_AFTER_MS)
    topologies = {"a": a}
    for name in "bcdefgh"[: WORKERS - 1]:
        topologies[name] = on_broker(
            path, broker, tmp_path, guarantee, worker=name, like=a, idle_timeout_ms=IDLE_AFTER_MS
        )
    workers: dict[str, subprocess.Popen[bytes]] = {}
    rng = random.Random(seed)
    kills = early_kills = 0  # (early: kills before the victim said it was ready)
    ready_before = dict.fromkeys(topologies, 0)  # (each worker's ready lines when it was last started)
    started = time.monotonic()
    try:
        for name, topology in topologies.items():
            workers[name] = start_worker(topology, log=tmp_path / f"worker-{name}.log")
        for i, part in enumerate(slices(path.parent / "sample.trace", SLICES)):
            produce_items(a, part)
            time.sleep(PACE_S)
            if i % KILL_EVERY == KILL_EVERY - 1:
                victim = rng.choice(sorted(workers))
                log = tmp_path / f"worker-{victim}.log"
                # (once it holds its tasks, restored: a worker killed while it starts loses no work)
                wait_for(
                    lambda n=ready_before[victim], log=log: ready_lines(log) > n, timeout=120, what=f"{victim} ready"
                )
                time.sleep(rng.uniform(0, 2 * PACE_S))
                workers[victim].send_signal(signal.SIGKILL)
                workers[victim].wait(30)
                kills += 1
                if kills % 2 == 0:  # (past the session timeout: its tasks move to the other, and back)
                    time.sleep(SESSION_S + 1)
                ready_before[victim] = ready_lines(log)
                workers[victim] = start_worker(topologies[victim], log=log)
                if EARLY and rng.random() < 0.5:  # (again, while it starts)
                    time.sleep(rng.uniform(0, 3 * PACE_S))
                    workers[victim].send_signal(signal.SIGKILL)
                    workers[victim].wait(30)
                    kills += 1
                    early_kills += ready_lines(log) == ready_before[victim]
                    ready_before[victim] = ready_lines(log)
                    workers[victim] = start_worker(topologies[victim], log=log)
        # The sources go idle IDLE_AFTER_MS after their last record: then the readers take the rest.
        wait_for(lambda: all_idle(broker, a), timeout=300, what="every task of the first program idle")
        want = None

        def settled() -> bool:
            nonlocal want
            got = results(broker, a, path)
            done = got == want
            want = got
            return done

        wait_for(settled, timeout=180, interval=5.0, what="the outputs to stop changing")
    finally:
        for worker in workers.values():
            worker.send_signal(signal.SIGTERM)
        for worker in workers.values():
            try:
                worker.wait(60)
            except subprocess.TimeoutExpired:
                worker.kill()
    assert kills >= 5
    got = results(broker, a, path)
    print(
        f"\n{original.parent.name} {guarantee} seed {seed}: {kills} kills ({early_kills} before ready), "
        f"{sum(map(len, got.values()))} outputs on {len(got)} keys, {time.monotonic() - started:.0f} s"
    )
    assert_simulated_with_memory_ids(broker, a, path, tmp_path)
    if guarantee == "exactly_once":
        assert no_repeats(broker, a, path) == []
