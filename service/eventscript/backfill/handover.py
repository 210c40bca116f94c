"""``--handover``: end a backfill by giving its final state to the program's live workers.

In ONE Kafka transaction the driver writes each task's final changelog records — every live
instance's value (its snapshot with its key's information in front), the record clock and the
repartition marks, exactly the bytes the worker's ``Task.changelog_records`` writes, on the
task's partition of the program's changelog topic —
and commits the program's consumer-group offsets at the cut (the end of every range; the
repartition topic at its end). Each record's ``es-pos`` header is the cut, so the worker's
restore, which applies a changelog record only if its position is within the committed offsets,
takes them. Workers started afterwards restore that state and go on from the cut: no gap, no
duplicate.

Preconditions, checked before Spark starts and again just before the transaction:

- the group has no active member (running workers would be overwritten under them);
- the group has no committed offset, unless ``force`` (then the cut replaces them);
- the changelog topic holds no committed record (a compacted changelog keeps old instances'
  latest records, which a restore would mix with the handed-over ones; there is no force for
  this). Records of an aborted attempt do not count: a hand-over that failed can be made again.

Live workers are kept out while the transaction is open (:class:`GroupHold`): the hand-over
joins the program's consumer group itself, with an assignor the workers do not use, before the
second check and until the commit. A worker started meanwhile is refused by the broker
(INCONSISTENT_GROUP_PROTOCOL; librdkafka retries) and joins once the hold is released, to find
the committed cut and state; the offsets go into the transaction with the hold's generation,
so the broker refuses them if the group changed hands (the hold was thrown out) rather than
overwrite a worker's offsets.

The state rows reach the driver through ``job.outputs(on_state=...)``; instance records are
spooled to a local file (a state may not fit in memory), the task state keys are merged per
partition (several tasks may share a partition in key-parallel mode: the latest clock, the
highest timer sequence number, the highest repartition marks).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from ..kafka import clients
from ..kafka.admin import Admin
from ..kafka.state import HWM_KEY, TASK_STATE_KEYS, decode_clock, decode_hwm
from ..topology.config import ProgramConfig, Topology, TopologyError
from .kafka_sink import Record, Spool, Transaction, kafka_reason, row_record
from .plan import Plan
from .records import OutputRow

#: Group states in which no member is there (a group that never existed is reported Empty or Dead).
_NO_MEMBERS = {ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD}
TIMEOUT = 10.0
_COORDINATOR_BUSY = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
}
#: The hold's assignor: one the workers' consumers (cooperative-sticky) do not offer, so that the
#: broker refuses them while the hold is a member.
HOLD_ASSIGNOR = "roundrobin"
#: Seconds the hold waits to become the group's member.
HOLD_JOIN_TIMEOUT = 60.0
#: Records produced between two polls of the hold (which keep it in the group).
HOLD_POLL_EVERY = 5_000


class HandoverError(Exception):
    """A hand-over refused or failed; the message says why and what to do."""


@dataclass
class HandoverTarget:
    """Where the hand-over goes: the program's group, changelog topic and offsets at the cut."""

    group_id: str
    changelog_topic: str
    offsets: list[TopicPartition] = field(default_factory=list)
    #: The topic the workers subscribe to (the hold subscribes to it too).
    repartition_topic: str = ""


class GroupHold:
    """The program's consumer group, held by the hand-over (see the module docstring): a member
    that subscribes to what the workers subscribe to, with another assignor, takes no record
    (every partition paused) and leaves at ``release``."""

    def __init__(self, topo: Topology, target: HandoverTarget) -> None:
        self.group_id = target.group_id
        self._assigned = False
        conf = clients.consumer_config(
            topo.kafka,
            target.group_id,
            **{
                "partition.assignment.strategy": HOLD_ASSIGNOR,
                # Polled between records while the transaction is open; a long Spark-side pause must
                # not make librdkafka leave the group on its own.
                "max.poll.interval.ms": 3_600_000,
            },
        )
        conf.pop("group.instance.id", None)
        self.consumer = Consumer(conf)
        self._produced = 0
        try:
            # What the workers subscribe to (the repartition topic), else the topics of the cut:
            # any subscription joins the group.
            topics = sorted({tp.topic for tp in target.offsets} | ({target.repartition_topic} - {""}))
            self.consumer.subscribe(topics or [target.changelog_topic], on_assign=self._on_assign)
            deadline = time.monotonic() + HOLD_JOIN_TIMEOUT
            while not self._assigned:
                if time.monotonic() >= deadline:
                    raise HandoverError(
                        f"--handover: could not join consumer group {self.group_id} within "
                        f"{HOLD_JOIN_TIMEOUT:.0f} s to keep workers out; check the brokers"
                    )
                self._poll(0.2)
        except BaseException:
            self.consumer.close()
            raise

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        consumer.assign(partitions)
        if partitions:
            consumer.pause(partitions)
        self._assigned = True

    def _poll(self, timeout: float) -> None:
        m = self.consumer.poll(timeout)
        err = m.error() if m is not None else None
        if err is None:
            return
        if err.code() == KafkaError.INCONSISTENT_GROUP_PROTOCOL:
            raise HandoverError(
                f"--handover: workers joined consumer group {self.group_id} (it runs another "
                f"assignor than the hand-over's): stop them first"
            )
        if err.fatal():
            raise HandoverError(f"--handover: consumer group {self.group_id}: {err.str()}")

    @property
    def member_id(self) -> str:
        return str(self.consumer.memberid() or "")

    def keep_alive(self, _record: Any = None) -> None:
        """Called per record produced: poll now and then (heartbeats run on their own)."""
        self._produced += 1
        if self._produced % HOLD_POLL_EVERY == 0:
            self._poll(0)

    def metadata(self) -> Any:
        return self.consumer.consumer_group_metadata()

    def release(self) -> None:
        """Leave the group: the workers may join."""
        try:
            self.consumer.close()
        except (KafkaException, RuntimeError):
            pass  # closed already; the session timeout removes the member anyway


def refusal_for_source(inputs: list[str] | None, until_us: int | None) -> str | None:
    """Why a hand-over cannot be made from these options (None: it can)."""
    if inputs:
        return (
            "--handover needs the Kafka source: the workers go on from Kafka offsets, which an export does "
            "not fix; leave out --input"
        )
    if until_us is not None:
        return (
            "--handover with --until: timers fired up to --until would move the record clock past records "
            "the workers have yet to read; leave out --until (pending timers go to the workers)"
        )
    return None


def prepare(topo: Topology, cfg: ProgramConfig, plan: Plan, force: bool) -> HandoverTarget:
    """Create the program's topics as a worker does, check the preconditions, fix the offsets."""
    try:
        Admin(topo).prepare([cfg])
    except TopologyError as exc:
        raise HandoverError(f"--handover: {exc}") from None
    target = HandoverTarget(
        topo.group_id(cfg), topo.changelog_topic(cfg), repartition_topic=topo.repartition_topic(cfg)
    )
    check(topo, target, force)
    target.offsets = cut_offsets(plan) + repartition_ends(topo, cfg, plan)
    return target


def check(topo: Topology, target: HandoverTarget, force: bool, holder: str | None = None) -> None:
    """Refuse (HandoverError) unless the group is idle (no member but ``holder``, the hand-over's
    hold), (unless ``force``) has no offsets, and the changelog holds no committed record."""
    admin = AdminClient(clients.admin_config(topo.kafka))
    g = target.group_id
    deadline = time.monotonic() + 3 * TIMEOUT
    while True:
        try:
            desc = admin.describe_consumer_groups([g], request_timeout=TIMEOUT)[g].result(TIMEOUT)
            committed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)], request_timeout=TIMEOUT)[
                g
            ].result(TIMEOUT)
            break
        except KafkaException as exc:
            # A coordinator moving or loading (a new cluster's first group): asked again.
            if exc.args[0].code() in _COORDINATOR_BUSY and time.monotonic() < deadline:
                time.sleep(0.5)
                continue
            raise HandoverError(
                f"--handover: cannot read consumer group {g} on {topo.kafka.bootstrap_servers}: {kafka_reason(exc)}"
            ) from None
    others = [m for m in desc.members if m.member_id != holder]
    if others or (holder is None and desc.state not in _NO_MEMBERS):
        raise HandoverError(
            f"--handover: consumer group {g} has active members ({len(others)} member(s), state "
            f"{desc.state.name.lower()}): workers of application {topo.application} are running; stop them "
            f"first (the hand-over replaces their offsets and state)"
        )
    offsets = [tp for tp in committed.topic_partitions or [] if tp.offset >= 0]
    if offsets and not force:
        shown = ", ".join(f"{tp.topic}:{tp.partition}@{tp.offset}" for tp in offsets[:5])
        more = f" and {len(offsets) - 5} more" if len(offsets) > 5 else ""
        raise HandoverError(
            f"--handover: consumer group {g} already has committed offsets ({shown}{more}): application "
            f"{topo.application} has run before. Hand over to a new application id, or give --force to replace "
            f"the offsets with the cut"
        )
    nonempty = _nonempty_partitions(topo, target.changelog_topic)
    if nonempty:
        raise HandoverError(
            f"--handover: the changelog topic {target.changelog_topic} is not empty (partitions "
            f"{', '.join(map(str, nonempty))}): a restore would mix its records with the handed-over state. Delete "
            f"the topic (and the workers' state directories) or hand over to a new application id"
        )


def _nonempty_partitions(topo: Topology, topic: str) -> list[int]:
    """The partitions holding a committed record. Read (read_committed) rather than compared by
    offsets: an aborted hand-over leaves records and markers that move the offsets but are no
    state, and the hand-over must be retryable after it."""
    consumer = Consumer(clients.consumer_config(topo.kafka, f"{topic}.handover-check"))
    try:
        md = consumer.list_topics(topic, timeout=TIMEOUT).topics.get(topic)
        if md is None or md.error is not None:
            return []
        out: set[int] = set()
        to_read: set[int] = set()
        for p in sorted(md.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT, cached=False)
            if high > low:
                to_read.add(p)
        if to_read:
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(to_read)])
            deadline = time.monotonic() + 6 * TIMEOUT
            while to_read:
                if time.monotonic() >= deadline:
                    raise HandoverError(
                        f"--handover: reading the changelog topic {topic} did not reach its end "
                        f"(partitions {', '.join(map(str, sorted(to_read)))}); try again"
                    )
                for m in consumer.consume(num_messages=500, timeout=0.5):
                    err = m.error()
                    if err is not None and err.code() != KafkaError._PARTITION_EOF:
                        continue
                    partition = int(m.partition() or 0)  # a consumed record or end always has one
                    to_read.discard(partition)
                    if err is None:
                        out.add(partition)
        return sorted(out)
    except KafkaException as exc:
        raise HandoverError(f"--handover: cannot read the changelog topic {topic}: {kafka_reason(exc)}") from None
    finally:
        consumer.close()


def cut_offsets(plan: Plan) -> list[TopicPartition]:
    """The group's offsets at the cut: the end of every input range."""
    ends: dict[tuple[str, int], int] = {}
    for piece in plan.slices:
        for r in piece.ranges:
            if ends.setdefault((r.topic, r.partition), r.end) != r.end:
                raise HandoverError(f"--handover: the plan gives {r.topic}:{r.partition} two different ends")
    return [TopicPartition(t, p, end) for (t, p), end in sorted(ends.items())]


def repartition_ends(topo: Topology, cfg: ProgramConfig, plan: Plan) -> list[TopicPartition]:
    """The repartition topic at its end: a backfill re-publishes nothing (misplaced records stop
    it), so whatever the topic holds is from before and must not be processed again."""
    from .kafka_source import log_ends

    topic = topo.repartition_topic(cfg)
    consumer = Consumer(clients.consumer_config(topo.kafka, f"{topic}.handover-check"))
    try:
        marks = {
            (topic, p): consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT, cached=False)
            for p in range(plan.program.partitions)
        }
        ends = log_ends(consumer, marks, TIMEOUT)
    except KafkaException as exc:
        raise HandoverError(f"--handover: cannot read the repartition topic {topic}: {kafka_reason(exc)}") from None
    finally:
        consumer.close()
    return [TopicPartition(t, p, end) for (t, p), end in sorted(ends.items())]


class HandoverState:
    """The tasks' final state rows, collected on the driver (``add`` is ``job.outputs``'s on_state)."""

    def __init__(self) -> None:
        self.spool = Spool("state")
        self.task_state: dict[tuple[str, int, bytes], Record] = {}
        self.partitions: set[int] = set()

    @property
    def instances(self) -> int:
        return self.spool.count

    def add(self, row: OutputRow) -> None:
        rec = row_record(row)
        topic, partition, key = rec[0], rec[1], rec[2]
        assert partition is not None and key is not None
        self.partitions.add(partition)
        if key not in TASK_STATE_KEYS:
            self.spool.add(rec)
            return
        seen = self.task_state.get((topic, partition, key))
        self.task_state[(topic, partition, key)] = rec if seen is None else _merged(seen, rec)

    def records(self) -> Iterator[Record]:
        yield from self.task_state.values()
        yield from self.spool

    def close(self) -> None:
        self.spool.close()


def _merged(a: Record, b: Record) -> Record:
    """Two tasks' values of one task state key of a partition: the highest repartition marks; of
    the numbers (the record clock, the next timer sequence number), the highest."""
    key = a[2]
    if key != HWM_KEY:
        return a if decode_clock(a[3]) >= decode_clock(b[3]) else b
    hwm = decode_hwm(a[3])
    for tp, off in decode_hwm(b[3]).items():
        hwm[tp] = max(off, hwm.get(tp, 0))
    return (a[0], a[1], key, orjson.dumps(hwm), a[4], max(a[5], b[5]))


def write(txn: Transaction, topo: Topology, target: HandoverTarget, state: HandoverState, force: bool) -> None:
    """Add the hand-over to an open transaction and commit it, the group held (workers kept out)
    from before the preconditions are checked again (workers may have started while Spark ran)
    until the commit."""
    check(topo, target, force)
    hold = GroupHold(topo, target)
    try:
        check(topo, target, force, holder=hold.member_id)
        txn.produce(state.records(), on_record=hold.keep_alive)
        txn.commit(target.offsets, target.group_id, topo.kafka, group_metadata=hold.metadata())
    finally:
        hold.release()
