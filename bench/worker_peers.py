"""The worker beside its peers, each contender in its own process on the same broker (issue 26).

A per-key counter emitting one record per input, ``{"k": key, "n": count}``, over a backlog
pre-loaded on one input topic (records keyed by plain strings, each on its key's partition; keys
uniformly random or Zipf-distributed, s = 1.1). Contenders:

- ``loop``: a plain confluent-kafka loop keeping the counts in a dict (no durability), committing
  offsets asynchronously after each poll: what a hand-written Python service costs;
- ``loop-durable``, ``loop-durable-bare``: the same loop doing by hand, at its simplest, the
  durable work the worker does at least once (each commit writes every changed count to a
  changelog topic and to RocksDB, flushes, then commits the offsets), its records with the
  worker's headers or none: what the worker's guarantees cost any Python service, apart from
  what EventScript's own path costs;
- ``es-alo``, ``es-eos``: ``eventscript run``'s TopologyRunner on the counter program, at least
  once and exactly once (RocksDB state with its changelog);
- ``quix-alo``, ``quix-eos``: Quix Streams (a stateful ``apply`` with RocksDB state and its
  changelog), run by the Python of its own virtual environment under bench/.cache/ (made by
  ``--setup-quix``; never a project dependency). Skipped, with a note, when that is missing.

Each contender is a child process that sets itself up (imports, clients, the runner's topics),
says it is ready and waits; the parent then releases it, samples its CPU time (all threads, from
/proc) every 50 ms and counts its output as a read_committed reader sees it. It is done when the
output holds one record per input and its CPU has been flat (no 0.2 s with over 30% of a core)
for a second; its end is the later of the last output and the last busy sample (so it
includes what a contender does after its last output: changelog and store writes, commits).
Joining the consumer group takes seconds on Tansu (about a session timeout, whatever the
contender) and next to no CPU, so the rate is over the time from the start of the stretch of
work that made the first output (after the last half second under 10% of a core) to the end;
the time from the release is printed beside it, and CPU-seconds run from the release.
After the end the output must hold exactly one record per input. Printed per run: records/s,
records per CPU-second of the contender, the broker's CPU over the window from the release, the
time to the first output, the peak RSS (VmHWM), and the RSS at the release (set up: imports, clients,
program, stores; before the first record) and at the first output.

With ``--threads``, each run's CPU by thread as well: the busiest Python thread (the program's),
the other Python threads, librdkafka's ``rdk:main`` and broker threads, RocksDB's.

Rounds interleave the contenders (in an order that rotates) over the same backlog, each with its
own consumer group and output topic.

Usage:
  python bench/worker_peers.py --setup-quix                        # once: bench/.cache/quix-venv
  python bench/worker_peers.py [--records N] [--keys 1000,100000] [--orders random,zipf]
                               [--partitions P] [--rounds R] [--contenders loop,loop-durable,es-alo,...]
                               [--timeline] [--threads] [--idle SECONDS]
                               [--contenders es-alo,es-alo+producer.compression.type=none,...]
                               [--against OTHER/service --contenders loop,es-alo,es-alo@before,...]
The issue's sizes: --records 200000 --partitions 3. The broker: $KAFKA_BOOTSTRAP_SERVERS, or the
embedded Tansu broker, started and stopped by the bench; $BENCH_BROKER_PID, the process whose CPU
is printed as the broker's (with the embedded broker, its own).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CACHE = BENCH / ".cache"
QUIX_VENV = CACHE / "quix-venv"
QUIX_PYTHON = QUIX_VENV / "bin" / "python"
CONTENDERS = ("loop", "loop-durable", "loop-durable-bare", "es-alo", "es-eos", "quix-alo", "quix-eos")
#: With ``--against DIR`` (another checkout's ``service`` folder: the tree before a change), the
#: EventScript contenders from there too, named with this suffix: before and after race in one run.
AGAINST = "@before"
#: A contender's client settings ride on its name, each after a ``+``: ``producer.NAME=VALUE`` and
#: ``consumer.NAME=VALUE`` (librdkafka settings: the worker's through its topology's
#: ``kafka.producer`` / ``kafka.consumer``, the loops' and Quix's over their own), and
#: ``commit_interval_ms=N`` (the worker's program setting; the durable loop's commit interval).
#: So ``es-alo,es-alo+producer.compression.type=none`` races today's worker against one setting.
SETTING = "+"
sys.path.insert(0, str(BENCH))
from key_draw import drawn_keys  # noqa: E402

#: A contender's CPU is flat when no sample of FLAT_SECONDS was busy (see BUSY_SHARE).
FLAT_SECONDS = 1.0
SAMPLE_SECONDS = 0.05
#: Over this share of a core over BUSY_WINDOW samples, a contender is working.
BUSY_SHARE = 0.3
#: Under this share of a core for QUIET_SECONDS, a contender is not working (joining its group).
QUIET_SHARE = 0.1
QUIET_SECONDS = 0.5
#: Samples a busy share is measured over (the kernel counts CPU time in 10 ms ticks: one 50 ms
#: sample of an idle process can hold two).
BUSY_WINDOW = 4
#: Client settings every contender gets (the worker's own defaults, kafka/clients.py, where they
#: matter here): Tansu holds a fetch for its whole wait even when data arrives, so keep it short.
CONSUMER = {
    "auto.offset.reset": "earliest",
    "fetch.wait.max.ms": 100,
    "session.timeout.ms": 10_000,
    "heartbeat.interval.ms": 2_000,
}
#: The loops' and Quix's producer: librdkafka's own linger (5 ms), what a plain service gets; the
#: worker's is longer (kafka/clients.py ``LINGER_MS``): race ``loop+producer.linger.ms=20`` to compare.
PRODUCER = {"linger.ms": 5, "enable.idempotence": True, "acks": "all"}

#: The EventScript contender's program: one counter per key, emitting the key and its count.
COUNTER = """
in {string k; double v; long sent;} Reading group(Reading.k)
out {string k; long n;} Count
{ n = 0; }
( Reading(r) { n = n + 1; !>Count({k: r.k, n: n}); } )*
"""


def contender_settings(who: str) -> tuple[str, dict]:
    """A contender's kind (``es-alo``, ``loop``, ...) and the settings its name carries (see
    :data:`SETTING`): ``{"producer": {...}, "consumer": {...}}`` and ``commit_interval_ms`` when
    given. A value of digits is an int. Raises ValueError naming what is wrong."""
    kind, *given = who.split(SETTING)
    settings: dict = {"producer": {}, "consumer": {}}
    for item in given:
        key, eq, value = item.partition("=")
        client, dot, name = key.partition(".")
        if not eq or not value:
            raise ValueError(f"{who}: {item!r} is not NAME=VALUE")
        if key == "commit_interval_ms" and value.isdigit():
            settings["commit_interval_ms"] = int(value)
        elif client in ("producer", "consumer") and dot and name:
            settings[client][name] = int(value) if value.isdigit() else value
        else:
            raise ValueError(f"{who}: {key!r} is not producer.NAME, consumer.NAME or commit_interval_ms=N")
    return kind, settings


def setup_quix() -> None:
    """Make bench/.cache/quix-venv with Quix Streams in it (the bench's peer, not a project
    dependency); the cache folder ignores itself in git."""
    CACHE.mkdir(exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")
    subprocess.run([sys.executable, "-m", "venv", str(QUIX_VENV)], check=True)
    subprocess.run([str(QUIX_PYTHON), "-m", "pip", "install", "--quiet", "quixstreams"], check=True)
    version = subprocess.run(
        [str(QUIX_PYTHON), "-c", "import quixstreams; print(quixstreams.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"Quix Streams {version} in {QUIX_VENV}")


# -- the children: each sets up, prints "ready", waits for a line on stdin, runs until SIGTERM ---


def wait_for_release() -> None:
    print("ready", flush=True)
    sys.stdin.readline()


def consumer_settings(bootstrap: str, group: str, given: dict) -> dict:
    """A loop's consumer: the bench's settings, then the contender's own."""
    own = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    return {**own, **CONSUMER, **given["consumer"]}


def child_loop(bootstrap: str, topic: str, out: str, group: str, settings: str = "{}") -> None:
    """The plain loop: consume, parse, count in a dict, serialize, produce; commit after each poll.
    ``settings``: the contender's (JSON, :func:`contender_settings`) over the bench's clients'."""
    import orjson
    from confluent_kafka import Consumer, KafkaException, Producer

    given = json.loads(settings)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    c = Consumer(consumer_settings(bootstrap, group, given))
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER, **given["producer"]})
    counts: dict[bytes, int] = {}
    wait_for_release()
    c.subscribe([topic])
    produce, loads, dumps, get = p.produce, orjson.loads, orjson.dumps, counts.get
    while not stop:
        msgs = c.consume(1000, 0.2)
        for m in msgs:
            if m.error() is not None:
                continue
            key = m.key()
            n = counts[key] = get(key, 0) + 1
            rec = loads(m.value())
            while True:
                try:
                    produce(out, key=key, value=dumps({"k": rec["k"], "n": n}))
                    break
                except BufferError:
                    p.poll(0.05)
        p.poll(0)
        if msgs:
            try:
                c.commit(asynchronous=True)
            except KafkaException:
                pass
    p.flush(30)
    c.close()


#: The durable loop's commit: every second (the worker's at-least-once interval), or sooner once
#: this many records were produced since the last (the worker's ``MAX_OUTBOX``).
DURABLE_INTERVAL_S = 1.0
DURABLE_MAX_PRODUCED = 20_000


def child_loop_durable(
    bootstrap: str, topic: str, out: str, group: str, state: str, headers: str, settings: str = "{}"
) -> None:
    """The plain loop doing by hand, at its simplest, the durable work the worker does at least
    once: the counts in a dict, and at each commit (every second, or every 20,000 records
    produced) every count changed since the last written once to a changelog topic (on its
    input's partition) and to RocksDB (one WriteBatch: one entry a key, the count with the key's
    last record in front of it, as the worker keeps it), then the producer flushed and the offsets
    committed.
    With ``headers`` "worker" its records carry what the worker's carry (outputs: ``es-event``,
    ``es-program``, ``es-id``; changelog records: the batch's ``es-pos`` and the key's information
    in the value ahead of the count, as ``state.changelog.batch_frame`` and
    ``state.keyinfo.framed_value`` write them), with "none" none. Why:
    the loop keeps nothing, so its ratio to the worker mixes what the worker's durability costs
    with what its Python costs; this contender tells them apart (what any Python service with
    the same guarantees pays, before EventScript's own work). ``settings``: the contender's (JSON,
    :func:`contender_settings`): client settings over the bench's, and the commit interval."""
    import msgpack
    import orjson
    from confluent_kafka import Consumer, KafkaException, Producer
    from rocksdict import Options, Rdict, WriteBatch

    given = json.loads(settings)
    interval = given.get("commit_interval_ms", DURABLE_INTERVAL_S * 1000) / 1000
    changelog = f"{group}-changelog"
    consumer = Consumer(consumer_settings(bootstrap, group, given))
    partitions = len(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
    create_topics(bootstrap, [changelog], partitions)
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER, **given["producer"]})
    Path(state).mkdir(parents=True, exist_ok=True)
    db = Rdict(str(Path(state) / "counts"), options=Options(raw_mode=True))
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    counts: dict[bytes, int] = {}
    changed: dict[bytes, tuple[int, int, int]] = {}  # key → its last record's (partition, offset, time)
    positions: dict[int, int] = {}
    with_headers = headers == "worker"
    event_h, program_h, head = ("es-event", b"Count"), ("es-program", b"counter"), f"counter/{topic}:".encode()
    info_head = b'{"l":["%s",' % topic.encode()
    wait_for_release()
    consumer.subscribe([topic])
    produce, loads, dumps, packb, get = p.produce, orjson.loads, orjson.dumps, msgpack.packb, counts.get

    def send(*args: object) -> None:
        while True:
            try:
                produce(*args)
                return
            except BufferError:
                p.poll(0.05)

    def commit() -> None:
        pos = orjson.dumps({f"{topic}:{q}": off for q, off in positions.items()})
        wb = WriteBatch(raw_mode=True)
        for key, (q, offset, ts) in changed.items():
            value = packb(counts[key])
            framed = b"\xc1" + info_head + b"%d,%d,%d]}\x00" % (q, offset, ts) + value
            if with_headers:  # (the worker's form: the position and the information in the value)
                send(changelog, b"\xc2" + pos + b"\x00\x00" + framed, key, q, None, None, 0, None)
            else:
                send(changelog, value, key, q, None, None, 0, None)
            wb.put(key, framed)  # (the worker's store: one entry, the changelog's value)
        changed.clear()
        p.flush(30)  # at least once: the changelog and outputs delivered before the offsets
        db.write(wb)
        try:
            consumer.commit(asynchronous=False)
        except KafkaException:
            pass

    last_commit, produced = time.monotonic(), 0
    while not stop:
        msgs = consumer.consume(2000, 0.1)
        for m in msgs:
            if m.error() is not None:
                continue
            key, q, offset = m.key(), m.partition(), m.offset()
            n = counts[key] = get(key, 0) + 1
            changed[key] = (q, offset, m.timestamp()[1])
            positions[q] = offset + 1
            rec = loads(m.value())
            h = [event_h, program_h, ("es-id", head + b"%d:%d/1" % (q, offset))] if with_headers else None
            send(out, dumps({"k": rec["k"], "n": n}), key, -1, None, None, 0, h)
        produced += len(msgs)
        p.poll(0)
        if changed and (time.monotonic() - last_commit >= interval or produced >= DURABLE_MAX_PRODUCED):
            commit()
            last_commit, produced = time.monotonic(), 0
    if changed:
        commit()
    p.flush(30)
    consumer.close()
    db.close()


def child_eventscript(
    bootstrap: str,
    topic: str,
    out: str,
    group: str,
    guarantee: str,
    state: str,
    service: str = "",
    settings: str = "{}",
) -> None:
    """``eventscript run`` in this process: the TopologyRunner on COUNTER, from this checkout's
    ``service`` folder or the one given (``--against``). ``settings``: the contender's (JSON,
    :func:`contender_settings`), through the topology's ``kafka.producer`` / ``kafka.consumer`` and
    the program's ``commit_interval_ms``."""
    import threading

    sys.path.insert(0, service or str(ROOT / "service"))
    from eventscript.kafka.config import parse_topology
    from eventscript.kafka.supervisor import TopologyRunner

    given = json.loads(settings)
    source = Path(state) / "counter.es"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(COUNTER)
    topo = parse_topology(
        {
            "application": group,
            "kafka": {
                "bootstrap_servers": bootstrap,
                "consumer": {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1500, **given["consumer"]},
                "producer": given["producer"],
            },
            "programs": [
                {
                    "name": "counter",
                    "source": str(source),
                    "guarantee": guarantee,
                    "clock": "wall",
                    "inputs": [{"topic": topic, "event": "Reading"}],
                    "outputs": {"default": out},
                    **({"commit_interval_ms": given["commit_interval_ms"]} if "commit_interval_ms" in given else {}),
                }
            ],
            "state_dir": str(Path(state) / "state"),
        }
    )
    runner = TopologyRunner(topo)
    runner.prepare()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    wait_for_release()
    t = threading.Thread(target=runner.run, kwargs={"install_signals": False}, daemon=True)
    t.start()
    stop.wait()
    runner.stop()
    t.join(60)


QUIX_CHILD = """
import json
import sys
from quixstreams import Application

bootstrap, topic, out, group, guarantee, state = sys.argv[1:7]
consumer, producer = json.loads(sys.argv[7]), json.loads(sys.argv[8])
app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest",
                  processing_guarantee=guarantee, state_dir=state, loglevel="WARNING",
                  consumer_extra_config=consumer, producer_extra_config=producer)
src = app.topic(topic, key_deserializer="str", value_deserializer="json")
dst = app.topic(out, key_serializer="str", value_serializer="json")
# Tansu's topic configurations have no retention.ms, which Quix reads to derive its changelog's.
src.broker_config.extra_config.setdefault("retention.ms", "-1")


def count(value, state):
    n = state.get("n", 0) + 1
    state.set("n", n)
    return {"k": value["k"], "n": n}


app.dataframe(src).apply(count, stateful=True).to_topic(dst)
print("ready", flush=True)
sys.stdin.readline()
app.run()  # stops on SIGTERM
"""


# -- the parent -------------------------------------------------------------------------------


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_of(pid: int) -> dict[tuple[int, str], float]:
    """CPU seconds of each live thread of the process, by (thread id, name). Python 3.11 names
    none of its threads (each is ``python``, or the script's name); librdkafka names its own
    ``rdk:main`` (a client's main thread: its queues, timers, the transaction coordinator's state
    machine), ``rdk:broker<id>`` (one per broker a client talks to, ``-1`` for the bootstrap
    connection: fetching, batching, compressing, sending) and ``rdk:bg`` (background events)."""
    got: dict[tuple[int, str], float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        got[(int(task.name), name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return got


def thread_kind(name: str) -> str:
    """A thread's kind by its name: librdkafka's, RocksDB's (flushes, compactions), or Python's."""
    return "librdkafka" if name.startswith("rdk:") else "rocksdb" if name.startswith("rocksdb:") else "python"


def thread_split(before: dict[tuple[int, str], float], after: dict[tuple[int, str], float]) -> dict[str, float]:
    """The CPU a run used (``after`` less ``before``) split as ``--threads`` prints it: the busiest
    Python thread (the program's: the worker runs each program on a thread of its own, the loops on
    the main thread), the other Python threads, librdkafka's by role (``rdk:main``, the broker
    threads, the rest) and RocksDB's. A thread that ended before ``after`` is not counted (the
    whole-process figure still has it)."""
    used = {k: v - before.get(k, 0.0) for k, v in after.items()}
    python = sorted((v for (_tid, name), v in used.items() if thread_kind(name) == "python"), reverse=True)
    split = {"python-top": python[0] if python else 0.0, "python-rest": sum(python[1:])}
    for (_tid, name), v in used.items():
        if thread_kind(name) == "librdkafka":
            role = "rdk:main" if name == "rdk:main" else "rdk:broker" if name.startswith("rdk:broker") else "rdk:other"
            split[role] = split.get(role, 0.0) + v
        elif thread_kind(name) == "rocksdb":
            split["rocksdb"] = split.get("rocksdb", 0.0) + v
    return split


def peak_rss_mib(pid: int, field: str = "VmHWM") -> float:
    """The process's peak RSS in MiB (``VmHWM``), or its RSS now with ``field="VmRSS"``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Broker:
    """$KAFKA_BOOTSTRAP_SERVERS, or an embedded Tansu broker this bench starts and stops. The
    broker's CPU is read from its process: the embedded one's, or $BENCH_BROKER_PID's (a broker of
    one's own on this machine: fewer, larger requests show there too)."""

    def __init__(self) -> None:
        self.embedded = None
        self.bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "")
        self.pid: int | None = int(os.environ["BENCH_BROKER_PID"]) if os.environ.get("BENCH_BROKER_PID") else None

    def __enter__(self) -> Broker:
        if not self.bootstrap:
            sys.path.insert(0, str(ROOT / "service"))
            from eventscript.kafka.broker import EmbeddedBroker

            self.embedded = EmbeddedBroker().start()
            self.bootstrap = self.embedded.bootstrap
            self.pid = self.embedded.proc.pid if self.embedded.proc is not None else None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.embedded is not None:
            self.embedded.stop()

    def cpu(self) -> float:
        return proc_cpu(self.pid) if self.pid is not None else 0.0


def create_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, partitions, 1) for t in topics]).values():
        f.result()


def preload(bootstrap: str, topic: str, n: int, partitions: int, keys: int, order: str, seed: int = 1) -> None:
    """n records {"k", "v", "sent"} over ``keys`` keys, uniformly random or Zipf (ranks shuffled
    over the keys), each on its key's partition (the Java client's murmur2, as producers do)."""
    import orjson
    from confluent_kafka import Producer

    sys.path.insert(0, str(ROOT / "service"))
    from eventscript.kafka.clients import producer_config
    from eventscript.kafka.config import KafkaConfig
    from eventscript.kafka.partitioner import partition_of

    drawn = drawn_keys(n, keys, order, seed)
    parts = {name: partition_of(name.encode(), partitions) for name in set(drawn)}
    p = Producer(producer_config(KafkaConfig(bootstrap_servers=bootstrap)))
    for i, name in enumerate(drawn):
        while True:
            try:
                p.produce(
                    topic,
                    key=name.encode(),
                    value=orjson.dumps({"k": name, "v": i * 0.5, "sent": 0}),
                    partition=parts[name],
                )
                break
            except BufferError:
                p.poll(0.05)
    p.flush(120)


class OutputCounter:
    """Counts the records of an output topic as a read_committed reader sees them, as they come
    (the watermarks will not do: Tansu's count batches, and transaction markers take offsets)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"count-{time.time_ns()}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 50,
            }
        )
        self.consumer.assign([TopicPartition(topic, q, OFFSET_BEGINNING) for q in range(partitions)])
        self.count = 0

    def poll(self) -> int:
        while True:
            got = self.consumer.consume(10_000, 0)
            self.count += sum(1 for m in got if m.error() is None)
            if len(got) < 10_000:
                return self.count

    def close(self) -> None:
        self.consumer.close()


def spawn(who: str, broker: Broker, topic: str, out: str, group: str, tmp: str, against: str = "") -> subprocess.Popen:
    state = str(Path(tmp) / group)
    kind, given = contender_settings(who)
    settings = json.dumps(given)
    child = [sys.executable, __file__, "--child"]
    if kind == "loop":
        args = [*child, "loop", broker.bootstrap, topic, out, group, settings]
    elif kind.startswith("loop-durable"):
        headers = "none" if kind.endswith("-bare") else "worker"
        args = [*child, "loop-durable", broker.bootstrap, topic, out, group, state, headers, settings]
    elif kind.startswith("es-"):
        guarantee = "at_least_once" if kind.startswith("es-alo") else "exactly_once"
        service = against if kind.endswith(AGAINST) else ""
        args = [*child, "eventscript", broker.bootstrap, topic, out, group, guarantee, state, service, settings]
    else:
        guarantee = "at-least-once" if kind == "quix-alo" else "exactly-once"
        consumer = {k: v for k, v in CONSUMER.items() if k != "auto.offset.reset"}
        args = [
            str(QUIX_PYTHON),
            "-c",
            QUIX_CHILD,
            broker.bootstrap,
            topic,
            out,
            group,
            guarantee,
            state,
            json.dumps({**consumer, **given["consumer"]}),
            json.dumps({**PRODUCER, **given["producer"]}),
        ]
    return start_child(who, args, group, tmp)


def start_child(who: str, args: list[str], group: str, tmp: str) -> subprocess.Popen:
    """Start a contender's process (``args``), its stderr in ``tmp``/``group``.log, and wait for
    its "ready" (set up, not released yet)."""
    log = open(Path(tmp) / f"{group}.log", "wb")  # noqa: SIM115 - the child's stderr, closed with it
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline() if proc.stdout is not None else ""
    if line.strip() != "ready":
        proc.kill()
        raise SystemExit(f"{who}: the contender did not start (see {log.name})")
    return proc


def group_name(who: str) -> str:
    """A contender's name as a group and topic name (Kafka's: letters, digits, ``._-``), short: one
    with settings is cut and told apart by a hash of the whole."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", who)
    return name if len(name) <= 48 else f"{name[:36]}-{zlib.crc32(who.encode()):08x}"


def race(
    who: str,
    broker: Broker,
    topic: str,
    n: int,
    partitions: int,
    tmp: str,
    timeline: bool = False,
    against: str = "",
    starter: Callable[..., subprocess.Popen] | None = None,
    idle: float = 0.0,
) -> dict:
    """Release one contender on the backlog; its wall, CPU, broker CPU, first output, peak RSS.
    ``starter``: what starts it, called as ``spawn`` is (default: ``spawn``; other benches race
    contenders of their own so, bench/worker_markers.py). ``idle``: seconds to watch it after its
    work, its CPU by thread then ("idle_split", "idle_cpu"): what an idle worker costs (its
    consumers' fetches, the restore reader, heartbeats, the commit loop)."""
    group = f"{group_name(who)}-{time.time_ns() % 10**9}"
    out = f"{group}-out"
    create_topics(broker.bootstrap, [out], partitions)
    proc = (starter or spawn)(who, broker, topic, out, group, tmp, against)
    counter = OutputCounter(broker.bootstrap, out, partitions)
    try:
        cpu0, broker0, each0 = proc_cpu(proc.pid), broker.cpu(), threads_of(proc.pid)
        rss_release = peak_rss_mib(proc.pid, "VmRSS")  # set up: imports, clients, program, stores
        rss_first = float("nan")
        t0 = time.perf_counter()
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        last_cpu, last_busy, first_out, last_out = cpu0, t0, None, None
        samples: list[tuple[float, float, int]] = []  # (s from release, CPU seconds used in it, outputs seen)
        rss_samples: list[float] = []  # (with ``timeline``: the RSS at each sample, MiB)
        window: collections.deque[tuple[float, float]] = collections.deque([(t0, cpu0)], maxlen=BUSY_WINDOW + 1)
        while True:
            time.sleep(SAMPLE_SECONDS)
            now = time.perf_counter()
            if proc.poll() is not None:
                raise SystemExit(f"{who}: the contender exited with status {proc.returncode} (see {tmp}/{group}.log)")
            cpu = proc_cpu(proc.pid)
            window.append((now, cpu))
            then, cpu_then = window[0]
            if cpu - cpu_then > BUSY_SHARE * (now - then):  # busy over the last BUSY_WINDOW samples
                last_busy = now
            seen = counter.poll()
            samples.append((now - t0, cpu - last_cpu, seen))
            if timeline:
                rss_samples.append(peak_rss_mib(proc.pid, "VmRSS"))
            last_cpu = cpu
            if first_out is None and seen > 0:
                first_out = now - t0
                rss_first = peak_rss_mib(proc.pid, "VmRSS")
            if last_out is None and seen >= n:
                last_out = now
            if last_out is not None and now - last_busy >= FLAT_SECONDS:
                break
            if now - t0 > 900:
                raise SystemExit(f"{who}: {seen:,} of {n:,} outputs after 900 s (see {tmp}/{group}.log)")
        wall = max(last_busy, last_out) - t0
        assert first_out is not None
        start = work_start(samples, first_out)
        used, broker_used = proc_cpu(proc.pid) - cpu0, broker.cpu() - broker0
        each = threads_of(proc.pid)
        threads: dict[str, float] = collections.defaultdict(float)
        for k, v in each.items():
            threads[thread_kind(k[1])] += v - each0.get(k, 0.0)
        rss = peak_rss_mib(proc.pid)
        time.sleep(1.0)
        if counter.poll() != n:
            raise SystemExit(f"{who}: {counter.count:,} output records for {n:,} inputs")
        idle_split, idle_cpu = {}, 0.0
        if idle > 0:
            before, cpu_before = threads_of(proc.pid), proc_cpu(proc.pid)
            time.sleep(idle)
            idle_split, idle_cpu = thread_split(before, threads_of(proc.pid)), proc_cpu(proc.pid) - cpu_before
        if timeline:
            print_timeline(who, samples, rss_samples)
        return {
            "wall": wall,
            "steady": wall - start,
            "setup_cpu": sum(used for t, used, _ in samples if t <= start),
            "cpu": used,
            "broker": broker_used,
            "first": first_out,
            "rss": rss,
            "rss_release": rss_release,
            "rss_first": rss_first,
            "threads": threads,
            "split": thread_split(each0, each),
            "idle_split": idle_split,
            "idle_cpu": idle_cpu,
        }
    finally:
        counter.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def work_start(samples: list[tuple[float, float, int]], first_out: float) -> float:
    """When the stretch of work that made the first output began (seconds from the release): the
    first sample with CPU time after the last quiet half second (under QUIET_SHARE of a core)
    before the first output. Joining the group is quiet but for a tick now and then; working,
    even waiting on a transaction between batches, is not."""
    span = round(QUIET_SECONDS / SAMPLE_SECONDS)
    start, quiet_end, used_in_span = 0.0, -1, 0.0
    for i, (t, used, _seen) in enumerate(samples):
        if t > first_out + SAMPLE_SECONDS:
            break
        used_in_span += used - (samples[i - span][1] if i >= span else 0.0)
        if i + 1 >= span and used_in_span < QUIET_SHARE * QUIET_SECONDS:
            quiet_end = i
    for t, used, _seen in samples[quiet_end + 1 :]:
        if used > 0:
            start = t - SAMPLE_SECONDS
            break
    return start


def print_split(split: dict[str, float], records: int) -> None:
    """One run's CPU by thread (``thread_split``): seconds, and µs a record."""
    order = ("python-top", "python-rest", "rdk:main", "rdk:broker", "rdk:other", "rocksdb")
    parts = [f"{k} {split[k]:.2f} s {split[k] * 1e6 / records:.1f} µs" for k in order if k in split]
    print("      threads: " + ", ".join(parts), flush=True)


def print_timeline(who: str, samples: list[tuple[float, float, int]], rss: list[float] | None = None) -> None:
    """The contender's CPU (cores) and its outputs so far, per 0.2 s from the release, and its RSS
    (MiB) at the end of each 0.2 s where ``rss`` has one per sample."""
    print(f"  {who} timeline (s from release: cores busy, outputs seen{', RSS MiB' if rss else ''}):")
    line = []
    for i in range(0, len(samples), 4):
        chunk = samples[i : i + 4]
        cores = sum(c for _, c, _ in chunk) / (len(chunk) * SAMPLE_SECONDS)
        mib = f" {rss[i + len(chunk) - 1]:4.0f}" if rss else ""
        line.append(f"{chunk[0][0]:5.1f}: {cores:3.1f} {chunk[-1][2]:>7,d}{mib}")
        if len(line) == 6:
            print("    " + " | ".join(line))
            line = []
    if line:
        print("    " + " | ".join(line))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--keys", default="1000,100000", help="key counts, comma-separated")
    ap.add_argument("--orders", default="random,zipf", help="key orders: random (uniform), zipf (s = 1.1)")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--contenders", default=",".join(CONTENDERS))
    ap.add_argument("--timeline", action="store_true", help="print each run's CPU, outputs and RSS per 0.2 s")
    ap.add_argument(
        "--idle",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="after each run, watch the contender idle this long and print its CPU by thread (% of a core)",
    )
    ap.add_argument(
        "--threads",
        action="store_true",
        help="print each run's CPU by thread: the busiest Python thread, the other Python threads, "
        "librdkafka's rdk:main, broker and other threads, RocksDB's (seconds, and µs a record)",
    )
    ap.add_argument(
        "--against",
        default="",
        help=f"another tree's service folder: contenders es-alo{AGAINST}, es-eos{AGAINST} run it (before a change)",
    )
    ap.add_argument("--setup-quix", action="store_true", help="make bench/.cache/quix-venv and exit")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, *rest = args.child
        {"loop": child_loop, "loop-durable": child_loop_durable, "eventscript": child_eventscript}[kind](*rest)
        return
    if args.setup_quix:
        setup_quix()
        return
    whos = [w for w in args.contenders.split(",") if w]
    known = CONTENDERS + ((f"es-alo{AGAINST}", f"es-eos{AGAINST}") if args.against else ())
    for w in whos:
        try:
            kind, _ = contender_settings(w)
        except ValueError as exc:
            ap.error(f"--contenders {exc}")
        if kind not in known:
            ap.error(
                f"--contenders {w}: {kind} is not one of {', '.join(known)} (the {AGAINST} ones with --against),"
                f" each followed by settings if any ({SETTING}producer.NAME=VALUE, {SETTING}consumer.NAME=VALUE,"
                f" {SETTING}commit_interval_ms=N)"
            )
    if args.against and not (Path(args.against) / "eventscript").is_dir():
        ap.error(f"--against {args.against}: no eventscript package there (give a checkout's service folder)")
    if any(w.startswith("quix") for w in whos) and not QUIX_PYTHON.exists():
        print(f"(no {QUIX_VENV}: Quix Streams skipped; run `python bench/worker_peers.py --setup-quix` first)")
        whos = [w for w in whos if not w.startswith("quix")]
    tmp = tempfile.mkdtemp(prefix="es-peers-")
    with Broker() as broker:
        print(
            f"counter per key, each contender its own process on {'Tansu' if broker.embedded else broker.bootstrap}"
            f", {args.partitions} partitions, {args.records:,} records; load average "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; logs in {tmp}"
        )
        for keys in (int(k) for k in args.keys.split(",")):
            for order in args.orders.split(","):
                topic = f"peers-in-{keys}-{order}-{time.time_ns() % 10**8}"
                create_topics(broker.bootstrap, [topic], args.partitions)
                preload(broker.bootstrap, topic, args.records, args.partitions, keys, order)
                print(f"{keys:,} keys, {order} order")
                loop_rate = loop_cpu_rate = None
                for r in range(args.rounds):
                    for who in whos[r % len(whos) :] + whos[: r % len(whos)]:
                        got = race(
                            who,
                            broker,
                            topic,
                            args.records,
                            args.partitions,
                            tmp,
                            args.timeline,
                            args.against,
                            idle=args.idle,
                        )
                        rate, cpu_rate = args.records / got["steady"], args.records / got["cpu"]
                        if who == "loop":
                            loop_rate, loop_cpu_rate = rate, cpu_rate
                        share = f" ({rate / loop_rate:.2f}x loop)" if loop_rate and who != "loop" else ""
                        cpu_share = f" ({cpu_rate / loop_cpu_rate:.2f}x)" if loop_cpu_rate and who != "loop" else ""
                        threads = got["threads"]
                        print(
                            f"  round {r + 1} {who:16s} {rate:9,.0f} records/s{share:14s} "
                            f"{cpu_rate:9,.0f} records/CPU-s{cpu_share:8s}  wall {got['steady']:6.1f} s "
                            f"(from release {got['wall']:5.1f} s)  "
                            f"cpu {got['cpu']:5.2f} s (python {threads.get('python', 0.0):.2f}, "
                            f"librdkafka {threads.get('librdkafka', 0.0):.2f}, "
                            f"rocksdb {threads.get('rocksdb', 0.0):.2f}; "
                            f"{got['setup_cpu']:.2f} before its work)  broker cpu {got['broker']:5.2f} s  "
                            f"first output {got['first']:5.2f} s  peak RSS {got['rss']:5.0f} MiB "
                            f"(at release {got['rss_release']:.0f}, at first output {got['rss_first']:.0f})",
                            flush=True,
                        )
                        if args.threads:
                            print_split(got["split"], args.records)
                        if args.idle:
                            cores = {k: v / args.idle for k, v in got["idle_split"].items()}
                            print(
                                f"      idle {args.idle:.0f} s: {got['idle_cpu'] / args.idle * 100:.1f}% of a core; "
                                + ", ".join(f"{k} {v * 100:.1f}%" for k, v in cores.items()),
                                flush=True,
                            )
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
