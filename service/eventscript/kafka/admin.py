"""Topics: create what the topology needs, and check that each program's inputs are co-partitioned.

Every program needs its input topics (they must exist or be listed under ``topics:``; a worker
waits for one that another worker's program writes and has not created yet), its output and
error topics, and two internal topics with its inputs' partition count: the repartition
topic (deleted records: a retention, and consumed records are purged after commits) and the
compacted changelog topic.

Created topics get the replication factor given under ``topics:`` or the topology's
``replication``, else the broker's default (``default.replication.factor``), internal topics
included. With ``create_topics: false`` (topics managed elsewhere: Strimzi ``KafkaTopic``,
Terraform) nothing is created: every topic must exist, with the partition counts required.

Every request has a timeout: a broker that does not answer (down, unreachable, or stalled --
connections accepted, nothing answered) makes :class:`KafkaUnavailable`, one line naming the
bootstrap servers and what to check, never a hang or a traceback (docs/worker.md, "Starting").
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from ..topology.config import ProgramConfig, TopicSpec, Topology, TopologyError
from ..topology.progress import counts_awaited
from . import clients

log = logging.getLogger("eventscript.kafka.admin")

#: Seconds to wait for the cluster's metadata, and for the answer to a topic creation.
METADATA_TIMEOUT = 10.0
CREATE_TIMEOUT = 30.0
#: A worker waiting for an input topic that does not exist yet asks every this many seconds, and
#: says so in its log every ``INPUT_WAIT_LOG_S``.
INPUT_WAIT_POLL_S = 1.0
INPUT_WAIT_LOG_S = 30.0
#: librdkafka's errors meaning the broker did not answer (as opposed to answering "no").
UNANSWERED = {
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._RESOLVE,
    KafkaError.REQUEST_TIMED_OUT,
}


def _unread_variable() -> str:
    """For a topology that names no Kafka address, the ``$KAFKA_BOOTSTRAP_SERVERS`` an operator set
    in vain, and how to read it: ``tail`` and the chart use the variable, a topology only where it
    names it, and the message said nothing of the address set beside the one tried."""
    value = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not value:
        return ""
    return (
        f", e.g. bootstrap_servers: ${{KAFKA_BOOTSTRAP_SERVERS}} for the variable set here ({value}), which a "
        f"topology reads only where it names it"
    )


class KafkaUnavailable(TopologyError):
    """Kafka at the bootstrap servers did not answer."""

    def __init__(
        self, servers: str, doing: str, err: KafkaError, where: str | None = None, given_by: str | None = None
    ) -> None:
        if given_by is not None:  # (the file's address was not used: no use pointing at it)
            check = f"check the address {given_by} gave"
        else:
            setting = f"bootstrap_servers ({where})" if where else "bootstrap_servers"
            check = f"check {setting} (or --bootstrap-servers, or ${{KAFKA_BOOTSTRAP_SERVERS}} where the file names it)"
        super().__init__(
            f"cannot reach Kafka at {servers} ({doing}: {err.str()}); {check}, that the "
            f"brokers are up and reachable from here, and the security settings. To try a topology "
            f"on this machine, 'eventscript dev' starts a broker of its own"
        )

    @classmethod
    def of(cls, topo: Topology, doing: str, err: KafkaError) -> KafkaUnavailable:
        """The error for ``topo``'s brokers, placing its bootstrap_servers setting (file:line:col);
        where the file does not set it, saying so (a new user's topology without a ``kafka:``
        section was pointed at its first line)."""
        if topo.address_from is not None:
            return cls(topo.kafka.bootstrap_servers, doing, err, given_by=topo.address_from)
        if "kafka" in topo.model_fields_set and "bootstrap_servers" in topo.kafka.model_fields_set:
            where = topo.where("kafka", "bootstrap_servers")
        else:
            where = f"not set in {topo.source}, which uses the default; set it under kafka:{_unread_variable()}"
        return cls(topo.kafka.bootstrap_servers, doing, err, where)


class StoppedWaiting(Exception):
    """Asked to stop (SIGTERM) while waiting for an input topic that does not exist yet."""


#: The start of the cluster id the embedded Tansu broker answers with ("tansu_cluster").
TANSU_CLUSTER_PREFIX = "tansu"


class Admin:
    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.client = AdminClient(clients.admin_config(topo.kafka))
        #: Every topic a metadata answer listed so far, with its partition count.
        self.listed: dict[str, int] = {}
        #: The cluster id of the latest metadata answer (None: none yet, or the brokers gave none).
        self.cluster_id: str | None = None

    def partition_counts(self, timeout: float | None = None) -> dict[str, int]:
        """The topics and their partition counts: those of the latest metadata answer, and those
        an earlier answer listed. Each broker learns of a new topic from the controller on its
        own, and librdkafka sends each metadata request to any broker: right after one broker
        listed a topic just created, the next answer, from another broker, may still leave it out
        (test_chaos on three brokers under load: "input topic ... does not exist" from ``prepare``
        just after ``create`` had seen the topic)."""
        try:
            md = self.client.list_topics(timeout=METADATA_TIMEOUT if timeout is None else timeout)
        except KafkaException as exc:
            raise KafkaUnavailable.of(self.topo, "reading the topics", exc.args[0]) from None
        self.listed.update({name: len(t.partitions) for name, t in md.topics.items() if t.error is None})
        self.cluster_id = md.cluster_id
        return dict(self.listed)

    @property
    def is_embedded_broker(self) -> bool:
        """Whether the brokers are the embedded Tansu broker (``eventscript dev``'s), by the cluster
        id Tansu gives itself: it mishandles static group members (a member joining the group gets
        no tasks), so workers on it join as dynamic members."""
        return (self.cluster_id or "").startswith(TANSU_CLUSTER_PREFIX)

    def create(self, topics: dict[str, TopicSpec]) -> None:
        existing = self.partition_counts()
        absent = {name: spec for name, spec in topics.items() if name not in existing}
        if not absent:
            return
        if not self.topo.create_topics:
            shown = ", ".join(f"{name} ({spec.partitions} partition(s))" for name, spec in sorted(absent.items()))
            raise TopologyError(
                f"missing topics: {shown}; create them (create_topics is false, so the worker "
                f"does not), or set create_topics: true"
            )
        missing = [
            NewTopic(
                name,
                spec.partitions,
                spec.replication or self.topo.replication or -1,
                config=created_config(spec.config, spec.replication or self.topo.replication),
            )
            for name, spec in absent.items()
        ]  # replication -1: the broker's default.replication.factor
        futures = self.client.create_topics(missing, operation_timeout=CREATE_TIMEOUT, request_timeout=CREATE_TIMEOUT)
        for name, fut in futures.items():
            try:
                fut.result(CREATE_TIMEOUT + METADATA_TIMEOUT)  # the request times out first
                log.info("created topic %s", name)
            except KafkaException as exc:
                err = exc.args[0]
                if err.code() in UNANSWERED:
                    raise KafkaUnavailable.of(self.topo, f"creating topic {name}", err) from None
                if err.name() != "TOPIC_ALREADY_EXISTS":
                    raise TopologyError(f"cannot create topic {name}: {err.str()}") from None
            except TimeoutError:
                raise KafkaUnavailable.of(
                    self.topo, f"creating topic {name}", KafkaError(KafkaError._TIMED_OUT)
                ) from None
        # Metadata can lag behind creation: a new topic's partitions may have no leader yet (its
        # metadata says so, and ``partition_counts`` leaves it out), for seconds on a loaded
        # cluster of several brokers (a three-broker cluster on a busy 2-core machine once took
        # more than 10 s). Wait as long as the creation itself may take, then say what is wrong
        # (before: a silent end, and "input topic ... does not exist" from the caller).
        deadline = time.monotonic() + CREATE_TIMEOUT
        while True:
            counts = self.partition_counts()
            late = sorted(t.topic for t in missing if t.topic not in counts)
            if not late:
                return
            if time.monotonic() >= deadline:
                raise TopologyError(
                    f"created topic(s) {', '.join(late)}, but after {CREATE_TIMEOUT:.0f} s the brokers' metadata "
                    f"still shows no leader for them; check the brokers' health (controller, under-replicated "
                    f"partitions) and start the worker again"
                )
            time.sleep(0.1)

    def prepare(
        self, programs: list[ProgramConfig], wait_for_inputs: bool = False, stopping: Callable[[], bool] = lambda: False
    ) -> dict[str, int]:
        """Create declared and internal topics; return each program's partition count.

        ``wait_for_inputs`` (a worker starting): an input topic that does not exist, and that no
        program of ``programs`` writes, is waited for, saying so every ``INPUT_WAIT_LOG_S``: in a
        pipeline whose workers start together, the writer of a topic not declared under
        ``topics:`` creates it only when it starts. Without it (the tools), it is an error. The
        wait ends with :class:`StoppedWaiting` once ``stopping()`` is true (SIGTERM)."""
        self.create(self.topo.topics)
        counts = self.partition_counts()
        for name, spec in sorted(self.topo.topics.items()):
            have = counts.get(name)
            if have is not None and have != spec.partitions and "partitions" in spec.model_fields_set:
                log.warning(
                    "topic %s has %d partitions on the brokers, but the topology's topics: gives it %d: the "
                    "brokers' count is the one used; write %d there to say what runs",
                    name,
                    have,
                    spec.partitions,
                    have,
                )
        if wait_for_inputs:
            counts = self.await_inputs(programs, counts, stopping)
        result: dict[str, int] = {}
        needed: dict[str, TopicSpec] = {}
        for cfg in programs:
            parts = self._input_partitions(cfg, counts)
            result[cfg.name] = parts
            repartition_config = {"cleanup.policy": "delete", "retention.ms": str(self.topo.repartition_retention_ms)}
            for internal, config in (
                (self.topo.repartition_topic(cfg), repartition_config),
                (self.topo.changelog_topic(cfg), {"cleanup.policy": "compact"}),
            ):
                have = counts.get(internal)
                if have is not None and have != parts:
                    raise TopologyError(
                        f"program {cfg.name}: internal topic {internal} has {have} partitions but the inputs have "
                        f"{parts}; delete it (and the program's state) to start over with the new partition count"
                    )
                needed[internal] = TopicSpec(partitions=parts, replication=self._replication(cfg), config=config)
            for topic in {*cfg.outputs.values(), cfg.error_topic}:
                if topic not in counts and topic not in self.topo.topics:
                    needed[topic] = TopicSpec(partitions=parts, replication=self._replication(cfg))
        self.create(needed)
        self.check_changelogs([self.topo.changelog_topic(cfg) for cfg in programs])
        self.warn_repartition_retention([self.topo.repartition_topic(cfg) for cfg in programs])
        return result

    def await_inputs(
        self, programs: list[ProgramConfig], counts: dict[str, int], stopping: Callable[[], bool] = lambda: False
    ) -> dict[str, int]:
        """The topics' partition counts once every input topic of ``programs`` exists, but for
        those one of ``programs`` writes (``prepare`` says what is wrong with them), and every
        topic upstream whose count their progress plans need (``counts_awaited``); raises
        :class:`StoppedWaiting` once ``stopping()`` is true."""
        written = {t for cfg in programs for t in (*cfg.outputs.values(), cfg.error_topic)}
        said: float | None = None  # (when the log last said so)
        started = time.monotonic()
        while True:
            missing = [
                f"{inp.topic} (programs[{cfg.name}].inputs[{i}])"
                for cfg in programs
                for i, inp in enumerate(cfg.inputs)
                if inp.topic not in counts and inp.topic not in written
            ]
            # (topics upstream of a gated input whose partition count the reader's plan needs)
            awaited = {t: why for cfg in programs for t, why in counts_awaited(self.topo, cfg, counts).items()}
            missing += [f"{t} ({why})" for t, why in awaited.items() if t not in written]
            if not missing:
                return counts
            if stopping():
                raise StoppedWaiting(f"stopped while waiting for input topic(s) {', '.join(missing)}")
            waited = time.monotonic() - started
            if said is None or waited - said >= INPUT_WAIT_LOG_S:
                log.warning(
                    "input topic(s) %s do not exist%s: waiting for them (the program that writes a topic "
                    "creates it when its worker starts; else create it, or list it under 'topics:' with its "
                    "partitions so that this worker creates it)",
                    ", ".join(missing),
                    " yet" if said is None else f" after {waited:.0f} s",
                )
                said = waited
            time.sleep(INPUT_WAIT_POLL_S)
            counts = self.partition_counts()

    def warn_repartition_retention(self, topics: list[str]) -> None:
        """Warn of a repartition topic with a finite retention (made by an earlier version, or
        elsewhere): records older than it are deleted before a lagging or restoring task reads
        them (re-published records keep their original timestamps)."""
        if self.topo.repartition_retention_ms != -1:
            return  # the topology asks for it
        configs = self.topic_configs(topics)
        for topic in topics:
            retention = configs.get(topic, {}).get("retention.ms")
            if retention is not None and retention != "-1":
                log.warning(
                    "repartition topic %s has retention.ms=%s: records older than that are deleted even if "
                    "no task has processed them; set it to -1 (kafka-configs.sh --alter --entity-type topics "
                    "--entity-name %s --add-config retention.ms=-1): the workers delete what was committed",
                    topic,
                    retention,
                    topic,
                )

    def check_changelogs(self, topics: list[str]) -> None:
        """Refuse a changelog topic whose records are deleted by time or size (``cleanup.policy``
        other than ``compact``): the state of an instance not updated within the retention would
        be lost at the next restore, silently (a topic created elsewhere, ``create_topics: false``)."""
        configs = self.topic_configs(topics)
        for topic in topics:
            policy = configs.get(topic, {}).get("cleanup.policy")
            if policy is not None and policy.replace(" ", "") != "compact":
                raise TopologyError(
                    f"changelog topic {topic} has cleanup.policy={policy}: its records are deleted after "
                    f"retention.ms, and the state they hold is lost at the next restore; set cleanup.policy=compact "
                    f"(kafka-configs.sh --alter --entity-type topics --entity-name {topic} --add-config "
                    f"cleanup.policy=compact, or the topic's KafkaTopic), or delete the topic and let the worker "
                    f"create it (create_topics: true)"
                )

    def topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        """Each topic's configuration (the values in force, defaults included).

        A topic just created may be unknown for a moment to the broker asked (each broker learns
        of it from the controller on its own; ``create`` waited for one broker's metadata only):
        ``UNKNOWN_TOPIC_OR_PART`` is asked again for up to ``METADATA_TIMEOUT`` seconds."""
        deadline = time.monotonic() + METADATA_TIMEOUT
        while True:
            try:
                return self._describe_configs(topics)
            except KafkaException as exc:
                err = exc.args[0]
                if err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART and time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                if err.code() in UNANSWERED:
                    raise KafkaUnavailable.of(self.topo, "reading topic configurations", err) from None
                raise TopologyError(
                    f"cannot read the configuration of topics {', '.join(topics)}: {err.str()}"
                ) from None

    def _describe_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        from confluent_kafka.admin import ConfigResource, ResourceType

        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        out: dict[str, dict[str, str]] = {}
        if not resources:
            return out
        futures = self.client.describe_configs(resources, request_timeout=METADATA_TIMEOUT)
        for res, fut in futures.items():
            entries = fut.result(METADATA_TIMEOUT + 1)
            out[res.name] = {name: e.value for name, e in entries.items() if e.value is not None}
        return out

    def _replication(self, cfg: ProgramConfig) -> int | None:
        """The inputs' replication factor where topics: gives it, else the topology's (None: the
        broker's default)."""
        specs = [self.topo.topics[i.topic] for i in cfg.inputs if i.topic in self.topo.topics]
        given = [s.replication for s in specs if s.replication is not None]
        return max(given) if given else self.topo.replication

    def _input_partitions(self, cfg: ProgramConfig, counts: dict[str, int]) -> int:
        parts: dict[str, int] = {}
        for i, inp in enumerate(cfg.inputs):
            if inp.topic not in counts:
                raise TopologyError(
                    f"program {cfg.name}: input topic {inp.topic} (programs[{cfg.name}].inputs[{i}]) "
                    f"does not exist; create it or list it under 'topics:' with its partitions"
                )
            parts[inp.topic] = counts[inp.topic]
        if len(set(parts.values())) > 1:
            shown = ", ".join(f"{t}: {n}" for t, n in parts.items())
            raise TopologyError(
                f"program {cfg.name}: input topics must be co-partitioned (same partition count), "
                f"but they have {shown}; give them the same number of partitions"
            )
        return next(iter(parts.values()))


def created_config(config: dict[str, str], replication: int | None) -> dict[str, str]:
    """A created topic's configuration: the one given, and with a known replication factor of 3
    or more ``min.insync.replicas`` 2 (``acks=all`` then waits for a second copy, so a record
    acknowledged survives the loss of one broker; with 2 replicas, 1, so that one broker down
    does not stop every write). Given settings win."""
    out = dict(config)
    if replication is not None and replication >= 2:
        out.setdefault("min.insync.replicas", str(min(2, replication - 1)))
    return out


def describe(topo: Topology) -> dict[str, Any]:
    return {"bootstrap": topo.kafka.bootstrap_servers, "topics": Admin(topo).partition_counts()}


def await_result(client: AdminClient, fut: Any, timeout: float) -> Any:
    """An admin request's result, polling the client meanwhile: with a Python logger configured
    (clients.common), some requests' results (describe_consumer_groups, delete_records: measured)
    arrive only while the client is polled, so waiting on the future alone can stall to its timeout.
    Raises :class:`TimeoutError` after ``timeout`` seconds, or what the request raised."""
    deadline = time.monotonic() + timeout
    while not fut.done():
        if time.monotonic() > deadline:
            raise TimeoutError
        client.poll(0.05)
    return fut.result()


def purge(client: AdminClient, offsets: dict[tuple[str, int], int], timeout: float = 10.0) -> list[str]:
    """Delete records before the given offsets (consumed and committed repartition records, as
    Kafka Streams purges its repartition topics); returns the errors, one line each."""
    if not offsets:
        return []
    from confluent_kafka import TopicPartition

    problems: list[str] = []
    try:
        futures = client.delete_records(
            [TopicPartition(t, p, off) for (t, p), off in offsets.items()], request_timeout=timeout
        )
        for tp, fut in futures.items():
            try:
                await_result(client, fut, timeout)
            except TimeoutError:
                problems.append(f"{tp.topic}:{tp.partition}: no answer within {timeout:g} s")
            except Exception as exc:  # a broker without DeleteRecords, or a partition moved
                problems.append(f"{tp.topic}:{tp.partition}: {exc}")
    except (KafkaException, TypeError, ValueError) as exc:
        problems.append(str(exc))
    return problems
