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

Two options widen where the kills land (none by default: ``make test``'s and ``make chaos``'s runs
are as before). ``PIPELINE_KILLS_AT`` runs the workers as ``kill_point_worker.py``, which kills
itself at a point of the commit or the restore once armed: ``commit``, each victim armed instead of
killed, dies at its next commit between the acknowledged changelog (and outputs) and the offset
commit (at-least-once: the changelog is ahead of the committed offsets) or the transaction's commit
(exactly-once), the next slices published meanwhile (in twice as many slices, so as many
kills; killed from outside if it is not there within ``ARMED_WAIT_S``); ``restore``, each victim
restarted after its session timed out is armed from its start, and so is another worker at that
kill: each dies in the middle of its next restore (the victim's of its tasks given back, the
other's of the victim's tasks). A worker dead of its kill
point is started again, as an orchestrator would. ``PIPELINE_KILLS_STANDBY=N`` gives every program
``num_standby: N``: a rebalance then moves tasks to workers that stood by for them.
``PIPELINE_KILLS_PARTITIONS="sensor-events=5 site-alarms=2"`` puts those topics (the shipped names)
on those partition counts in the topologies that have them, stages of other counts than shipped
(sensors' are on 3 and 4 as shipped, every other topology's on 3).
"""

from __future__ import annotations

import collections
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
from kafka_helpers import FAST_GROUP, read_many, start_worker, told, wait_for
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
#: ``PIPELINE_KILLS_AT``: where the kills land (kill_point_worker.py): "" at random moments, from
#: outside; "commit" or "restore" at that point of the worker's work.
KILL_AT = os.environ.get("PIPELINE_KILLS_AT", "")
KILL_POINTS = ("", "commit", "restore")
#: ``PIPELINE_KILLS_STANDBY``: every program's ``num_standby``.
STANDBY = int(os.environ.get("PIPELINE_KILLS_STANDBY", "0"))
#: Seconds an armed worker has to reach its kill point before it is killed from outside.
ARMED_WAIT_S = 15.0
KILL_POINT_WORKER = Path(__file__).with_name("kill_point_worker.py")


def partition_counts(spec: str) -> dict[str, int]:
    """``PIPELINE_KILLS_PARTITIONS``: "topic=n" pairs, space separated."""
    counts = {}
    for pair in spec.split():
        topic, _, n = pair.partition("=")
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"PIPELINE_KILLS_PARTITIONS: {pair!r}: expected topic=partitions, e.g. sensor-events=5")
        counts[topic] = int(n)
    return counts


#: ``PIPELINE_KILLS_PARTITIONS``: partition counts of some topics (shipped names), in place of the
#: shipped ones.
COUNTS = partition_counts(os.environ.get("PIPELINE_KILLS_PARTITIONS", ""))


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


def kill_point_lines(log: Path) -> int:
    """How many times the workers logging to ``log`` killed themselves at their kill point."""
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return sum(1 for line in lines if line.startswith("kill point: "))


def launch(topology: Path, log: Path, armed: bool = False) -> subprocess.Popen[bytes]:
    """A worker: ``eventscript run``, or with ``PIPELINE_KILLS_AT`` kill_point_worker.py (armed
    from its start if ``armed``)."""
    if not KILL_AT:
        return start_worker(topology, log=log)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "KILL_POINT": KILL_AT}
    if armed:
        env["KILL_POINT_ARMED"] = "1"
    return subprocess.Popen(
        [sys.executable, str(KILL_POINT_WORKER), "run", str(topology)],
        stdout=open(log, "ab"),
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        env=env,
    )


def with_standbys(topology: Path, n: int) -> Path:
    """The worker's topology file, every program given ``num_standby: n``."""
    import yaml

    doc = yaml.safe_load(topology.read_text())
    for prog in doc["programs"]:
        prog["num_standby"] = n
    topology.write_text(yaml.safe_dump(doc, sort_keys=False))
    return topology


@pytest.mark.timeout(900)
@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed{s}")
@pytest.mark.parametrize("guarantee", GUARANTEES)
@pytest.mark.parametrize("original", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_a_pipeline_whose_workers_are_killed_again_and_again(
    original: Path, guarantee: str, seed: int, broker: Any, tmp_path: Path
) -> None:
    if not RUN:
        pytest.skip("slow: make chaos runs it (or PIPELINE_KILLS=1)")
    assert KILL_AT in KILL_POINTS, f"PIPELINE_KILLS_AT={KILL_AT!r}: one of {KILL_POINTS} (empty: at random)"
    path = with_a_longer_trace(original, tmp_path / original.parent.name, seed)
    # (sources idle only well after their last record: a worker restarted after a kill takes
    # longer than the pace of the slices to fetch again; docs/topologies.md, "Sources")
    from eventscript.topology.model import load_graph

    counts = {t: n for t, n in COUNTS.items() if t in load_graph(path).all_topics()} or None
    a = on_broker(path, broker, tmp_path, guarantee, worker="a", idle_timeout_ms=IDLE_AFTER_MS, counts=counts)
    topologies = {"a": a}
    for name in "bcdefgh"[: WORKERS - 1]:
        topologies[name] = on_broker(
            path, broker, tmp_path, guarantee, worker=name, like=a, idle_timeout_ms=IDLE_AFTER_MS, counts=counts
        )
    if STANDBY:
        topologies = {name: with_standbys(t, STANDBY) for name, t in topologies.items()}
    logs = {name: tmp_path / f"worker-{name}.log" for name in topologies}
    workers: dict[str, subprocess.Popen[bytes]] = {}
    rng = random.Random(seed)
    kills = early_kills = revived = 0  # (early: kills before the victim said it was ready)
    ready_before = dict.fromkeys(topologies, 0)  # (each worker's ready lines when it was last started)

    def revive_the_dead() -> None:
        """Start again the workers that killed themselves at their kill point."""
        nonlocal revived
        for name, worker in workers.items():
            if KILL_AT and worker.poll() is not None:
                ready_before[name] = ready_lines(logs[name])
                workers[name] = launch(topologies[name], logs[name])
                revived += 1

    def ready_revived(log: Path, n: int) -> bool:
        """Whether ``log``'s worker said it was ready since it had ``n`` ready lines (the dead
        started again first: a victim armed at its start dies restoring, before it is ready)."""
        revive_the_dead()
        return ready_lines(log) > n

    def all_idle_revived() -> bool:
        revive_the_dead()
        return all_idle(broker, a)

    started = time.monotonic()
    try:
        for name, topology in topologies.items():
            workers[name] = launch(topology, logs[name])
        # (at the commit point, the slices published while an armed victim gets there do not count
        # towards the next kill: twice as many, half as big, so that as many kills are made)
        parts = collections.deque(slices(path.parent / "sample.trace", SLICES * (2 if KILL_AT == "commit" else 1)))
        since_kill = 0
        while parts:
            produce_items(a, parts.popleft())
            time.sleep(PACE_S)
            revive_the_dead()
            since_kill += 1
            if since_kill == KILL_EVERY:
                since_kill = 0
                victim = rng.choice(sorted(workers))
                log = logs[victim]
                # (once it holds its tasks, restored: a worker killed while it starts loses no work;
                # one that dies at its kill point meanwhile, armed at its start, is started again)
                try:
                    wait_for(
                        lambda n=ready_before[victim], log=log: ready_revived(log, n),
                        timeout=120,
                        what=f"{victim} ready",
                    )
                except AssertionError as exc:
                    raise told(exc, *logs.values()) from exc
                time.sleep(rng.uniform(0, 2 * PACE_S))
                if KILL_AT == "commit":  # (armed: it kills itself at its next commit of changelog records)
                    workers[victim].send_signal(signal.SIGUSR1)
                    # (the next slices go on meanwhile: a worker that caught up commits nothing new)
                    deadline = time.monotonic() + ARMED_WAIT_S
                    while workers[victim].poll() is None and time.monotonic() < deadline:
                        if parts:
                            produce_items(a, parts.popleft())
                        time.sleep(PACE_S)
                    workers[victim].send_signal(signal.SIGKILL)
                else:
                    workers[victim].send_signal(signal.SIGKILL)
                workers[victim].wait(30)
                kills += 1
                rebalance = kills % 2 == 0
                if rebalance:  # (past the session timeout: its tasks move to the other, and back)
                    if KILL_AT == "restore":  # (another worker dies restoring the victim's tasks)
                        others = [n for n in sorted(workers) if n != victim and workers[n].poll() is None]
                        if others:
                            workers[rng.choice(others)].send_signal(signal.SIGUSR1)
                    time.sleep(SESSION_S + 1)
                ready_before[victim] = ready_lines(log)
                workers[victim] = launch(topologies[victim], log, armed=KILL_AT == "restore" and rebalance)
                if EARLY and rng.random() < 0.5:  # (again, while it starts)
                    time.sleep(rng.uniform(0, 3 * PACE_S))
                    workers[victim].send_signal(signal.SIGKILL)
                    workers[victim].wait(30)
                    kills += 1
                    early_kills += ready_lines(log) == ready_before[victim]
                    ready_before[victim] = ready_lines(log)
                    workers[victim] = launch(topologies[victim], log)
        # The sources go idle IDLE_AFTER_MS after their last record: then the readers take the rest.
        wait_for(all_idle_revived, timeout=300, what="every task of the first program idle")
        want = None

        def settled() -> bool:
            nonlocal want
            revive_the_dead()
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
    at_points = sum(kill_point_lines(log) for log in logs.values())
    print(
        f"\n{original.parent.name} {guarantee} seed {seed}: {kills} kills ({early_kills} before ready), "
        + (f"partitions {counts}, " if counts else "")
        + (f"{at_points} at kill point {KILL_AT!r} ({revived} revived), " if KILL_AT else "")
        + f"{sum(map(len, got.values()))} outputs on {len(got)} keys, {time.monotonic() - started:.0f} s"
    )
    assert_simulated_with_memory_ids(broker, a, path, tmp_path, counts)
    if guarantee == "exactly_once":
        assert no_repeats(broker, a, path) == []
    if KILL_AT:
        assert at_points >= 1, f"no worker reached its kill point {KILL_AT!r}: the option tested nothing"
        assert revived <= at_points, "a worker died of something else than its kill point (see its log)"
