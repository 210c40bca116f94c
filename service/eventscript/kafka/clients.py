"""librdkafka settings for consumers, producers and admin clients, built from the topology.

Choices that matter for correctness are made here once:

- producers partition with ``murmur2_random`` (the Java client's partitioner), so a key lands on
  the same partition whichever client produced it, and the worker's own routing
  (``partitioner.partition_of``) agrees with where records are written;
- producers are idempotent, so retries never reorder or duplicate records within a partition;
- consumers commit nothing automatically, read only committed transactional data, report the end
  of each partition (restores read to that signal rather than to a precomputed end offset, which
  some brokers report wrongly), and use the cooperative-sticky assignor;
- every client logs through Python logging (:data:`LIBRDKAFKA_LOG`, unless the caller passes its
  own ``logger=``) instead of librdkafka writing raw lines to stderr, so hosts decide what is
  shown: the CLI keeps the hundreds of "Connect ... failed" lines of an unreachable broker for
  ``--verbose`` and says "cannot reach Kafka" once. Lines reach the logger when the client is
  polled (poll, consume, flush), as confluent-kafka serves them from the client's main queue.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..topology.config import KafkaConfig, TopologyError

#: The logger of librdkafka's own lines (levels mapped from syslog's: 3 → ERROR, 4 → WARNING, ...).
LIBRDKAFKA_LOG = logging.getLogger("eventscript.kafka.librdkafka")

MAX_MESSAGE_BYTES = 10_000_000


def read_secret_file(path: str, setting: str) -> str:
    """A credential from a file (a mounted Secret), without its trailing newline; a file that cannot
    be read is a TopologyError naming the setting and the path."""
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as exc:
        raise TopologyError(
            f"{setting}: cannot read {path} ({exc.strerror}): mount the Secret there, or fix the path"
        ) from exc


def common(kafka: KafkaConfig) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": kafka.bootstrap_servers,
        "client.id": kafka.client_id,
        "security.protocol": kafka.security.protocol,
        "logger": LIBRDKAFKA_LOG,
    }
    sasl = kafka.security.sasl
    if sasl is not None:
        conf["sasl.mechanism"] = sasl.mechanism
        if sasl.username is not None:
            conf["sasl.username"] = sasl.username
        if sasl.password is not None:
            conf["sasl.password"] = sasl.password
        elif sasl.password_file is not None:
            conf["sasl.password"] = read_secret_file(sasl.password_file, "kafka.security.sasl.password_file")
    ssl = kafka.security.ssl
    if ssl is not None:
        for key, value in (
            ("ssl.ca.location", ssl.ca_location),
            ("ssl.certificate.location", ssl.certificate_location),
            ("ssl.key.location", ssl.key_location),
            ("ssl.key.password", ssl.key_password),
        ):
            if value is not None:
                conf[key] = value
        conf["ssl.endpoint.identification.algorithm"] = ssl.endpoint_identification
    conf.update(kafka.extra)
    return conf


#: The session timeout of the workers ``eventscript dev`` runs when the topology's ``kafka.consumer``
#: sets none: short, since its broker (Tansu) makes a group's first join wait half of it. A reset
#: against dev's broker quotes it (kafka/reset.py).
DEV_SESSION_TIMEOUT_MS = 6_000


def consumer_config(kafka: KafkaConfig, group_id: str, **overrides: Any) -> dict[str, Any]:
    conf = common(kafka)
    conf.update(
        {
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "partition.assignment.strategy": "cooperative-sticky",
            # Kafka's own default: longer than a pod's restart, so that a static member restarted
            # within it keeps its tasks and the others see no rebalance (docs/operations.md; measured
            # in tests/kafka/test_static_membership.py). A crashed worker's tasks wait this long.
            "session.timeout.ms": 45_000,
            "heartbeat.interval.ms": 3_000,
            "max.poll.interval.ms": 300_000,
            "fetch.max.bytes": 52_428_800,
            # A stream processor wants records soon; some brokers (Tansu) hold a fetch for the whole
            # wait even when data arrives, so keep it short.
            "fetch.wait.max.ms": 100,
            "max.partition.fetch.bytes": MAX_MESSAGE_BYTES,
            # A new member that asks for its subscription's metadata while the broker is coming
            # back (after an outage, a fenced static member's replacement) can get no answer and
            # wait in librdkafka's "wait-metadata" join state until the next periodic refresh,
            # 5 minutes by default; seen in tests/kafka/test_outages.py. A refresh every 10 s
            # bounds that wait at the cost of one small metadata request.
            "topic.metadata.refresh.interval.ms": 10_000,
        }
    )
    conf.update(kafka.consumer)
    conf.update(overrides)
    given = {**kafka.consumer, **overrides}
    if "session.timeout.ms" in given and "heartbeat.interval.ms" not in given:
        # A shorter session given alone (dev's 6 s, tests' 3 s): heartbeats at a third of it, as
        # Kafka advises, rather than at the default's 3 s.
        conf["heartbeat.interval.ms"] = min(3_000, max(100, int(given["session.timeout.ms"]) // 3))
    return conf


#: The group member's prefetch, the defaults of the consumer that feeds the program (a setting in
#: the topology's ``kafka.consumer`` replaces one of them). Why: librdkafka prefetches up to
#: ``queued.min.messages`` records a partition (100,000 by default), each held as a message of
#: ~230 bytes besides its decompressed batch, and a fetch brings up to ``max.partition.fetch.bytes``
#: a partition whatever the count: on a backlog of small compressed records the member held the
#: whole backlog, ~30 MiB at 100,000 records, about a fifth of the worker's peak memory (bench/SPEED.md,
#: "The worker's memory"). The worker takes at most ``worker.BATCH`` records a turn; 10,000 a
#: partition keep it fed (measured: 5,000 cost it 5-10% more CPU a record at 200,000 records,
#: 10,000 nothing), where Kafka Streams buffers 1,000 (``buffered.records.per.partition``).
#: A partition over its count waits ``fetch.queue.backoff.ms`` before its next fetch (librdkafka's
#: default, 1 s, starved the worker with a count this low). A record larger than the fetch size is
#: still fetched whole (the broker returns a partition's first batch at any size).
MEMBER_PREFETCH: dict[str, int] = {
    "queued.min.messages": 10_000,
    "max.partition.fetch.bytes": 131_072,
    "fetch.queue.backoff.ms": 10,
}


def member_consumer_config(kafka: KafkaConfig, group_id: str, **overrides: Any) -> dict[str, Any]:
    """The settings of a worker's group member, the consumer of its program's records:
    :func:`consumer_config` with the member's bounded prefetch (:data:`MEMBER_PREFETCH`) where the
    topology's ``kafka.extra`` and ``kafka.consumer`` and ``overrides`` say nothing of it."""
    conf = consumer_config(kafka, group_id, **overrides)
    given = {**kafka.extra, **kafka.consumer, **overrides}
    for key, value in MEMBER_PREFETCH.items():
        if key not in given:
            conf[key] = value
    return conf


#: How long a producer waits to fill a batch (``linger.ms``; a setting in the topology's
#: ``kafka.producer`` replaces it). Why not librdkafka's 5 ms: a worker's records go out a few
#: hundred at a time, and librdkafka's broker threads spend about a microsecond a record on
#: batches of a few dozen (1.2-1.7 µs of the worker's 12-14 µs a record at 100,000 keys). 20 ms
#: halves that (0.7-1.0 µs; 1k keys 0.8-1.4 -> 0.5-0.7, the process +4% / +9% records per
#: CPU-second) and the broker's CPU a record by a fifth, for at most 20 ms more before an
#: at-least-once output is sent (bench/SPEED.md, "librdkafka's threads and the client settings").
LINGER_MS = 20
#: A transactional producer's ``linger.ms``: Kafka Streams' default. Its records are visible when
#: the transaction commits, and the commit flushes the queue whatever the linger (librdkafka sends
#: at once on a flush), so a longer wait costs no latency and fills batches up to the commit.
TRANSACTIONAL_LINGER_MS = 100


def producer_config(kafka: KafkaConfig, transactional_id: str | None = None, **overrides: Any) -> dict[str, Any]:
    conf = common(kafka)
    conf.update(
        {
            "partitioner": "murmur2_random",
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": LINGER_MS if transactional_id is None else TRANSACTIONAL_LINGER_MS,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 500_000,
            "message.max.bytes": MAX_MESSAGE_BYTES,
            "compression.type": "lz4",
        }
    )
    if transactional_id is not None:
        conf["transactional.id"] = transactional_id
        conf["transaction.timeout.ms"] = 60_000
    conf.update(kafka.producer)
    conf.update(overrides)
    return conf


def admin_config(kafka: KafkaConfig) -> dict[str, Any]:
    return common(kafka)


class ClientSupplier:
    """Makes the Kafka clients of a worker (as Kafka Streams' KafkaClientSupplier): its consumer,
    its producer, the readers of its restores and standbys, its admin client. A test or tool that
    must see or disturb the clients' calls passes a supplier of its own that wraps them, instead
    of replacing the client classes in the worker's module."""

    def consumer(self, conf: dict[str, Any]) -> Any:
        from confluent_kafka import Consumer

        return Consumer(conf)

    def producer(self, conf: dict[str, Any]) -> Any:
        from confluent_kafka import Producer

        return Producer(conf)

    def admin(self, conf: dict[str, Any]) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient(conf)
