"""Prometheus metrics of the worker (served on /metrics by the health server).

``eventscript_records_total{program, kind}`` counts records and events by kind: consumed,
processed, produced (every record written: outputs, errors, changelog, repartitioned), errors,
repartitioned. Committed batches are counted apart, in ``eventscript_commits_total{program}``:
a batch is not a record, and summing the two would mean nothing.
``eventscript_faults_total{program, kind}`` counts what went wrong and was recovered from: failed
commits, aborted transactions, rewinds to the last commit, lost assignments;
``eventscript_rebalances_total{program, kind}`` counts assignments and revocations.
Histograms time commits and task restores; gauges track tasks, instances, lag and readiness.
``eventscript_partitions{program}`` is the program's task count, so an alert can tell a partition
that no worker owns (the sum of ``eventscript_tasks`` over workers falls short of it).
``eventscript_state_bytes{program, task}`` is RocksDB's own estimate of each owned task's store on
disk (its table files plus the memtables, whose write-ahead log is on disk too), read at most every
``STATE_SIZE_INTERVAL`` seconds after a commit: the state volume's alert and panel use it.
``eventscript_restore_remaining_records{program, task}`` is how many changelog records a task being
restored has still to read (the changelog's end, as last fetched, minus where the restore is), so a
restore that never ends is seen while it runs, not only when it finishes.
``eventscript_event_time_seconds{program, task}`` is a record-time task's clock,
``eventscript_event_time_lag_seconds{program, task}`` the wall clock minus it, and
``eventscript_held_back_records{program, task}`` the records it holds back until every task
writing its inputs has marked progress up to them (task/progress.py);
``eventscript_idle_source_partitions{program}`` how many of its source partitions hold no record
time back now for being idle (listed in /readyz; ``eventscript_idle_partitions_total`` counts each
time one became so); the alert on a clock that
stands still while its inputs grow is in observability/.
``eventscript_upgraded_instances_total{program, outcome}`` counts the instances of another version
of the program converted as the tasks loaded them (carried, restarted, ended; refused: a task the
topology's ``upgrade`` policy stopped; task/versions.py).
``eventscript_timer_lateness_seconds{program}`` tells how late wall-clock timers fire: each time
a task fires its due timers, how long after its deadline the earliest of them fired (a worker
that is overloaded, paused or catching up after a restart fires them late; the alert on it is
in observability/).

Lag is read from librdkafka's statistics (:func:`stats_config`): the client keeps fetching
watermarks while idle, so ``eventscript_kafka_consumer_lag{program, topic, partition}`` stays
fresh where a lag computed after commits would go stale. A dead worker exports nothing, so lag
must also be watched from outside (a Kafka exporter; docs/operations.md).

The registry also carries the process, GC and platform collectors of prometheus-client and
``eventscript_build_info`` (version, Python, confluent-kafka, librdkafka), so a dashboard can
tell which build runs where. observability/README.md lists every series; tests/ops checks it.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

from confluent_kafka import TopicPartition
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

#: The ``kind`` label values of eventscript_records_total.
KINDS = ("consumed", "processed", "produced", "errors", "repartitioned", "markers", "repeats")
#: What the worker counts through :meth:`Metrics.count` that is not a record: committed batches,
#: and source partitions that stopped holding record time back (read to their end and idle).
COMMITS = "commits"
IDLE_PARTITIONS = "idle_partitions"
#: The ``kind`` label values of eventscript_faults_total and eventscript_rebalances_total.
FAULTS = ("commit_failed", "transaction_aborted", "rewound", "assignment_lost", "rejoined")
REBALANCES = ("assigned", "revoked", "lost")
#: What the worker counts through :meth:`Metrics.count` for an upgrade: ``upgraded_<outcome>``,
#: the ``outcome`` label values of eventscript_upgraded_instances_total (task/versions.py).
UPGRADED = "upgraded_"
UPGRADE_OUTCOMES = ("carried", "restarted", "ended", "refused")
#: librdkafka statistics are emitted this often unless the topology's kafka settings say otherwise.
STATS_INTERVAL_MS = 10_000
#: Buckets of eventscript_timer_lateness_seconds: from 1 ms (on time) to a minute (a stalled worker).
LATENESS_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
#: Buckets of eventscript_restore_seconds. The restore alert counts restores above 120 s, which must
#: be a bucket bound: a quantile interpolated inside a wide bucket (60-300 s) read a 70 s restore as
#: about 5 minutes.
RESTORE_BUCKETS = (0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 90, 120, 180, 300, 600, 1800, 3600)
#: How often (seconds) the stores' sizes are read again: RocksDB's properties are cheap, but commits
#: come many times a second and the disk fills over hours.
STATE_SIZE_INTERVAL = 15.0


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


def build_labels() -> dict[str, str]:
    """What ``eventscript_build_info`` says about the running build."""
    try:
        import confluent_kafka

        librdkafka = confluent_kafka.libversion()[0]
    except ImportError:  # pragma: no cover - confluent-kafka is a dependency
        librdkafka = "unknown"
    return {
        "version": _version("eventscript"),
        "python": platform.python_version(),
        "confluent_kafka": _version("confluent-kafka"),
        "librdkafka": librdkafka,
    }


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        # Each Metrics has its own registry (tests make many): give it its own process collectors.
        ProcessCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.build = Info(
            "eventscript_build",
            "The running build: EventScript, Python, confluent-kafka and librdkafka versions",
            registry=self.registry,
        )
        self.build.info(build_labels())
        self.records = Counter(
            "eventscript_records_total", "Records and events by kind", ["program", "kind"], registry=self.registry
        )
        self.commits = Counter(
            "eventscript_commits_total",
            "Batches committed (Kafka transaction or offsets, changelog, local state)",
            ["program"],
            registry=self.registry,
        )
        self.faults = Counter(
            "eventscript_faults_total",
            "Failures the worker recovered from, by kind: failed "
            "commits, aborted transactions, rewinds to the last commit, lost assignments",
            ["program", "kind"],
            registry=self.registry,
        )
        self.rebalances = Counter(
            "eventscript_rebalances_total",
            "Rebalance callbacks by kind (assigned, revoked, lost)",
            ["program", "kind"],
            registry=self.registry,
        )
        self.commit_seconds = Histogram(
            "eventscript_commit_seconds",
            "Time to commit a batch",
            ["program"],
            registry=self.registry,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
        )
        self.restore_seconds = Histogram(
            "eventscript_restore_seconds",
            "Time to restore a task",
            ["program"],
            registry=self.registry,
            buckets=RESTORE_BUCKETS,
        )
        self.restore_remaining = Gauge(
            "eventscript_restore_remaining_records",
            "Changelog records a task being restored has still to read (none once restored)",
            ["program", "task"],
            registry=self.registry,
        )
        self.state_bytes = Gauge(
            "eventscript_state_bytes",
            "RocksDB's estimate of the task's store on disk: table files plus unflushed memtables (write-ahead log)",
            ["program", "task"],
            registry=self.registry,
        )
        self.partitions_gauge = Gauge(
            "eventscript_partitions",
            "The program's partitions (tasks) in all: the sum of eventscript_tasks over its workers should equal it",
            ["program"],
            registry=self.registry,
        )
        self._labelled: dict[tuple[str, str], set[str]] = {}
        self._state_read_at: dict[str, float] = {}
        self.timer_lateness = Histogram(
            "eventscript_timer_lateness_seconds",
            "How long after its deadline a wall-clock timer fired (the earliest of those a task fired at once)",
            ["program"],
            registry=self.registry,
            buckets=LATENESS_BUCKETS,
        )
        self.task_gauge = Gauge("eventscript_tasks", "Tasks owned", ["program"], registry=self.registry)
        self.idle_partitions = Counter(
            "eventscript_idle_partitions_total",
            "Times a source partition stopped "
            "holding record time back: read to its end, nothing new for its input's "
            "idle_timeout_ms",
            ["program"],
            registry=self.registry,
        )
        self.upgraded = Counter(
            "eventscript_upgraded_instances",
            "Instances written by another version of the program, as the tasks loaded them, by outcome: carried "
            "to the new version, restarted, ended; refused: a task that would not run over them",
            ["program", "outcome"],
            registry=self.registry,
        )
        self.idle_partitions_now = Gauge(
            "eventscript_idle_source_partitions",
            "Source partitions that hold no record time back now: read to their end, nothing new for "
            "their input's idle_timeout_ms (they are listed in /readyz)",
            ["program"],
            registry=self.registry,
        )
        self.event_time = Gauge(
            "eventscript_event_time_seconds",
            "A task's record clock (Unix seconds): where its inputs' progress has let it come",
            ["program", "task"],
            registry=self.registry,
        )
        self.event_time_lag = Gauge(
            "eventscript_event_time_lag_seconds",
            "Wall time minus a task's record clock",
            ["program", "task"],
            registry=self.registry,
        )
        self.held_back = Gauge(
            "eventscript_held_back_records",
            "Records a task holds back until every task writing its inputs has marked progress up to them",
            ["program", "task"],
            registry=self.registry,
        )
        self.instance_gauge = Gauge(
            "eventscript_instances", "Live instance contexts (one per group key)", ["program"], registry=self.registry
        )
        self.lag_gauge = Gauge(
            "eventscript_consumer_lag",
            "The worker's own estimate of input records not yet "
            "processed, from cached watermarks after each commit (stale when idle; prefer "
            "eventscript_kafka_consumer_lag)",
            ["program"],
            registry=self.registry,
        )
        self.ready_gauge = Gauge(
            "eventscript_ready",
            "1 when the program's worker holds an assignment that "
            "was not lost, has restored its tasks and its last commit succeeded",
            ["program"],
            registry=self.registry,
        )
        self.kafka = KafkaStats(self.registry)

    def register(self, program: str, ready: Callable[[], bool], partitions: int | None = None) -> None:
        """Create the program's series at start, so dashboards and alerts see them at zero.

        Readiness is read from the worker when scraped, so /metrics and /readyz never disagree."""
        if partitions is not None:
            self.partitions_gauge.labels(program).set(partitions)
        for kind in KINDS:
            self.records.labels(program, kind)
        self.commits.labels(program)
        self.timer_lateness.labels(program)
        for kind in FAULTS:
            self.faults.labels(program, kind)
        for kind in REBALANCES:
            self.rebalances.labels(program, kind)
        self.task_gauge.labels(program).set(0)
        self.instance_gauge.labels(program).set(0)
        self.lag_gauge.labels(program).set(0)
        self.ready_gauge.labels(program).set_function(lambda: 1.0 if ready() else 0.0)

    def idle_now(self, program: str, count: Callable[[], int]) -> None:
        """eventscript_idle_source_partitions, read from the worker when scraped (as /readyz)."""
        self.idle_partitions_now.labels(program).set_function(lambda: float(count()))

    def status(self, program: str, instances: int, lag: int) -> None:
        self.instance_gauge.labels(program).set(instances)
        self.lag_gauge.labels(program).set(lag)

    def count(self, program: str, kind: str, n: int = 1) -> None:
        """Count ``n`` records of ``kind``; the worker's "commits" go to eventscript_commits_total."""
        if kind == COMMITS:
            self.commits.labels(program).inc(n)
        elif kind == IDLE_PARTITIONS:
            self.idle_partitions.labels(program).inc(n)
        elif kind.startswith(UPGRADED):
            self.upgraded.labels(program, kind.removeprefix(UPGRADED)).inc(n)
        else:
            self.records.labels(program, kind).inc(n)

    def fault(self, program: str, kind: str) -> None:
        self.faults.labels(program, kind).inc()

    def rebalance(self, program: str, kind: str) -> None:
        self.rebalances.labels(program, kind).inc()

    def observe_commit(self, program: str, seconds: float) -> None:
        self.commit_seconds.labels(program).observe(seconds)

    def observe_restore(self, program: str, seconds: float) -> None:
        self.restore_seconds.labels(program).observe(seconds)

    def observe_timer_lateness(self, program: str, seconds: float) -> None:
        """A timer that fired ``seconds`` after its deadline (never negative: a timer is not early)."""
        self.timer_lateness.labels(program).observe(max(0.0, seconds))

    def tasks(self, program: str, n: int) -> None:
        self.task_gauge.labels(program).set(n)

    def state_sizes(self, program: str, sizes: Callable[[], dict[int, int]], force: bool = False) -> None:
        """Export ``sizes()`` (task -> bytes on disk) as eventscript_state_bytes, at most every
        STATE_SIZE_INTERVAL seconds unless ``force``; tasks no longer listed lose their series."""
        now = time.monotonic()
        if not force and now - self._state_read_at.get(program, -STATE_SIZE_INTERVAL) < STATE_SIZE_INTERVAL:
            return
        self._state_read_at[program] = now
        self._per_task(self.state_bytes, program, sizes())

    def restore_progress(self, program: str, remaining: dict[int, int]) -> None:
        """Export the records each restoring task has still to read; ``{}`` once none restores."""
        self._per_task(self.restore_remaining, program, remaining)

    def event_times(self, program: str, clocks: dict[int, tuple[int, int]]) -> None:
        """Export each record-time task's clock (µs), its lag behind the wall clock and the records
        it holds back (task → (clock, held back))."""
        now = time.time()
        self._per_task(self.event_time, program, {p: c / 1e6 for p, (c, _) in clocks.items()})
        self._per_task(self.event_time_lag, program, {p: now - c / 1e6 for p, (c, _) in clocks.items()})
        self._per_task(self.held_back, program, {p: h for p, (_, h) in clocks.items()})

    def _per_task(self, gauge: Gauge, program: str, values: dict[int, Any]) -> None:
        """Set ``gauge{program, task}`` for the tasks given and drop the series of the others."""
        now = {str(p) for p in values}
        for p, value in values.items():
            gauge.labels(program, str(p)).set(value)
        key = (str(id(gauge)), program)
        for task in self._labelled.get(key, set()) - now:
            try:
                gauge.remove(program, task)
            except KeyError:
                pass
        self._labelled[key] = now


class KafkaStats:
    """Series read from librdkafka's statistics JSON (``stats_cb``), per program and client.

    - ``eventscript_kafka_consumer_lag{program, topic, partition}``: the partition's end (the last
      stable offset under read_committed) minus the next offset the worker will read;
    - ``eventscript_kafka_broker_rtt_seconds{program, client, broker, quantile}``: request round trip
      (avg and p99 over the statistics interval);
    - ``eventscript_kafka_queue_messages{program, client}``: messages waiting in the client's queues
      (for the producer: not yet delivered).
    Partitions the consumer no longer fetches are dropped from the lag series.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.lag = Gauge(
            "eventscript_kafka_consumer_lag",
            "Records behind the end of each input partition the worker reads (librdkafka statistics)",
            ["program", "topic", "partition"],
            registry=registry,
        )
        self.rtt = Gauge(
            "eventscript_kafka_broker_rtt_seconds",
            "Broker request round-trip time (librdkafka statistics)",
            ["program", "client", "broker", "quantile"],
            registry=registry,
        )
        self.queue = Gauge(
            "eventscript_kafka_queue_messages",
            "Messages in the client's queues (librdkafka statistics msg_cnt)",
            ["program", "client"],
            registry=registry,
        )
        self._partitions: dict[str, set[tuple[str, str]]] = {}

    def update(self, program: str, client: str, stats: dict[str, Any]) -> None:
        self.queue.labels(program, client).set(float(stats.get("msg_cnt", 0)))
        for broker in (stats.get("brokers") or {}).values():
            rtt = broker.get("rtt") or {}
            if broker.get("nodeid", -1) < 0 or not rtt.get("cnt"):
                continue  # bootstrap placeholders, or no request in this interval
            name = str(broker.get("nodename") or broker.get("name"))
            self.rtt.labels(program, client, name, "avg").set(rtt.get("avg", 0) / 1e6)
            self.rtt.labels(program, client, name, "0.99").set(rtt.get("p99", 0) / 1e6)
        if stats.get("type") == "consumer":
            self._update_lag(program, stats)

    def _update_lag(self, program: str, stats: dict[str, Any]) -> None:
        seen: set[tuple[str, str]] = set()
        for topic, t in (stats.get("topics") or {}).items():
            for p in (t.get("partitions") or {}).values():
                lag = partition_lag(p)
                if lag is not None:
                    key = (topic, str(p["partition"]))
                    seen.add(key)
                    self.lag.labels(program, *key).set(lag)
        for key in self._partitions.get(program, set()) - seen:
            try:
                self.lag.remove(program, *key)
            except KeyError:
                pass
        self._partitions[program] = seen

    def callback(self, program: str, client: str) -> Callable[[str], None]:
        """A ``stats_cb`` for confluent-kafka: never raises into librdkafka's poll."""

        def on_stats(text: str) -> None:
            try:
                self.update(program, client, json.loads(text))
            except (ValueError, TypeError, KeyError):
                pass

        return on_stats


def partition_lag(p: dict[str, Any]) -> int | None:
    """Lag of one partition of librdkafka's statistics, or None when it is not being fetched.

    librdkafka's own ``consumer_lag`` counts from the committed offset, which a transactional
    worker never tells its consumer about; the next offset handed to the application
    (``app_offset``) is where the worker really is, and the committed offset stands in before the
    first fetch."""
    if p.get("partition", -1) < 0 or p.get("fetch_state") in (None, "none", "stopped"):
        return None
    end = p.get("ls_offset", -1)
    if end is None or end < 0:
        end = p.get("hi_offset", -1)
    position = p.get("app_offset", -1)
    if position is None or position < 0:
        position = p.get("committed_offset", -1)
    if end is None or end < 0 or position is None or position < 0:
        return None
    return max(0, end - position)


def restore_to_go(restoration: Any) -> dict[int, int]:
    """Records left to read per task of a restore in progress (kafka/restore.py's Restoration):
    the changelog partition's end (its high watermark as last fetched: no request to the broker)
    minus the next offset the restore reads. Until the first fetch brings the end, 0."""
    positions = {p: restoration.last.get(p, restoration.starts.get(p, 0)) for p in restoration.tasks}
    return changelog_to_go(restoration.restorer, restoration.changelog_topic, positions)


def changelog_to_go(consumer: Any, topic: str, positions: dict[int, int]) -> dict[int, int]:
    """Offsets left to read per changelog partition, from ``positions`` (next offset to read) to the
    end as ``consumer`` last fetched it (0 when no fetch has told it yet)."""
    out = {}
    for p, position in positions.items():
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), cached=True)
        except Exception:  # not assigned (any more): nothing to tell
            continue
        out[p] = max(0, high - max(position, 0)) if high is not None and high >= 0 else 0
    return out


def stats_config(
    metrics: Metrics | None, program: str, client: str, conf: dict[str, Any] | None = None
) -> dict[str, Any]:
    """librdkafka settings that feed :class:`KafkaStats` (none without metrics).

    ``conf`` is the client's settings so far: a ``statistics.interval.ms`` there (the topology's
    kafka.consumer or kafka.producer) wins over the default."""
    if metrics is None:
        return {}
    interval = (conf or {}).get("statistics.interval.ms", STATS_INTERVAL_MS)
    return {"statistics.interval.ms": interval, "stats_cb": metrics.kafka.callback(program, client)}
