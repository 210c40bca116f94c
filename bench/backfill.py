"""Backfill throughput: records/s and records per CPU-second on local[1] and local[2], beside the
single-process task over the same records and the data source's read-only rate (issue 7).

    .venv/bin/python bench/backfill.py --records 1000000 --keys 10000 --partitions 3

The records are a Parquet topic export (keys drawn at random, optionally skewed with ``--skew``;
each record keyed and placed by its group key, so every record is on its key's partition). CPU
time is summed over this process and all its descendants (Spark's JVM and its Python workers),
read from /proc before and after each run, and split into the driver (this process), the JVM and
the Python workers. ``--rounds`` repeats everything (single process, then each master) so that
the runs compared are interleaved; the summary gives each run's median.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "service"))

import orjson  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from eventscript.backfill.job import (  # noqa: E402
    Totals,
    check_totals,
    export_plan,
    output_frame,
    outputs,
    run_locally,
    spark_session,
)
from eventscript.backfill.key_parallel import run_locally as key_parallel_locally  # noqa: E402
from eventscript.backfill.key_split import auto_split  # noqa: E402
from eventscript.backfill.plan import Plan  # noqa: E402
from eventscript.backfill.records import OutputRow, input_batch  # noqa: E402
from eventscript.backfill.sink import FileSink  # noqa: E402
from eventscript.backfill.source import slice_batches  # noqa: E402
from eventscript.engine.tuning import configure_gc  # noqa: E402
from eventscript.kafka.config import ProgramConfig, parse_topology  # noqa: E402
from eventscript.kafka.keys import scheme_for  # noqa: E402
from eventscript.language.types import STRING  # noqa: E402

PROGRAM = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count; long last;} Count, {string k; long count;} Quiet

{ count = 0; }
( Tick(t) { count = count + 1; count % 10 == 0 ? !>Count({k: t.k, count: count, last: t.n}); } )*
elapse[1 hour]() { !>Quiet({k: group[0], count: count}); }
"""
T0 = 1_767_225_600_000


def make_export(
    path: Path, records: int, keys: int, partitions: int, cfg: ProgramConfig, skew: float, by_partition: bool = False
) -> None:
    """Records keyed and placed as the program's producers do (its key scheme), so none is on the
    wrong partition; keys in random order, ``skew`` > 1 makes low-numbered keys more frequent.
    Row groups of 100,000 records in record order, every partition's records in each (a task
    reads the whole file to find its partition's), or ``by_partition``: each partition's records
    in row groups of their own (a task reads only its partition's, as from Kafka)."""
    scheme = scheme_for(cfg, [STRING])
    rnd = random.Random(7)
    offsets = [0] * partitions
    writer = pq.ParquetWriter(str(path), input_batch([]).schema)
    rows: list[list[Any]] = [[] for _ in range(partitions)] if by_partition else [[]]

    def flush(group: list[Any]) -> None:
        writer.write_table(pa.Table.from_batches([input_batch(group)]))
        group.clear()

    for i in range(records):
        k = f"k{int(keys * rnd.random() ** skew)}"
        kb = scheme.key_bytes((k,))
        p = scheme.partition(scheme.routing_bytes((k,)), partitions)
        group = rows[p if by_partition else 0]
        group.append(("ticks-in", p, offsets[p], T0 + i * 10, kb, orjson.dumps({"k": k, "n": i}), None))
        offsets[p] += 1
        if len(group) == 100_000:
            flush(group)
    for group in rows:
        if group:
            flush(group)
    writer.close()


def cpu_by_process() -> dict[str, float]:
    """CPU seconds of this process ("driver"), and of its live descendants: Spark's JVM ("jvm")
    and Python workers ("workers") (utime + stime, their waited-for children included)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, tuple[str, float]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                name, fields = f.read().split(" (", 1)[1].rsplit(")", 1)
        except (OSError, IndexError, ValueError):
            continue
        values = fields.split()
        parents[int(d)] = int(values[1])
        cpu[int(d)] = (name, sum(int(x) for x in values[11:15]) / tick)
    me = os.getpid()
    total = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
    for pid, (name, seconds) in cpu.items():
        q = pid
        while q > 1 and q != me:
            q = parents.get(q, 0)
        if q == me:
            total["driver" if pid == me else "jvm" if name == "java" else "workers"] += seconds
    return total


#: name -> [(records/s, records per CPU-s)] over the rounds.
RESULTS: dict[str, list[tuple[float, float]]] = {}


#: Substrings of the run names to measure (``--only``); empty: every run. Warm-ups always run.
ONLY: list[str] = []


def measure(name: str, records: int, run: Callable[[], object]) -> float:
    if ONLY and "warm-up" not in name and not any(part in name for part in ONLY):
        return 0.0
    c0, t0 = cpu_by_process(), time.perf_counter()
    run()
    wall = time.perf_counter() - t0
    c1 = cpu_by_process()
    parts = {k: max(0.0, c1[k] - c0[k]) for k in c0}  # a worker that exited takes its CPU with it
    cpu = sum(parts.values())
    RESULTS.setdefault(name, []).append((records / wall, records / cpu))
    split = ", ".join(f"{k} {v:.1f}" for k, v in parts.items())
    print(
        f"{name:44s} {records / wall:>9,.0f} records/s {records / cpu:>9,.0f} records/CPU-s  "
        f"({wall:.1f} s wall, {cpu:.1f} CPU-s: {split})",
        flush=True,
    )
    return records / cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--skew", type=float, default=1.0, help="1: uniform random keys; 2, 3: ever more skewed")
    ap.add_argument("--masters", default="local[1],local[2]")
    ap.add_argument("--key-groups", type=int, default=4, help="key groups of the key-parallel runs")
    ap.add_argument("--split", type=int, default=2, help="tasks per partition of the key-split runs")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument(
        "--by-partition",
        action="store_true",
        help="the export's row groups by partition: each task reads only its partition's (as from Kafka)",
    )
    ap.add_argument("--quick", action="store_true", help="only the whole backfills (no read-only/noop runs)")
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated substrings of the run names to measure (e.g. 'to JSON lines' ), the others are left out",
    )
    args = ap.parse_args()
    ONLY.extend(part for part in args.only.split(",") if part)
    configure_gc()
    tmp = Path(tempfile.mkdtemp(prefix="bench-backfill-"))
    (tmp / "ticks.es").write_text(PROGRAM)
    topo = parse_topology(
        {
            "programs": [
                {
                    "name": "ticks",
                    "source": str(tmp / "ticks.es"),
                    "inputs": [{"topic": "ticks-in", "event": "Tick"}],
                    "outputs": {"default": "ticks-out"},
                    "errors": "ticks-err",
                    "clock": "record",
                }
            ],
            "topics": {"ticks-in": {"partitions": args.partitions}},
        }
    )
    export = tmp / "export.parquet"
    make_export(export, args.records, args.keys, args.partitions, topo.programs[0], args.skew, args.by_partition)
    plan = export_plan(topo, topo.programs[0], [str(export)])
    keyed = dataclasses.replace(plan, key_groups=args.key_groups)
    split = dataclasses.replace(plan, split=args.split)
    two_slots = dataclasses.replace(plan, split_each=auto_split(plan, 2))
    n = args.records
    print(
        f"{n:,} records, {args.keys:,} keys (skew {args.skew}), {args.partitions} partitions"
        f"{' (row groups by partition)' if args.by_partition else ''}, "
        f"{args.key_groups} key groups in key-parallel runs, {args.split} tasks per partition in key-split runs; "
        f"{args.rounds} round(s); load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    for _ in range(args.rounds):
        measure("single process: task stage only", n, lambda: sum(1 for _ in run_locally(plan)))
        measure("single process: to JSON lines", n, lambda: write_file(run_locally(plan), tmp / "one.jsonl"))
        measure(
            "single process: key-parallel stages",
            n,
            lambda: sum(1 for _ in key_parallel_locally(keyed, lambda i: slice_batches(keyed, keyed.slices[i]))),
        )
        measure(
            f"single process: key-split, {args.split} per partition, to JSON lines",
            n,
            lambda: write_file(run_locally(split), tmp / "one.jsonl"),
        )
        measure(
            f"single process: key-split as on 2 slots {two_slots.split_each}, to JSON lines",
            n,
            lambda: write_file(run_locally(two_slots), tmp / "one.jsonl"),
        )
        for master in args.masters.split(","):
            bench_master(master, plan, keyed, split, n, tmp, args.quick)
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    summary()


def write_file(rows: Iterable[OutputRow], path: Path) -> None:
    with FileSink(path) as sink:
        sink.write_all(rows)
        sink.commit()


def bench_master(master: str, plan: Plan, keyed: Plan, split: Plan, n: int, tmp: Path, quick: bool) -> None:
    spark = spark_session(master, ui=False)
    slots = spark.sparkContext.defaultParallelism
    command = dataclasses.replace(plan, split_each=auto_split(plan, slots))  # what `backfill` runs by default
    spark.sparkContext.setLogLevel("ERROR")
    # Both kinds of Python worker: the data source's and mapInArrow's (the first run of each pays for them).
    measure(
        f"{master}: warm-up (JVM, Python workers)",
        n,
        lambda: (output_frame(spark, plan).count(), output_frame(spark, command, fused=True).count()),
    )
    if not quick:
        measure(
            f"{master}: data source read only",
            n,
            lambda: (
                spark.read.format("eventscript_backfill")
                .option("plan", plan.to_json())
                .load()
                .write.format("noop")
                .mode("overwrite")
                .save()
            ),
        )
        measure(
            f"{master}: tasks, outputs not collected",
            n,
            lambda: output_frame(spark, plan).write.format("noop").mode("overwrite").save(),
        )

    def full(p: Plan, fused: bool = False, fmt: str = "jsonl") -> None:
        totals = Totals()
        with FileSink(tmp / f"out.{fmt}") as sink:
            sink.write_all(outputs(spark, p, totals, fused=fused))
            check_totals(totals, p)  # no record on a partition its key does not belong to
            sink.commit()

    print(
        f"{master}: {slots} slots: the command runs {command.reads} task(s), per partition "
        f"{[command.splits_of(i) for i in range(len(command.slices))]}",
        flush=True,
    )
    measure(f"{master}: the command (auto split), to JSON lines", n, lambda: full(command, fused=True))
    measure(f"{master}: partition mode, to JSON lines, mapInArrow", n, lambda: full(plan))
    measure(f"{master}: partition mode, to JSON lines", n, lambda: full(plan, fused=True))
    measure(f"{master}: partition mode, to Parquet", n, lambda: full(plan, fused=True, fmt="parquet"))
    measure(f"{master}: key-split, {split.split} per partition, to JSON lines", n, lambda: full(split, fused=True))
    measure(f"{master}: key-parallel, {keyed.key_groups} groups, to JSON lines", n, lambda: full(keyed, fused=True))
    spark.stop()


def summary() -> None:
    base = statistics.median(c for _, c in RESULTS.get("single process: to JSON lines", [(0.0, 1.0)]))
    print(f"\nmedians; CPU per record relative to the single process writing JSON lines ({base:,.0f} records/CPU-s)")
    print("| run | records/s | records/CPU-s | CPU-s per million records | CPU per record |")
    for name, runs in RESULTS.items():
        if "warm-up" in name:
            continue
        rate = statistics.median(r for r, _ in runs)
        per_cpu = statistics.median(c for _, c in runs)
        print(
            f"| {name} | {rate / 1000:,.0f} k | {per_cpu / 1000:,.0f} k | {1e6 / per_cpu:.1f} | {base / per_cpu:.2f}x |"
        )
    masters = sorted({name.split(":")[0] for name in RESULTS if name.startswith("local[")})
    if len(masters) == 2:
        first, second = masters
        print(f"\n{second} versus {first}, records/s (medians; per round in brackets):")
        for name in RESULTS:
            if name.startswith(first + ":") and "warm-up" not in name:
                other = second + name[len(first) :]
                if other in RESULTS:
                    ratio = statistics.median(r for r, _ in RESULTS[other]) / statistics.median(
                        r for r, _ in RESULTS[name]
                    )
                    rounds = ", ".join(f"{b[0] / a[0]:.2f}" for a, b in zip(RESULTS[name], RESULTS[other]))
                    print(f"  {name[len(first) + 2 :]:48s} {ratio:.2f}x  [{rounds}]")


if __name__ == "__main__":
    main()
