"""The grouped comparison of ``bench/engine.py`` with an older engine beside this tree's, in one
process: per round the hand-written loop, the engine at COMMIT and this tree's engine, each after
``gc.collect()`` (else a run pays for collecting the previous engine's cycles), medians of CPU
seconds (``process_time``) and wall time. The old engine is this repository's ``service/eventscript``
at COMMIT, extracted with ``git archive`` and imported under another package name (the package
imports itself relatively, so it runs as it did then).

Usage: .venv/bin/python bench/engine_against.py COMMIT [--events N] [--rounds R] [--keys 10000,100000]
       [--default-gc] [--realistic [--contexts]]
Prints one markdown row per program, key count and order: old, new and loop CPU seconds, then the
loop's over each engine's by CPU and by wall time. The process is set up as hosts set it up
(``engine.tuning.configure_gc``, as ``bench/engine.py`` does) unless --default-gc.

``--realistic``: the realistic program of ``bench/engine.py`` instead (10,000 keys, its inputs
frozen out of the collector's sight as there), fed per event and by ``feed_many`` (one batch) by
each engine; ``--contexts`` adds each engine of contexts as the worker holds it (``track_dirty``,
by ``feed_many``) and this tree's with ``creates_late``. One row per contender: the best and
median CPU seconds and the loop's over them.
"""

from __future__ import annotations

import argparse
import collections
import gc
import importlib
import io
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "service"))
sys.path.insert(0, str(ROOT / "bench"))

from engine import GROUPED, REALISTIC, T0, grouped_events, loop_realistic, realistic_events, run_grouped_loop  # noqa: E402
from eventscript.engine.tuning import configure_gc  # noqa: E402

OLD = "eventscript_old"


def extract(commit: str, into: Path) -> None:
    """``service/eventscript`` at ``commit`` as package OLD under ``into``."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "service/eventscript"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar.getmembers():
            m.name = m.name.replace("service/eventscript", OLD, 1)
        tar.extractall(into, filter="data")


def modules(package: str) -> tuple[ModuleType, ModuleType, ModuleType]:
    return (
        importlib.import_module(f"{package}.automata.compile"),
        importlib.import_module(f"{package}.engine.engine"),
        importlib.import_module(f"{package}.engine.time_provider"),
    )


def run(mods: tuple[ModuleType, ModuleType, ModuleType], kind: str, events: list[Any]) -> tuple[float, float, int]:
    c, e, t = mods
    counter: collections.deque[Any] = collections.deque(maxlen=1)
    got: list[int] = []

    def consumer(x: Any) -> None:
        counter.append(x)
        got.append(1)

    eng = e.Engine(c.compile_source(GROUPED[kind], name=kind).require(), consumer, t.SimulatedTimeProvider(T0))
    feed = eng.feed
    gc.collect()
    w, cpu = time.perf_counter(), time.process_time()
    for name, key in events:
        feed(name, key)
    return time.perf_counter() - w, time.process_time() - cpu, len(got)


def run_realistic(
    mods: tuple[ModuleType, ModuleType, ModuleType] | None, how: str, events: list[Any]
) -> tuple[float, int]:
    """CPU seconds and matches of one contender over the realistic program: ``mods`` None is the
    loop; ``how`` is ``feed``, ``feed_many``, ``contexts`` (track_dirty, feed_many) or ``late``
    (the same with ``creates_late``)."""
    counter: collections.deque[Any] = collections.deque(maxlen=1)
    got: list[int] = []

    def consumer(x: Any) -> None:
        counter.append(x)
        got.append(1)

    if mods is None:
        gc.collect()
        cpu = time.process_time()
        loop_realistic(events, consumer)
        return time.process_time() - cpu, len(got)
    c, e, t = mods
    prog = c.compile_source(REALISTIC["full"], name="realistic").require()
    eng = e.Engine(prog, consumer, t.SimulatedTimeProvider(T0), track_dirty=how in ("contexts", "late"))
    if how == "late":
        eng.creates_late = True
    feed, feed_many = eng.feed, eng.feed_many
    gc.collect()
    cpu = time.process_time()
    if how == "feed":
        for name, value in events:
            feed(name, value)
    else:
        feed_many(events)
    return time.process_time() - cpu, len(got)


def realistic(old: Any, new: Any, n: int, rounds: int, contexts: bool) -> None:
    print("| order | contender | CPU s best | CPU s median | × loop (best) | × loop (median) |")
    print("|---|---|---:|---:|---:|---:|")
    contenders = [("loop", None, ""), ("old feed", old, "feed"), ("new feed", new, "feed")]
    contenders += [("old feed_many", old, "feed_many"), ("new feed_many", new, "feed_many")]
    if contexts:
        contenders += [("old contexts", old, "contexts"), ("new contexts", new, "contexts"), ("new late", new, "late")]
    for order in ("random", "zipf"):
        events = realistic_events(n, 10_000, order)
        gc.collect()
        gc.freeze()
        res: dict[str, list[tuple[float, int]]] = collections.defaultdict(list)
        for r in range(rounds):
            for who, mods, how in contenders[r % len(contenders) :] + contenders[: r % len(contenders)]:
                res[who].append(run_realistic(mods, how, events))
        assert len({m for v in res.values() for _, m in v}) == 1, "match counts differ"
        lbest, lmed = min(c for c, _ in res["loop"]), statistics.median(c for c, _ in res["loop"])
        for who, _, _ in contenders:
            best, med = min(c for c, _ in res[who]), statistics.median(c for c, _ in res[who])
            print(f"| {order} | {who} | {best:.3f} | {med:.3f} | {lbest / best:.2f} | {lmed / med:.2f} |", flush=True)
        gc.unfreeze()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("commit")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keys", default="10000,100000")
    ap.add_argument("--default-gc", action="store_true", help="do not apply the hosts' GC tuning")
    ap.add_argument("--realistic", action="store_true", help="the realistic program instead of the grouped ones")
    ap.add_argument("--contexts", action="store_true", help="realistic: also the engines of contexts")
    args = ap.parse_args()
    if not args.default_gc:
        configure_gc()
    with tempfile.TemporaryDirectory() as tmp:
        extract(args.commit, Path(tmp))
        sys.path.insert(0, tmp)
        old, new = modules(OLD), modules("eventscript")
        if args.realistic:
            realistic(old, new, args.events, args.rounds, args.contexts)
            return
        print(
            "| program | keys | order | old CPU s | new CPU s | loop CPU s | old (CPU) | new (CPU) | old (wall) | "
            "new (wall) |"
        )
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for k in (int(x) for x in args.keys.split(",")):
            for order in ("random", "zipf"):
                events = grouped_events(args.events, k, order)
                for kind in GROUPED:
                    res: dict[str, list[tuple[float, float, int]]] = collections.defaultdict(list)
                    for _ in range(args.rounds):
                        gc.collect()
                        res["loop"].append(run_grouped_loop(kind, events))
                        res["old"].append(run(old, kind, events))
                        res["new"].append(run(new, kind, events))
                    assert len({r[2] for v in res.values() for r in v}) == 1, "match counts differ"
                    med = {
                        w: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
                        for w, v in res.items()
                    }
                    lw, lc = med["loop"]
                    print(
                        f"| {kind} | {k // 1000} k | {order} | {med['old'][1]:.3f} | {med['new'][1]:.3f} | {lc:.3f} "
                        f"| {lc / med['old'][1]:.2f} | {lc / med['new'][1]:.2f} | {lw / med['old'][0]:.2f} "
                        f"| {lw / med['new'][0]:.2f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
