"""Apache Kafka in KRaft mode on loopback ports, run from the jars ``scripts/get-kafka`` fetched.

One node (``KafkaCluster(1)``) is a combined controller and broker with test-friendly settings:
no initial rebalance delay, internal topics with replication 1, short group session timeouts
allowed. Three nodes (``KafkaCluster(3)``) are three combined controllers and brokers with
replication 3 and ``min.insync.replicas`` 2, so a test can kill -9, stop or restart any one of
them (the leader of a changelog partition, say) and the quorum and every partition survive.

Each node is a JVM with a small heap (several run at once on a two-core machine), stopped by its
PID; its log (``server.log`` in its folder) is kept when the caller asks (a failed test).
"""

from __future__ import annotations

import atexit
import base64
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: The Kafka version ``scripts/get-kafka`` pins (keep the two in step).
KAFKA_VERSION = "4.1.1"

#: JVM options: a small heap so that several brokers fit beside the tests; the client compiler
#: only, which starts faster and costs less CPU on two cores than the optimising one.
JVM_OPTIONS = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]

_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = warn
logger.coordinator.name = org.apache.kafka.coordinator
logger.coordinator.level = warn
"""


class KafkaNotFetched(Exception):
    """The broker's jars are not on this machine (``scripts/get-kafka`` was not run), or Java is
    missing."""


class KafkaStartError(Exception):
    pass


def _quiet() -> logging.Logger:
    """A logger for librdkafka's connection errors while a broker starts (they are expected)."""
    quiet = logging.getLogger("eventscript.brokers.probe")
    if not quiet.handlers:
        quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    return quiet


def _source_root() -> Path | None:
    """The checkout this package runs from (an editable install), where ``scripts/get-kafka`` is."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "scripts" / "get-kafka").exists() else None


def kafka_jars(fetch: bool = False) -> Path:
    """The folder of the broker's jars: ``EVENTSCRIPT_KAFKA_JARS`` when set, else the cache folder
    ``scripts/get-kafka`` fills; with ``fetch``, runs that script when the folder is missing."""
    if shutil.which("java") is None:
        raise KafkaNotFetched("Apache Kafka needs a Java runtime (17 or later) on PATH")
    override = os.environ.get("EVENTSCRIPT_KAFKA_JARS")
    if override:
        path = Path(override)
        if not any(path.glob("kafka_2.13-*.jar")):
            raise KafkaNotFetched(f"EVENTSCRIPT_KAFKA_JARS={override} holds no kafka_2.13 jar")
        return path
    cache = Path(
        os.environ.get("EVENTSCRIPT_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "eventscript"
    )
    path = cache / f"kafka-{KAFKA_VERSION}"
    if (path / ".complete").exists():
        return path
    root = _source_root()
    if fetch and root is not None and shutil.which("mvn") is not None:
        done = subprocess.run([str(root / "scripts" / "get-kafka")], capture_output=True, text=True)
        if done.returncode == 0 and (path / ".complete").exists():
            return path
        raise KafkaNotFetched(f"scripts/get-kafka failed: {done.stderr.strip()[-2000:]}")
    raise KafkaNotFetched(
        f"no Apache Kafka {KAFKA_VERSION} in {path}: run scripts/get-kafka "
        f"(needs Maven and Java 17), or set EVENTSCRIPT_KAFKA_JARS to a folder of its jars"
    )


def _free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback ports (all held open until all are chosen)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, not starting with
    '-' (the storage tool would read it as an option; Kafka's own Uuid.randomUuid avoids it too)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


@dataclass
class KafkaNode:
    """One KRaft node (controller and broker in one JVM) of a ``KafkaCluster``."""

    node_id: int
    port: int
    controller_port: int
    directory: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    @property
    def config(self) -> Path:
        return self.directory / "server.properties"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


_STARTED: list[KafkaNode] = []


@atexit.register
def _kill_leftovers() -> None:
    """No broker outlives the Python process that started it (a test run cut short)."""
    for node in _STARTED:
        if node.running and node.proc is not None:
            node.proc.kill()


class KafkaCluster:
    """``brokers`` KRaft nodes on loopback ports in a temporary folder; a context manager.

    ``settings`` add to or override the server properties of every node."""

    def __init__(
        self,
        brokers: int = 1,
        *,
        directory: Path | None = None,
        jars: Path | None = None,
        settings: dict[str, Any] | None = None,
        jvm_options: list[str] | None = None,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster has at least one broker")
        self.jars = jars or kafka_jars(fetch=True)
        self.directory = Path(directory or tempfile.mkdtemp(prefix="kafka-"))
        self.settings = dict(settings or {})
        self.jvm_options = list(jvm_options or JVM_OPTIONS)
        self.cluster_id = _cluster_id()
        ports = _free_ports(2 * brokers)
        self.nodes = [
            KafkaNode(i + 1, ports[2 * i], ports[2 * i + 1], self.directory / f"node-{i + 1}") for i in range(brokers)
        ]
        self.bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        self._admin_client: Any = None

    # -- configuration ------------------------------------------------------------------------

    def properties(self, node: KafkaNode) -> dict[str, Any]:
        """The node's server properties (what differs from Kafka's defaults, and why)."""
        replicas = len(self.nodes)
        min_isr = 2 if replicas >= 3 else 1
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        props: dict[str, Any] = {
            "process.roles": "broker,controller",
            "node.id": node.node_id,
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(node.directory / "data"),
            # Tests start many short-lived groups: no 3 s wait before the first assignment, and
            # session timeouts as short as the tests' (Kafka's floor is 6 s).
            "group.initial.rebalance.delay.ms": 0,
            "group.min.session.timeout.ms": 1000,
            # Internal topics as replicated as the cluster allows, with few partitions (faster
            # to create; a test cluster has few groups and producers).
            "offsets.topic.replication.factor": replicas,
            "offsets.topic.num.partitions": 10,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": min_isr,
            "transaction.state.log.num.partitions": 10,
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": min_isr,
            "default.replication.factor": replicas,
            "min.insync.replicas": min_isr,
            "num.partitions": 1,
            # A killed broker is noticed by the controller within a few seconds, not nine. A
            # single node has no other broker to fail over to, and a node starved of CPU for
            # longer than this (a loaded machine: the three-broker harness beside it) fences
            # itself: "All brokers are currently fenced" failed five tests in a row once.
            "broker.session.timeout.ms": 6000 if replicas > 1 else 20000,
            "broker.heartbeat.interval.ms": 1000,
            # Transactions left open by a killed producer that never comes back are aborted soon.
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": 2000,
            "log.segment.bytes": 16 * 1024 * 1024,
            # Traces and tests write records stamped with past dates (2026-01-01...): with the
            # default 7-day retention by time, the broker's first retention check (30 s after
            # start) deletes them while they are being read. Topic configs still apply.
            "log.retention.ms": -1,
            # ... and the conformance traces reach into the future: Kafka 4 refuses records
            # stamped more than an hour ahead (INVALID_TIMESTAMP) unless told otherwise.
            "log.message.timestamp.after.max.ms": 2**63 - 1,
        }
        props.update(self.settings)
        return props

    def _write_config(self, node: KafkaNode) -> None:
        node.directory.mkdir(parents=True, exist_ok=True)
        node.config.write_text("".join(f"{k}={v}\n" for k, v in self.properties(node).items()))
        (node.directory / "log4j2.properties").write_text(_LOG4J2.format(log=node.log))

    def _java(self, node: KafkaNode, main: str, *args: str) -> list[str]:
        return [
            "java",
            *self.jvm_options,
            f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
            "-cp",
            f"{self.jars}/*",
            main,
            *args,
        ]

    def _format(self, node: KafkaNode) -> subprocess.Popen[bytes]:
        """Formats the node's storage (meta.properties and the bootstrap metadata), once."""
        self._write_config(node)
        return subprocess.Popen(
            self._java(
                node,
                "kafka.tools.StorageTool",
                "format",
                "--ignore-formatted",
                "-t",
                self.cluster_id,
                "-c",
                str(node.config),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    # -- life cycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> KafkaCluster:
        """Formats every node (in parallel), starts them, and waits until all brokers are known."""
        formats = [(n, self._format(n)) for n in self.nodes]
        try:
            for node, proc in formats:
                out, _ = proc.communicate(timeout=timeout * 3)
                if proc.returncode != 0:
                    raise KafkaStartError(f"formatting node {node.node_id}'s storage failed: {out.decode()[-2000:]}")
        except subprocess.TimeoutExpired:
            raise KafkaStartError(f"formatting the storage took more than {timeout * 3:.0f} s") from None
        finally:
            for _, proc in formats:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        try:
            for node in self.nodes:
                self._launch(node)
            self.wait_ready(timeout)
        except BaseException:
            self.stop()  # no broker outlives a failed start; the folder stays for its logs
            raise
        return self

    def _launch(self, node: KafkaNode) -> None:
        with open(node.directory / "stdout.log", "ab") as out:
            node.proc = subprocess.Popen(
                self._java(node, "kafka.Kafka", str(node.config)),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        (node.directory / "pid").write_text(f"{node.proc.pid}\n")
        _STARTED.append(node)

    def wait_ready(self, timeout: float = 60.0, brokers: int | None = None) -> None:
        """Waits until the cluster's metadata lists ``brokers`` live brokers (default: every
        running node)."""
        from confluent_kafka.admin import AdminClient

        want = brokers if brokers is not None else sum(n.running for n in self.nodes)
        admin = AdminClient(
            {
                "bootstrap.servers": self.bootstrap,
                "socket.connection.setup.timeout.ms": 1000,
                "topic.metadata.refresh.interval.ms": 250,
            },
            logger=_quiet(),
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in self.nodes:
                if (
                    node.proc is not None
                    and node.proc.poll() is not None
                    and node.proc.returncode not in (-signal.SIGKILL, -signal.SIGTERM, 143, 137)
                ):
                    raise KafkaStartError(
                        f"Kafka node {node.node_id} exited with status {node.proc.returncode}; see {node.log}"
                    )
            try:
                if len(admin.list_topics(timeout=1).brokers) >= want:
                    return
            except Exception:
                pass
            time.sleep(0.1)
        raise KafkaStartError(
            f"Kafka ({len(self.nodes)} nodes) did not list {want} brokers within {timeout:.0f} s; "
            f"see the logs in {self.directory}"
        )

    def node(self, node_id: int) -> KafkaNode:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"no node {node_id} (nodes: {[n.node_id for n in self.nodes]})")

    def kill(self, node_id: int) -> None:
        """kill -9 of one node: no controlled shutdown, its leaderships move when the controller
        misses its heartbeats."""
        node = self.node(node_id)
        if node.proc is not None and node.proc.poll() is None:
            node.proc.send_signal(signal.SIGKILL)
            _reap(node.proc)

    def stop_node(self, node_id: int, timeout: float = 60.0) -> None:
        """A controlled shutdown of one node (SIGTERM): it hands its leaderships over first."""
        node = self.node(node_id)
        if node.proc is not None and node.proc.poll() is None:
            node.proc.send_signal(signal.SIGTERM)
            try:
                node.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                node.proc.kill()
                _reap(node.proc)

    def restart(self, node_id: int, timeout: float = 60.0) -> None:
        """Starts a stopped or killed node again on its ports and data, and waits until it
        answers and the cluster lists it."""
        node = self.node(node_id)
        if node.running:
            raise KafkaStartError(f"node {node_id} is still running (pid {node.pid}): stop or kill it first")
        self._launch(node)
        self._wait_node(node, timeout)
        self.wait_ready(timeout)

    def _wait_node(self, node: KafkaNode, timeout: float) -> None:
        """Waits until the node itself answers a metadata request (its listener is up)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(
            {"bootstrap.servers": f"127.0.0.1:{node.port}", "socket.connection.setup.timeout.ms": 1000}, logger=_quiet()
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not node.running:
                raise KafkaStartError(
                    f"Kafka node {node.node_id} exited with status "
                    f"{node.proc.returncode if node.proc else None}; see {node.log}"
                )
            try:
                if node.node_id in admin.list_topics(timeout=1).brokers:
                    return
            except Exception:
                pass
            time.sleep(0.1)
        raise KafkaStartError(f"Kafka node {node.node_id} did not answer within {timeout:.0f} s; see {node.log}")

    def pause(self, node_id: int) -> None:
        """SIGSTOP: the node stays up but answers nothing (a frozen broker)."""
        pid = self.node(node_id).pid
        if pid is not None:
            os.kill(pid, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        pid = self.node(node_id).pid
        if pid is not None:
            os.kill(pid, signal.SIGCONT)

    def _admin(self) -> Any:
        """One admin client for the cluster's questions, its connection errors (a node down is
        expected here) kept out of the output."""
        from confluent_kafka.admin import AdminClient

        if self._admin_client is None:
            self._admin_client = AdminClient({"bootstrap.servers": self.bootstrap}, logger=_quiet())
        return self._admin_client

    def leader(self, topic: str, partition: int, timeout: float = 30.0) -> int:
        """The node id of the partition's current leader (waits while it has none)."""
        admin = self._admin()
        deadline = time.monotonic() + timeout
        while True:
            md = admin.list_topics(topic, timeout=10)
            parts = md.topics[topic].partitions if topic in md.topics else {}
            leader = parts[partition].leader if partition in parts else -1
            if leader >= 0:
                return int(leader)
            if time.monotonic() > deadline:
                raise KafkaStartError(f"{topic}[{partition}] has no leader after {timeout:.0f} s")
            time.sleep(0.2)

    def describe_replicas(self, topic: str, timeout: float = 30.0) -> dict[int, list[int]]:
        """The node ids holding each partition of ``topic`` (waits while the broker asked does
        not know the topic yet: metadata reaches the brokers a moment after a creation)."""
        admin = self._admin()
        deadline = time.monotonic() + timeout
        while True:
            md = admin.list_topics(topic, timeout=10)
            found = md.topics.get(topic)
            if found is not None and found.error is None and found.partitions:
                return {p: list(m.replicas) for p, m in found.partitions.items()}
            if time.monotonic() > deadline:
                raise KeyError(f"no topic {topic} in the cluster after {timeout:.0f} s")
            time.sleep(0.2)

    def stop(self) -> None:
        """Stops every node by its PID: SIGTERM, then SIGKILL for one that does not exit within
        5 s (the last nodes of a cluster wait for a quorum that is gone; their data is thrown
        away anyway)."""
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.send_signal(signal.SIGCONT)
                node.proc.terminate()
        for node in self.nodes:
            if node.proc is not None:
                try:
                    node.proc.wait(5)
                except subprocess.TimeoutExpired:
                    node.proc.kill()
                    _reap(node.proc)

    def close(self, keep: bool = False) -> None:
        """Stops the cluster and removes its folder, unless ``keep`` (then its logs stay for a look)."""
        self.stop()
        if not keep:
            shutil.rmtree(self.directory, ignore_errors=True)

    def logs(self) -> list[Path]:
        return [n.log for n in self.nodes]

    def __enter__(self) -> KafkaCluster:
        try:
            return self.start()
        except BaseException:
            self.close(keep=True)
            raise

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(keep=exc_type is not None)


def _reap(proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    """Waits for a killed JVM to be gone. SIGKILL cannot be refused, but on a machine loaded far
    past its cores the exit (unmapping a JVM's heap) has taken over 30 s; a stop is never an error
    for that: past ``timeout`` it says so in the log and leaves the reaping to the OS."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        log.warning("Kafka node pid %d was killed but has not exited after %.0f s", proc.pid, timeout)
