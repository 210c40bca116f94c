"""``eventscript backfill --handover`` against the session's broker: live workers go on from the
backfill's state and offsets (one of them killed -9 on the way) with nothing lost and nothing
twice; contexts handed over by several tasks of one partition share the worker's timer queue;
refusals when the preconditions do not hold."""

from __future__ import annotations

import dataclasses
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from kafka_helpers import (
    Broker,
    KeyedProducer,
    TopicWatcher,
    instance_state,
    read_many,
    run_in_thread,
    start_worker,
    stop_when_all_out,
    tear_down,
    unique,
    wait_for,
)
from test_backfill_tasks import PROGRAM, by_key, export_of, random_trace, run_tester, trace_time
from test_backfill_tasks import topology as export_topology
from test_kafka_sink import program_topology
from trace_export import write_jsonl_export

from eventscript.backfill import handover as ho
from eventscript.backfill import key_parallel
from eventscript.backfill.job import export_plan
from eventscript.backfill.kafka_sink import Transaction
from eventscript.backfill.records import output_rows
from eventscript.backfill.source import slice_batches
from eventscript.backfill.stages import run_partition
from eventscript.cli.main import main
from eventscript.engine.context import decode
from eventscript.kafka import codec
from eventscript.kafka.config import Topology
from eventscript.kafka.state import CLOCK_KEY, SEQ_KEY
from eventscript.kafka.tools import record_to_json
from eventscript.state.keyinfo import snapshot_of

PARTITIONS = 2
T0 = 1_767_225_600_000  # ms: 2026-01-01
#: Record time between two records: each of the 12 keys falls quiet (30 s) now and then.
STEP_MS = 3000


def trace_of(records: list[Any], end_ms: int) -> str:
    """The input records as one trace, in record time, ending with record time at ``end_ms``."""
    lines = []
    for m in sorted(records, key=lambda m: (m.timestamp()[1], m.partition(), m.offset())):
        if codec.header(m.headers(), codec.HEADER_TICK) is not None:
            continue
        v = orjson.loads(m.value())
        lines += [f"[{trace_time(m.timestamp()[1] * 1000)}]", f'Tick({{k: "{v["k"]}", n: {v["n"]}}})']
    lines.append(f"[{trace_time(end_ms * 1000)}]")
    return "\n".join(lines) + "\n"


def collect_state(batches: Iterator[pa.RecordBatch], state: ho.HandoverState) -> None:
    """The hand-over rows (kind "state") of task output batches, as the driver collects them."""
    for batch in batches:
        for row in output_rows(batch.filter(pc.equal(batch.column("kind"), "state"))):
            state.add(row)


def committed_offsets(topo: Topology, cfg: Any) -> dict[tuple[str, int], int]:
    """The consumer group's committed offsets of the program's input topics."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    from eventscript.kafka import clients

    group = topo.group_id(cfg)
    admin = AdminClient(clients.admin_config(topo.kafka))
    found = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(10)
    inputs = {i.topic for i in cfg.inputs}
    return {(tp.topic, tp.partition): tp.offset for tp in found.topic_partitions if tp.topic in inputs}


def input_ends(broker: Broker, topic: str) -> dict[int, int]:
    """Each partition's next offset: one past its last record."""
    ends: dict[int, int] = {}
    for m in read_many(broker, [topic], idle=0.2, dedupe=False)[topic]:
        ends[m.partition()] = max(ends.get(m.partition(), 0), m.offset() + 1)
    return ends


def distinct_by_id(records: list[Any]) -> list[Any]:
    """Each es-id once; a repeat (a record of a transaction the kill aborted, which the embedded
    broker shows) must be a byte-identical copy."""
    kept: dict[bytes, Any] = {}
    for m in records:
        rid = codec.header(m.headers(), codec.HEADER_ID)
        assert rid is not None
        first = kept.setdefault(rid, m)
        assert (first.key(), first.value(), first.headers(), first.timestamp()) == (
            m.key(),
            m.value(),
            m.headers(),
            m.timestamp(),
        ), f"{rid!r} repeated with other contents"
    return list(kept.values())


@pytest.mark.kafka
@pytest.mark.spark
@pytest.mark.parametrize("split", ["1", "2"], ids=["partition-mode", "key-split"])
def test_workers_go_on_from_the_handover_with_nothing_lost_and_nothing_twice(
    spark: Any, broker: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str], split: str
) -> None:
    """In key-split mode (``--split 2``) each of a partition's two tasks hands over its keys and
    the partition's record clock."""
    path, topo = program_topology(broker, tmp_path)
    cfg = topo.programs[0]
    topic, out = cfg.inputs[0].topic, cfg.output_topic("Count")
    assert out is not None
    history, rest, keys = 200, 240, 12
    producer = KeyedProducer(broker, topic, PARTITIONS)
    producer.run(history, keys, rate=1e9, t0=T0, step_ms=STEP_MS, seed=1)

    assert main(["backfill", str(path), "--handover", "--no-ui", "--split", split]) == 0
    said = capsys.readouterr().err
    assert f"to {topo.changelog_topic(cfg)} and committed the offsets of consumer group {topo.group_id(cfg)}" in said
    assert f"{PARTITIONS * int(split)}/{PARTITIONS * int(split)} {'tasks' if split != '1' else 'partitions'}" in said
    handed_over = read_many(broker, [out], idle=0.2)[out]
    backfilled = len(handed_over)
    assert backfilled > 0
    assert committed_offsets(topo, cfg) == {(topic, p): end for p, end in input_ends(broker, topic).items()}

    log = tmp_path / "worker.log"
    watcher = TopicWatcher(broker, out)
    worker = start_worker(path, "-v", log=log)
    writing = threading.Thread(
        target=producer.run,
        daemon=True,
        kwargs={"count": rest, "keys": keys, "rate": 100, "seed": 2, "t0": T0 + history * STEP_MS, "step_ms": STEP_MS},
    )
    writing.start()
    try:
        wait_for(lambda: watcher.distinct() >= backfilled + 40, 60, interval=0.1, what="the worker's first outputs")
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        worker = start_worker(path, "-v", log=log)
        writing.join(60)
        end_ms = T0 + (history + rest) * STEP_MS + 60_000  # every pending timer fires by then
        for p in range(PARTITIONS):  # a tick, as `eventscript produce` writes them
            producer.producer.produce(topic, b"{}", None, p, timestamp=end_ms, headers=[(codec.HEADER_TICK, b"1")])
        producer.producer.flush(10)
        inputs = read_many(broker, [topic], dedupe=False)[topic]
        want = by_key(run_tester(PROGRAM, trace_of(inputs, end_ms)))
        total = sum(len(v) for v in want.values())
        stop_when_all_out(worker, watcher, total, 90, log)
    finally:
        tear_down(worker, watcher, producer)
    raw = read_many(broker, [out, cfg.error_topic], dedupe=False)
    assert raw[cfg.error_topic] == []
    got = by_key([record_to_json(m) for m in distinct_by_id(raw[out])])
    assert got == want
    assert any(line[1] == "Quiet" for lines in want.values() for line in lines)
    # The workers went on from the cut: none of them wrote an output of the history again ...
    ids = [codec.header(m.headers(), codec.HEADER_ID) for m in raw[out]]
    assert all(ids.count(codec.header(m.headers(), codec.HEADER_ID)) == 1 for m in handed_over)
    # ... and from the handed-over state, restored from the changelog.
    assert any(int(n) > 0 for n in re.findall(r"changelog from offset 0: (\d+) applied", log.read_text()))


@pytest.mark.kafka
def test_contexts_of_two_tasks_with_equal_timers_restore_into_one_worker(broker: Broker, tmp_path: Path) -> None:
    """Two tasks of one partition (as in key-parallel mode) each hand over an instance whose timer
    has the same deadline and the same sequence number; one worker restores both into one timer
    queue, and both fire when record time passes the deadline."""
    from confluent_kafka import Producer, TopicPartition

    from eventscript.kafka import clients

    path, topo = program_topology(broker, tmp_path, partitions=1)
    cfg = topo.programs[0]
    topic, out = cfg.inputs[0].topic, cfg.output_topic("Count")
    assert out is not None
    rows = [
        (topic, 0, i, T0, k.encode(), b'{"k": "%s", "n": %d}' % (k.encode(), i), None) for i, k in enumerate(["a", "b"])
    ]
    producer = Producer(clients.producer_config(topo.kafka))
    for r in [*rows, (topic, 0, 2, T0 + 60_000, b"c", b'{"k": "c", "n": 2}', None)]:
        producer.produce(topic, r[5], r[4], 0, timestamp=r[3])
    producer.flush(10)

    state = ho.HandoverState()
    try:
        for name, row in zip("ab", rows):  # one task per key: each its own engine, timer sequence 0
            plan = export_plan(topo, cfg, [str(write_jsonl_export([row], tmp_path / f"{name}.jsonl"))])
            plan = dataclasses.replace(plan, handover=True)
            collect_state(run_partition(plan, 0, slice_batches(plan, plan.slices[0])), state)
        timers = [decode(snapshot_of(r[3])).timer for r in state.records() if r[2][:1] == b"["]
        assert len(timers) == 2 and timers[0] is not None and timers[0] == timers[1]  # (deadline, symbol, seq)
        target = ho.HandoverTarget(
            topo.group_id(cfg),
            topo.changelog_topic(cfg),
            [TopicPartition(topic, 0, 2), TopicPartition(topo.repartition_topic(cfg), 0, 0)],
        )
        txn = Transaction(topo.kafka, unique("txn"))
        ho.write(txn, topo, target, state, force=False)
    finally:
        state.close()

    assert run_in_thread(path, until_idle=1.5) == 0
    got = sorted(
        (orjson.loads(m.value())["k"], codec.header(m.headers(), codec.HEADER_EVENT))
        for m in read_many(broker, [out], idle=0.3)[out]
    )
    assert got == [("a", b"Quiet"), ("b", b"Quiet"), ("c", b"Count")]


@pytest.mark.kafka
def test_a_handover_is_refused_when_its_preconditions_do_not_hold(
    broker: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from eventscript.kafka import clients

    path, topo = program_topology(broker, tmp_path)
    cfg = topo.programs[0]
    topic, group = cfg.inputs[0].topic, topo.group_id(cfg)
    KeyedProducer(broker, topic, PARTITIONS).run(10, 3, rate=1e9)

    def refused(*extra: str) -> str:
        assert main(["backfill", str(path), "--handover", "--no-ui", *extra]) == 2
        return capsys.readouterr().err

    assert "--handover needs the Kafka source" in refused("--input", str(tmp_path / "x.jsonl"))
    assert "--handover with --until" in refused("--until", "2026-02-01T00:00:00Z")
    assert main(["backfill", str(path), "--force", "--no-ui"]) == 2
    assert "--force only applies to --handover" in capsys.readouterr().err

    committer = Consumer(clients.consumer_config(topo.kafka, group))
    committer.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    committer.close()
    err = refused()
    assert f"consumer group {group} already has committed offsets ({topic}:0@3)" in err and "--force" in err

    producer = Producer(clients.producer_config(topo.kafka))
    producer.produce(topo.changelog_topic(cfg), b"x", b'["k"]', 1)
    producer.flush(10)
    err = refused("--force")
    assert f"the changelog topic {topo.changelog_topic(cfg)} is not empty (partitions 1)" in err

    member = Consumer(
        clients.consumer_config(topo.kafka, group, **{"session.timeout.ms": 3000, "heartbeat.interval.ms": 500})
    )
    member.subscribe([topo.repartition_topic(cfg)])
    try:
        wait_for(
            lambda: member.poll(0.2) is not None or bool(member.assignment()), 30, interval=0, what="the member to join"
        )
        err = refused("--force")
        assert f"consumer group {group} has active members" in err and "stop them first" in err
    finally:
        member.close()


def test_key_parallel_tasks_hand_over_the_partition_modes_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several key groups' tasks of one partition: their records merged per partition give the
    instances, record clock and cut position of partition mode (timer sequence numbers aside:
    each group's engine numbers its own timers)."""
    topo = export_topology(tmp_path, 2)
    plan = export_plan(
        topo, topo.programs[0], [str(export_of(tmp_path, topo, random_trace(17, events=200), monkeypatch, 2))]
    )
    plan = dataclasses.replace(plan, handover=True)

    def handed_over(batches: Iterator[pa.RecordBatch]) -> dict[tuple[int, bytes], tuple[Any, ...]]:
        state = ho.HandoverState()
        try:
            collect_state(batches, state)
            out: dict[tuple[int, bytes], tuple[Any, ...]] = {}
            for topic, partition, key, value, headers, _ in state.records():
                assert topic == plan.program.changelog_topic and partition is not None and key is not None
                if key == SEQ_KEY:
                    continue
                shown = value if key == CLOCK_KEY or key[:1] != b"[" else instance_state(value)
                out[(partition, key)] = (shown, tuple(headers))
            return out
        finally:
            state.close()

    by_partition = handed_over(
        b for i, piece in enumerate(plan.slices) for b in run_partition(plan, i, slice_batches(plan, piece))
    )
    by_key_group = handed_over(
        key_parallel.run_locally(dataclasses.replace(plan, key_groups=3), lambda i: slice_batches(plan, plan.slices[i]))
    )
    assert sum(1 for _, k in by_partition if k[:1] == b"[") > 3
    assert {p for p, k in by_partition if k == CLOCK_KEY} == {0, 1}
    assert by_key_group == by_partition
