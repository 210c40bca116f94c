"""Event time that crosses topics on Apache Kafka (issue 21): every shipped topology (three
partitions per topic or more, sensors' stages on 3 and 4) gives per key the simulated run's records in order, with
the es-ids the
in-memory run of the same layout gives (tests/task/test_event_time.py), under both guarantees;
and after a worker is killed -9 midway."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka_helpers import FAST_GROUP, read_many, run_in_thread, start_worker, unique, wait_for

from eventscript.task.codec import HEADER_ID, header, record_to_json

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from task.test_event_time import TOPOLOGY_FILES, shown, simulated  # noqa: E402
from task.test_event_time import run as run_in_memory  # noqa: E402

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def on_broker(path: Path, broker: Any, tmp: Path, guarantee: str) -> Path:
    """The shipped topology on the test broker (its partition counts: three or more per topic),
    with its own application id, topic names and state directory."""
    from eventscript.topology.config import load_topology
    from eventscript.topology.model import load_graph
    from eventscript.topology.progress import topology_partitions

    partitions_of = topology_partitions(load_topology(path))

    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["application"] = unique(doc.get("application", "t"))
    doc["kafka"] = {
        "bootstrap_servers": broker.bootstrap,
        "consumer": dict(FAST_GROUP),
        "static_membership": broker.kind != "tansu",
    }
    doc["state_dir"] = str(tmp / "state")
    topics = doc.setdefault("topics", {})
    for t in load_graph(path).all_topics():
        spec = topics.get(t) or {}
        spec["partitions"] = partitions_of(t)
        topics[t] = spec
    # Topic names of their own, so that runs on one broker do not share topics.
    names = {t: f"{t}-{doc['application']}" for t in topics}
    doc["topics"] = {names[t]: spec for t, spec in topics.items()}
    for prog in doc["programs"]:
        prog["source"] = str(path.parent / prog["source"])
        prog["guarantee"] = guarantee
        for inp in prog["inputs"]:
            inp["topic"] = names[inp["topic"]]
        prog["outputs"] = {e: names[t] for e, t in prog.get("outputs", {}).items()}
        if "errors" in prog:
            prog["errors"] = names[prog["errors"]]
    out = tmp / f"topology-{guarantee}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    out.with_suffix(".names").write_text(yaml.safe_dump(names))
    return out


def results(broker: Any, topology: Path, original: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The result and $error topics' records per original topic name and key, with their es-ids."""
    from eventscript.topology.model import load_graph

    names = yaml.safe_load(topology.with_suffix(".names").read_text())
    graph = load_graph(original)
    topics = [*graph.sink_topics, *(t for t in graph.error_writers if t not in graph.sink_topics)]
    read = read_many(broker, [names[t] for t in topics], dedupe=True)
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for t in topics:
        for m in read[names[t]]:
            line = record_to_json(m)
            rid = (header(m.headers(), HEADER_ID) or b"").decode()
            for original_name, renamed in names.items():  # ids name the topics: as the in-memory run's
                rid = rid.replace(renamed, original_name)
            line["es-id"] = rid
            out.setdefault((t, repr(line.get("key"))), []).append(line)
    # Unkeyed records go to any partition (librdkafka's murmur2_random): they keep no order.
    for (_, key), lines in out.items():
        if key == "None":
            lines.sort(key=lambda x: (x["time"], x["es-id"]))
    return out


def produce(topology: Path, original: Path) -> None:
    from eventscript.cli.main import main

    assert main(["produce", str(topology), "--trace", str(original.parent / "sample.trace")]) == 0


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_shipped_topologies_on_kafka(path: Path, guarantee: str, broker: Any, tmp_path: Path) -> None:
    topology = on_broker(path, broker, tmp_path, guarantee)
    produce(topology, path)
    # 6 s without input before stopping: a downstream task may wait for its writers' markers
    # before its last outputs (a run with 3 s failed once on a loaded machine and passed alone;
    # the cause is not established).
    assert run_in_thread(topology, until_idle=6.0, timeout=240) == 0
    got = results(broker, topology, path)
    assert {k: shown(v) for k, v in got.items()} == {k: shown(v) for k, v in simulated(path).items()}
    reference = run_in_memory(path, None, 1, tmp_path / "memory").results()
    assert {k: [x["es-id"] for x in v] for k, v in got.items()} == {
        k: [x["es-id"] for x in v] for k, v in reference.items()
    }


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_a_worker_killed_midway(guarantee: str, broker: Any, tmp_path: Path) -> None:
    """The sensors pipeline: a worker killed -9 once it has written outputs, then started again,
    gives the simulated records (repeats under at-least-once dropped by es-id)."""
    path = ROOT / "topologies" / "sensors" / "topology.yaml"
    topology = on_broker(path, broker, tmp_path, guarantee)
    produce(topology, path)
    names = yaml.safe_load(topology.with_suffix(".names").read_text())
    worker = start_worker(topology, log=tmp_path / "worker-1.log")
    try:
        wait_for(
            lambda: bool(read_many(broker, [names["sensor-events"]], snapshot=True)[names["sensor-events"]]),
            timeout=120,
            what="the first stage's outputs",
        )
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(30)
    # 6 s without input before stopping: a downstream task may wait for its writers' markers
    # before its last outputs (a run with 3 s failed once on a loaded machine and passed alone;
    # the cause is not established).
    assert run_in_thread(topology, until_idle=6.0, timeout=240) == 0
    got = results(broker, topology, path)
    assert {k: shown(v) for k, v in got.items()} == {k: shown(v) for k, v in simulated(path).items()}
