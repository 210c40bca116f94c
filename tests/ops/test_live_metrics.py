"""A live worker (in-process TopologyRunner, the session's broker) exports every metric the
Grafana dashboard and the Prometheus rules use, with the labels they use."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka_helpers import FAST_GROUP, Broker, KeyedProducer, free_port, program_topology, serve_in_thread, wait_for
from prometheus_client.parser import text_string_to_metric_families

from test_deploy_files import (
    DASHBOARD,
    KUBERNETES_SERIES,
    RULES,
    TARGET_LABELS,
    _exprs,
    promql_labels,
    promql_metric_names,
)

PROGRAM = "in {string k;} A group(A.k)\nout {string k;} B\n( A(a) { !>B(a); } )*\n"
#: Labels PromQL adds or computes rather than reads from a series (histogram buckets are read).
COMPUTED = {"le"} | TARGET_LABELS
#: Series a worker exports only while a task restores: test_a_live_worker_exports_store_sizes_and_
#: restore_progress scrapes them during a restore.
WHILE_RESTORING = {"eventscript_restore_remaining_records"}


def scrape(port: int) -> dict[str, list[dict[str, str]]]:
    """Sample name -> the label sets it is exported with."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(dict(sample.labels))
    return out


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return r.status == 200
    except OSError:  # 503 (HTTPError), or not listening yet
        return False


def used_queries() -> list[tuple[str, str]]:
    """(where, PromQL) of every dashboard panel and every rule, recorded series left out."""
    import json

    rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    dashboard = json.loads(DASHBOARD.read_text())
    return [*_exprs(dashboard), *((r.get("record") or r["alert"], r["expr"]) for r in rules)]


def missing(exported: dict[str, list[dict[str, str]]], queries: list[tuple[str, str]], recorded: set[str]) -> list[str]:
    problems = []
    for where, expr in queries:
        names = promql_metric_names(expr) - recorded - {"up"} - WHILE_RESTORING
        if names & set(KUBERNETES_SERIES):
            continue  # read from Kubernetes (kube-state-metrics, the kubelet), not from the worker
        for name in sorted(names - set(exported)):
            problems.append(f"{where}: {name} is not exported")
        labels, _ = promql_labels(expr)
        for label in sorted(labels - COMPUTED):
            if names and not any(label in s for n in names for s in exported.get(n, [])):
                problems.append(f"{where}: no series of {sorted(names)} has label {label!r}")
    return problems


def test_missing_finds_what_is_not_exported() -> None:
    exported = {"eventscript_tasks": [{"program": "p"}]}
    assert missing(exported, [("x", 'sum by (program) (eventscript_tasks{program=~"$program"})')], set()) == []
    assert missing(exported, [("x", "sum by (topic) (eventscript_tasks)")], set()) == [
        "x: no series of ['eventscript_tasks'] has label 'topic'"
    ]
    assert missing(exported, [("x", "eventscript_lag")], set()) == ["x: eventscript_lag is not exported"]


@pytest.mark.kafka
@pytest.mark.slow
def test_a_live_worker_exports_what_dashboard_and_rules_use(broker: Broker, tmp_path: Path) -> None:
    # Record time: the event-time series are exported too (wall-clock programs have none).
    name, path = program_topology(
        broker,
        tmp_path,
        PROGRAM,
        "live",
        "A",
        partitions=2,
        settings={"clock": "record"},
        consumer={**FAST_GROUP, "statistics.interval.ms": 500},
    )
    port = free_port()
    runner, t = serve_in_thread(path, port)
    try:
        wait_for(lambda: ready(port), 90, what="/readyz")
        producer = KeyedProducer(broker, f"{name}-in", 2)
        producer.run(count=50, keys=5, rate=1000)

        def processed_and_lag_known() -> bool:
            exported = scrape(port)
            processed = [s for s in exported.get("eventscript_records_total", []) if s.get("kind") == "processed"]
            lag = [s for s in exported.get("eventscript_kafka_consumer_lag", []) if s.get("topic") == f"{name}-in"]
            return bool(processed) and len(lag) == 2

        wait_for(processed_and_lag_known, 60, what="processed records and per-partition lag")
        exported = scrape(port)
        rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
        recorded = {r["record"] for r in rules if "record" in r}
        assert missing(exported, used_queries(), recorded) == []
        lag = {s["partition"] for s in exported["eventscript_kafka_consumer_lag"] if s["topic"] == f"{name}-in"}
        assert lag == {"0", "1"}
        assert exported["eventscript_build_info"] and exported["process_resident_memory_bytes"]
        assert exported["eventscript_commits_total"] == [{"program": name}]
    finally:
        runner.stop()
        t.join(60)


COUNTING = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""


def _samples_of(port: int, name: str) -> dict[str, float]:
    """task (or "" when the series has none) -> value of ``name`` on a live worker's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {
        s.labels.get("task", ""): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


@pytest.mark.kafka
@pytest.mark.slow
def test_a_live_worker_exports_store_sizes_and_restore_progress(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25, items 1 and 3: each owned task's store size (RocksDB's estimate) and, while a task
    restores from its changelog, the records it has still to read, both on /metrics."""
    import shutil
    import time

    from eventscript.kafka import restore, task_manager

    name, path = program_topology(broker, tmp_path, COUNTING, "disk", "Hit", partitions=2, settings={"clock": "record"})
    port = free_port()
    runner, t = serve_in_thread(path, port)
    try:
        wait_for(lambda: ready(port), 90, what="/readyz")
        KeyedProducer(broker, f"{name}-in", 2).run(count=400, keys=200, rate=2000)
        wait_for(
            lambda: (
                set(_samples_of(port, "eventscript_state_bytes")) == {"0", "1"}
                and min(_samples_of(port, "eventscript_state_bytes").values()) > 0
            ),
            60,
            what="a store size for each task",
        )
        assert _samples_of(port, "eventscript_partitions") == {"": 2.0}
        assert _samples_of(port, "eventscript_restore_remaining_records") == {}  # nothing restores
    finally:
        runner.stop()
        t.join(60)
    shutil.rmtree(tmp_path / "state" / name)  # the next start replays the whole changelog

    # A replay slow enough to be scraped: at most 2 changelog records per read, 20 ms each.
    real_step = restore.Restoration.step

    class SlowReader:
        def __init__(self, consumer: Any) -> None:
            self.consumer = consumer

        def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
            time.sleep(0.02)
            return self.consumer.consume(num_messages=min(num_messages, 2), timeout=timeout)

        def __getattr__(self, attr: str) -> Any:
            return getattr(self.consumer, attr)

    def slow_step(self: restore.Restoration, budget: float, batch: int = 2000) -> None:
        if not isinstance(self.restorer, SlowReader):
            self.restorer = SlowReader(self.restorer)
        real_step(self, budget, batch)

    monkeypatch.setattr(restore.Restoration, "step", slow_step)
    monkeypatch.setattr(task_manager, "RESTORE_SLICE", 0.05)
    port = free_port()
    runner, t = serve_in_thread(path, port)
    try:
        seen: dict[str, float] = {}

        def restoring() -> bool:
            try:
                seen.update(_samples_of(port, "eventscript_restore_remaining_records"))
            except OSError:  # the health server is not listening yet
                return False
            return any(v > 0 for v in seen.values())

        wait_for(restoring, 90, interval=0.1, what="records to go while restoring")
        assert set(seen) <= {"0", "1"}
        wait_for(lambda: ready(port), 120, what="/readyz after the restore")
        assert _samples_of(port, "eventscript_restore_remaining_records") == {}
    finally:
        runner.stop()
        t.join(60)
