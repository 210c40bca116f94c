"""End-to-end throughput and latency of one worker (issue: the Kafka worker).

In one run, on one broker (the embedded Tansu broker, or $KAFKA_BOOTSTRAP_SERVERS):

- ceiling: a plain confluent-kafka loop that consumes the input topic, parses each JSON value,
  re-serializes it and produces it to an output topic, committing offsets as it goes — what any
  Python consume→produce service costs, with no EventScript in it;
- worker, at-least-once and exactly-once: ``eventscript run`` (in-process) over the same
  pre-loaded records, for each program of ``--program``: ``echo``, grouped by key, which keeps no
  state between records (its instance retires after each one), and ``count``, a counter per key
  that emits the same record on every record (one changelog record per changed key per commit);
- restore (``--restore N``, alone): a changelog of N instances of a counter program (real
  snapshots), and a worker without a local store restoring them (``eventscript_restore_seconds``);
- latency: records produced at a steady rate with their send time in the value; a read_committed
  reader measures send → output arrival (p50, p99), for both guarantees.

Records are keyed by plain strings (as producers write them) in random order, for each key count
of ``--keys``; the ceiling and the two workers run interleaved, ``--rounds`` times over the same
records. Each line gives records/s (wall clock, from the first record processed to the last) and
records per CPU-second of this process (all its threads: the loop or the worker), with the CPU
seconds of this process and of the broker's process over the same window.

Under each worker line, the CPU time of the worker's thread per record, by part: processing
(decode, engine, outputs), changelog records (snapshots and their produce calls, at commit),
store writes (after commit), and the rest (consuming, committing, the loop). Each worker line
also says how many commits it made and the share of its wall time spent in
them (``eventscript_commit_seconds``); ``--commit-intervals`` adds exactly-once runs with other
commit intervals, to weigh latency against the cost of commits.

Usage: python bench/worker.py [--records N] [--keys 1000,100000] [--rounds R] [--partitions P] [--rate R]
                              [--program echo,count] [--commit-intervals 500,1000] [--skew 1.0]
                              [--latency-seconds S]
       python bench/worker.py --restore 1000000 [--partitions P]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "service"))

import orjson  # noqa: E402
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from eventscript.kafka import clients  # noqa: E402
from eventscript.kafka.config import KafkaConfig, parse_topology  # noqa: E402
from eventscript.kafka.partitioner import partition_of  # noqa: E402
from eventscript.kafka.supervisor import TopologyRunner  # noqa: E402

PROGRAM = """
in {string k; double v; long sent;} Reading group(Reading.k)
out {string k; double v; long sent;} Echo
( Reading(r) { !>Echo(r); } )*
"""
#: A counter per key emitting what the echo program emits: state that changes with every record.
COUNT = """
in {string k; double v; long sent;} Reading group(Reading.k)
out {string k; double v; long sent;} Echo
{ n = 0; }
( Reading(r) { n = n + 1; !>Echo({k: r.k, v: r.v, sent: r.sent}); } )*
"""
PROGRAMS = {"echo": PROGRAM, "count": COUNT}
KEYS = 1000
EXTRA: dict = {}
#: The restore's program: one counter per key (a snapshot of ~30 bytes).
COUNTER = """
in {string k; double v; long sent;} Reading group(Reading.k)
out {string k; long n;} Count
{ n = 0; }
( Reading(r) { n = n + 1; !>Count({k: r.k, n: n}); } )*
"""


def create(bootstrap: str, topics: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, partitions, 1) for t in topics]).values():
        f.result()
    time.sleep(0.5)


def preload(
    kafka: KafkaConfig, topic: str, n: int, partitions: int, keys: int, seed: int = 1, skew: float = 0.0
) -> None:
    """n records over ``keys`` plain-string keys in random order, each on its key's partition:
    uniform, or with ``skew`` > 0 Zipf-like (the key of rank r drawn with weight 1 / r**skew)."""
    import random

    rnd = random.Random(seed)
    if skew > 0:
        cum = list(itertools.accumulate(1 / (r + 1) ** skew for r in range(keys)))
        drawn = rnd.choices(range(keys), cum_weights=cum, k=n)
    else:
        drawn = [rnd.randrange(keys) for _ in range(n)]
    p = Producer(clients.producer_config(kafka))
    for i, key in enumerate(drawn):
        name = f"k{key}"
        k = name.encode()
        p.produce(
            topic,
            key=k,
            value=orjson.dumps({"k": name, "v": i * 0.5, "sent": 0}),
            partition=partition_of(k, partitions),
        )
        if i % 10_000 == 0:
            p.poll(0)
    p.flush(60)


class Parts:
    """CPU seconds of the worker's thread in the parts of its loop (``time.thread_time`` around
    them; each is called once per batch or commit, so the measuring costs nothing that shows)."""

    def __init__(self) -> None:
        self.cpu: collections.Counter[str] = collections.Counter()

    def wrap(self, owner: type, attr: str, part: str) -> None:
        fn = getattr(owner, attr)

        def timed(*args: object, **kwargs: object) -> object:
            t = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu[part] += time.thread_time() - t

        setattr(owner, attr, timed)

    def instrument(self) -> None:
        from eventscript.kafka.state import TaskStore
        from eventscript.kafka.task import Task
        from eventscript.kafka.worker import ProgramWorker

        self.wrap(ProgramWorker, "_iterate", "loop")
        self.wrap(Task, "process", "processing")
        self.wrap(Task, "changelog_records", "changelog records")  # snapshots, keys, produce calls
        self.wrap(TaskStore, "write", "store writes")  # after each commit

    def line(self, before: dict[str, float], n: int) -> str:
        order = ("loop", "processing", "changelog records", "store writes")
        used = {k: (self.cpu[k] - before.get(k, 0.0)) / n * 1e6 for k in order}
        loop = used.pop("loop")
        rest = loop - sum(used.values())
        parts = ", ".join(f"{k} {v:.1f}" for k, v in used.items())
        return f"    worker thread: {loop:.1f} µs CPU/record ({parts}, the rest {rest:.1f})"


PARTS = Parts()


class Window:
    """Wall time and CPU time (this process, and the broker's) between start() and stop()."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid
        self.wall = self.cpu = self.broker_cpu = 0.0
        self.parts = ""  # the worker thread's CPU by part (Parts.line)
        self._t0 = self._c0 = self._b0 = 0.0

    def _broker(self) -> float:
        if self.broker_pid is None:
            return 0.0
        fields = Path(f"/proc/{self.broker_pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def start(self) -> None:
        self._t0, self._c0, self._b0 = time.perf_counter(), time.process_time(), self._broker()

    def stop(self) -> None:
        self.wall = time.perf_counter() - self._t0
        self.cpu = time.process_time() - self._c0
        self.broker_cpu = self._broker() - self._b0

    def line(self, what: str, n: int, ref: float | None = None) -> str:
        rate = n / self.wall
        share = f" ({rate / ref:4.0%} of the loop)" if ref else ""
        return (
            f"  {what:27s} {rate:9,.0f} records/s{share}; {n / self.cpu:9,.0f} records/CPU-s "
            f"(process {self.cpu:5.1f} s, broker {self.broker_cpu:5.1f} s, wall {self.wall:5.1f} s)"
        )


def ceiling(kafka: KafkaConfig, src: str, dst: str, n: int, window: Window) -> float:
    """A plain consume → parse → serialize → produce loop with offset commits: the reference."""
    c = Consumer(clients.consumer_config(kafka, f"ceiling-{time.time_ns()}", **{"enable.auto.offset.store": True}))
    p = Producer(clients.producer_config(kafka))
    c.subscribe([src])
    done = 0
    start = None
    while done < n:
        msgs = c.consume(2000, 0.5)
        for m in msgs:
            if m.error() is not None:
                continue
            if start is None:
                start = time.perf_counter()
                window.start()
            obj = orjson.loads(m.value())
            while True:
                try:
                    p.produce(dst, key=m.key(), value=orjson.dumps(obj), timestamp=m.timestamp()[1])
                    break
                except BufferError:
                    p.poll(0.05)
            done += 1
        p.poll(0)
        if msgs:
            c.commit(asynchronous=True)
    p.flush(60)
    try:
        c.commit(asynchronous=False)
    except KafkaException:  # nothing new since the last asynchronous commit
        pass
    window.stop()
    c.close()
    assert start is not None
    return n / window.wall


def topology_doc(kafka: KafkaConfig, name: str, src: str, dst: str, guarantee: str, state: str, source: Path) -> dict:
    return {
        "application": name,
        "kafka": {
            "bootstrap_servers": kafka.bootstrap_servers,
            "consumer": {"session.timeout.ms": 3000, "heartbeat.interval.ms": 750, **EXTRA},
        },
        "programs": [
            {
                "name": name,
                "source": str(source),
                "guarantee": guarantee,
                "clock": "wall",
                "inputs": [{"topic": src, "event": "Reading"}],
                "outputs": {"default": dst},
            }
        ],
        "state_dir": state,
    }


def commit_stats(runner: TopologyRunner, name: str) -> tuple[int, float]:
    """Commits made and the seconds spent in them (eventscript_commit_seconds)."""
    count = total = 0.0
    for family in runner.metrics.registry.collect():
        for s in family.samples:
            if s.labels.get("program") == name and s.name == "eventscript_commit_seconds_count":
                count = s.value
            elif s.labels.get("program") == name and s.name == "eventscript_commit_seconds_sum":
                total = s.value
    return int(count), total


def worker_throughput(
    kafka: KafkaConfig,
    src: str,
    guarantee: str,
    n: int,
    source: Path,
    tmp: str,
    window: Window,
    program: dict | None = None,
) -> tuple[float, int, float]:
    """Records/s of the worker over ``n`` pre-loaded records; and its commits and their seconds."""
    name = f"bench-{guarantee}-{time.time_ns() % 10**8}"
    doc = topology_doc(kafka, name, src, f"{name}-out", guarantee, f"{tmp}/{name}", source)
    doc["programs"][0].update(program or {})
    topo = parse_topology(doc)
    runner = TopologyRunner(topo)
    runner.prepare()
    t = threading.Thread(target=runner.run, kwargs={"install_signals": False}, daemon=True)
    t.start()
    counter = runner.metrics.records
    start = None
    parts: dict[str, float] = {}
    while True:
        processed = counter.labels(name, "processed")._value.get()
        if processed > 0 and start is None:
            start = time.perf_counter()
            window.start()
            parts = dict(PARTS.cpu)
        if processed >= n:
            break
        time.sleep(0.01)
    window.stop()
    window.parts = PARTS.line(parts, n)
    commits = commit_stats(runner, name)
    runner.stop()
    t.join(60)
    return n / window.wall, *commits


def write_changelog(kafka: KafkaConfig, topic: str, instances: int, partitions: int, program_text: str) -> None:
    """The changelog a worker would have written for ``instances`` keys of the counter program:
    real snapshots (from the engine, 10,000 keys at a time), each on its key's partition, with
    the ``es-pos`` header of a batch at committed offset 0 (so the restore applies them all)."""
    from eventscript.automata.compile import compile_source
    from eventscript.engine.engine import Engine
    from eventscript.kafka.state import position_header

    program = compile_source(program_text, name="restore").require()
    engine = Engine(program)
    p = Producer(clients.producer_config(kafka))
    headers = {q: [("es-pos", position_header({f"in:{q}": 0}))] for q in range(partitions)}
    for start in range(0, instances, 10_000):
        for i in range(start, min(instances, start + 10_000)):
            engine.feed_json("Reading", {"k": f"k{i}", "v": 1.0, "sent": 0})
        for ctx in engine.contexts.values():
            name = ctx.key[0]
            q = partition_of(name.encode(), partitions)
            while True:
                try:
                    p.produce(topic, engine.snapshot(ctx), orjson.dumps([name]), q, headers=headers[q])
                    break
                except BufferError:
                    p.poll(0.1)
        engine.clear()
        p.poll(0)
    p.flush(120)


def restore_time(kafka: KafkaConfig, instances: int, partitions: int, tmp: str, window: Window) -> float:
    """Seconds a worker without a local store takes to restore ``instances`` instances from the
    changelog (``eventscript_restore_seconds``: from the assignment to the tasks restored)."""
    name = f"restore-{time.time_ns() % 10**8}"
    source = Path(tmp) / "counter.es"
    source.write_text(COUNTER)
    src = f"{name}-in"
    create(kafka.bootstrap_servers, [src], partitions)
    topo = parse_topology(topology_doc(kafka, name, src, f"{name}-out", "exactly_once", f"{tmp}/{name}", source))
    runner = TopologyRunner(topo)
    runner.prepare()  # creates the changelog topic
    write_changelog(kafka, topo.changelog_topic(topo.programs[0]), instances, partitions, COUNTER)
    window.start()
    t = threading.Thread(target=runner.run, kwargs={"install_signals": False}, daemon=True)
    t.start()

    def observed(what: str) -> float:
        return sum(
            s.value
            for family in runner.metrics.registry.collect()
            for s in family.samples
            if s.name == f"eventscript_restore_seconds_{what}" and s.labels.get("program") == name
        )

    # Not runner.ready(): a worker whose first assignment is empty is ready before it has tasks.
    while not observed("count") or not runner.ready():
        time.sleep(0.01)
    window.stop()
    seconds = observed("sum")
    runner.stop()
    t.join(60)
    return seconds


def latency(
    kafka: KafkaConfig, partitions: int, guarantee: str, rate: float, seconds: float, source: Path, tmp: str
) -> tuple[float, float, int]:
    name = f"lat-{guarantee}-{time.time_ns() % 10**8}"
    src, dst = f"{name}-in", f"{name}-out"
    create(kafka.bootstrap_servers, [src], partitions)
    topo = parse_topology(topology_doc(kafka, name, src, dst, guarantee, f"{tmp}/{name}", source))
    runner = TopologyRunner(topo)
    runner.prepare()
    t = threading.Thread(target=runner.run, kwargs={"install_signals": False}, daemon=True)
    t.start()
    while not runner.ready():
        time.sleep(0.05)
    reader = Consumer(clients.consumer_config(kafka, f"reader-{name}", **{"fetch.wait.max.ms": 10}))
    reader.assign([TopicPartition(dst, p, OFFSET_BEGINNING) for p in range(partitions)])
    lat: list[float] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            for m in reader.consume(1000, 0.1):
                if m.error() is None:
                    lat.append(time.time() * 1000 - orjson.loads(m.value())["sent"])

    rt = threading.Thread(target=read, daemon=True)
    rt.start()
    p = Producer(clients.producer_config(kafka, **{"linger.ms": 0}))
    keys = [f"k{i}".encode() for i in range(KEYS)]
    total = int(rate * seconds)
    begin = time.perf_counter()
    for i in range(total):
        k = keys[i % KEYS]
        p.produce(
            src,
            key=k,
            value=orjson.dumps({"k": f"k{i % KEYS}", "v": 1.0, "sent": int(time.time() * 1000)}),
            partition=partition_of(k, partitions),
        )
        p.poll(0)
        behind = begin + (i + 1) / rate - time.perf_counter()
        if behind > 0:
            time.sleep(behind)
    p.flush(30)
    deadline = time.monotonic() + 30
    while len(lat) < total and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    rt.join(5)
    reader.close()
    runner.stop()
    t.join(60)
    lat.sort()
    if not lat:
        return float("nan"), float("nan"), 0
    return statistics.median(lat), lat[min(len(lat) - 1, int(len(lat) * 0.99))], len(lat)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--rate", type=float, default=2000.0, help="records/s for the latency runs")
    ap.add_argument("--latency-seconds", type=float, default=10.0)
    ap.add_argument("--keys", default="1000,100000", help="key counts, comma-separated")
    ap.add_argument(
        "--program", default="echo", help=f"programs run by the workers, comma-separated: {', '.join(PROGRAMS)}"
    )
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skew", type=float, default=0.0, help="Zipf exponent of the key order (0: uniform)")
    ap.add_argument(
        "--restore",
        type=int,
        default=0,
        help="only measure a restore of this many instances from the changelog (no local store)",
    )
    ap.add_argument(
        "--commit-intervals", default="", help="also run exactly-once with these commit intervals (ms, comma-separated)"
    )
    args = ap.parse_args()
    PARTS.instrument()
    broker = None
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not bootstrap:
        from eventscript.kafka.broker import EmbeddedBroker

        broker = EmbeddedBroker().start()
        bootstrap = broker.bootstrap
    try:
        kafka = KafkaConfig(bootstrap_servers=bootstrap)
        tmp = tempfile.mkdtemp(prefix="es-bench-")
        source = Path(tmp) / "echo.es"
        source.write_text(PROGRAM)
        sources = {}
        for name in args.program.split(","):
            if name not in PROGRAMS:
                ap.error(f"--program {name}: not one of {', '.join(PROGRAMS)}")
            sources[name] = Path(tmp) / f"{name}.es"
            sources[name].write_text(PROGRAMS[name])
        pid = broker.proc.pid if broker is not None and broker.proc is not None else None
        if args.restore:
            w = Window(pid)
            seconds = restore_time(kafka, args.restore, args.partitions, tmp, w)
            print(
                f"restore of {args.restore:,} instances from the changelog, no local store: {seconds:.1f} s "
                f"({args.restore / seconds:,.0f} instances/s); from start to ready {w.wall:.1f} s, "
                f"process CPU {w.cpu:.1f} s, broker CPU {w.broker_cpu:.1f} s"
            )
            return
        for keys in (int(k) for k in args.keys.split(",")):
            src = f"bench-in-{time.time_ns() % 10**8}"
            create(bootstrap, [src], args.partitions)
            preload(kafka, src, args.records, args.partitions, keys, skew=args.skew)
            order = f"Zipf-skewed (s = {args.skew})" if args.skew > 0 else "uniform"
            print(
                f"{args.records:,} records, {keys:,} keys in random {order} order, on {args.partitions} partitions "
                f"({'Tansu' if broker else bootstrap})"
            )
            for rnd in range(args.rounds):
                print(f" round {rnd + 1}")
                w = Window(pid)
                out = f"{src}-ceiling-{rnd}"
                create(bootstrap, [out], args.partitions)
                top = ceiling(kafka, src, out, args.records, w)
                print(w.line("plain consume→produce loop", args.records))
                runs = [("at_least_once", None), ("exactly_once", None)]
                runs += [("exactly_once", int(ms)) for ms in args.commit_intervals.split(",") if ms]
                for (name, path), (g, interval) in itertools.product(sources.items(), runs):
                    w = Window(pid)
                    program = {"commit_interval_ms": interval} if interval else {}
                    _, commits, seconds = worker_throughput(kafka, src, g, args.records, path, tmp, w, program)
                    what = f"{name}, {g}" + (f" {interval} ms" if interval else "")
                    print(
                        f"{w.line(what, args.records, top)}; {commits} commits, {seconds / w.wall:4.0%} of the "
                        f"wall time in them"
                    )
                    print(w.parts)
        for g in ("at_least_once", "exactly_once") if args.latency_seconds > 0 else ():
            p50, p99, n = latency(kafka, args.partitions, g, args.rate, args.latency_seconds, source, tmp)
            print(
                f"latency {g:14s} at {args.rate:,.0f} records/s: p50 {p50:6.1f} ms, p99 {p99:6.1f} ms ({n:,} records)"
            )
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
