"""A shipped pipeline on Apache Kafka, its two workers killed -9 again and again while a longer
trace is published at a steady pace, gives per key the simulated run's records, in order, with the
es-ids of the in-memory run (issue 21: "also with workers killed -9 and rebalancing, under both
guarantees"). Each kill loses the worker's uncommitted work (aborted under exactly-once, done again
by its next owner under at-least-once: repeats dropped by es-id there, none allowed under
exactly-once); the worker is started again at once (static membership: it takes its tasks back),
or, every other kill, after its session timed out (a rebalance: the other worker takes its tasks,
then gives them back).

Slow (about two minutes a guarantee): ``make chaos`` runs it, or ``PIPELINE_KILLS=1``; ``make
test`` leaves it out (test_event_time_kafka.py kills one worker once per shipped topology there).
``PIPELINE_KILLS_SEED`` picks the kills' moments and the trace.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import FAST_GROUP, read_many, start_worker, wait_for
from test_event_time_kafka import (
    IDLE_AFTER_MS,
    all_idle,
    assert_simulated_with_memory_ids,
    on_broker,
    produce_items,
    results,
)

from eventscript.task.codec import HEADER_ID, header

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

RUN = bool(os.environ.get("PIPELINE_KILLS") or os.environ.get("CHAOS_LONG"))
SEED = int(os.environ.get("PIPELINE_KILLS_SEED", "21"))
SENSORS = Path(__file__).resolve().parents[2] / "topologies" / "sensors"
#: The generated trace: sensors on sites, a reading each a minute for two hours.
SITES, PER_SITE, MINUTES = 8, 5, 120
#: The trace is published in this many slices, one every ``PACE_S``; a worker is killed after
#: every ``KILL_EVERY`` slices.
SLICES, PACE_S, KILL_EVERY = 24, 0.5, 4
#: Every other killed worker is started again only after its session timed out: the other worker
#: takes its tasks (restored from their changelogs), and gives them back when it rejoins.
SESSION_S = FAST_GROUP["session.timeout.ms"] / 1000


def sensors_with_a_longer_trace(folder: Path, seed: int) -> Path:
    """The shipped sensors topology beside a generated trace (hot episodes at random)."""
    folder.mkdir(parents=True)
    for name in ("topology.yaml", "overheat.es", "site_alarm.es"):
        shutil.copy(SENSORS / name, folder / name)
    rng = random.Random(seed)
    sensors = [(f"S{i % SITES}", f"S{i % SITES}/{i}") for i in range(SITES * PER_SITE)]
    celsius = dict.fromkeys((sensor for _, sensor in sensors), 60.0)
    lines = []
    for minute in range(MINUTES):
        h, m = divmod(8 * 60 + minute, 60)
        lines.append(f"[2026-03-01 {h:02d}:{m:02d}:00]")
        for site, sensor in sensors:
            if rng.random() < 0.02:
                celsius[sensor] = 90.0  # an episode begins
            elif celsius[sensor] > 80 and rng.random() < 0.2:
                celsius[sensor] = 60.0
            lines.append(
                f'Reading({{site: "{site}", sensor: "{sensor}", celsius: {celsius[sensor] + rng.uniform(-2, 2):.1f}}})'
            )
    (folder / "sample.trace").write_text("\n".join(lines) + "\n")
    return folder / "topology.yaml"


def slices(trace: Path, n: int) -> list[list[Any]]:
    """The trace cut at timestamps into ``n`` slices (each starts with its timestamp)."""
    from eventscript.tester.trace import Timestamp, read_trace

    items = read_trace(str(trace))
    stamps = [i for i, item in enumerate(items) if isinstance(item, Timestamp)]
    cuts = [stamps[len(stamps) * k // n] for k in range(n)] + [len(items)]
    return [items[a:b] for a, b in itertools.pairwise(cuts) if b > a]


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
@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_a_pipeline_whose_workers_are_killed_again_and_again(guarantee: str, broker: Any, tmp_path: Path) -> None:
    if not RUN:
        pytest.skip("slow: make chaos runs it (or PIPELINE_KILLS=1)")
    path = sensors_with_a_longer_trace(tmp_path / "sensors", SEED)
    # (sources idle only well after their last record: a worker restarted after a kill takes
    # longer than the pace of the slices to fetch again; docs/topologies.md, "Sources")
    a = on_broker(path, broker, tmp_path, guarantee, worker="a", idle_timeout_ms=IDLE_AFTER_MS)
    b = on_broker(path, broker, tmp_path, guarantee, worker="b", like=a, idle_timeout_ms=IDLE_AFTER_MS)
    topologies = {"a": a, "b": b}
    workers: dict[str, subprocess.Popen[bytes]] = {}
    rng = random.Random(SEED)
    kills = 0
    try:
        for name, topology in topologies.items():
            workers[name] = start_worker(topology, log=tmp_path / f"worker-{name}.log")
        for i, part in enumerate(slices(path.parent / "sample.trace", SLICES)):
            produce_items(a, part)
            time.sleep(PACE_S)
            if i % KILL_EVERY == KILL_EVERY - 1:
                victim = rng.choice(sorted(workers))
                time.sleep(rng.uniform(0, 2 * PACE_S))
                workers[victim].send_signal(signal.SIGKILL)
                workers[victim].wait(30)
                kills += 1
                if kills % 2 == 0:  # (past the session timeout: its tasks move to the other, and back)
                    time.sleep(SESSION_S + 1)
                workers[victim] = start_worker(topologies[victim], log=tmp_path / f"worker-{victim}.log")
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
    alarms = sum(1 for lines in got.values() for x in lines if x["event"] == "SiteAlarm")
    print(f"\n{guarantee}: {kills} kills, {sum(map(len, got.values()))} outputs, {alarms} site alarms")
    assert alarms > 0, "the trace raised no alarm: nothing to get wrong"
    assert_simulated_with_memory_ids(broker, a, path, tmp_path)
    if guarantee == "exactly_once":
        assert no_repeats(broker, a, path) == []
