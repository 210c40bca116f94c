"""Backfill throughput: records/s and records per CPU-second on local[1] and local[2], beside the
single-process task over the same records and the data source's read-only rate (issue 7).

    .venv/bin/python bench/backfill.py --records 1000000 --keys 10000 --partitions 3

The records are a Parquet topic export (keyed by group key, so every record is on its key's
partition). CPU time is summed over this process and all its descendants (Spark's JVM and its
Python workers), read from /proc before and after each run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

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
from eventscript.backfill.plan import Plan  # noqa: E402
from eventscript.backfill.records import input_batch  # noqa: E402
from eventscript.backfill.sink import FileSink  # noqa: E402
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


def make_export(path: Path, records: int, keys: int, partitions: int, cfg: ProgramConfig) -> None:
    """Records keyed and placed as the program's producers do (its key scheme), so none is
    on the wrong partition."""
    scheme = scheme_for(cfg, [STRING])
    offsets = [0] * partitions
    writer = pq.ParquetWriter(str(path), input_batch([]).schema)
    rows = []
    for i in range(records):
        k = f"k{(i * 7919) % keys}"
        kb = scheme.key_bytes((k,))
        p = scheme.partition(scheme.routing_bytes((k,)), partitions)
        rows.append(("ticks-in", p, offsets[p], T0 + i * 10, kb, orjson.dumps({"k": k, "n": i}), None))
        offsets[p] += 1
        if len(rows) == 100_000:
            writer.write_table(pa.Table.from_batches([input_batch(rows)]))
            rows = []
    if rows:
        writer.write_table(pa.Table.from_batches([input_batch(rows)]))
    writer.close()


def tree_cpu() -> float:
    """CPU seconds of this process and its live descendants (utime + stime, children included)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(d)] = int(fields[1])
        cpu[int(d)] = sum(int(x) for x in fields[11:15]) / tick
    me = os.getpid()
    total = 0.0
    for pid in cpu:
        q = pid
        while q > 1 and q != me:
            q = parents.get(q, 0)
        if q == me:
            total += cpu[pid]
    return total


def measure(name: str, records: int, run: Callable[[], object]) -> tuple[float, float]:
    c0, t0 = tree_cpu(), time.perf_counter()
    run()
    wall, cpu = time.perf_counter() - t0, tree_cpu() - c0
    print(f"{name:34s} {records / wall:>10,.0f} records/s  {records / cpu:>10,.0f} records/CPU-s  "
          f"({wall:.1f} s wall, {cpu:.1f} CPU-s)", flush=True)
    return records / wall, records / cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--masters", default="local[1],local[2]")
    args = ap.parse_args()
    configure_gc()
    tmp = Path(tempfile.mkdtemp(prefix="bench-backfill-"))
    (tmp / "ticks.es").write_text(PROGRAM)
    topo = parse_topology({
        "programs": [{"name": "ticks", "source": str(tmp / "ticks.es"), "inputs": [{"topic": "ticks-in", "event": "Tick"}],
                      "outputs": {"default": "ticks-out"}, "errors": "ticks-err", "clock": "record"}],
        "topics": {"ticks-in": {"partitions": args.partitions}},
    })
    export = tmp / "export.parquet"
    make_export(export, args.records, args.keys, args.partitions, topo.programs[0])
    plan = export_plan(topo, topo.programs[0], [str(export)])
    n = args.records
    print(f"{n:,} records, {args.keys:,} keys, {args.partitions} partitions")
    _, single = measure("single process (task stage, no Spark)", n, lambda: sum(1 for _ in run_locally(plan)))
    for master in args.masters.split(","):
        bench_master(master, plan, n, tmp, single)


def bench_master(master: str, plan: Plan, n: int, tmp: Path, single: float) -> None:
    spark = spark_session(master, ui=False)
    spark.sparkContext.setLogLevel("ERROR")
    measure(f"{master}: warm-up (JVM, Python workers)", n, lambda: output_frame(spark, plan).count())
    measure(f"{master}: data source read only", n, lambda: spark.read.format("eventscript_backfill")
            .option("plan", plan.to_json()).load().write.format("noop").mode("overwrite").save())
    measure(f"{master}: tasks, outputs not collected", n,
            lambda: output_frame(spark, plan).write.format("noop").mode("overwrite").save())

    measure(f"{master}: tasks fused into the source", n,
            lambda: output_frame(spark, plan, fused=True).write.format("noop").mode("overwrite").save())

    def full() -> None:
        totals = Totals()
        with FileSink(tmp / "out.jsonl") as sink:
            sink.write_all(outputs(spark, plan, totals))
            check_totals(totals, plan)  # no record on a partition its key does not belong to
            sink.commit()

    _, per_cpu = measure(f"{master}: backfill to JSON lines", n, full)
    print(f"{'':34s} CPU per record: {single / per_cpu:.2f}x the single process", flush=True)
    spark.stop()

if __name__ == "__main__":
    main()
