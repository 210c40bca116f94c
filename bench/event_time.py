"""What progress markers and the merge cost a downstream task (issue 21), in process, on one core.

A downstream task of a grouped counting program reads one partition of an intermediate topic that
three upstream tasks write, at 100k keys (``--keys``): records in time order, one every ms of
record time, as the worker hands them to a task (confluent-kafka ``Message``s, with the headers
a program's outputs carry), their keys drawn uniformly or by a Zipf law (``--order``). With
``--inputs 1,4`` (the default) also a task of N co-partitioned input topics, the records dealt to
them in turn, each topic written by the three writers: the merge across inputs. Two runs of the
same records per input count and key order, interleaved rounds, each from a collected heap (the
machine may be shared: the load average is printed):

- today:   no progress plan (the merge takes what is fetched);
- markers: gated on the three writers; each writer marks its progress every ``--commit-ms`` of
           wall time, as its commits would, in the batches the host adds (a fetch of 2,000).

Printed: records per CPU second (best of ``--repeat``, with its CPU and wall seconds) for each,
the markers' share, and for both runs the time a record waits between being added and being
processed (p50/p99) when fetches come at ``--rate`` records/s: what the markers add to latency
when writers commit every ``--commit-ms``.

With ``--landing batches`` the records land as three writers' commits would land them, not in
time order: each key is written by one writer (its upstream task: the key's number mod 3), each
writer commits every ``--commit-ms`` of record time, the three out of phase (writer w's batches
shifted by w/3 of one), and a batch lands whole, with its writer's marker (the end of its batch),
when its time has passed. So a writer's records come after the others' later ones, and each
release takes only part of what waits (the writers behind hold the rest): the reader's common
case on a broker, which ``ordered`` (the default: one stream in time order, everything released
at each marker) leaves out.

With ``--merge-only LAG_MS``, the merge's own cost instead: adding and merging with the engine
stubbed out, per record, least over fetches (steadier than a whole run's on a shared machine), set
beside a whole record's today.

Usage: python bench/event_time.py [--records N] [--keys K] [--repeat R] [--commit-ms MS] [--rate R]
       [--inputs 1,4] [--order random,zipf] [--landing ordered|batches] [--merge-only LAG_MS] [--per-ms N]
       [--placed | --one-writer]

With ``--placed`` the partition is one upstream task's own (``ProgressPlan.placed``: each task of
the writing program writes only its own partition), read in offset order with no merge between
writers; the other two tasks still mark their progress there. ``--one-writer``: the same records
and markers, the task not told (merged across its three writers, as before the cut).
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from confluent_kafka import Message

from eventscript.automata.compile import compile_source
from eventscript.engine.tuning import configure_gc
from eventscript.task.progress import InputProgress, marker_headers
from eventscript.task.record import CREATE_TIME
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig, ProgramConfig
from eventscript.topology.progress import ProgressPlan

sys.path.insert(0, str(Path(__file__).resolve().parent))
from key_draw import drawn_keys

COUNT = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""
T0 = 1_767_225_600_000
FETCH = 2_000
WRITERS = 3
#: ``--placed``: the partition holds writer 0's records only (each upstream task writes its own
#: partition: ``ProgressPlan.placed``), the other two mark their progress there all the same.
PLACED = False
#: ``--one-writer``: that landing (writer 0's records only, every writer marking), the task not told
#: (``placed`` unset: it merges the partition across its three writers, as before the cut).
TOLD = True


def topic(i: int, inputs: int) -> str:
    """The input topic of the i-th record: "mid" with one input, else "mid0", "mid1"... in turn."""
    return "mid" if inputs == 1 else f"mid{i % inputs}"


def records(
    n: int,
    keys: int,
    inputs: int = 1,
    order: str = "random",
    seed: int = 1,
    batch_ms: int | None = None,
    per_ms: int = 1,
) -> list[Message]:
    """``n`` records as the worker hands them to a task (confluent-kafka ``Message``s) with the
    headers a program's outputs carry, their keys drawn uniformly (``order`` "random") or by a
    Zipf law (s = 1.1, "zipf": a few keys have most records) among ``keys``. In time order; with
    ``batch_ms``, in the order the writers' batches of that much record time land, each followed
    by its writer's markers (``landing``). ``per_ms`` records a ms of record time (record i's
    time is ``T0 + i // per_ms``)."""
    drawn = drawn_keys(n, keys, order, seed)
    landed = range(n) if batch_ms is None else landing(drawn, batch_ms * per_ms)  # (in records)
    out = []
    offsets: collections.Counter[str] = collections.Counter()
    for i in landed:
        if isinstance(i, tuple):  # a writer's marker, after its batch: (writer, progress ms)
            progress = T0 + i[1] // per_ms  # (every later record of the writer's is at least this)
            for t in sorted({topic(j, inputs) for j in range(inputs)}):
                headers = list(marker_headers("up", i[0], progress))
                out.append(
                    Message(topic=t, partition=0, offset=offsets[t], timestamp=(CREATE_TIME, progress), headers=headers)
                )
                offsets[t] += 1
            continue
        k = drawn[i]
        t = topic(i, inputs)
        headers = [
            ("es-event", b"Hit"),
            ("es-program", b"up"),
            ("es-id", b"up/src:0:%d/1" % i),
            ("es-seq", b"%d" % i),
        ]
        out.append(
            Message(
                topic=t,
                partition=0,
                offset=offsets[t],
                key=orjson.dumps([k]),
                value=orjson.dumps({"k": k}),
                timestamp=(CREATE_TIME, T0 + i // per_ms),
                headers=headers,
            )
        )
        offsets[t] += 1
    return out


def writer_of(key: str) -> int:
    """The upstream task that writes ``key`` ("k<number>"): its number mod ``WRITERS`` (0 with
    ``PLACED``: the partition is task 0's)."""
    return 0 if PLACED else int(key[1:]) % WRITERS


def landing(drawn: list[str], batch_ms: int, writer: Callable[[str], int] | None = None) -> list[int | tuple[int, int]]:
    """The order the records (their indices; record i's time is ``T0 + i``) land in when each
    key's writer (``writer``, default ``writer_of``) commits every ``batch_ms`` of record time,
    writer w's batches shifted by w/``WRITERS`` of one: batch by batch as each one's time passes,
    each batch's records in time order followed by (writer, progress ms), its marker; last, every
    writer's marker past all."""
    writers = WRITERS if writer is None else max(WRITERS, *map(writer, drawn)) + 1
    writer = writer or writer_of
    shift = [w * batch_ms // writers for w in range(writers)]
    batches: dict[tuple[int, int], list[int]] = collections.defaultdict(list)  # (end ms, writer) → records
    for i, k in enumerate(drawn):
        w = writer(k)
        end = ((i - shift[w]) // batch_ms + 1) * batch_ms + shift[w]
        batches[(end, w)].append(i)
    out: list[int | tuple[int, int]] = []
    for end, w in sorted(batches):
        out.extend(batches[(end, w)])
        out.extend([(v, end) for v in range(writers)] if PLACED else [(w, end)])  # (placed: all mark as 0 commits)
    last = len(drawn) + batch_ms
    out.extend((w, last) for w in range(writers))
    return out


def make_task(store: Path, gated: bool, inputs: int = 1) -> Task:
    topics = [topic(i, inputs) for i in range(inputs)]
    cfg = ProgramConfig(
        name="down",
        source="d.es",
        clock="record",
        inputs=[InputConfig(topic=t, event="Hit") for t in topics],
        outputs={"default": "out"},
        errors="err",
    )
    task = Task(
        0, compile_source(COUNT, name="down").require(), cfg, cfg.inputs, "down-rep", "down-changelog", 1, store
    )
    task.load_from_store()
    task.attach(lambda *a: None)
    if gated:
        writers = frozenset(f"up/{w}" for w in range(WRITERS))
        placed = frozenset(topics) if PLACED and TOLD else frozenset()
        task.set_progress(
            ProgressPlan("down", 1, writers=dict.fromkeys(topics, writers), marked=frozenset(topics), placed=placed)
        )
    return task


def add_fetch(task: Task, batch: list[Message]) -> None:
    """Add a fetch's records as the Kafka worker adds a poll's (``ProgramWorker._take``): to the
    task's group, with one clock reading for them all (``Task.add`` reads the clock per record,
    ~55 ns, which the worker does not pay)."""
    now = time.monotonic()
    add = task.group.add
    for r in batch:
        add(r, now)


def mark(task: Task, topics: list[str], offsets: dict[str, int], progress: int) -> None:
    """Every writer marks ``progress`` on every input topic (as their commits would)."""
    for t in topics:
        for w in range(WRITERS):
            headers = list(marker_headers("up", w, progress))
            task.add(
                Message(topic=t, partition=0, offset=offsets[t], timestamp=(CREATE_TIME, progress), headers=headers)
            )
            offsets[t] += 1


def run(
    recs: list[Message], gated: bool, commit_ms: float, waits: list[float] | None, rate: float = 0, inputs: int = 1
) -> tuple[float, float]:
    """The CPU seconds of this process and the wall seconds the task took over ``recs`` (on a
    shared machine the CPU time is the steadier); with ``waits``, each record's wait between add
    and process is appended, and with ``rate`` the fetches come at that many records/s (as from
    live writers) rather than at once. ``recs`` landed (``landing``) carry their writers' markers:
    the run without a progress plan leaves them out."""
    recs, landed, n = fed(recs, gated)
    store = Path(tempfile.mkdtemp(prefix="bench-event-time-"))
    # Each run from a collected heap: a full collection (tens of ms over a 50,000-record heap)
    # otherwise lands in whichever run crosses its threshold, swinging one run by ~15%.
    gc.collect()
    try:
        task = make_task(store, gated, inputs)
        topics = [ip.topic for ip in task.inputs if ip.config is not None]
        if gated:
            assert all(isinstance(ip.progress, InputProgress) for ip in task.inputs if ip.config is not None)
        pending: collections.deque[tuple[int, float]] = collections.deque()  # (record number, when added)
        cpu_started = time.process_time()
        started = time.perf_counter()
        next_commit = started + commit_ms / 1000
        offsets = {t: len(recs) for t in topics}  # markers after every record's offset
        for at in range(0, len(recs), FETCH):
            batch = recs[at : at + FETCH]
            if rate:
                time.sleep(max(0.0, started + at / rate - time.perf_counter()))
            now = time.perf_counter()
            add_fetch(task, batch)
            if waits is not None:
                pending.append((at + len(batch), now))
            if gated and not landed and now >= next_commit:  # the writers commit: they have written all up to here
                mark(task, topics, offsets, batch[-1].timestamp()[1] + 1)
                next_commit = now + commit_ms / 1000
            task.process(0)
            if waits is not None:
                done = time.perf_counter()
                processed = task.counts["processed"]
                while pending and pending[0][0] <= processed:  # a whole fetch released: its wait, per record
                    waits.extend([done - pending.popleft()[1]] * FETCH)
        if gated and not landed:  # the end: the writers' last commit
            mark(task, topics, offsets, recs[-1].timestamp()[1] + 1)
            task.process(0)
        done = time.perf_counter()
        while pending:  # released by the writers' last commit
            waits.extend([done - pending.popleft()[1]] * FETCH)  # type: ignore[union-attr]
        cpu, wall = time.process_time() - cpu_started, time.perf_counter() - started
        assert task.held_back == 0 and task.counts["processed"] == n, task.counts
        task.close()
        return cpu, wall
    finally:
        shutil.rmtree(store, ignore_errors=True)


def is_marker(msg: Message) -> bool:
    return msg.value() is None


def fed(recs: list[Message], gated: bool) -> tuple[list[Message], bool, int]:
    """What a run adds of ``recs`` (without their writers' markers when not ``gated``), whether
    they carry markers (landed: ``landing``), and how many records (not markers) they hold."""
    landed = any(map(is_marker, recs))
    if landed and not gated:
        recs = [m for m in recs if not is_marker(m)]
    return recs, landed, sum(not is_marker(m) for m in recs)


def _pop_run(ip: object, buf: collections.deque[Message], n: int, position: dict[str, int]) -> None:
    """A ``process_run`` that only takes the records (``merge_cost``)."""
    for _ in range(n):
        buf.popleft()


def merge_cost(recs: list[Message], gated: bool, inputs: int, lag: int, rounds: int) -> float:
    """ns of thread CPU per record of adding and merging ``recs`` with the engine stubbed out
    (the records taken, not processed): the merge's own cost, least over fetches of 2,000 and
    ``rounds`` runs, far steadier on a shared machine than a whole run's. Gated, the writers
    mark their progress after every fetch, ``lag`` ms of record time behind its last record (0:
    the whole fetch is released at once). ``recs`` landed (``landing``) carry their writers'
    markers instead (``lag`` unused), and a fetch may release less or more than it adds: the
    figure is then the whole run's (all fetches but the first) over its records, least of the
    rounds."""
    recs, landed, _ = fed(recs, gated)
    best = float("inf")
    for _ in range(rounds):
        store = Path(tempfile.mkdtemp(prefix="bench-event-time-"))
        gc.collect()
        gc.disable()
        try:
            task = make_task(store, gated, inputs)
            task._process_run = _pop_run  # type: ignore[method-assign]
            task._process_one = lambda ip, msg: None  # type: ignore[method-assign]
            topics = [ip.topic for ip in task.inputs if ip.config is not None]
            offsets = {t: len(recs) for t in topics}
            total, counted, fetch_best = 0, 0, float("inf")
            for at in range(0, len(recs), FETCH):
                batch = recs[at : at + FETCH]
                started = time.thread_time_ns()
                add_fetch(task, batch)
                if gated and not landed:
                    mark(task, topics, offsets, batch[-1].timestamp()[1] + 1 - lag)
                task.process(0)
                if at:  # (the first fetch warms the task up)
                    spent = time.thread_time_ns() - started
                    fetch_best = min(fetch_best, spent / len(batch))
                    total += spent
                    counted += sum(not is_marker(m) for m in batch)
            best = min(best, total / counted if landed else fetch_best)
            if gated and not landed:
                mark(task, topics, offsets, recs[-1].timestamp()[1] + 1)
                task.process(0)
            assert task.held_back == 0, task.held_back
            task.close()
        finally:
            gc.enable()
            shutil.rmtree(store, ignore_errors=True)
    return best


def print_merge_cost(recs: list[Message], inputs: int, order: str, lag: int, rounds: int) -> None:
    """``merge_cost`` of both runs, beside a whole record's (today's, the engine's work included)."""
    today, markers = (merge_cost(recs, gated, inputs, lag, rounds) for gated in (False, True))
    _, landed, n = fed(recs, True)
    whole = float("inf")
    for _ in range(rounds):
        cpu, _ = run(recs, False, 100.0, None, inputs=inputs)
        whole = min(whole, 1e9 * cpu / n)
    added = markers - today
    writers = "writers' batches landing" if landed else f"writers {lag} ms behind"
    print(
        f"{order} keys, {inputs} input topic(s), {writers}: merge alone {today:,.0f} ns per record "
        f"today, {markers:,.0f} with markers; a whole record today {whole:,.0f} ns: markers add {added:,.0f} ns "
        f"({100 * added / whole:.1f}%)"
    )


#: A stage whose every record re-arms its instance's timer (as sensor-silence's average does):
#: what naming its timers (``Task.name_timers``, ``es-armed``) costs it per record.
REARM = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Quiet
{ n = 0; }
( ( Hit() { n = n + 1; } )+ elapse[1 hour]() { !>Quiet({k: group[0], n: n}); } )*
"""


def timer_naming_cost(recs: list[Message], named: bool) -> float:
    """ns of process CPU per record of a task of ``REARM`` over ``recs`` (fetches of 2,000, no
    commit), its timers named (a stage whose outputs another program reads) or not."""
    store = Path(tempfile.mkdtemp(prefix="bench-event-time-"))
    try:
        cfg = ProgramConfig(
            name="down",
            source="d.es",
            clock="record",
            inputs=[InputConfig(topic=topic(0, 1), event="Hit")],
            outputs={"default": "out"},
            errors="err",
        )
        task = Task(0, compile_source(REARM, name="down").require(), cfg, cfg.inputs, "down-rep", "down-cl", 1, store)
        task.load_from_store()
        task.attach(lambda *a: None)
        if named:
            task.name_timers()
        gc.collect()
        started = time.process_time()
        for at in range(0, len(recs), FETCH):
            for r in recs[at : at + FETCH]:
                task.add(r)
            task.process(0)
        cpu = time.process_time() - started
        task.close()
        return 1e9 * cpu / len(recs)
    finally:
        shutil.rmtree(store, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--commit-ms", type=float, default=100.0)
    ap.add_argument("--rate", type=float, default=20_000.0, help="records/s fetched in the latency runs")
    ap.add_argument("--inputs", default="1,4", help="input topic counts to run, comma-separated (default 1,4)")
    ap.add_argument("--order", default="random,zipf", help="key orders to run: random, zipf (default both)")
    ap.add_argument(
        "--per-ms",
        type=int,
        default=1,
        help="records a ms of record time (default 1; 10: most records share their ms, a hot key's several "
        "at once, as bench/worker_markers.py --per-ms)",
    )
    ap.add_argument(
        "--merge-only",
        type=int,
        metavar="LAG_MS",
        help="the merge's own cost instead (the engine stubbed out), the writers LAG_MS behind each fetch",
    )
    ap.add_argument(
        "--landing",
        choices=("ordered", "batches"),
        default="ordered",
        help="records in time order (the default), or as the writers' batches of --commit-ms of record time land",
    )
    ap.add_argument(
        "--placed",
        action="store_true",
        help="the partition holds one upstream task's records (each writes its own partition), the others marking",
    )
    ap.add_argument(
        "--one-writer",
        action="store_true",
        help="--placed's landing, the task not told (merged across the writers): the cut's own share",
    )
    ap.add_argument(
        "--gc",
        choices=("worker", "default"),
        default="worker",
        help="the collector as the worker sets it (engine.tuning.configure_gc, the default) or Python's default",
    )
    ap.add_argument(
        "--timer-names",
        action="store_true",
        help="instead: what naming the timers costs a stage that re-arms one per record (es-armed)",
    )
    args = ap.parse_args()
    global PLACED, TOLD
    PLACED = args.placed or args.one_writer
    TOLD = not args.one_writer
    counts = [int(n) for n in args.inputs.split(",")]
    if args.gc == "worker":
        # The worker's process (kafka/supervisor.py) collects young objects every 50,000
        # allocations, not 700: records held back waiting for markers would otherwise be rescanned
        # again and again, a cost the worker does not pay (measured: 26% against 13% at 4 inputs).
        configure_gc()
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.records:,} records, "
        f"{args.keys:,} keys, best of {args.repeat}, the collector as {args.gc}"
    )
    if args.timer_names:
        for order in args.order.split(","):
            recs = records(args.records, args.keys, 1, order)
            for _ in range(args.repeat):  # (rounds interleaved)
                plain, named = (timer_naming_cost(recs, n) for n in (False, True))
                print(f"{order} keys: {plain:,.0f} ns a record, {named:,.0f} with its timers named")
        return
    for order in args.order.split(","):
        for inputs in counts:
            batch_ms = int(args.commit_ms) if args.landing == "batches" else None
            recs = records(args.records, args.keys, inputs, order, batch_ms=batch_ms, per_ms=args.per_ms)
            if args.merge_only is not None:
                print_merge_cost(recs, inputs, order, args.merge_only, args.repeat)
                continue
            best = {"today": (float("inf"), 0.0), "markers": (float("inf"), 0.0)}  # (CPU s, wall s)
            for _ in range(args.repeat):
                for name in best:
                    best[name] = min(best[name], run(recs, name == "markers", args.commit_ms, None, inputs=inputs))
            latency = {}
            for name in best if batch_ms is None else ():  # (landed: the batches set the waits)
                waits: list[float] = []
                run(recs, name == "markers", args.commit_ms, waits, args.rate, inputs)
                waits.sort()
                latency[name] = (statistics.median(waits), waits[int(len(waits) * 0.99)])
            n = fed(recs, True)[2]
            landed = "" if batch_ms is None else f", their batches of {batch_ms} ms landing"
            written = f"written by {WRITERS} tasks"
            if PLACED:
                written = "one of 3 tasks' own (placed)" if TOLD else "one of 3 tasks' own, merged across all 3"
            print(f"{order} keys, {inputs} input topic(s), each {written}{landed}:")
            for name, (cpu, wall) in best.items():
                print(f"  {name:8s} {n / cpu:12,.0f} records per CPU second ({cpu:.3f} CPU s, {wall:.3f} s wall)")
            print(f"  markers cost {100 * (1 - best['today'][0] / best['markers'][0]):.1f}% of throughput (CPU)")
            if not latency:
                continue
            print(
                f"  wait between add and process, fetches of {FETCH:,} at {args.rate:,.0f} records/s, markers "
                f"every {args.commit_ms:g} ms:"
            )
            for name, (p50, p99) in latency.items():
                print(f"  {name:8s} p50 {1000 * p50:7.1f} ms   p99 {1000 * p99:7.1f} ms")


if __name__ == "__main__":
    main()
