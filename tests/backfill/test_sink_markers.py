"""The Kafka sink writes what a reader downstream needs (issue 21, ``backfill/markers.py``): the
records of a topic a program on record time reads in record-time order, whatever order the
backfill gave them, then each writing task's final marker on every partition, in the one
transaction. Against the session's broker, without Spark."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kafka_helpers import Broker, read_many, topology, unique, wait_for

from eventscript.backfill.kafka_sink import KafkaSink
from eventscript.backfill.markers import final_markers, read_topics
from eventscript.backfill.records import OutputRow
from eventscript.kafka import codec
from eventscript.kafka.admin import Admin
from eventscript.kafka.config import load_topology
from eventscript.task.progress import IDLE, read_marker, read_reached

pytestmark = [pytest.mark.kafka]

T0 = 1_767_225_600_000  # ms
RELAY = """
in {string k;} Tick group(Tick.k)
out {string k;} Seen
( Tick(t) { !>Seen({k: t.k}); } )*
"""


def stage(name: str, reads: str, event: str, writes: str) -> dict[str, object]:
    """A program of the relay on record time (the second one reads its output: markers there)."""
    return {
        "name": name,
        "source": "relay.es",
        "clock": "record",
        "inputs": [{"topic": reads, "event": event, "keyed": False}],
        "outputs": {"default": writes},
        "errors": f"{name}-err",
    }


def test_the_sink_writes_read_topics_in_record_time_order_then_the_writers_final_markers(
    broker: Broker, tmp_path: Path
) -> None:
    name = unique("relay")
    (tmp_path / "relay.es").write_text(RELAY)
    path = topology(
        broker,
        tmp_path,
        [stage(name, f"{name}-in", "Tick", f"{name}-mid"), stage(f"{name}-2", f"{name}-mid", "Seen", f"{name}-out")],
        {f"{name}-in": {"partitions": 2}, f"{name}-mid": {"partitions": 3}},
    )
    topo = load_topology(path)
    Admin(topo).prepare(topo.programs)
    cfg = topo.programs[0]
    mid = f"{name}-mid"
    # As key-parallel mode gives them: key group after key group (here k1's, then k0's).
    times = {b"k1": [5, 7, 9], b"k0": [4, 6, 8]}
    rows = [
        OutputRow(0, mid, None, k, b'{"k": "%s"}' % k, [(codec.HEADER_ID, b"%s/%d" % (k, t))], T0 + t * 1000)
        for k, ts in times.items()
        for t in ts
    ]
    clocks = {0: T0 + 9_000, 1: T0 + 8_000}
    with KafkaSink(
        topo.kafka,
        unique("txn"),
        markers=lambda partitions_of: final_markers(topo, cfg, 2, clocks, partitions_of, handover=False),
        ordered=read_topics(topo, cfg),
    ) as sink:
        sink.write_all(rows)
        sink.commit()
    assert sink.count == 6 and sink.marker_count == 2 * 3
    got = read_many(broker, [mid], dedupe=False)[mid]
    by_partition: dict[int, list[tuple[int, object]]] = {}
    for m in got:
        by_partition.setdefault(m.partition(), []).append((m.timestamp()[1], read_marker(m.headers())))
    assert sorted(by_partition) == [0, 1, 2]
    for p, seen in by_partition.items():
        records = [ts for ts, marker in seen if marker is None]
        assert records == sorted(records), p
        assert [marker for _, marker in seen[-2:]] == [(f"{cfg.name}/0", IDLE), (f"{cfg.name}/1", IDLE)], p
        assert all(marker is None for _, marker in seen[:-2]), p
    assert sorted(t for seen in by_partition.values() for t, marker in seen if marker is None) == sorted(
        T0 + t * 1000 for ts in times.values() for t in ts
    )
    reached = {read_reached(m.headers()) for m in got if read_marker(m.headers()) is not None}
    assert reached == set(clocks.values())


ECHO = """
in {string k;} Seen group(Seen.k)
out {string k;} Echo
( Seen(s) { !>Echo({k: s.k}); } )*
"""


def test_after_a_handover_a_worker_downstream_waits_for_the_workers_that_go_on(broker: Broker, tmp_path: Path) -> None:
    """``--handover``'s markers on Apache Kafka: each task's final clock as its progress, so a
    worker downstream takes the backfill's records before the least of them and holds the rest
    back, for the program's workers that go on from the cut as the same writers; once they mark
    their progress past them (here: idle, as workers with nothing more to read), it takes them."""
    from eventscript.kafka.supervisor import TopologyRunner

    name = unique("handed")
    (tmp_path / "relay.es").write_text(RELAY)
    (tmp_path / "echo.es").write_text(ECHO)
    second = {**stage(f"{name}-2", f"{name}-mid", "Seen", f"{name}-out"), "source": "echo.es"}
    path = topology(
        broker,
        tmp_path,
        [stage(name, f"{name}-in", "Tick", f"{name}-mid"), second],
        {f"{name}-in": {"partitions": 2}, f"{name}-mid": {"partitions": 3}},
    )
    topo = load_topology(path)
    Admin(topo).prepare(topo.programs)
    cfg = topo.programs[0]
    mid, out = f"{name}-mid", f"{name}-out"
    times = {b"k1": [5, 7, 9], b"k0": [4, 6, 8]}  # (key group after key group)
    rows = [
        OutputRow(0, mid, None, k, b'{"k": "%s"}' % k, [(codec.HEADER_ID, b"%s/%d" % (k, t))], T0 + t * 1000)
        for k, ts in times.items()
        for t in ts
    ]
    clocks = {0: T0 + 9_000, 1: T0 + 8_000}
    with KafkaSink(
        topo.kafka,
        unique("txn"),
        markers=lambda partitions_of: final_markers(topo, cfg, 2, clocks, partitions_of, handover=True),
        ordered=read_topics(topo, cfg),
    ) as sink:
        sink.write_all(rows)
        sink.commit()
    runner = TopologyRunner(topo, [second["name"]])  # (the first program's workers are not running yet)
    runner.prepare()
    thread = threading.Thread(target=lambda: runner.run(install_signals=False), daemon=True)
    thread.start()
    try:

        def echoed() -> list[int]:
            # (each key on its own partition, as the relay writes them: the echo keeps its
            # upstream's key, topology/keyed.py, and each record is on its key's task)
            return sorted((m.timestamp()[1] - T0) // 1000 for m in read_many(broker, [out], snapshot=True)[out])

        def held_back() -> int:
            return sum(t.held_back for w in runner.workers for t in w.task_manager.tasks.values())

        wait_for(lambda: echoed() == [4, 5, 6, 7] and held_back() == 2, 60, what="the records before 8 s")
        # The first program's workers went on from the cut and have read everything: idle.
        with KafkaSink(
            topo.kafka,
            unique("txn"),
            markers=lambda partitions_of: final_markers(topo, cfg, 2, clocks, partitions_of, handover=False),
        ) as sink:
            sink.commit()
        wait_for(lambda: echoed() == [4, 5, 6, 7, 8, 9], 60, what="the records held back")
        assert held_back() == 0
    finally:
        runner.stop()
        thread.join(30)
