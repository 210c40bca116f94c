"""Prometheus metrics of the worker (served on /metrics by the health server).

``eventscript_records_total{program, kind}`` counts records and events by kind: consumed,
processed, produced (every record written: outputs, errors, changelog, repartitioned), errors,
repartitioned, commits. ``eventscript_faults_total{program, kind}`` counts what went wrong and was
recovered from: failed commits, aborted transactions, rewinds to the last commit, lost
assignments; ``eventscript_rebalances_total{program, kind}`` counts assignments and revocations.
Histograms time commits and task restores; gauges track tasks, instances, lag and readiness.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: The ``kind`` label values of eventscript_records_total.
KINDS = ("consumed", "processed", "produced", "errors", "repartitioned", "commits")
#: The ``kind`` label values of eventscript_faults_total and eventscript_rebalances_total.
FAULTS = ("commit_failed", "transaction_aborted", "rewound", "assignment_lost")
REBALANCES = ("assigned", "revoked", "lost")


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.records = Counter("eventscript_records_total", "Records and events by kind", ["program", "kind"],
                               registry=self.registry)
        self.faults = Counter("eventscript_faults_total", "Failures the worker recovered from, by kind: failed "
                              "commits, aborted transactions, rewinds to the last commit, lost assignments",
                              ["program", "kind"], registry=self.registry)
        self.rebalances = Counter("eventscript_rebalances_total", "Rebalance callbacks by kind (assigned, "
                                  "revoked, lost)", ["program", "kind"], registry=self.registry)
        self.commit_seconds = Histogram("eventscript_commit_seconds", "Time to commit a batch", ["program"],
                                        registry=self.registry,
                                        buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
        self.restore_seconds = Histogram("eventscript_restore_seconds", "Time to restore a task", ["program"],
                                         registry=self.registry, buckets=(0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 300))
        self.task_gauge = Gauge("eventscript_tasks", "Tasks owned", ["program"], registry=self.registry)
        self.instance_gauge = Gauge("eventscript_instances", "Live instance contexts (one per group key)",
                                    ["program"], registry=self.registry)
        self.lag_gauge = Gauge("eventscript_consumer_lag", "Input records fetched by the broker's account but not "
                               "yet processed (high watermark minus position, summed over the program's tasks)",
                               ["program"], registry=self.registry)
        self.ready_gauge = Gauge("eventscript_ready", "1 when the program's worker holds an assignment that "
                                 "was not lost, has restored its tasks and its last commit succeeded", ["program"], registry=self.registry)

    def register(self, program: str, ready: Callable[[], bool]) -> None:
        """Create the program's series at start, so dashboards and alerts see them at zero.

        Readiness is read from the worker when scraped, so /metrics and /readyz never disagree."""
        for kind in KINDS:
            self.records.labels(program, kind)
        for kind in FAULTS:
            self.faults.labels(program, kind)
        for kind in REBALANCES:
            self.rebalances.labels(program, kind)
        self.task_gauge.labels(program).set(0)
        self.instance_gauge.labels(program).set(0)
        self.lag_gauge.labels(program).set(0)
        self.ready_gauge.labels(program).set_function(lambda: 1.0 if ready() else 0.0)

    def status(self, program: str, instances: int, lag: int) -> None:
        self.instance_gauge.labels(program).set(instances)
        self.lag_gauge.labels(program).set(lag)

    def count(self, program: str, kind: str, n: int = 1) -> None:
        self.records.labels(program, kind).inc(n)

    def fault(self, program: str, kind: str) -> None:
        self.faults.labels(program, kind).inc()

    def rebalance(self, program: str, kind: str) -> None:
        self.rebalances.labels(program, kind).inc()

    def observe_commit(self, program: str, seconds: float) -> None:
        self.commit_seconds.labels(program).observe(seconds)

    def observe_restore(self, program: str, seconds: float) -> None:
        self.restore_seconds.labels(program).observe(seconds)

    def tasks(self, program: str, n: int) -> None:
        self.task_gauge.labels(program).set(n)
