"""The engine beside Flink SQL ``MATCH_RECOGNIZE`` on the same input (issue 11): per-key ``A B+ C``.

Run on demand (not in ``make test``): it needs the ``apache-flink`` package and Java 17, in a
virtual environment of its own, never the project's ``.venv``::

    python3.11 -m venv /tmp/flinkvenv && /tmp/flinkvenv/bin/pip install apache-flink
    .venv/bin/python bench/flink_match_recognize.py --flink-python /tmp/flinkvenv/bin/python

The input: ``--events`` events over ``--keys`` keys in random (or ``--order zipf``) key order,
names A 30%, B 40%, C 30% (``bench/engine.py``'s ``grouped_events``, the engine benchmark's
input). It is written once to a CSV file (sequence number, name, key) that Flink reads with its
filesystem connector; the engine gets the same events pre-built in memory, as in
``bench/engine.py``.

- engine: ``( .* A() B()+ C() { !>Z(group[0]); } )*`` grouped by key, in this process;
- Flink: ``MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts ... PATTERN (A B+ C) ...)`` with
  ``AFTER MATCH SKIP PAST LAST ROW``, parallelism 1, streaming mode, event time = the sequence
  number in milliseconds; matches go to a CSV sink and are counted. Both count one match per C
  that directly follows A B+ of its key, so the counts must agree (checked).

Rounds alternate engine and Flink. Before them the Flink job runs once on the first 1,000 events:
its time is Flink's fixed cost (planning, a local cluster, JIT warm-up), shown beside the
throughput without it. Reported per run: wall seconds, CPU seconds (the engine: this
process; Flink: the Python driver and the JVM it starts, read from /proc) and events/s. Flink's
figures are given for the job alone (from ``execute`` to its end) and for the whole child
process (JVM start-up and job submission included).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SMALL_EVENTS = 1_000

FLINK_SQL = """
CREATE TABLE events (
  seq BIGINT, name STRING, k STRING,
  ts AS TO_TIMESTAMP_LTZ(seq, 3),
  WATERMARK FOR ts AS ts
) WITH ('connector' = 'filesystem', 'path' = '{input}', 'format' = 'csv');
CREATE TABLE found (k STRING, last_seq BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '{output}', 'format' = 'csv');
INSERT INTO found
SELECT k, last_seq FROM events
MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts
  MEASURES LAST(C.seq) AS last_seq
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C)
  DEFINE A AS name = 'A', B AS name = 'B', C AS name = 'C'
)
"""


def process_tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and every live descendant, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        cpu[pid] = (int(fields[11]) + int(fields[12])) / ticks
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def flink_child(input_csv: str, output_dir: str) -> None:
    """Runs under the Flink virtual environment: one job, prints its figures as JSON."""
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    statements = [s for s in FLINK_SQL.format(input=input_csv, output=output_dir).split(";\n") if s.strip()]
    for ddl in statements[:-1]:
        env.execute_sql(ddl)
    me = os.getpid()
    wall, cpu = time.perf_counter(), process_tree_cpu(me)
    env.execute_sql(statements[-1]).wait()
    wall, cpu = time.perf_counter() - wall, process_tree_cpu(me) - cpu
    matches = 0
    for part in Path(output_dir).rglob("*"):
        if part.is_file() and not part.name.startswith("."):
            with part.open() as f:
                matches += sum(1 for line in f if line.strip())
    print(json.dumps({"job_wall": wall, "job_cpu": cpu, "matches": matches}))


def run_flink(python: str, input_csv: Path, workdir: Path, round_no: int) -> dict[str, float]:
    out = workdir / f"matches-{round_no}"
    start = time.perf_counter()
    proc = subprocess.Popen(
        [python, __file__, "--flink-child", str(input_csv), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak_cpu = 0.0
    while proc.poll() is None:  # the JVM is gone once the child exits: sample while it runs
        peak_cpu = max(peak_cpu, process_tree_cpu(proc.pid))
        time.sleep(0.2)
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"the Flink job failed ({proc.returncode}):\n{stderr[-4000:]}")
    figures = json.loads(stdout.strip().splitlines()[-1])
    figures["process_wall"] = time.perf_counter() - start
    figures["process_cpu"] = peak_cpu
    return figures


def run_engine(events: list[tuple[str, str]]) -> dict[str, float]:
    import engine as engine_bench  # bench/engine.py: the grouped program and its engine set-up

    wall, cpu, matches, _ = engine_bench.run_grouped_engine("abc", events)
    return {"wall": wall, "cpu": cpu, "matches": matches}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--order", choices=("random", "zipf"), default="random")
    ap.add_argument("--rounds", type=int, default=2, help="alternating engine / Flink rounds")
    ap.add_argument(
        "--flink-python",
        default="/tmp/flinkvenv/bin/python",
        help="python of a virtual environment with apache-flink installed",
    )
    ap.add_argument("--flink-child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.flink_child:
        flink_child(*args.flink_child)
        return
    if not Path(args.flink_python).exists():
        sys.exit(
            f"no python at {args.flink_python}: install apache-flink into a virtual environment of its "
            f"own (see this script's docstring) and pass its python with --flink-python"
        )

    sys.path.insert(0, str(HERE))
    import engine as engine_bench
    from eventscript.engine.tuning import configure_gc

    configure_gc()  # as the hosts run the engine
    events = engine_bench.grouped_events(args.events, args.keys, args.order)
    loop_matches: list[object] = []
    engine_bench.loop_abc(events, loop_matches.append)  # the hand-written peer's count, a third check
    with tempfile.TemporaryDirectory(prefix="es-flink-") as tmp:
        work = Path(tmp)
        input_csv = work / "events.csv"
        with input_csv.open("w", newline="") as f:
            w = csv.writer(f)
            for seq, (name, key) in enumerate(events):
                w.writerow((seq, name, key))
        small_csv = work / "events-small.csv"  # the same job on 1,000 events: Flink's fixed cost
        with input_csv.open() as src, small_csv.open("w") as dst:
            dst.writelines(line for _, line in zip(range(SMALL_EVENTS), src))
        load = os.getloadavg()[0]
        fixed = run_flink(args.flink_python, small_csv, work, -1)
        results: dict[str, list[dict[str, float]]] = {"engine": [], "flink": []}
        for r in range(args.rounds):
            results["engine"].append(run_engine(events))
            results["flink"].append(run_flink(args.flink_python, input_csv, work, r))
    counts = {int(x["matches"]) for rs in results.values() for x in rs} | {len(loop_matches)}
    n = args.events
    print(
        f"per-key A B+ C: {n:,} events, {args.keys:,} keys, {args.order} key order, {args.rounds} alternating "
        f"rounds; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    for x in results["engine"]:
        print(
            f"  engine (in-process, events pre-built): {int(x['matches']):,} matches, wall {x['wall']:.2f} s, "
            f"CPU {x['cpu']:.2f} s, {n / x['wall'] / 1e6:.2f} M events/s, {n / x['cpu'] / 1e6:.2f} M events/CPU-s"
        )
    for x in results["flink"]:
        print(
            f"  Flink MATCH_RECOGNIZE (parallelism 1): {int(x['matches']):,} matches, job wall {x['job_wall']:.2f} s, "
            f"job CPU {x['job_cpu']:.2f} s, {n / x['job_wall'] / 1e3:.0f} k events/s, "
            f"{n / x['job_cpu'] / 1e3:.0f} k events/CPU-s; whole process wall {x['process_wall']:.1f} s, "
            f"CPU {x['process_cpu']:.1f} s"
        )
    print(
        f"  Flink's fixed cost (the same job on the first {SMALL_EVENTS:,} events): job wall {fixed['job_wall']:.2f} "
        f"s, "
        f"job CPU {fixed['job_cpu']:.2f} s; without it: "
        + ", ".join(
            f"{(n - SMALL_EVENTS) / max(1e-9, x['job_wall'] - fixed['job_wall']) / 1e3:.0f} k events/s"
            for x in results["flink"]
        )
    )
    best_engine = min(x["wall"] for x in results["engine"])
    best_flink = min(x["job_wall"] for x in results["flink"])
    cpu_ratio = statistics.median(x["job_cpu"] for x in results["flink"]) / statistics.median(
        x["cpu"] for x in results["engine"]
    )
    print(f"  engine / Flink job, best wall each: {best_flink / best_engine:.1f}x; median CPU ratio {cpu_ratio:.1f}x")
    if len(counts) != 1:
        sys.exit(f"MATCH COUNTS DISAGREE: {sorted(counts)}")
    print(f"  match counts agree: {counts.pop():,}")


if __name__ == "__main__":
    main()
