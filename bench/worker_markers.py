"""What progress markers cost the whole worker (issue 21): a downstream program's worker on an
intermediate topic three upstream tasks wrote, with markers and without, each run its own
process on one broker, released on a pre-loaded backlog and timed until its CPU goes flat after
its last output (``bench/worker_peers.py``'s race: commits, changelog and store writes inside).

``bench/event_time.py`` measures the markers against one task in process, engine and merge
alone: a share of that leaves out what every record also costs a worker — the fetch, the output's
produce, the changelog, the store, the commits — so it overstates the share a user sees. This
bench measures the share of the worker's own records per CPU-second.

The topic ``mid`` (``--partitions``, default 3) holds what the program ``up`` (never run here:
it names the writers, ``up/0`` .. ``up/2``) would have written: ``--records`` records of the
event ``Hit {k}``, ``--per-ms`` a ms of record time (default 1), keys drawn uniformly or by a Zipf law among
``--keys``, each on its key's partition, with the headers a program's outputs carry. They land as
the writers' commits land them (``event_time.landing``): each key is written by the writer of its
partition (a grouped ``up`` on as many tasks as partitions writes its task's partition only), each
writer commits every ``--commit-ms`` of record time, the three out of phase, and each batch lands
whole followed by its writer's markers on every partition. Two copies of that topic are loaded:
with the markers, and without (what the writers write with ``event_time_markers: false``).

Contenders, each the TopologyRunner running only the program ``down`` (a counter per key on
record time, emitting one record per input):

- ``today-alo``, ``today-eos``:     ``event_time_markers: false``: the merge takes what is fetched;
- ``markers-alo``, ``markers-eos``: ``event_time_markers: true``: each task waits on the three
                                    writers' progress and takes their records in record-time order.

Printed per run: records per second and per CPU-second of the worker's process (all threads),
its Python threads' CPU, and the markers' share of records per CPU-second against today's of the
same guarantee in the same round. Rounds rotate the order of the contenders.

Usage: python bench/worker_markers.py [--records N] [--keys 100000] [--orders random,zipf]
       [--commit-ms 100] [--per-ms 1] [--rounds R] [--contenders today-alo,markers-alo,today-eos,markers-eos]
       [--emit key|field|rekey]
The broker: $KAFKA_BOOTSTRAP_SERVERS, or the embedded Tansu broker, started and stopped here.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
import worker_peers as peers  # noqa: E402
from event_time import landing  # noqa: E402
from key_draw import drawn_keys  # noqa: E402

#: The first record's time (ms): an hour ago, so that a broker's retention keeps the records.
T0 = (int(time.time()) - 3600) * 1000

CONTENDERS = ("today-alo", "markers-alo", "today-eos", "markers-eos")

#: The upstream program: never run, it names the writers of ``mid`` (one task per partition).
#: ``--emit key`` has it write its group key where ``down`` groups (``!>Hit({k: group[0]})``),
#: ``--emit field`` the field of the event it groups by (``{k: r.k}``): ``down``'s records are
#: then on their key's task, which the worker proves from the two texts (``topology/keyed.py``),
#: and re-publishes nothing. ``--emit rekey`` has ``up`` group by another field (``j``) and emit
#: ``{k: r.k}``, a stage that re-keys: ``down``'s tasks then re-publish each other's records ahead
#: (``Task.forward_ahead``) and wait on each other's repartition markers. (The records loaded are
#: the same in all three: each on its ``k``'s partition, so none moves; only the work differs.)
UP = """
in {string k; string j;} Reading group(Reading.GROUP)
out {string k;} Hit
( Reading(r) { !>Hit({k: EMIT}); } )*
"""
#: --emit → (what up groups by, what it writes in k)
EMITS = {"key": ("k", "group[0]"), "field": ("k", "r.k"), "rekey": ("j", "r.k")}
#: The downstream program this bench runs: one counter per key, emitting its count per record.
DOWN = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""


def topology(
    bootstrap: str,
    group: str,
    mid: str,
    out: str,
    guarantee: str,
    markers: bool,
    state: Path,
    partitions: int,
    emit: str = "key",
) -> dict:
    """The two programs' topology (``up`` → ``mid`` → ``down`` → ``out``), as a dict."""
    state.mkdir(parents=True, exist_ok=True)
    group_by, written = EMITS[emit]
    (state / "up.es").write_text(UP.replace("GROUP", group_by).replace("EMIT", written))
    (state / "down.es").write_text(DOWN)
    return {
        "application": group,
        "event_time_markers": markers,
        "kafka": {
            "bootstrap_servers": bootstrap,
            "consumer": {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1500},
        },
        "programs": [
            {
                "name": "up",
                "source": str(state / "up.es"),
                "clock": "record",
                "guarantee": guarantee,
                "inputs": [{"topic": f"{group}-src", "event": "Reading"}],
                "outputs": {"default": mid},
            },
            {
                "name": "down",
                "source": str(state / "down.es"),
                "clock": "record",
                "guarantee": guarantee,
                "inputs": [{"topic": mid, "event": "Hit"}],
                "outputs": {"default": out},
            },
        ],
        # (the writers' count: ``up`` has a task per partition of its input, which is not created)
        "topics": {f"{group}-src": {"partitions": partitions, "external": True, "events": ["Reading"]}},
        "state_dir": str(state / "state"),
    }


def use_tree() -> None:
    """Import ``eventscript`` from this bench's tree, unless ``$PYTHONPATH`` names one: a
    comparison of two trees runs one bench with ``PYTHONPATH=<other tree>/service``, and its
    children (which inherit the environment) must import that tree too."""
    if not os.environ.get("PYTHONPATH"):
        sys.path.insert(0, str(ROOT / "service"))


def profiled_run(path: str) -> Callable[[], None]:
    """Run every ``ProgramWorker.run`` of this process under cProfile (wall clock, as
    ``bench/profile_hot.py`` does); returns what dumps the stats to ``path``."""
    import cProfile

    from eventscript.kafka.worker import ProgramWorker

    profiler = cProfile.Profile()
    run = ProgramWorker.run

    def profiled(self: ProgramWorker, *a: object, **kw: object) -> None:
        profiler.runcall(run, self, *a, **kw)

    ProgramWorker.run = profiled  # type: ignore[method-assign]
    return lambda: profiler.dump_stats(path)


def sampled_run(path: str) -> Callable[[], None]:
    """Sample the stacks of every ``ProgramWorker.run`` thread of this process every 0.5 ms
    from a thread of its own (the switch interval cut to let it in); returns what writes them to
    ``path``, one "count frame;frame;..." line each (outermost first). Unlike cProfile, this adds
    no cost per call, so the small functions' shares are not inflated; samples where the worker
    waits in the client's calls (their own frames are C) show as the Python caller."""
    import collections

    from eventscript.kafka.worker import ProgramWorker

    idents: set[int] = set()
    counts: collections.Counter[tuple[str, ...]] = collections.Counter()
    done = threading.Event()
    run = ProgramWorker.run

    def sampled(self: ProgramWorker, *a: object, **kw: object) -> None:
        idents.add(threading.get_ident())
        run(self, *a, **kw)

    def sample() -> None:
        while not done.is_set():
            time.sleep(0.0005)
            frames = sys._current_frames()
            for ident in idents:
                frame = frames.get(ident)
                stack = []
                while frame is not None:
                    code = frame.f_code
                    stack.append(f"{code.co_filename.rsplit('/', 2)[-1]}:{code.co_name}")
                    frame = frame.f_back
                counts[tuple(reversed(stack))] += 1

    ProgramWorker.run = sampled  # type: ignore[method-assign]
    sys.setswitchinterval(0.0002)
    threading.Thread(target=sample, daemon=True).start()

    def dump() -> None:
        done.set()
        with open(path, "w") as f:
            for stack, n in counts.most_common():
                f.write(f"{n} {';'.join(stack)}\n")

    return dump


def child(
    bootstrap: str,
    mid: str,
    out: str,
    group: str,
    guarantee: str,
    markers: str,
    state: str,
    parts: str,
    emit: str,
    profile: str = "",
) -> None:
    """The worker of ``down`` alone, in this process (``eventscript run --program down``);
    under cProfile when ``profile`` names where its stats go."""
    use_tree()
    import eventscript
    from eventscript.kafka.config import parse_topology
    from eventscript.kafka.supervisor import TopologyRunner

    print(f"eventscript from {eventscript.__file__}", file=sys.stderr, flush=True)
    kind, _, where = profile.partition(":")
    dump = (sampled_run if kind == "sample" else profiled_run)(where) if profile else None

    on = markers == "on"
    topo = parse_topology(topology(bootstrap, group, mid, out, guarantee, on, Path(state), int(parts), emit))
    runner = TopologyRunner(topo, ["down"])
    runner.prepare()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    peers.wait_for_release()
    t = threading.Thread(target=runner.run, kwargs={"install_signals": False}, daemon=True)
    t.start()
    stop.wait()
    runner.stop()
    t.join(60)
    if dump is not None:
        dump()


def preload(
    bootstrap: str,
    topic: str,
    n: int,
    partitions: int,
    keys: int,
    order: str,
    commit_ms: int,
    markers: bool,
    per_ms: int = 1,
) -> int:
    """Load ``topic`` as the writers' commits land (``event_time.landing``), with their markers
    on every partition after each batch when ``markers``; ``per_ms`` records a ms of record time
    (record i at ``T0 + i // per_ms``); returns the markers written."""
    import orjson
    from confluent_kafka import Producer

    use_tree()
    from eventscript.kafka.clients import producer_config
    from eventscript.kafka.config import KafkaConfig
    from eventscript.kafka.partitioner import partition_of
    from eventscript.task.progress import marker_headers

    drawn = drawn_keys(n, keys, order, 1)
    parts = {name: partition_of(name.encode(), partitions) for name in set(drawn)}
    p = Producer(producer_config(KafkaConfig(bootstrap_servers=bootstrap)))
    written = 0

    def send(**kw: object) -> None:
        while True:
            try:
                p.produce(topic, **kw)
                return
            except BufferError:
                p.poll(0.05)

    # Each key's writer is the upstream task of its partition: ``up`` is grouped, on as many tasks
    # as ``mid`` has partitions, and its outputs carry its instance's key, so task t writes partition
    # t only (``topology/keyed.writes_own_partition``; before 2026-11-27's sixth session the bench
    # spread each writer's keys over every partition, which no grouped ``up`` does).
    writer_of = parts.__getitem__
    for i in landing(drawn, commit_ms * per_ms, writer_of):  # (in records: record i's time is i // per_ms)
        if isinstance(i, tuple):  # a writer's marker, after its batch: (writer, progress ms)
            if markers:
                w, progress = i[0], i[1] // per_ms  # (every later record of w's is at least this)
                for q in range(partitions):
                    send(partition=q, timestamp=T0 + progress, headers=marker_headers("up", w, T0 + progress))
                    written += 1
            continue
        name = drawn[i]
        writer = writer_of(name)
        send(
            key=name.encode(),
            value=orjson.dumps({"k": name}),
            partition=parts[name],
            timestamp=T0 + i // per_ms,
            headers=[
                ("es-event", b"Hit"),
                ("es-program", b"up"),
                ("es-id", b"up/src:%d:%d/1" % (writer, i)),
                ("es-seq", b"%d" % i),
            ],
        )
    p.flush(120)
    return written


def starter(
    topics: dict[bool, str], partitions: int, emit: str, profile: tuple[str, str] | None = None
) -> Callable[..., subprocess.Popen]:
    """What starts a contender: the child above on the topic with or without markers; ``profile``
    (contender, path): that one under cProfile, its stats dumped to path."""

    def start(
        who: str, broker: peers.Broker, _topic: str, out: str, group: str, tmp: str, _against: str = ""
    ) -> subprocess.Popen:
        markers = who.startswith("markers")
        guarantee = "at_least_once" if who.endswith("alo") else "exactly_once"
        args = [
            sys.executable,
            __file__,
            "--child",
            broker.bootstrap,
            topics[markers],
            out,
            group,
            guarantee,
            "on" if markers else "off",
            str(Path(tmp) / group),
            str(partitions),
            emit,
        ]
        if profile is not None and profile[0] == who:
            args.append(profile[1])
        return peers.start_child(who, args, group, tmp)

    return start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--keys", default="100000", help="key counts, comma-separated")
    ap.add_argument("--orders", default="random,zipf", help="key orders: random (uniform), zipf (s = 1.1)")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--commit-ms", type=int, default=100, help="record time each writer's commit covers")
    ap.add_argument(
        "--per-ms",
        type=int,
        default=1,
        help="records a ms of record time (1: a stream of 1,000 records/s, a marker per 11 records; 10: per 110)",
    )
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--contenders", default=",".join(CONTENDERS))
    ap.add_argument(
        "--emit",
        choices=sorted(EMITS),
        default="key",
        help="what up writes where down groups: its group key or the event's field (down re-publishes "
        "nothing), or it groups by another field (rekey: down re-publishes ahead)",
    )
    ap.add_argument("--timeline", action="store_true", help="print each run's CPU and outputs per 0.2 s")
    ap.add_argument(
        "--profile",
        metavar="WHO:PATH",
        help="run the contender WHO's worker thread (ProgramWorker.run) under cProfile, its stats dumped to "
        "PATH (.r<round> added) for pstats or bench/profile_hot.py's report; its figures then mean nothing",
    )
    ap.add_argument(
        "--sample",
        action="store_true",
        help="with --profile: sample the worker thread's stacks instead (no cost per call), written as lines "
        "'count frame;frame;...'",
    )
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    whos = [w for w in args.contenders.split(",") if w]
    for w in whos:
        if w not in CONTENDERS:
            ap.error(f"--contenders {w}: not one of {', '.join(CONTENDERS)}")
    profiled, _, profile_path = (args.profile or "").partition(":")
    if args.profile and (profiled not in whos or not profile_path):
        ap.error(f"--profile {args.profile}: give WHO:PATH, WHO one of the contenders ({', '.join(whos)})")
    tmp = tempfile.mkdtemp(prefix="es-markers-")
    with peers.Broker() as broker:
        print(
            f"a counter per key downstream of {args.partitions} writers (each its partition's), each run its own "
            "process on "
            f"{'Tansu' if broker.embedded else broker.bootstrap}, {args.partitions} partitions, {args.records:,} "
            f"records ({args.per_ms} a ms of record time), writers' batches of {args.commit_ms} ms of record time, "
            f"up groups by {EMITS[args.emit][0]} and emits k: {EMITS[args.emit][1]}; "
            f"load average "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; logs in {tmp}",
            flush=True,
        )
        for keys in (int(k) for k in args.keys.split(",")):
            for order in args.orders.split(","):
                stamp = time.time_ns() % 10**8
                topics = {m: f"mid-{'marked' if m else 'plain'}-{keys}-{order}-{stamp}" for m in (False, True)}
                for m, t in topics.items():
                    peers.create_topics(broker.bootstrap, [t], args.partitions)
                    written = preload(
                        broker.bootstrap, t, args.records, args.partitions, keys, order, args.commit_ms, m, args.per_ms
                    )
                print(f"{keys:,} keys, {order} order ({written:,} markers among the records)", flush=True)
                for r in range(args.rounds):
                    today: dict[str, float] = {}
                    kind = "sample" if args.sample else "cprofile"
                    profile = (profiled, f"{kind}:{profile_path}.r{r + 1}") if args.profile else None
                    start = starter(topics, args.partitions, args.emit, profile)
                    rotated = whos[r % len(whos) :] + whos[: r % len(whos)]
                    results = {}
                    for who in rotated:
                        results[who] = peers.race(
                            who, broker, "", args.records, args.partitions, tmp, args.timeline, starter=start
                        )
                    for who in whos:
                        got = results[who]
                        rate, cpu_rate = args.records / got["steady"], args.records / got["cpu"]
                        guarantee = who.rsplit("-", 1)[1]
                        if who.startswith("today"):
                            today[guarantee] = cpu_rate
                        base = today.get(guarantee)
                        share = (
                            f"  markers cost {100 * (1 - cpu_rate / base):5.1f}% of records/CPU-s"
                            if base and who.startswith("markers")
                            else ""
                        )
                        print(
                            f"  round {r + 1} {who:12s} {rate:9,.0f} records/s {cpu_rate:9,.0f} records/CPU-s  "
                            f"cpu {got['cpu']:5.2f} s (python {got['threads'].get('python', 0.0):.2f})  "
                            f"wall {got['steady']:5.1f} s  peak RSS {got['rss']:4.0f} MiB{share}",
                            flush=True,
                        )
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
