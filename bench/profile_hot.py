"""Where the time goes: cProfile on the worker's thread and on the engine (issue 26).

- ``worker``: one TopologyRunner in this process on the counter program of
  bench/worker_peers.py, over a backlog pre-loaded on the broker (embedded Tansu, or
  $KAFKA_BOOTSTRAP_SERVERS); the profiler runs in the program's worker thread only
  (``ProgramWorker.run``, from the group join to the final commit after the last record). The
  profiler's clock is the wall clock (with ``time.thread_time`` as its timer it multiplies the
  thread's CPU time by ten, against three); the time the thread spends blocked in the client's
  C calls (consume, flush, transaction calls: WAITS) is taken out of the total. Prints
  the parts the issue names (instance creation, snapshots, changelog produce, store writes,
  routing, per-record feed, ...) as shares of that thread's profiled time, by cumulative time
  (parts nest: a part's time includes what it calls), then the top functions by own time.
- ``engine``: the realistic program of bench/engine.py fed per event (or by ``feed_many``),
  under cProfile: what the generated feed calls out to, per event.

cProfile adds a cost per Python call, so the shares favour code that makes many small calls;
take them as a ranking, not as times. ``--save FILE`` keeps the pstats file (snakeviz, pstats).

Usage: python bench/profile_hot.py worker [--records N] [--keys K] [--order random|zipf]
                                          [--guarantee at_least_once|exactly_once] [--partitions P]
       python bench/profile_hot.py engine [--events N] [--keys K] [--order random|zipf] [--batch]
       valgrind --tool=cachegrind --cache-sim=no --branch-sim=yes --cachegrind-out-file=/dev/null \\
           python bench/profile_hot.py engine --events 200000 --order zipf --bare none|loop|feed|feed_many
           (per event: I refs and mispredicts of a contender minus those of "none", over the events)
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import os
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "service"))
sys.path.insert(0, str(BENCH))

#: The parts the issue asks about: (label, file suffix, function name). A part matches every
#: function of that name in files ending so.
WORKER_PARTS = [
    ("consume + hand to tasks (_take)", "kafka/worker.py", "_take"),
    ("Task.process (records -> engine)", "task/task.py", "process"),
    ("  per record (Task._process_one)", "task/task.py", "_process_one"),
    ("  engine feed (generated)", ":feed_keyed>", "feed_keyed"),
    ("  instance creation (engine create)", "engine/engine.py", "create"),
    ("  output handler (Task handler)", "task/task.py", "handler"),
    ("    output record ids (RecordIds.next_bytes)", "task/ids.py", "next_bytes"),
    ("    output produce (BatchProducer send)", "kafka/producer.py", "send"),
    ("  routing: Routing.place (a key new to the cache)", "task/routing.py", "place"),
    ("    murmur2 in Python (fallback)", "task/partitioner.py", "murmur2"),
    ("    murmur2 in librdkafka (ctypes)", "task/native_partitioner.py", "partition"),
    ("outputs produced (Checkpoint.produce_outboxes)", "kafka/checkpoint.py", "produce_outboxes"),
    ("timers (ProgramWorker._fire_timers)", "kafka/worker.py", "_fire_timers"),
    ("commit, with its waits (Checkpoint.commit)", "kafka/checkpoint.py", "commit"),
    ("  changelog records (Task.changelog_records)", "task/task.py", "changelog_records"),
    ("    snapshot per dirty key (Engine.snapshot)", "engine/engine.py", "snapshot"),
    ("    changelog produce (BatchProducer send_changelog)", "kafka/producer.py", "send_changelog"),
    ("  store writes (TaskStore.write)", "state/store.py", "write"),
    ("producer.produce (C, every call)", "~", "<method 'produce' of 'cimpl.Producer' objects>"),
    ("RocksDB write (rocksdict, C)", "~", "<method 'write' of 'builtins.Rdict' objects>"),
]


def cumulative(stats: pstats.Stats, suffix: str, name: str) -> tuple[float, int]:
    """Cumulative seconds and calls of the functions ``name`` in files ending with ``suffix``
    (not counting recursive calls twice: cProfile's cumulative time already merges them)."""
    total, calls = 0.0, 0
    for (file, _line, func), (_cc, nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if func == name and file.endswith(suffix):
            total += ct
            calls += nc
    return total, calls


#: The client's calls that block (waiting on the broker or a timeout): their own time is waiting.
WAITS = [
    f"<method '{m}' of 'cimpl.{cls}' objects>"
    for cls, m in (
        ("Consumer", "consume"),
        ("Consumer", "commit"),
        ("Consumer", "committed"),
        ("Consumer", "poll"),
        ("Producer", "flush"),
        ("Producer", "poll"),
        ("Producer", "commit_transaction"),
        ("Producer", "send_offsets_to_transaction"),
        ("Producer", "begin_transaction"),
        ("Producer", "init_transactions"),
        ("Producer", "abort_transaction"),
    )
]


def waited(stats: pstats.Stats) -> float:
    return sum(
        tt
        for (_f, _l, func), (_cc, _nc, tt, _ct, _c) in stats.stats.items()  # type: ignore[attr-defined]
        if func in WAITS
    )


def report(
    stats: pstats.Stats, parts: list[tuple[str, str, str]], total: float, records: int, top: int, unit: str = "record"
) -> None:
    waits = waited(stats)
    print(
        f"profiled {total:.2f} s, of which {waits:.2f} s blocked in the client's calls (WAITS); the shares are of "
        f"the rest, {total - waits:.2f} s (with cProfile's overhead): {(total - waits) / records * 1e6:.1f} µs "
        f"per {unit}"
    )
    total -= waits
    rows = []
    for label, suffix, name in parts:
        seconds, calls = cumulative(stats, suffix, name)
        if calls:
            rows.append((label, seconds, calls))
    print(
        f"  {'part (cumulative; indented parts are inside the one above)':58s} {'share':>6s} {'µs/' + unit:>10s} "
        f"{'calls':>10s}"
    )
    for label, seconds, calls in rows:
        print(f"  {label:58s} {seconds / total:6.1%} {seconds / records * 1e6:10.2f} {calls:10,d}")
    out = io.StringIO()
    stream = stats.stream  # type: ignore[attr-defined]
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)
    stats.stream = stream  # type: ignore[attr-defined]
    print(f"\ntop {top} by own time:")
    text = out.getvalue()
    print(text[text.index("ncalls") :].rstrip())


def profile_worker(args: argparse.Namespace) -> None:
    from eventscript.kafka.config import parse_topology
    from eventscript.kafka.supervisor import TopologyRunner
    from eventscript.kafka.worker import ProgramWorker
    from worker_peers import COUNTER, Broker, create_topics, preload

    profiler = cProfile.Profile()  # wall clock: a CPU-clock timer costs 10x the thread's work
    run = ProgramWorker.run
    spent: list[float] = []

    def profiled(self: ProgramWorker, *a: object, **kw: object) -> None:
        t = time.thread_time()
        try:
            profiler.runcall(run, self, *a, **kw)
        finally:
            spent.append(time.thread_time() - t)

    ProgramWorker.run = profiled  # type: ignore[method-assign]
    tmp = Path(tempfile.mkdtemp(prefix="es-profile-"))
    with Broker() as broker:
        topic = f"profile-in-{time.time_ns() % 10**8}"
        create_topics(broker.bootstrap, [topic], args.partitions)
        preload(broker.bootstrap, topic, args.records, args.partitions, args.keys, args.order)
        source = tmp / "counter.es"
        source.write_text(COUNTER)
        name = "profiled"
        topo = parse_topology(
            {
                "application": f"profile-{time.time_ns() % 10**8}",
                "kafka": {
                    "bootstrap_servers": broker.bootstrap,
                    "consumer": {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1500},
                },
                "programs": [
                    {
                        "name": name,
                        "source": str(source),
                        "guarantee": args.guarantee,
                        "clock": "wall",
                        "inputs": [{"topic": topic, "event": "Reading"}],
                        "outputs": {"default": f"{topic}-out"},
                    }
                ],
                "state_dir": str(tmp / "state"),
            }
        )
        runner = TopologyRunner(topo)
        runner.prepare()
        t = threading.Thread(target=runner.run, kwargs={"install_signals": False}, daemon=True)
        t.start()
        processed = runner.metrics.records.labels(name, "processed")
        deadline = time.monotonic() + 900
        while processed._value.get() < args.records:
            if time.monotonic() > deadline or not t.is_alive():
                raise SystemExit(f"worker: {processed._value.get():,} of {args.records:,} records processed")
            time.sleep(0.05)
        runner.stop()  # the final commit (changelog, store writes) runs in the profiled thread
        t.join(120)
    print(
        f"worker thread, counter program, {args.guarantee}, {args.records:,} records over {args.keys:,} keys "
        f"({args.order} order), {args.partitions} partitions; thread CPU {spent[0]:.2f} s under cProfile"
    )
    stats = pstats.Stats(profiler)
    if args.save:
        stats.dump_stats(args.save)
    report(stats, WORKER_PARTS, stats.total_tt, args.records, args.top)  # type: ignore[attr-defined]


ENGINE_PARTS = [
    ("engine feed (generated, per event)", ":feed>", "feed"),
    ("engine feed_many (generated)", ":feed_many>", "feed_many"),
    ("instance creation (engine create)", "engine/engine.py", "create"),
    ("consumer (the bench's sink)", "bench/engine.py", "consumer"),
]


def bare_run(who: str, events: list, eng: Any) -> None:
    """``--bare``: one contender over the events with no profiler, then exit at once (no
    teardown), for an instruction counter run around the whole process; the run ``none``
    (events and engine made, nothing fed) is the set-up to subtract. cProfile sees a batch as
    one call of ``feed_many``: what the generated loop itself executes per event, and which
    branches it mispredicts, only a counter shows (the bench's CPU seconds being too noisy on
    a shared machine to tell a few percent apart)."""
    import engine as bench_engine

    if who == "loop":
        bench_engine.loop_realistic(events, collections.deque(maxlen=1).append)
    elif who == "feed_many":
        eng.feed_many(events)
    elif who == "feed":
        feed = eng.feed
        for name, value in events:
            feed(name, value)
    sys.stdout.flush()
    os._exit(0)


def profile_engine(args: argparse.Namespace) -> None:
    import engine as bench_engine
    from eventscript.engine.tuning import configure_gc

    events = bench_engine.realistic_events(args.events, args.keys, args.order)
    eng, hits = bench_engine.realistic_engine()
    if args.bare:
        eng.feed_many([])  # (made before the count starts, as for a host's later batches)
        configure_gc()
        bare_run(args.bare, events, eng)
    profiler = cProfile.Profile()
    if args.batch:
        profiler.runcall(eng.feed_many, events)
    else:
        feed = eng.feed

        def go() -> None:
            for name, value in events:
                feed(name, value)

        profiler.runcall(go)
    print(
        f"engine, realistic program, {args.events:,} events over {args.keys:,} keys ({args.order} order), "
        f"{'feed_many' if args.batch else 'feed per event'}; {len(hits):,} matches"
    )
    stats = pstats.Stats(profiler)
    if args.save:
        stats.dump_stats(args.save)
    report(stats, ENGINE_PARTS, stats.total_tt, args.events, args.top, "event")  # type: ignore[attr-defined]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    w = sub.add_parser("worker")
    w.add_argument("--records", type=int, default=100_000)
    w.add_argument("--keys", type=int, default=100_000)
    w.add_argument("--partitions", type=int, default=3)
    w.add_argument("--guarantee", default="at_least_once", choices=("at_least_once", "exactly_once"))
    e = sub.add_parser("engine")
    e.add_argument("--events", type=int, default=500_000)
    e.add_argument("--keys", type=int, default=10_000)
    e.add_argument("--batch", action="store_true", help="feed_many over all events instead of feed per event")
    e.add_argument(
        "--bare",
        choices=("none", "loop", "feed", "feed_many"),
        help="run this contender without the profiler and exit (for valgrind's instruction counts)",
    )
    for p in (w, e):
        p.add_argument("--order", default="random", choices=("random", "zipf"))
        p.add_argument("--top", type=int, default=25)
        p.add_argument("--save", help="write the pstats file here")
    args = ap.parse_args()
    profile_worker(args) if args.what == "worker" else profile_engine(args)


if __name__ == "__main__":
    main()
