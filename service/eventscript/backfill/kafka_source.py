"""Reading a program's input topics from Kafka: the cut on the driver, the ranges on the executors.

The cut: for every input partition, the offsets the broker reports (low and high watermark, or
the offsets for ``--from``/``--to`` times), fixed before any task runs. A reader assigns its
ranges with no consumer group (nothing is committed), reads read_committed, and stops each
partition exactly at its end: at the record just before the end, or at the end-of-partition
signal when the end is a transaction marker. It does not trust a watermark to tell it has read
everything (the embedded broker's are wrong): a partition whose end-of-partition signal comes
before its range's end fails the backfill, loudly, instead of giving a silent partial result.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from ..kafka import clients
from ..topology.config import KafkaConfig, ProgramConfig, Topology
from . import cut
from .export import Row
from .plan import OffsetRange, Plan, SourceSpec, program_spec
from .task_stage import BackfillError

#: How long a reader may get nothing at all (no record, no end-of-partition signal).
STALL_SECONDS = 120.0
FETCH = 10_000


class KafkaReadError(Exception):
    """A range that could not be read to its end; the message says which and why."""


def _consumer(kafka: KafkaConfig, purpose: str) -> Consumer:
    # A group id is required by librdkafka even for assign(); nothing is ever committed to it.
    return Consumer(
        clients.consumer_config(
            kafka, f"eventscript-backfill-{purpose}-{uuid.uuid4().hex[:8]}", **{"enable.partition.eof": True}
        )
    )


def kafka_plan(
    topo: Topology,
    cfg: ProgramConfig,
    *,
    start: str | None = None,
    stop: str | None = None,
    until_us: int | None = None,
    batch_size: int = 10_000,
    timeout: float = 10.0,
) -> Plan:
    """The cut of a program's input topics, from the broker."""
    lo, hi = cut.Bound.parse(start, "--from"), cut.Bound.parse(stop, "--to")
    consumer = _consumer(topo.kafka, "cut")
    try:
        try:
            md = consumer.list_topics(timeout=timeout)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            reason = err.str() if isinstance(err, KafkaError) else str(exc)
            raise BackfillError(
                f"cannot reach Kafka at {topo.kafka.bootstrap_servers} ({reason}); check the address "
                f"(--bootstrap-servers) and that the broker is running"
            ) from None
        counts: dict[str, int] = {}
        for i, inp in enumerate(cfg.inputs):
            t = md.topics.get(inp.topic)
            if t is None or t.error is not None:
                raise BackfillError(
                    f"program {cfg.name}: input topic {inp.topic} (inputs[{i}]) does not exist on "
                    f"{topo.kafka.bootstrap_servers}"
                )
            counts[inp.topic] = len(t.partitions)
        if len(set(counts.values())) > 1:
            shown = ", ".join(f"{t}: {n}" for t, n in counts.items())
            raise BackfillError(f"program {cfg.name}: input topics must be co-partitioned, but they have {shown}")
        n = next(iter(counts.values()))
        marks = {
            (topic, p): consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout, cached=False)
            for topic in counts
            for p in range(n)
        }
        ends = log_ends(consumer, marks, timeout)
        ranges: dict[tuple[str, int], OffsetRange] = {}
        for (topic, p), (low, _) in marks.items():
            high = ends[(topic, p)]
            begin = _offset_for(consumer, topic, p, lo, low, high, timeout)
            end = _offset_for(consumer, topic, p, hi, low, high, timeout, default=high)
            ranges[(topic, p)] = OffsetRange(topic, p, begin, max(begin, end))
    finally:
        consumer.close()
    return Plan(
        program=program_spec(topo, cfg, n),
        source=SourceSpec("kafka", kafka=topo.kafka.model_dump()),
        slices=cut.slices(list(counts), n, ranges),
        until_us=until_us,
        batch_size=batch_size,
    )


def log_ends(
    consumer: Consumer, marks: dict[tuple[str, int], tuple[int, int]], timeout: float
) -> dict[tuple[str, int], int]:
    """Each partition's end as the end-of-partition signal tells it (read_committed: the last
    stable offset). The high watermark is not trusted — the embedded broker reports the base
    offset of the last record batch plus one — but taken as a lower bound: reading starts
    just before it, so on Kafka this reads at most one record per partition."""
    consumer.assign([TopicPartition(t, p, max(low, high - 1)) for (t, p), (low, high) in marks.items()])
    ends: dict[tuple[str, int], int] = {}
    deadline = time.monotonic() + STALL_SECONDS
    try:
        while len(ends) < len(marks):
            if time.monotonic() > deadline:
                left = ", ".join(f"{t}:{p}" for t, p in marks if (t, p) not in ends)
                raise BackfillError(f"finding the end of {left}: no end-of-partition signal in {STALL_SECONDS:.0f} s")
            for m in consumer.consume(FETCH, min(1.0, timeout)):
                err = m.error()
                if err is not None and err.code() == KafkaError._PARTITION_EOF:
                    topic, p, offset = _where(m)
                    ends[(topic, p)] = offset
                elif err is not None and (err.fatal() or not err.retriable()):
                    raise BackfillError(f"finding the end of {m.topic()}:{m.partition()}: {err.str()}")
    finally:
        consumer.unassign()
    return ends


def _offset_for(
    consumer: Consumer,
    topic: str,
    p: int,
    bound: cut.Bound | None,
    low: int,
    high: int,
    timeout: float,
    default: int | None = None,
) -> int:
    if bound is None:
        return low if default is None else default
    if bound.offset is not None:
        return min(max(bound.offset, low), high)
    assert bound.time_ms is not None  # a bound is an offset or a time
    found = consumer.offsets_for_times([TopicPartition(topic, p, bound.time_ms)], timeout=timeout)[0]
    return high if found.offset < 0 else min(max(found.offset, low), high)


def _where(m: Message) -> tuple[str, int, int]:
    """A consumed record's (or end of partition's) topic, partition and offset. confluent-kafka
    types them optional, as a client-level error has none; these always have them."""
    topic, p, offset = m.topic(), m.partition(), m.offset()
    if topic is None or p is None or offset is None:
        raise KafkaReadError(f"a consumed message has no topic, partition or offset ({m.error()})")
    return topic, p, offset


def read_ranges(kafka: dict[str, Any], ranges: list[OffsetRange]) -> Iterator[Row]:
    """The records of a task's ranges (each in offset order), with an end marker (offset -1) after
    each range's last record."""
    active = {(r.topic, r.partition): r for r in ranges if not r.empty}
    if not active:
        return
    consumer = _consumer(KafkaConfig.model_validate(kafka), "read")
    try:
        consumer.assign([TopicPartition(r.topic, r.partition, r.start) for r in active.values()])
        last_progress = time.monotonic()
        while active:
            msgs = consumer.consume(FETCH, 1.0)
            if msgs:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > STALL_SECONDS:
                left = ", ".join(f"{t}:{p}" for t, p in active)
                raise KafkaReadError(f"no record and no end of partition from {left} for {STALL_SECONDS:.0f} s")
            for m in msgs:
                err = m.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    if err.fatal() or not err.retriable():
                        raise KafkaReadError(f"{m.topic()}:{m.partition()}: {err.str()}")
                    continue
                topic, p, off = _where(m)
                tp = (topic, p)
                r = active.get(tp)
                if err is not None:  # the end of a partition
                    if r is None:
                        continue
                    if off < r.end:
                        raise KafkaReadError(
                            f"{r.topic}:{r.partition} ended at offset {off} before the end of its range "
                            f"[{r.start}, {r.end}): records were deleted, or a transaction is still open; run the "
                            f"backfill again (or set --to)"
                        )
                    yield _end(r)
                    del active[tp]
                    continue
                if r is None:
                    continue
                if off >= r.end:
                    yield _end(r)
                    del active[tp]
                    consumer.pause([TopicPartition(r.topic, r.partition)])
                    continue
                # a consumed record's headers are (str, bytes) pairs (the stubs' union is produce's argument)
                headers = cast(list[tuple[str, bytes | None]] | None, m.headers())
                yield (topic, p, off, m.timestamp()[1], m.key(), m.value(), headers)
                if off >= r.end - 1:
                    yield _end(r)
                    del active[tp]
                    consumer.pause([TopicPartition(r.topic, r.partition)])
    finally:
        consumer.close()


def _end(r: OffsetRange) -> Row:
    return (r.topic, r.partition, -1, 0, None, None, None)
