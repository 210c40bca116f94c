"""A trace dated ahead of the broker's clock (Kafka 4 refuses records stamped more than
``message.timestamp.after.max.ms``, one hour by default, ahead): ``produce_trace`` warns before
producing and, when the broker refuses, says which setting refused and what to do, instead of
librdkafka's bare "Broker: Invalid timestamp"."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_helpers import Broker, program_topology

from eventscript.kafka.admin import Admin
from eventscript.kafka.config import load_topology
from eventscript.kafka.supervisor import compile_programs
from eventscript.kafka.tools import ProduceError, produce_trace
from eventscript.tester.trace import read_trace

PROGRAM = """
in {string k;} Hit group(Hit.k)
out long Seen
( Hit() { !>Seen(1); } )*
"""
TRACE = '[{when}]\nHit({{k: "a"}})\n'


def test_a_refused_future_timestamp_names_the_setting(broker: Broker, tmp_path: Path) -> None:
    broker.require_real("topic configs (message.timestamp.after.max.ms)")
    name, path = program_topology(broker, tmp_path, PROGRAM, "future", "Hit")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = NewTopic(f"{name}-in", 1, 1, config={"message.timestamp.after.max.ms": "3600000"})
    admin.create_topics([topic])[f"{name}-in"].result(30)
    topo = load_topology(path)
    Admin(topo).prepare(topo.programs)
    cfg = topo.program(name)
    compiled = compile_programs(topo, topo.programs)[name]
    warnings: list[str] = []
    (tmp_path / "t.trace").write_text(TRACE.format(when="2099-01-01 00:00:00"))
    trace = read_trace(tmp_path / "t.trace")
    with pytest.raises(ProduceError) as refused:
        produce_trace(topo.kafka, cfg, compiled, trace, 1, warn=warnings.append)
    message = str(refused.value)
    assert "message.timestamp.after.max.ms" in message, message
    assert f"{name}-in:0" in message
    assert any("ahead of this machine's clock" in w for w in warnings), warnings


def test_a_present_trace_gives_no_warning(broker: Broker, tmp_path: Path) -> None:
    name, path = program_topology(broker, tmp_path, PROGRAM, "present", "Hit", partitions=1)
    topo = load_topology(path)
    Admin(topo).prepare(topo.programs)
    warnings: list[str] = []
    (tmp_path / "t.trace").write_text(TRACE.format(when=datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")))
    trace = read_trace(tmp_path / "t.trace")
    sent = produce_trace(
        topo.kafka, topo.program(name), compile_programs(topo, topo.programs)[name], trace, 1, warn=warnings.append
    )
    assert sent == 1 and warnings == []
