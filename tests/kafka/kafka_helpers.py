"""Helpers for the Kafka tests: the broker, topologies, workers, reading topics.

The broker: ``KAFKA_BOOTSTRAP_SERVERS`` when set; else a Kafka container through
testcontainers when a Docker engine answers; else Apache Kafka run from the jars
``scripts/get-kafka`` fetches (a single KRaft node, ``eventscript.brokers``); the embedded Tansu
broker only where Java or Maven is missing, and then every test that needs a real broker's
semantics skips, saying why. One broker serves the whole session; every test uses its own topic
names and consumer groups.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Broker:
    """The session's broker. ``kind``: "apache" (started here from the fetched jars), "kafka" (a
    container or ``KAFKA_BOOTSTRAP_SERVERS``) or "tansu" (the fallback, with ``why_tansu``)."""

    def __init__(
        self, bootstrap: str, kind: str, pid: int | None = None, *, cluster: Any = None, why_tansu: str = ""
    ) -> None:
        self.bootstrap = bootstrap
        self.kind = kind
        #: The broker's process, when the tests started it: fault tests stop it with SIGSTOP to
        #: make it unreachable.
        self.pid = pid
        #: The eventscript.brokers.KafkaCluster, when the tests started Apache Kafka.
        self.cluster = cluster
        self.why_tansu = why_tansu

    @property
    def real(self) -> bool:
        """Apache Kafka's semantics (Tansu 0.6 is not Kafka: see eventscript.kafka.broker)."""
        return self.kind != "tansu"

    @property
    def hides_aborted(self) -> bool:
        """Tansu 0.6 shows records of aborted transactions to read_committed readers."""
        return self.real

    def require_real(self, what: str) -> None:
        """Skips the calling test on Tansu: ``what`` needs a real broker's semantics."""
        if not self.real:
            import pytest

            pytest.skip(
                f"{what} needs Apache Kafka, and the tests run on the embedded Tansu broker because "
                f"{self.why_tansu or 'the Kafka kind is tansu'}"
            )


#: The session's broker once started (the pytest summary says which kind the tests ran on).
SESSION_BROKER: list[Broker] = []


def start_broker(keep_logs: Callable[[], bool] = lambda: False) -> Iterator[Broker]:
    """The session's broker (see the module docstring); a generator for the pytest fixture.
    The Apache Kafka node's folder and log are kept when ``keep_logs()`` says so at the end."""
    env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if env:
        yield _session(Broker(env, os.environ.get("KAFKA_BROKER_KIND", "kafka")))
        return
    if _docker_answers():
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer() as kafka:
            yield _session(Broker(kafka.get_bootstrap_server(), "kafka"))
        return
    from eventscript.brokers import KafkaCluster, KafkaNotFetched, kafka_jars

    try:
        jars = kafka_jars(fetch=True)
    except KafkaNotFetched as exc:
        from eventscript.kafka.broker import EmbeddedBroker

        with EmbeddedBroker() as b:
            yield _session(Broker(b.bootstrap, "tansu", b.proc.pid if b.proc is not None else None, why_tansu=str(exc)))
        return
    cluster = KafkaCluster(1, jars=jars).start()
    try:
        yield _session(Broker(cluster.bootstrap, "apache", cluster.nodes[0].pid, cluster=cluster))
    finally:
        keep = keep_logs()
        cluster.close(keep=keep)
        if keep:
            print(f"\nthe Kafka broker's log is kept: {cluster.nodes[0].log}", file=sys.stderr)


def _session(broker: Broker) -> Broker:
    SESSION_BROKER[:] = [broker]
    return broker


def free_port() -> int:
    from eventscript.kafka.broker import free_port as _free

    return _free()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


#: Consumer settings that keep group joins and failovers short (a test waits out a session timeout).
FAST_GROUP = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 750}


def topology(
    broker: Broker,
    tmp: Path,
    programs: list[dict[str, Any]],
    topics: dict[str, Any] | None = None,
    *,
    file: str = "topology.yaml",
    application: str | None = None,
    state: str = "state",
    consumer: dict[str, Any] | None = None,
    **extra: Any,
) -> Path:
    """Write a topology file for ``programs`` (dicts as in YAML) and return its path. Several
    workers of one application get files with the same ``application`` and their own ``state``.
    ``consumer`` replaces the tests' short-session consumer settings (``{}``: the worker's own)."""
    doc: dict[str, Any] = {
        "application": application or unique("t"),
        # Static membership on, as deployed; off only on the Tansu fallback, which mishandles
        # static members (a member that joins gets no tasks while the others lose theirs).
        "kafka": {
            "bootstrap_servers": broker.bootstrap,
            "consumer": dict(FAST_GROUP) if consumer is None else dict(consumer),
            "static_membership": broker.kind != "tansu",
        },
        "programs": programs,
        "topics": topics or {},
        "state_dir": str(tmp / state),
        **extra,
    }
    path = tmp / file
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def create_topics(broker: Broker, topics: list[Any]) -> None:
    """Creates ``topics`` (confluent_kafka ``NewTopic``s) as an operator would and waits until the
    broker's metadata lists each with its partitions: a KRaft broker answers CreateTopics before
    its metadata shows the topic, and a start checked in between finds it missing (seen loaded)."""
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    for fut in client.create_topics(topics).values():
        fut.result(30)

    def listed() -> bool:
        md = client.list_topics(timeout=10).topics
        return all(
            t.topic in md and md[t.topic].error is None and len(md[t.topic].partitions) == t.num_partitions
            for t in topics
        )

    wait_for(listed, 60, what=f"the topics {[t.topic for t in topics]} in the broker's metadata")


def stage_entry(
    name: str, reads: str, event: str, writes: str, errors: str = "errors", source: str | None = None, **settings: Any
) -> dict[str, Any]:
    """A topology's ``programs`` entry for one stage of a pipeline: program ``name`` (``source``,
    by default ``{name}.es``) reads ``event`` from topic ``reads``, writes ``writes`` and its errors
    to ``errors``. ``settings`` adds the program's other keys (``clock``, ``guarantee``...)."""
    return {
        "name": name,
        "source": source or f"{name}.es",
        **settings,
        "inputs": [{"topic": reads, "event": event}],
        "outputs": {"default": writes},
        "errors": errors,
    }


def program_entry(name: str, event: str, source: str = "p.es", **settings: Any) -> dict[str, Any]:
    """The program most Kafka tests run, as a topology's ``programs`` entry: ``source`` reads
    ``{name}-in`` as ``event``, writes ``{name}-out`` and its errors to ``{name}-err``. ``settings``
    adds the program's other keys (``clock``, ``guarantee``, ``commit_interval_ms``...)."""
    return stage_entry(name, f"{name}-in", event, f"{name}-out", f"{name}-err", source, **settings)


def program_topology(
    broker: Broker,
    tmp: Path,
    text: str,
    prefix: str,
    event: str,
    *,
    partitions: int | None = None,
    settings: dict[str, Any] | None = None,
    **extra: Any,
) -> tuple[str, Path]:
    """One program (``text``, written to ``tmp/p.es``) under a fresh name made from ``prefix``, in
    a topology file (see ``program_entry``); its input topic gets ``partitions`` when given.
    ``settings`` are the program's keys, ``extra`` the topology's (as for ``topology``). Returns
    the program's name (its topics are ``{name}-in``, ``-out`` and ``-err``) and the file."""
    name = unique(prefix)
    (tmp / "p.es").write_text(text)
    topics = {f"{name}-in": {"partitions": partitions}} if partitions is not None else None
    return name, topology(broker, tmp, [program_entry(name, event, **(settings or {}))], topics, **extra)


def worker_topologies(
    broker: Broker,
    tmp: Path,
    programs: list[dict[str, Any]],
    topics: dict[str, Any] | None,
    workers: list[str],
    **extra: Any,
) -> list[Path]:
    """The topology files of several workers of one application (``{w}.yaml``, each with its own
    state folder ``state-{w}`` and static member id ``worker-{w}``), and the topics created, so
    that workers started together find them rather than racing to create them."""
    from eventscript.kafka.admin import Admin
    from eventscript.kafka.config import load_topology

    application = unique("app")
    files = [
        topology(
            broker,
            tmp,
            programs,
            topics,
            file=f"{w}.yaml",
            application=application,
            state=f"state-{w}",
            instance_id=f"worker-{w}",
            **extra,
        )
        for w in workers
    ]
    first = load_topology(files[0])
    Admin(first).prepare(first.programs)
    return files


def stop_workers(workers: list[subprocess.Popen[bytes]], grace: float = 60.0) -> None:
    """Stops every worker still running as an operator would (SIGTERM to all, then waits), and
    kills the one that does not stop within ``grace`` seconds: a test leaves no process behind."""
    import signal

    for w in workers:
        if w.poll() is None:
            w.send_signal(signal.SIGTERM)
    for w in workers:
        try:
            w.wait(grace)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()


class RunnerThread:
    """A ``TopologyRunner`` run in a thread of the test until it is idle, for tests that wrap its
    clients (a ``ClientSupplier``) or read its workers and metrics: ``start`` returns once the
    worker holds its tasks, ``finish`` waits for it to become idle and returns its status."""

    def __init__(self, topology_path: Path, *, supplier: Any = None, until_idle: float | None = 3.0) -> None:
        from eventscript.kafka.config import load_topology
        from eventscript.kafka.supervisor import TopologyRunner

        self.runner = TopologyRunner(load_topology(topology_path), supplier=supplier)
        self.until_idle = until_idle
        self.status: list[int] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.status.append(self.runner.run(until_idle=self.until_idle, install_signals=False))

    def start(self, timeout: float = 60.0) -> RunnerThread:
        self.runner.prepare()
        self.thread.start()
        wait_for(self.runner.ready, timeout, what="the worker to join")
        return self

    def finish(self, timeout: float = 180.0) -> int:
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.runner.stop()
            self.thread.join(30)
            raise AssertionError(f"the worker did not become idle within {timeout} s")
        return self.status[0]

    def stop_when_idle(self, idle: float, timeout: float = 240.0) -> int:
        """Stop the worker once each of its programs holds every task and has been idle for
        ``idle`` seconds, and return its status: for a worker left alone after the others were
        killed, whose tasks come to it only a session timeout later (started ``until_idle=None``)."""
        deadline = time.monotonic() + timeout
        while self.thread.is_alive() and time.monotonic() < deadline:
            workers = self.runner.workers
            if all(len(w.task_manager.tasks) == w.partitions and w.idle_for() >= idle for w in workers):
                self.runner.stop()
                return self.finish(60)
            time.sleep(0.2)
        return self.finish(0)

    def faults(self) -> dict[str, float]:
        """The worker's ``eventscript_faults_total`` counters by kind."""
        return {
            s.labels["kind"]: s.value
            for fam in self.runner.metrics.registry.collect()
            for s in fam.samples
            if s.name == "eventscript_faults_total"
        }


def run_in_thread(
    topology_path: Path, until_idle: float = 2.0, names: list[str] | None = None, timeout: float = 180.0
) -> int:
    """Run a topology in this process until it is idle; returns the runner's status."""
    from eventscript.kafka.config import load_topology
    from eventscript.kafka.supervisor import TopologyRunner

    runner = TopologyRunner(load_topology(topology_path), names)
    runner.prepare()
    result: list[int] = []
    t = threading.Thread(
        target=lambda: result.append(runner.run(until_idle=until_idle, install_signals=False)), daemon=True
    )
    t.start()
    t.join(timeout)
    if t.is_alive():
        runner.stop()
        t.join(30)
        raise AssertionError(f"the topology did not become idle within {timeout} s")
    return result[0]


def serve_in_thread(topology_path: Path, health_port: int) -> tuple[Any, threading.Thread]:
    """A ``TopologyRunner`` serving /healthz, /readyz and /metrics on ``health_port``, run in a
    thread of the test until the test stops it (``runner.stop()``, then join the thread)."""
    from eventscript.kafka.config import load_topology
    from eventscript.kafka.supervisor import TopologyRunner

    runner = TopologyRunner(load_topology(topology_path), health_port=health_port)
    runner.prepare()
    thread = threading.Thread(target=runner.run, kwargs={"install_signals": False}, daemon=True)
    thread.start()
    return runner, thread


def start_worker(topology_path: Path, *args: str, log: Path | None = None) -> subprocess.Popen[bytes]:
    """``eventscript run`` in a subprocess (for tests that kill it)."""
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    return subprocess.Popen(
        [sys.executable, "-m", "eventscript.cli.main", "run", str(topology_path), *args],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def read_many(
    broker: Broker, topics: list[str], idle: float = 0.5, dedupe: bool = True, snapshot: bool = False
) -> dict[str, list[Any]]:
    """Records of several topics at once (one consumer: Tansu takes about a second to report
    the end of an empty partition, so reading topics one by one is slow).

    By default reads until every partition is at its end and nothing came for ``idle`` seconds;
    with ``snapshot``, until every partition has reached its end once (for topics still being
    written, where that quiet moment may never come)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    from eventscript.kafka import clients, codec
    from eventscript.kafka.config import KafkaConfig

    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
    consumer = Consumer(clients.consumer_config(kafka, unique("reader")))
    out: dict[str, list[Any]] = {t: [] for t in topics}
    try:
        md = consumer.list_topics(timeout=10)
        tps = [TopicPartition(t, p, OFFSET_BEGINNING) for t in topics for p in sorted(md.topics[t].partitions)]
        consumer.assign(tps)
        at_end: set[tuple[str, int]] = set()
        seen: set[bytes] = set()
        last = time.monotonic()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.2):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        at_end.add((m.topic(), m.partition()))
                    continue
                if not snapshot:
                    at_end.discard((m.topic(), m.partition()))
                last = time.monotonic()
                rid = codec.header(m.headers(), codec.HEADER_ID)
                if dedupe and rid is not None:
                    if rid in seen:
                        continue
                    seen.add(rid)
                out[m.topic()].append(m)
            if len(at_end) == len(tps) and (snapshot or time.monotonic() - last >= idle):
                return out
        raise AssertionError(f"could not read {topics} to their ends")
    finally:
        consumer.close()


def read_json_lines(broker: Broker, topic: str, idle: float = 1.5, dedupe: bool = True) -> list[dict[str, Any]]:
    from eventscript.kafka.config import KafkaConfig
    from eventscript.kafka.tools import read_topic, record_to_json

    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
    return [record_to_json(m) for m in read_topic(kafka, topic, idle=idle, dedupe=dedupe)]


def counts_by_key(broker: Broker, topic: str) -> dict[str, list[int]]:
    """A counting program's outputs on ``topic`` (values ``{"k": key, "n": count}``): each key's
    counts in the order written, so a count carried wrongly across a restart shows."""
    import orjson

    out: dict[str, list[int]] = {}
    for m in read_many(broker, [topic])[topic]:
        v = orjson.loads(m.value())
        out.setdefault(v["k"], []).append(v["n"])
    return out


def read_records(broker: Broker, topic: str, idle: float = 1.5, dedupe: bool = False) -> list[Any]:
    from eventscript.kafka.config import KafkaConfig
    from eventscript.kafka.tools import read_topic

    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
    return list(read_topic(kafka, topic, idle=idle, dedupe=dedupe))


def ready(port: int) -> bool:
    """Whether a worker started with ``--health-port port`` answers /readyz with 200 (it holds
    its tasks, restored, and its last commit succeeded)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False  # not ready (503), or not listening yet


def endpoint_json(port: int, path: str, token: str | None = None, timeout: float = 10.0) -> tuple[int, Any]:
    """A worker's health-port endpoint ``path`` (``/state/<program>?key=...``): the status and the
    JSON body, an error's too (a bearer ``token`` when given). Raises OSError when nothing
    answers (the worker not listening yet)."""
    import urllib.error
    import urllib.request

    import orjson

    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {token}"} if token else {}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, orjson.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read())


def wait_for(predicate: Any, timeout: float = 60.0, interval: float = 0.2, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def tasks_held(log: Path) -> set[int]:
    """The tasks a worker holds by its log (``-v``): its "assigned tasks [...]" lines add tasks,
    "revoked tasks [...]" and "assignment lost: [...]" take them away. Empty while it has no log."""
    import re

    held: set[int] = set()
    text = log.read_text(errors="replace") if log.exists() else ""
    for kind, parts in re.findall(r": (assigned tasks|revoked tasks|assignment lost:) \[([\d, ]*)\]", text):
        tasks = {int(p) for p in parts.split(",") if p.strip()}
        held = held | tasks if kind == "assigned tasks" else held - tasks
    return held


def told(exc: AssertionError, *logs: Path, tail: int = 4000) -> AssertionError:
    """``exc`` with the last ``tail`` characters of each worker's log after its message: a test
    whose workers run in subprocesses raises this on a failed check or wait (``except
    AssertionError as exc: raise told(exc, log) from exc``), so that a failure seen once in a
    whole run tells what the workers were doing (a timed-out wait alone says nothing of them)."""
    parts = [str(exc)]
    for log in logs:
        text = log.read_text(errors="replace")[-tail:] if log.exists() else "(no log: the worker never started)"
        parts.append(f"--- the end of {log.name}:\n{text}")
    return AssertionError("\n".join(parts))


def uninterrupted(program_text: str, event: str, records: list[Any]) -> dict[int, list[tuple[str, Any, Any]]]:
    """What an uninterrupted task emits for each partition's records (record clock): the oracle
    of the crash and rebalance tests. Lines are (event, JSON value, key)."""
    import orjson

    from eventscript.automata.compile import compile_source
    from eventscript.engine.encoding import encode
    from eventscript.engine.engine import Engine
    from eventscript.engine.time_provider import SimulatedTimeProvider

    program = compile_source(program_text, name="oracle").require()
    by_partition: dict[int, list[Any]] = {}
    for m in records:
        by_partition.setdefault(m.partition(), []).append(m)
    out: dict[int, list[tuple[str, Any, Any]]] = {}
    for p, msgs in by_partition.items():
        lines: list[tuple[str, Any, Any]] = []
        clock = SimulatedTimeProvider()

        def sink(e: Any, lines: list[tuple[str, Any, Any]] = lines) -> None:
            lines.append((e.name, encode(e.value, e.ty), list(e.key) if e.key is not None else None))

        engine = Engine(program, sink, clock)
        for m in sorted(msgs, key=lambda m: m.offset()):
            t = m.timestamp()[1] * 1000
            if t >= clock.now():
                clock.advance_to(t)
            engine.feed_json(event, orjson.loads(m.value()))
            clock.run_due()
        out[p] = lines
    return out


def outputs_by_partition(records: list[Any]) -> tuple[dict[int, list[tuple[str, Any, Any]]], int]:
    """Output records per partition, each es-id once (a repeated id must be an exact copy: on a
    broker that shows aborted transactions, that is what an aborted batch looks like); and how
    many repeats were dropped."""
    import orjson

    from eventscript.kafka import codec

    kept: dict[bytes, tuple[str, Any, Any]] = {}
    got: dict[int, list[tuple[str, Any, Any]]] = {}
    repeats = 0
    for m in records:
        rid = codec.header(m.headers(), codec.HEADER_ID)
        assert rid is not None, "an output record without es-id"
        event = codec.header(m.headers(), codec.HEADER_EVENT)
        assert event is not None
        line = (event.decode(), orjson.loads(m.value()), decode_key(m.key()))
        if rid in kept:
            assert kept[rid] == line, f"record {rid!r} appeared twice with different contents"
            repeats += 1
            continue
        kept[rid] = line
        got.setdefault(m.partition(), []).append(line)
    return got, repeats


def decode_key(raw: bytes | None) -> list[Any] | None:
    """An output record's key as the list of group-key components: a JSON array (key: json) or
    a plain string (key: string, the default for one-component keys)."""
    import orjson

    if raw is None:
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = None
    return value if isinstance(value, list) else [raw.decode()]


class KeyedProducer:
    """Writes JSON records keyed by a one-string group key (plain string keys, as a Java producer
    writes them), on the partition the key belongs to (murmur2), with increasing record
    timestamps; ``run`` paces them at ``rate`` records per second."""

    def __init__(self, broker: Broker, topic: str, partitions: int, field: str = "k") -> None:
        from confluent_kafka import Producer

        from eventscript.kafka import clients
        from eventscript.kafka.config import KafkaConfig

        self.producer = Producer(clients.producer_config(KafkaConfig(bootstrap_servers=broker.bootstrap)))
        self.topic = topic
        self.partitions = partitions
        self.field = field
        self.sent = 0
        self.stop = threading.Event()

    def send(self, key: str, value: dict[str, Any], timestamp: int) -> None:
        import orjson

        from eventscript.kafka.partitioner import partition_of

        kb = key.encode()
        self.producer.produce(
            self.topic,
            key=kb,
            value=orjson.dumps(value),
            partition=partition_of(kb, self.partitions),
            timestamp=timestamp,
        )
        self.sent += 1

    def run(
        self, count: int, keys: int, rate: float, t0: int = 1_767_225_600_000, step_ms: int = 250, seed: int = 42
    ) -> None:
        import random

        rnd = random.Random(seed)
        start = time.monotonic()
        for i in range(count):
            if self.stop.is_set():
                break
            k = f"k{rnd.randrange(keys)}"
            self.send(k, {self.field: k, "n": i}, t0 + i * step_ms)
            if i % 20 == 0:
                self.producer.poll(0)
                behind = start + i / rate - time.monotonic()
                if behind > 0:
                    time.sleep(behind)
        self.producer.flush(30)

    def start(self, count: int, keys: int, rate: float) -> threading.Thread:
        t = threading.Thread(target=self.run, args=(count, keys, rate), daemon=True)
        t.start()
        return t


def write_then_stop(producer: KeyedProducer, writing: threading.Thread, at_least: int, after: int = 300) -> None:
    """Lets a producer started with a count never reached write ``after`` more records (and at
    least ``at_least`` in all), then stops it. For tests whose faults must happen while records
    keep coming: the producer writes until the faults are done, however long they take on a busy
    machine, and no longer (a fixed count at a fixed rate is waited out in full)."""
    enough = max(at_least, producer.sent + after)
    wait_for(lambda: producer.sent >= enough, 180, what=f"{enough} records written")
    producer.stop.set()
    writing.join(60)


def distinct_outputs(broker: Broker, topic: str) -> int:
    """How many distinct output records a topic has so far (it may still be written)."""
    return len(read_many(broker, [topic], dedupe=True, snapshot=True)[topic])


class TopicWatcher:
    """A read_committed consumer of a topic, running in the background like a downstream
    consumer would; ``distinct()`` counts the distinct es-ids seen so far."""

    def __init__(self, broker: Broker, topic: str) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        from eventscript.kafka import clients
        from eventscript.kafka.config import KafkaConfig

        kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
        self.consumer = Consumer(clients.consumer_config(kafka, unique("watch")))
        md = self.consumer.list_topics(topic, timeout=10)
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in md.topics[topic].partitions])
        self.ids: set[bytes] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from eventscript.kafka import codec

        while not self.stop.is_set():
            for m in self.consumer.consume(500, 0.2):
                if m.error() is None:
                    rid = codec.header(m.headers(), codec.HEADER_ID)
                    if rid is not None:
                        self.ids.add(rid)
        self.consumer.close()

    def distinct(self) -> int:
        return len(self.ids)

    def wait_for_more(self, n: int, timeout: float = 90.0) -> None:
        before = self.distinct()
        wait_for(lambda: self.distinct() >= before + n, timeout, interval=0.1, what=f"{n} more outputs")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


Line = tuple[str, Any, Any]  # (event, JSON value, key)


class Oracle:
    """An uninterrupted run of the worker's task logic per input partition, in one engine per
    partition with the record clock (what the tester computes for the same records): outputs
    per key, and the final instance contexts per key."""

    def __init__(self, program_text: str, event: str, records: list[Any]) -> None:
        import orjson

        from eventscript.automata.compile import compile_source
        from eventscript.engine.encoding import encode
        from eventscript.engine.engine import Engine
        from eventscript.engine.time_provider import SimulatedTimeProvider

        program = compile_source(program_text, name="oracle").require()
        self.outputs: dict[str, list[Line]] = {}
        self.states: dict[str, tuple[Any, ...]] = {}
        by_partition: dict[int, list[Any]] = {}
        for m in records:
            by_partition.setdefault(m.partition(), []).append(m)
        for msgs in by_partition.values():
            clock = SimulatedTimeProvider()

            def sink(e: Any) -> None:
                key = list(e.key) if e.key is not None else None
                self.outputs.setdefault(orjson.dumps(key).decode(), []).append((e.name, encode(e.value, e.ty), key))

            engine = Engine(program, sink, clock)
            for m in sorted(msgs, key=lambda m: m.offset()):
                t = m.timestamp()[1] * 1000
                if t >= clock.now():
                    clock.advance_to(t)
                engine.feed_json(event, orjson.loads(m.value()))
                clock.run_due()
            for key, ctx in engine.contexts.items():
                self.states[orjson.dumps(list(key)).decode()] = instance_state(engine.snapshot(ctx))


def instance_state(snapshot: bytes) -> tuple[Any, ...]:
    """What must agree between two runs of an instance: state, variables, key and the pending
    timer's deadline and symbol (not its tie-breaking sequence number, nor the output-id origin).
    ``snapshot`` may be a value as a store or changelog keeps it (its key's information in front)."""
    from eventscript.engine.context import decode
    from eventscript.state.keyinfo import snapshot_of

    state, variables, key, timer, terminated = decode(snapshot_of(snapshot))[:5]
    return (state, variables, key, timer[:2] if timer is not None else None, terminated)


def outputs_by_key(records: list[Any], identical: bool = True) -> tuple[dict[str, list[Line]], int]:
    """Output records per key, each es-id once; a repeated id must be a byte-identical copy
    (key, value, headers, timestamp), or with ``identical`` false (a task merging several
    partitions with ``max_task_idle_ms: 0``: docs/worker.md, "What a repeat holds") a copy of the
    same key and event. Returns the outputs and how many repeats were dropped."""
    import orjson

    from eventscript.kafka import codec

    kept: dict[bytes, tuple[Any, ...]] = {}
    got: dict[str, list[Line]] = {}
    repeats = 0
    for m in records:
        rid = codec.header(m.headers(), codec.HEADER_ID)
        assert rid is not None, "an output record without es-id"
        raw = (m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1])
        if rid in kept:
            if identical:
                assert kept[rid] == raw, f"record {rid!r} appeared twice with different bytes: {kept[rid]} != {raw}"
            else:
                first, again = kept[rid], raw
                assert first[0] == again[0] and codec.header(list(first[2]), codec.HEADER_EVENT) == codec.header(
                    m.headers(), codec.HEADER_EVENT
                ), f"record {rid!r}: another key or event: {first} != {raw}"
            repeats += 1
            continue
        kept[rid] = raw
        event = codec.header(m.headers(), codec.HEADER_EVENT)
        assert event is not None
        key = decode_key(m.key())
        got.setdefault(orjson.dumps(key).decode(), []).append((event.decode(), orjson.loads(m.value()), key))
    return got, repeats


def committed_states(state_dir: Path) -> dict[str, tuple[Any, ...]]:
    """The instances in the local stores under a worker's state directory (its committed state)."""
    from rocksdict import Options, Rdict

    from eventscript.kafka.state import SINGLE_KEY

    out: dict[str, tuple[Any, ...]] = {}
    for db_path in sorted(state_dir.glob("**/task-*")):
        db = Rdict(str(db_path), options=Options(raw_mode=True))
        try:
            for k, v in db.items():
                if k[:1] == b"[" or k == SINGLE_KEY:
                    out[k.decode(errors="replace")] = instance_state(v)
        finally:
            db.close()
    return out


def stop_when_all_out(worker: subprocess.Popen[bytes], watcher: Any, total: int, timeout: float, log: Path) -> None:
    """Wait until ``watcher`` has seen ``total`` distinct outputs, then stop the worker as an
    operator would (SIGTERM) and check that it shut down cleanly."""
    import signal

    wait_for(lambda: watcher.distinct() >= total, timeout, interval=0.2, what="all outputs")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(60) == 0, log.read_text()[-3000:]


def tear_down(
    worker: subprocess.Popen[bytes], watcher: Any, producer: Any, writing: threading.Thread | None = None
) -> None:
    """The ``finally`` of a kill test: stop watching and producing, and leave no worker behind."""
    watcher.close()
    producer.stop.set()
    if writing is not None:
        writing.join(30)
    if worker.poll() is None:
        worker.kill()
