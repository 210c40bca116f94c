"""The Kafka sink writes what a reader downstream needs (issue 21, ``backfill/markers.py``): the
records of a topic a program on record time reads in record-time order, whatever order the
backfill gave them, then each writing task's final marker on every partition, in the one
transaction. Against the session's broker, without Spark."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_helpers import Broker, read_many, topology, unique

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
        OutputRow(0, mid, None, k, b'{"k": "x"}', [(codec.HEADER_ID, b"%s/%d" % (k, t))], T0 + t * 1000)
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
