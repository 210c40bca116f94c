"""``eventscript reset``: start a program over, as Kafka Streams' application reset tool does.

Three things make a program's state, and all three go back together or the next run mixes old and
new state:

1. the consumer group's committed offsets: the inputs go to the chosen point (earliest, a
   date-time, or given offsets; partitions not named go to the earliest), the repartition topic to 0;
2. the internal topics: the changelog and the repartition topic are deleted and created again
   empty (``create_topics: false``: their records are deleted instead, DeleteRecords, as the
   topics are managed elsewhere);
3. the local state of this machine (``state_dir``/program): deleted. Other machines' local state
   must go too (their stores would otherwise be ahead of the empty changelog): run ``reset`` there
   with ``--local-only``, or delete their state volumes.

Refused while the group has members (workers still running would keep processing and committing).
Workers stopped with static membership (as deployed) stay members until their session times out,
as they send no LeaveGroup: ``--wait S`` waits up to S seconds for the group to empty. Kafka
Streams' reset tool offers ``--force`` instead, removing the static members with the admin API's
RemoveMembersFromConsumerGroup; confluent-kafka (librdkafka) has no such call, so waiting is the way.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from ..topology.config import ProgramConfig, Topology, TopologyError
from ..topology.errors import partitions_word
from . import clients
from .admin import Admin, KafkaUnavailable, await_result

#: Seconds to wait for a deleted topic to be gone before creating it again.
DELETE_WAIT = 60.0


class ResetRefused(TopologyError):
    """The reset cannot be done now (the group has members, a topic is missing...)."""


@dataclass
class ResetPlan:
    """What a reset does: offsets to commit (topic, partition) → offset and why, internal topics to
    empty, the local state directory to delete."""

    program: str
    group: str
    offsets: dict[tuple[str, int], tuple[int, str]] = field(default_factory=dict)
    delete_topics: list[str] = field(default_factory=list)
    purge_topics: list[str] = field(default_factory=list)
    local_state: Path | None = None
    local_only: bool = False

    def lines(self) -> list[str]:
        out = [f"reset program {self.program} (consumer group {self.group}):"]
        if not self.local_only:
            for (topic, p), (off, why) in sorted(self.offsets.items()):
                out.append(f"  commit {topic}:{p} -> offset {off} ({why})")
            for t in self.delete_topics:
                out.append(f"  delete topic {t} and create it again, empty")
            for t in self.purge_topics:
                out.append(f"  delete every record of topic {t} (create_topics is false: the topic stays)")
        if self.local_state is not None:
            there = "present" if self.local_state.exists() else "absent"
            out.append(
                f"  delete local state {self.local_state} ({there} on this machine; delete it on every "
                f"machine that ran the program)"
            )
        return out


def parse_offsets(specs: list[str]) -> dict[tuple[str, int], int]:
    """``topic:partition=offset`` items (repeated, or comma-separated)."""
    out: dict[tuple[str, int], int] = {}
    for spec in specs:
        for item in filter(None, (s.strip() for s in spec.split(","))):
            try:
                where, off = item.rsplit("=", 1)
                topic, part = where.rsplit(":", 1)
                out[(topic, int(part))] = int(off)
            except ValueError:
                raise TopologyError(
                    f"--to-offsets: {item!r} is not TOPIC:PARTITION=OFFSET (e.g. readings:0=1500)"
                ) from None
            if out[(topic, int(part))] < 0:
                raise TopologyError(f"--to-offsets: {item!r}: an offset is 0 or more")
    return out


def _admin(topo: Topology) -> AdminClient:
    return AdminClient(clients.admin_config(topo.kafka))


def describe_group(topo: Topology, cfg: ProgramConfig) -> Any:
    """The program's consumer group as the broker describes it (state, members, assignments)."""
    group = topo.group_id(cfg)
    try:
        admin = _admin(topo)
        return await_result(admin, admin.describe_consumer_groups([group], request_timeout=10)[group], 15)
    except KafkaException as exc:
        raise KafkaUnavailable.of(topo, f"describing group {group}", exc.args[0]) from None
    except TimeoutError:
        raise ResetRefused(f"group {group} could not be described within 15 s: is the broker busy?") from None


def group_members(topo: Topology, cfg: ProgramConfig) -> tuple[str, list[str]]:
    """The group's state and its members (``client_id@host``, with ``group.instance.id`` for a
    static member). Some brokers (Tansu) list no members: a group that is not empty (nor gone)
    then counts as having some."""
    desc = describe_group(topo, cfg)
    return desc.state.name, [
        f"{m.client_id}@{m.host}"
        + (f" (static: group.instance.id {m.group_instance_id})" if getattr(m, "group_instance_id", None) else "")
        for m in desc.members
    ]


def session_timeout_s(topo: Topology) -> float:
    """The workers' session timeout (``kafka.consumer`` of the topology, or the default): how long
    a stopped static member stays in the group."""
    return int(clients.consumer_config(topo.kafka, "-")["session.timeout.ms"]) / 1000


def _session_timeout_words(topo: Topology) -> str:
    """The workers' session timeout as a refusal quotes it. A timeout the topology sets applies to
    every worker; without one, the workers of ``eventscript dev`` (the reset may be aimed at its
    broker) use a shorter one than deployed workers, and the refusal cannot tell which ran."""
    timeout = session_timeout_s(topo)
    if "session.timeout.ms" in topo.kafka.consumer:
        return f"session.timeout.ms: {timeout:g} s"
    dev = clients.DEV_SESSION_TIMEOUT_MS / 1000
    return f"session.timeout.ms: {timeout:g} s by default, {dev:g} s for the workers of 'eventscript dev'"


def _has_members(state: str, members: list[str]) -> bool:
    return bool(members) or state not in ("EMPTY", "DEAD", "UNKNOWN")


def wait_for_empty_group(topo: Topology, cfg: ProgramConfig, timeout: float) -> tuple[str, list[str]]:
    """The group's state and members once it has none, or as they are when ``timeout`` s have
    passed: workers stopped with static membership stay members until their session times out
    (they send no LeaveGroup, so that a restart keeps their tasks)."""
    deadline = time.monotonic() + timeout
    state, members = group_members(topo, cfg)
    while _has_members(state, members) and time.monotonic() < deadline:
        time.sleep(0.5)
        state, members = group_members(topo, cfg)
    return state, members


def _members_refusal(topo: Topology, group: str, state: str, members: list[str]) -> str:
    """Why a reset is refused while the group has ``members``, and how to wait for them to go."""
    static = any("(static:" in m for m in members)
    timeout = session_timeout_s(topo)
    return (
        f"group {group} is {state.lower()}"
        + (f" with members {', '.join(members)}" if members else "")
        + ": stop every worker of the program first, then reset. "
        + _who_stays(topo, members, static)
        + f"; give --wait {max(2 * timeout, 30):g} to wait for the group to empty"
    )


def _who_stays(topo: Topology, members: list[str], static: bool) -> str:
    """Which stopped workers stay in the group, and for how long. A broker that lists no members
    (Tansu) cannot tell a crashed worker from one ``run`` stopped cleanly, which as a static member
    stays too: the refusal spoke only of "a worker that crashed", after a clean stop."""
    timeout = _session_timeout_words(topo)
    if static:
        return (
            f"Stopped workers with static membership stay members until their session times out "
            f"({timeout}, after they stopped)"
        )
    if members:
        return f"A worker that crashed leaves when its session times out ({timeout})"
    return (
        f"The broker lists no members: workers stopped with static membership (as 'eventscript run' and the chart "
        f"run them) stay members until their session times out, as crashed ones do ({timeout}, after they stopped)"
    )


def refusal_now(topo: Topology, cfg: ProgramConfig, plan: ResetPlan) -> str | None:
    """What the reset would be refused for if it ran now (its group has members), for a dry run:
    a plan that reads as fine, then a refusal, sent the user back to find the workers."""
    if plan.local_only:
        return None
    state, members = group_members(topo, cfg)
    return _members_refusal(topo, plan.group, state, members) if _has_members(state, members) else None


def plan_reset(
    topo: Topology,
    cfg: ProgramConfig,
    *,
    to_datetime: datetime | None = None,
    to_offsets: dict[tuple[str, int], int] | None = None,
    local_only: bool = False,
) -> ResetPlan:
    """What a reset would do (nothing is changed). Inputs go to the earliest offset unless
    ``to_datetime`` (the first record at or after it; the end where there is none) or
    ``to_offsets`` say otherwise."""
    plan = ResetPlan(cfg.name, topo.group_id(cfg), local_state=topo.state_path(cfg), local_only=local_only)
    if local_only:
        return plan
    counts = Admin(topo).partition_counts()
    inputs = [i.topic for i in cfg.inputs]
    missing = [t for t in inputs if t not in counts]
    if missing:
        raise ResetRefused(
            f"program {cfg.name}: input topic(s) {', '.join(missing)} not found on {topo.kafka.bootstrap_servers}"
        )
    unknown = [f"{t}:{p}" for t, p in (to_offsets or {}) if t not in inputs or p >= counts.get(t, 0)]
    if unknown:
        raise ResetRefused(
            f"--to-offsets names {', '.join(unknown)}, which is not a partition of the program's "
            f"inputs ({', '.join(f'{t} ({partitions_word(counts[t])})' for t in inputs)})"
        )
    from confluent_kafka import Consumer

    consumer = Consumer(clients.consumer_config(topo.kafka, f"{plan.group}.reset-plan"))
    try:
        for t in inputs:
            tps = [TopicPartition(t, p) for p in range(counts[t])]
            ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10) for tp in tps}
            at: dict[int, int] = {}
            if to_datetime is not None:
                ms = int(to_datetime.timestamp() * 1000)
                found = consumer.offsets_for_times([TopicPartition(t, p, ms) for p in ends], timeout=10)
                at = {tp.partition: tp.offset for tp in found if tp.offset >= 0}
                for p, off in at.items():
                    _check_time_offset(consumer, t, p, off, ms, to_datetime)
            for p, (low, high) in ends.items():
                if to_offsets and (t, p) in to_offsets:
                    plan.offsets[(t, p)] = (max(low, to_offsets[(t, p)]), "as given")
                elif to_datetime is not None:
                    plan.offsets[(t, p)] = (
                        (at[p], f"first record at or after {to_datetime.isoformat()}")
                        if p in at
                        else (high, f"no record at or after {to_datetime.isoformat()}: the end")
                    )
                else:
                    plan.offsets[(t, p)] = (low, "earliest")
    except KafkaException as exc:
        raise KafkaUnavailable.of(topo, "reading input offsets", exc.args[0]) from None
    finally:
        consumer.close()
    rep = topo.repartition_topic(cfg)
    for p in range(counts[inputs[0]]):
        plan.offsets[(rep, p)] = (0, "the repartition topic starts over, empty")
    internal = [topo.changelog_topic(cfg), rep]
    present = [t for t in internal if t in counts]
    if topo.create_topics:
        plan.delete_topics = present
    else:
        plan.purge_topics = present
    return plan


def _check_time_offset(consumer: Any, topic: str, p: int, offset: int, ms: int, when: datetime) -> None:
    """The broker's answer to "the first offset at or after T" (ListOffsets by timestamp), checked
    on the record it names: some brokers (Tansu 0.6) answer the first offset whatever T is."""
    consumer.assign([TopicPartition(topic, p, offset)])
    try:
        for m in consumer.consume(1, 10):
            if m.error() is None and m.timestamp()[1] < ms:
                raise ResetRefused(
                    f"the broker says {topic}:{p} reaches {when.isoformat()} at offset {offset}, but that "
                    f"record's time is {datetime.fromtimestamp(m.timestamp()[1] / 1000, UTC).isoformat()}"
                    f": it does not look records up by time; give --to-offsets instead"
                )
    finally:
        consumer.unassign()


def apply_reset(topo: Topology, cfg: ProgramConfig, plan: ResetPlan, wait: float = 0.0) -> list[str]:
    """Do what ``plan`` says, refused while the group has members (after waiting up to ``wait``
    seconds for them to leave); returns what was done."""
    done: list[str] = []
    if not plan.local_only:
        state, members = wait_for_empty_group(topo, cfg, wait)
        if _has_members(state, members):
            raise ResetRefused(_members_refusal(topo, plan.group, state, members))
        admin = _admin(topo)
        if plan.delete_topics:
            for t, fut in admin.delete_topics(plan.delete_topics, request_timeout=30).items():
                await_result(admin, fut, 60)
                done.append(f"deleted topic {t}")
            _wait_gone(admin, plan.delete_topics)
            Admin(topo).prepare([cfg])  # creates the internal topics again, as the worker would
            done.append(f"created {', '.join(plan.delete_topics)} again")
        if plan.purge_topics:
            ends = _ends(topo, plan.purge_topics)
            problems = []
            futures = admin.delete_records(
                [TopicPartition(t, p, off) for (t, p), off in ends.items()], request_timeout=30
            )
            for tp, fut in futures.items():
                try:
                    await_result(admin, fut, 60)
                except (KafkaException, TimeoutError) as exc:
                    problems.append(f"{tp.topic}:{tp.partition}: {exc or 'no answer'}")
            if problems:
                raise ResetRefused(
                    "could not delete the records of " + ", ".join(plan.purge_topics) + ": " + "; ".join(problems)
                )
            done.append(f"deleted the records of {', '.join(plan.purge_topics)}")
        tps = [TopicPartition(t, p, off) for (t, p), (off, _) in sorted(plan.offsets.items())]
        for fut in admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(plan.group, tps)]).values():
            await_result(admin, fut, 30)
        done.append(f"committed {len(tps)} offset(s) for group {plan.group}")
    if plan.local_state is not None and plan.local_state.exists():
        shutil.rmtree(plan.local_state)
        done.append(f"deleted local state {plan.local_state}")
    return done


def _wait_gone(admin: AdminClient, topics: list[str]) -> None:
    deadline = time.monotonic() + DELETE_WAIT
    while time.monotonic() < deadline:
        present = set(admin.list_topics(timeout=10).topics)
        if not present & set(topics):
            return
        time.sleep(0.2)
    raise ResetRefused(
        f"topics {', '.join(topics)} were still being deleted after {DELETE_WAIT:.0f} s; run reset "
        f"again when they are gone"
    )


def _ends(topo: Topology, topics: list[str]) -> dict[tuple[str, int], int]:
    from confluent_kafka import Consumer

    consumer = Consumer(clients.consumer_config(topo.kafka, f"{topo.application}.reset-ends"))
    try:
        md = consumer.list_topics(timeout=10)
        return {
            (t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1]
            for t in topics
            for p in md.topics[t].partitions
        }
    finally:
        consumer.close()
