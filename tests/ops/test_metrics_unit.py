"""The worker's metrics without a broker: commits apart from records, build info, process
collectors, and lag read from librdkafka's statistics JSON."""

from __future__ import annotations

import json
import time
from pathlib import Path

from eventscript.kafka.metrics import KINDS, Metrics, partition_lag, stats_config


def _samples(m: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value for family in m.registry.collect() for s in family.samples
    }


def _value(m: Metrics, name: str, **labels: str) -> float | None:
    return _samples(m).get((name, tuple(sorted(labels.items()))))


def test_commits_are_not_records() -> None:
    m = Metrics()
    m.register("p", lambda: True)
    m.count("p", "commits", 2)
    m.count("p", "consumed", 5)
    assert "commits" not in KINDS
    assert _value(m, "eventscript_commits_total", program="p") == 2.0
    assert _value(m, "eventscript_records_total", program="p", kind="consumed") == 5.0
    assert not any(
        n == "eventscript_records_total" and dict(labels).get("kind") == "commits" for n, labels in _samples(m)
    )


def test_upgraded_instances_are_counted_by_outcome_not_as_records() -> None:
    m = Metrics()
    m.count("p", "upgraded_carried", 3)
    m.count("p", "upgraded_restarted")
    assert _value(m, "eventscript_upgraded_instances_total", program="p", outcome="carried") == 3.0
    assert _value(m, "eventscript_upgraded_instances_total", program="p", outcome="restarted") == 1.0
    assert not any(n == "eventscript_records_total" for n, _ in _samples(m))


def test_build_info_and_process_collectors() -> None:
    names = {name for name, _ in _samples(Metrics())}
    assert {
        "eventscript_build_info",
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "python_gc_collections_total",
        "python_info",
    } <= names
    labels = next(dict(lbl) for n, lbl in _samples(Metrics()) if n == "eventscript_build_info")
    assert set(labels) == {"version", "python", "confluent_kafka", "librdkafka"}


def _partition(p: int, **fields: object) -> dict[str, object]:
    return {
        "partition": p,
        "fetch_state": "active",
        "ls_offset": 100,
        "hi_offset": 120,
        "app_offset": 40,
        "committed_offset": 10,
        **fields,
    }


def test_partition_lag_counts_from_where_the_worker_reads() -> None:
    assert partition_lag(_partition(0)) == 60  # ls_offset (read_committed) - app_offset
    assert partition_lag(_partition(0, app_offset=-1001)) == 90  # committed offset before the first fetch
    assert partition_lag(_partition(0, ls_offset=-1)) == 80  # hi_offset when there is no LSO
    assert partition_lag(_partition(-1)) is None  # the unassigned-partition placeholder
    assert partition_lag(_partition(0, fetch_state="none")) is None
    assert partition_lag(_partition(0, app_offset=-1001, committed_offset=-1001)) is None


def test_stats_callback_sets_and_drops_partitions() -> None:
    m = Metrics()
    cb = stats_config(m, "p", "consumer")["stats_cb"]
    stats = {
        "type": "consumer",
        "msg_cnt": 3,
        "brokers": {
            "b1:9092/1": {"nodeid": 1, "nodename": "b1:9092", "rtt": {"cnt": 4, "avg": 2000, "p99": 9000}},
            "GroupCoordinator": {"nodeid": -1, "rtt": {"cnt": 0}},
        },
        "topics": {
            "in": {"partitions": {"0": _partition(0), "1": _partition(1, app_offset=100), "-1": _partition(-1)}}
        },
    }
    cb(json.dumps(stats))
    assert _value(m, "eventscript_kafka_consumer_lag", program="p", topic="in", partition="0") == 60.0
    assert _value(m, "eventscript_kafka_consumer_lag", program="p", topic="in", partition="1") == 0.0
    assert (
        _value(
            m, "eventscript_kafka_broker_rtt_seconds", program="p", client="consumer", broker="b1:9092", quantile="0.99"
        )
        == 0.009
    )
    assert _value(m, "eventscript_kafka_queue_messages", program="p", client="consumer") == 3.0
    del stats["topics"]["in"]["partitions"]["1"]
    cb(json.dumps(stats))
    assert _value(m, "eventscript_kafka_consumer_lag", program="p", topic="in", partition="1") is None
    cb("not json")  # never raises into librdkafka


def test_stats_interval_from_the_topology_wins() -> None:
    m = Metrics()
    assert stats_config(None, "p", "consumer") == {}
    assert stats_config(m, "p", "consumer")["statistics.interval.ms"] == 10_000
    assert stats_config(m, "p", "consumer", {"statistics.interval.ms": 500})["statistics.interval.ms"] == 500


def test_timer_lateness_is_observed_when_a_wall_clock_timer_fires(tmp_path: Path) -> None:
    """The worker observes how long after its deadline a due timer fired, once per firing turn;
    a turn with nothing due observes nothing."""
    from eventscript.automata.compile import compile_source
    from eventscript.kafka.config import parse_topology
    from eventscript.kafka.task import Task
    from eventscript.kafka.worker import ProgramWorker

    program = compile_source(
        "in {string k;} A group(A.k)\nout {string k;} Late\nA(a) elapse[1 milliseconds]() { !>Late({k: group[0]}); }",
        name="p",
    ).require()
    topo = parse_topology(
        {
            "application": "app",
            "kafka": {"bootstrap_servers": "localhost:1"},
            "programs": [
                {
                    "name": "p",
                    "source": "p.es",
                    "clock": "wall",
                    "inputs": [{"topic": "in", "event": "A"}],
                    "outputs": {"default": "out"},
                }
            ],
            "state_dir": str(tmp_path),
        }
    )
    cfg = topo.programs[0]
    m = Metrics()
    m.register("p", lambda: True)
    worker = ProgramWorker(topo, cfg, program, 1, "me", m)
    task = Task(0, program, cfg, cfg.inputs, "app.p-repartition", "app.p-changelog", 1, tmp_path / "task-0")
    try:
        task.restored = True
        assert worker._fire_timers(task) == 0
        assert _value(m, "eventscript_timer_lateness_seconds_count", program="p") == 0.0
        task.clock.refresh()  # type: ignore[attr-defined]
        task.engine.feed_keyed("A", {"k": "x"}, ("x",))
        deadline = task.next_timer()
        assert deadline is not None
        time.sleep(0.05)
        assert worker._fire_timers(task) == 1
        assert [r.value for r in task.outbox if not r.changelog] == [b'{"k":"x"}']
        assert _value(m, "eventscript_timer_lateness_seconds_count", program="p") == 1.0
        late = _value(m, "eventscript_timer_lateness_seconds_sum", program="p")
        assert late is not None and 0.049 <= late < 5.0
        assert _value(m, "eventscript_timer_lateness_seconds_bucket", program="p", le="0.025") == 0.0
        assert _value(m, "eventscript_timer_lateness_seconds_bucket", program="p", le="60.0") == 1.0
    finally:
        task.close()


def test_state_sizes_per_task_are_throttled_and_dropped_with_the_task() -> None:
    m = Metrics()
    reads = []

    def sizes() -> dict[int, int]:
        reads.append(1)
        return {0: 1000, 3: 2500} if len(reads) == 1 else {3: 4000}

    m.state_sizes("p", sizes)
    assert _value(m, "eventscript_state_bytes", program="p", task="0") == 1000.0
    assert _value(m, "eventscript_state_bytes", program="p", task="3") == 2500.0
    m.state_sizes("p", sizes)  # within STATE_SIZE_INTERVAL: not read again
    assert len(reads) == 1
    m.state_sizes("p", sizes, force=True)  # task 0 revoked meanwhile: its series goes
    assert _value(m, "eventscript_state_bytes", program="p", task="0") is None
    assert _value(m, "eventscript_state_bytes", program="p", task="3") == 4000.0


def test_a_task_store_reports_its_size_on_disk(tmp_path: Path) -> None:
    from eventscript.state.store import TaskStore

    store = TaskStore(tmp_path / "task-0")
    assert store.disk_bytes() == 0  # not opened: nothing on disk
    store.write({b"\x01k%d" % i: b"v" * 200 for i in range(2000)}, 1, None)
    in_memtables = store.disk_bytes()
    assert in_memtables > 2000 * 200 / 2
    store.db.flush()
    assert store.disk_bytes() > 2000 * 200 / 10  # now in table files (compressed)
    store.close()


class _Restorer:
    """Stands in for the restore's changelog consumer: high watermarks as last fetched."""

    def __init__(self, highs: dict[int, int]) -> None:
        self.highs = highs

    def get_watermark_offsets(self, tp: object, cached: bool = False) -> tuple[int, int]:
        assert cached, "the metric must not ask the broker"
        return (0, self.highs.get(tp.partition, -1001))  # type: ignore[attr-defined]


def test_restore_progress_counts_records_to_go_per_task() -> None:
    from types import SimpleNamespace

    from eventscript.kafka.metrics import restore_to_go

    restoration = SimpleNamespace(
        restorer=_Restorer({0: 1000, 1: 50}),
        changelog_topic="c",
        tasks={0: object(), 1: object(), 2: object()},
        starts={0: 0, 1: 40, 2: 0},
        last={0: 300},
    )
    # Task 0 read up to 300 of 1000; task 1 starts at its checkpoint 40 of 50; task 2's end is not
    # known before its first fetch.
    assert restore_to_go(restoration) == {0: 700, 1: 10, 2: 0}
    m = Metrics()
    m.restore_progress("p", restore_to_go(restoration))
    assert _value(m, "eventscript_restore_remaining_records", program="p", task="0") == 700.0
    m.restore_progress("p", {})  # restored: no series left
    assert not [n for n, _ in _samples(m) if n == "eventscript_restore_remaining_records"]


def test_partitions_are_exported_when_registered() -> None:
    m = Metrics()
    m.register("p", lambda: True, 6)
    assert _value(m, "eventscript_partitions", program="p") == 6.0
