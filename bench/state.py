"""State larger than memory (issue 10, item 3): one task (no broker), many keys, a bounded cache.

Drives a real ``Task`` as the worker does — records in, outputs out, a commit every
``--commit-every`` records (changelog records, then the local RocksDB store) — over ``--keys``
keys: a first pass creates every key's instance in a random order (a full-period affine
permutation: no table of keys in memory), then ``--skewed`` more records go to Zipf-distributed
keys (hot keys stay in the cache, the tail comes from the store). Each run is a fresh child
process; it reports peak RSS, RSS at the end, instances in memory, evictions and loads, records
per second of wall time and per CPU-second (of the process: RocksDB's threads included).

A second mode measures memory per instance held in memory, for the same program and records: the
bare engine (``Engine.feed_json`` of the decoded values, a simulated clock) and the task with a
cache large enough for every instance (``--per-instance-keys``), each in a fresh child process,
as the RSS added by the second half of the instances (so that fixed costs — bounded key caches,
RocksDB's buffers, code — fall out), beside the cache's own estimate (``instance_bytes``).

With ``--unbounded-up-to`` (default 1,000,000) key counts up to it also run with every instance in
memory (the behaviour before the cache), alternating with the cached runs for ``--rounds``.

Usage:
  python bench/state.py [--keys 1000000[,10000000]] [--cache-mib 256] [--program counter|timers]
                        [--skewed N] [--commit-every N] [--per-instance-keys 400000]
                        [--unbounded-up-to 1000000] [--rounds 1]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "service"))

import orjson  # noqa: E402

from eventscript.automata.compile import compile_source  # noqa: E402
from eventscript.engine.engine import Engine  # noqa: E402
from eventscript.engine.time_provider import SimulatedTimeProvider  # noqa: E402
from eventscript.engine.tuning import configure_gc  # noqa: E402
from eventscript.kafka.config import InputConfig, ProgramConfig  # noqa: E402
from eventscript.kafka.task import Task  # noqa: E402
from eventscript.state.cache import instance_bytes  # noqa: E402
from eventscript.task.record import PlainRecord  # noqa: E402

PROGRAMS = {
    # The trivial counter: one variable, no timer.
    "counter": """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count;} Count
{ count = 0; }
( Tick(t) { count = count + 1; } )*
""",
    # Every instance has a pending timer (re-armed by each record): the timer index at work.
    "timers": """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count;} Quiet
{ count = 0; }
( Tick(t) { count = count + 1; } )* elapse[1 hours]() { !>Quiet({k: group[0], count: count}); }
""",
}
T0 = 1_767_225_600_000  # ms
MIB = 1 << 20


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def key_order(keys: int, skewed: int, seed: int = 1) -> Any:
    """Key indexes: every key once in a random order (i -> (a*i + c) mod keys, a coprime to keys),
    then ``skewed`` draws from a Zipf(1.1)-like distribution over a random relabelling."""
    rnd = random.Random(seed)
    a = rnd.randrange(keys // 3 + 1, keys) | 1
    while math.gcd(a, keys) != 1:
        a += 2
    c = rnd.randrange(keys)
    for i in range(keys):
        yield (a * i + c) % keys
    for _ in range(skewed):
        rank = min(keys - 1, int(rnd.paretovariate(0.1 + 1.0)) - 1)
        yield (a * rank + c) % keys


def record(i: int, k: int) -> PlainRecord:
    key = f"key-{k:08d}"
    return PlainRecord("in", 0, i, T0 + i // 10, key.encode(), orjson.dumps({"k": key, "n": i}), None)


def make_task(program: str, store: Path, cache_mib: float | None, cache_instances: int | None) -> Task:
    cfg = ProgramConfig(
        name="bench",
        source="bench.es",
        clock="record",
        inputs=[InputConfig(topic="in", event="Tick")],
        outputs={"default": "out"},
        errors="err",
        state={"cache_mib": cache_mib or 256, "cache_instances": cache_instances},
    )
    task = Task(
        0, compile_source(PROGRAMS[program], name="bench").require(), cfg, cfg.inputs, "rep", "changelog", 1, store
    )
    task.load_from_store()
    return task


def run_task(
    program: str, keys: int, skewed: int, cache_mib: float | None, cache_instances: int | None, commit_every: int
) -> dict[str, Any]:
    """One task over the records, committing as the worker does; timed around the task only."""
    configure_gc()
    with tempfile.TemporaryDirectory(prefix="bench-state-") as tmp:
        task = make_task(program, Path(tmp) / "task", cache_mib, cache_instances)
        base = rss()
        wall = cpu = 0.0
        batch: list[PlainRecord] = []
        n = 0

        def step() -> None:
            nonlocal wall, cpu
            t, c = time.perf_counter(), time.process_time()
            for r in batch:
                task.add(r)
            task.process(0)
            changes = task.changelog_records()
            task.outbox.clear()
            task.store.write(changes, None, dict(task.position))
            wall += time.perf_counter() - t
            cpu += time.process_time() - c
            batch.clear()

        for k in key_order(keys, skewed):
            batch.append(record(n, k))
            n += 1
            if len(batch) >= commit_every:
                step()
        if batch:
            step()
        gc.collect()
        end = rss()
        out = {
            "mode": "task",
            "program": program,
            "keys": keys,
            "records": n,
            "cache_mib": cache_mib,
            "cache_instances": cache_instances,
            "capacity": task.cache.capacity,
            "estimated_bytes_per_instance": round(task.cache.bytes_per_instance),
            "in_memory": len(task.engine.contexts),
            "evicted": task.cache.evicted,
            "loaded_by_records": task.cache.loaded,
            "loaded_by_timers": task.timer_index.loaded,
            "records_per_s": round(n / wall),
            "records_per_cpu_s": round(n / cpu),
            "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1),
            "rss_start_mib": round(base / MIB),
            "rss_end_mib": round(end / MIB),
            "peak_rss_mib": round(peak_rss() / MIB),
            "rocksdb": {k: round(v / MIB, 1) for k, v in task.store.memory().items()},
        }
        task.close()
        return out


def marginal(feed_half: Any, keys: int) -> int:
    """Bytes per instance added by the second half of ``keys`` instances (RSS delta): fixed costs
    (bounded caches, RocksDB buffers, code) fall out. ``feed_half(h)`` adds half ``h`` (0, 1)."""
    feed_half(0)
    gc.collect()
    mid = rss()
    feed_half(1)
    gc.collect()
    return round((rss() - mid) / (keys - keys // 2))


def run_engine(program: str, keys: int) -> dict[str, Any]:
    """The bare engine holding the same instances, from the same record values (decoded here)."""
    configure_gc()
    engine = Engine(compile_source(PROGRAMS[program], name="bench").require(), time=SimulatedTimeProvider(T0 * 1000))
    values = [record(i, k).value() for i, k in enumerate(key_order(keys, 0))]
    loads, feed = orjson.loads, engine.feed_json

    def feed_half(h: int) -> None:
        for v in values[h * (keys // 2) : keys if h else keys // 2]:
            feed("Tick", loads(v))

    return {"mode": "engine", "program": program, "keys": keys, "bytes_per_instance": marginal(feed_half, keys)}


def run_task_memory(program: str, keys: int) -> dict[str, Any]:
    """The task holding the same instances, all in memory (committing every 10,000 records)."""
    configure_gc()
    with tempfile.TemporaryDirectory(prefix="bench-state-") as tmp:
        task = make_task(program, Path(tmp) / "task", None, keys * 2)
        records = [record(i, k) for i, k in enumerate(key_order(keys, 0))]

        def feed_half(h: int) -> None:
            part = records[h * (keys // 2) : keys if h else keys // 2]
            for i in range(0, len(part), 10_000):
                for r in part[i : i + 10_000]:
                    task.add(r)
                task.process(0)
                changes = task.changelog_records()
                task.outbox.clear()
                task.store.write(changes, None, dict(task.position))

        used = marginal(feed_half, keys)
        sample = list(task.engine.contexts.values())[:: max(1, keys // 64)]
        out = {
            "mode": "task-memory",
            "program": program,
            "keys": keys,
            "bytes_per_instance": used,
            "estimated": round(sum(instance_bytes(c) for c in sample) / len(sample)),
            "rocksdb_mib": {k: round(v / MIB, 1) for k, v in task.store.memory().items()},
            "in_memory": len(task.engine.contexts),
        }
        task.close()
        return out


def child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--child", *args], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", default="1000000", help="comma-separated key counts (e.g. 1000000,10000000)")
    ap.add_argument("--program", default="counter", choices=sorted(PROGRAMS))
    ap.add_argument("--cache-mib", type=float, default=256)
    ap.add_argument("--skewed", type=int, default=None, help="records after the first pass (default: keys / 2)")
    ap.add_argument("--commit-every", type=int, default=10_000)
    ap.add_argument(
        "--per-instance-keys",
        type=int,
        default=200_000,
        help="instances for the bytes-per-instance comparison (0: skip it)",
    )
    ap.add_argument(
        "--unbounded-up-to",
        type=int,
        default=1_000_000,
        help="also run key counts up to this with every instance in memory (the old behaviour), "
        "alternating with the cached runs",
    )
    ap.add_argument("--rounds", type=int, default=1, help="rounds of the alternating runs")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        mode, program, keys, *rest = a.child
        if mode == "task":
            skewed, cache_mib, commit_every = int(rest[0]), float(rest[1]), int(rest[2])
            instances = int(rest[3]) if len(rest) > 3 else None
            result = run_task(program, int(keys), skewed, cache_mib, instances, commit_every)
        elif mode == "engine":
            result = run_engine(program, int(keys))
        else:
            result = run_task_memory(program, int(keys))
        print(json.dumps(result))
        return
    print(
        f"# bench/state.py  program={a.program}  cache={a.cache_mib:g} MiB  commit every {a.commit_every} records; "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    if a.per_instance_keys:
        n = str(a.per_instance_keys)
        eng, tsk = child(["engine", a.program, n]), child(["task-memory", a.program, n])
        print(
            f"memory per instance in memory, the second half of {a.per_instance_keys:,} instances (RSS delta, "
            f"fresh processes): bare engine {eng['bytes_per_instance']} B, task {tsk['bytes_per_instance']} B "
            f"({tsk['bytes_per_instance'] / max(1, eng['bytes_per_instance']):.2f}×; the cache estimates "
            f"{tsk['estimated']} B); task's RocksDB {tsk['rocksdb_mib']} MiB",
            flush=True,
        )
    for keys in [int(k) for k in a.keys.split(",")]:
        skewed = keys // 2 if a.skewed is None else a.skewed
        runs = [("cache", [])]
        if keys <= a.unbounded_up_to:
            runs.append(("all in memory", [str(keys * 2)]))
        for _ in range(a.rounds):
            for label, extra in runs:
                r = child(["task", a.program, str(keys), str(skewed), str(a.cache_mib), str(a.commit_every), *extra])
                print(json.dumps(r), flush=True)
                print(
                    f"{keys:>11,} keys, {r['records']:,} records, {label}: {r['records_per_s']:,} records/s, "
                    f"{r['records_per_cpu_s']:,} records/CPU-s ({r['wall_s']} s, {r['cpu_s']} CPU-s); peak RSS "
                    f"{r['peak_rss_mib']} MiB (end {r['rss_end_mib']}); {r['in_memory']:,} in memory "
                    f"(capacity {r['capacity']:,} at ~{r['estimated_bytes_per_instance']} B each), "
                    f"{r['evicted']:,} evictions, {r['loaded_by_records']:,} + {r['loaded_by_timers']:,} loads "
                    f"(records + timers)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
