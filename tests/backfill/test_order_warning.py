"""Key-parallel and key-split output to a topic another program reads is no longer warned about
(docs/backfill.md): the Kafka sink writes the topics other programs read in record-time order
(then the final progress markers: backfill/markers.py), whatever their readers' clock."""

from __future__ import annotations

from pathlib import Path

from eventscript.backfill.markers import read_topics
from eventscript.kafka.config import load_topology

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def test_the_topics_another_program_reads_are_put_in_record_time_order_and_a_sink_topic_is_not() -> None:
    topo = load_topology(TOPOLOGIES / "sensors" / "topology.yaml")
    first, second = topo.programs
    assert read_topics(topo, first) == {i.topic for i in second.inputs}
    assert read_topics(topo, second) == set()  # site-alarms and the errors: read by no program
    second.clock = "wall"  # a reader on the wall clock needs the order too (markers aside)
    assert read_topics(topo, first) == {i.topic for i in second.inputs}
