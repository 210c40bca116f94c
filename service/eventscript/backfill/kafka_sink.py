"""The Kafka sink: a backfill's outputs written to topics, all or nothing, in one transaction.

The records are those the worker would produce — same topics (the program's output and error
topics, or the ones ``--output-topic`` / ``--error-topic`` name), keys, values, headers,
``es-id`` and timestamps — produced as the worker's producer does: idempotent, keyed records
placed by the key's murmur2 hash (``clients.producer_config``).

While Spark runs, rows are spooled to a local file (:class:`Spool`): a failed Spark job leaves
nothing in Kafka, and the transaction is open only while the spooled records are produced, not
for the whole job. ``commit`` then writes them in ONE transaction, with the hand-over's changelog
records and consumer-group offsets when there is one (``handover.py``), and commits it; any
failure aborts it. The broker aborts a transaction open longer than ``transaction.timeout.ms``
(here 15 minutes unless the topology's ``kafka.producer`` sets it; Kafka caps it with the
broker's ``transaction.max.timeout.ms``, 15 minutes by default), so the records must be produced
within that time (docs/backfill.md: the limit, in records).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgpack
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from ..kafka import clients
from ..kafka.admin import Admin
from ..task.codec import Headers
from ..topology.config import KafkaConfig, ProgramConfig, TopicSpec, Topology, TopologyError
from .markers import reading_order
from .records import OutputRow
from .sink import SinkError

#: The default transaction timeout of a sink's producer (Kafka's default ceiling).
TRANSACTION_TIMEOUT_MS = 900_000
#: Seconds allowed for each step of the transaction protocol (init, offsets, commit, abort).
STEP_TIMEOUT = 60.0

#: A record to produce: (topic, partition or None to place it by key, key, value, headers, timestamp ms).
Record = tuple[str, int | None, bytes | None, bytes | None, Headers, int]


def transactional_id(topo: Topology, cfg: ProgramConfig) -> str:
    """One id per program: a second backfill of the program into Kafka fences an earlier one that
    is still producing (its commit fails) instead of both committing."""
    return f"{topo.group_id(cfg)}.backfill"


def row_record(row: OutputRow) -> Record:
    return (row.topic(), row.partition(), row.key(), row.value(), row.headers(), row.timestamp()[1])


class Spool:
    """Records kept in a local file until they are produced (msgpack, one array per record)."""

    def __init__(self, purpose: str) -> None:
        # Closed (and so deleted) by close(): the spool lives as long as its sink.
        self._file = tempfile.NamedTemporaryFile(prefix=f"eventscript-backfill-{purpose}-", suffix=".msgpack")  # noqa: SIM115
        self._packer = msgpack.Packer(use_bin_type=True)
        self.count = 0

    def add(self, rec: Record) -> None:
        topic, partition, key, value, headers, ts = rec
        self._file.write(self._packer.pack((topic, partition, key, value, [list(h) for h in headers], ts)))
        self.count += 1

    def __iter__(self) -> Iterator[Record]:
        self._file.flush()
        with open(self._file.name, "rb") as f:
            for topic, partition, key, value, headers, ts in msgpack.Unpacker(f, raw=False, use_list=True):
                yield topic, partition, key, value, [(k, v) for k, v in headers], ts

    def close(self) -> None:
        self._file.close()  # deletes the file


class Transaction:
    """One Kafka transaction of a transactional, idempotent producer (the worker's settings)."""

    def __init__(self, kafka: KafkaConfig, txn_id: str) -> None:
        timeout_ms = int(kafka.producer.get("transaction.timeout.ms", TRANSACTION_TIMEOUT_MS))
        self._fatal: list[str] = []
        conf = clients.producer_config(kafka, txn_id, error_cb=self._on_error, **{"transaction.timeout.ms": timeout_ms})
        self.producer = Producer(conf)
        self.timeout_ms = timeout_ms
        self.count = 0
        self._open = False
        try:
            self.producer.init_transactions(STEP_TIMEOUT)
        except KafkaException as exc:
            raise SinkError(
                f"cannot start a Kafka transaction on {kafka.bootstrap_servers} "
                f"(transactional id {txn_id}): {kafka_reason(exc)}"
            ) from None
        self.producer.begin_transaction()
        self._open = True

    def _on_error(self, err: Any) -> None:
        if err.fatal():
            self._fatal.append(err.str())

    def produce(self, records: Iterable[Record], on_record: Callable[[Record], None] = lambda r: None) -> int:
        """Produce records into the transaction; returns how many."""
        produce, poll = self.producer.produce, self.producer.poll
        n = 0
        for rec in records:
            topic, partition, key, value, headers, ts = rec
            part = -1 if partition is None else partition
            while True:
                try:
                    # arg-type: the stub's list of (str, str | bytes | None) is invariant; ours hold bytes
                    produce(topic, value, key, part, None, None, ts, headers)  # type: ignore[arg-type]
                    break
                except BufferError:
                    poll(0.05)
                except KafkaException as exc:
                    raise SinkError(f"producing to {topic}: {kafka_reason(exc)}") from None
            n += 1
            on_record(rec)
            if n % 10_000 == 0:
                poll(0)
                if self._fatal:
                    raise SinkError(f"the producer failed: {self._fatal[0]}")
        self.count += n
        return n

    def commit(
        self,
        offsets: list[TopicPartition] | None = None,
        group_id: str | None = None,
        kafka: KafkaConfig | None = None,
        group_metadata: Any = None,
    ) -> None:
        """Flush, add the consumer group's offsets (if any) and commit; on failure abort and raise.
        ``group_metadata``: that of a member of the group (the hand-over's hold), whose generation
        the broker checks, so that the offsets are refused if the group changed hands."""
        try:
            if self.producer.flush(self.timeout_ms / 1000) > 0:
                raise SinkError(f"records still undelivered after {self.timeout_ms / 1000:.0f} s")
            if self._fatal:
                raise SinkError(f"the producer failed: {self._fatal[0]}")
            if offsets:
                assert group_id is not None and kafka is not None
                if group_metadata is not None:
                    self.producer.send_offsets_to_transaction(offsets, group_metadata, STEP_TIMEOUT)
                else:
                    # A consumer of the group that never joins it: its metadata (generation -1, no
                    # member id) lets the broker take the offsets while the group has no members.
                    consumer = Consumer(clients.consumer_config(kafka, group_id))
                    try:
                        self.producer.send_offsets_to_transaction(
                            offsets, consumer.consumer_group_metadata(), STEP_TIMEOUT
                        )
                    finally:
                        consumer.close()
            self.producer.commit_transaction(STEP_TIMEOUT)
            self._open = False
        except KafkaException as exc:
            self.abort()
            raise SinkError(f"the Kafka transaction failed and was aborted: {kafka_reason(exc)}") from None
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        if self._open:
            self._open = False
            try:
                self.producer.abort_transaction(STEP_TIMEOUT)
            except KafkaException:
                pass  # the broker aborts it anyway when transaction.timeout.ms runs out


def kafka_reason(exc: KafkaException) -> str:
    err = exc.args[0] if exc.args else None
    return err.str() if isinstance(err, KafkaError) else str(exc)


class KafkaSink:
    """Spools output rows; ``commit`` produces them (plus a hand-over, if given) in one transaction.

    The same shape as :class:`~eventscript.backfill.sink.FileSink`: a context manager with
    ``write_all``, ``commit`` and ``count``."""

    def __init__(
        self,
        kafka: KafkaConfig,
        txn_id: str,
        extra: Callable[[Transaction], None] | None = None,
        markers: Callable[[Callable[[str], int]], list[Record]] | None = None,
        ordered: set[str] | None = None,
    ) -> None:
        """``extra``: called with the open transaction after the outputs, before the commit (the
        hand-over adds its changelog records and offsets there). ``markers``: given a topic's
        partition count on the broker, the progress markers that follow every output record in
        the transaction (``markers.py``). ``ordered``: topics whose records are produced in
        record-time order (``markers.reading_order``), as programs reading them need."""
        self.kafka = kafka
        self.txn_id = txn_id
        self.extra = extra
        self.markers = markers
        self.ordered = ordered or set()
        self.spool: Spool | None = None
        self.count = 0
        self.marker_count = 0
        self.per_topic: dict[str, int] = {}

    def __enter__(self) -> KafkaSink:
        self.spool = Spool("outputs")
        return self

    def write_all(self, rows: Iterable[OutputRow]) -> int:
        assert self.spool is not None
        add = self.spool.add
        for row in rows:
            add(row_record(row))
        return self.spool.count

    def commit(self) -> None:
        """Produce the spooled records in one transaction and commit it (all or nothing)."""
        assert self.spool is not None
        per_topic = self.per_topic

        def counted(rec: Record) -> None:
            per_topic[rec[0]] = per_topic.get(rec[0], 0) + 1

        txn = Transaction(self.kafka, self.txn_id)
        try:
            records = reading_order(self.spool, self.ordered) if self.ordered else self.spool
            self.count = txn.produce(records, counted)
            if self.markers is not None:
                self.marker_count = txn.produce(self.markers(_partition_counts(txn.producer)))
            if self.extra is not None:
                self.extra(txn)
            else:
                txn.commit()
        finally:
            txn.abort()  # a no-op after a commit

    def describe(self) -> str:
        return ", ".join(f"{n} to {t}" for t, n in sorted(self.per_topic.items())) or "nothing"

    def __exit__(self, *exc: object) -> None:
        if self.spool is not None:
            self.spool.close()
            self.spool = None


def _partition_counts(client: Any) -> Callable[[str], int]:
    """A topic's partition count, as the broker says (asked once per topic)."""
    counts: dict[str, int] = {}

    def partitions_of(topic: str) -> int:
        if topic not in counts:
            try:
                found = client.list_topics(topic, timeout=STEP_TIMEOUT).topics.get(topic)
            except KafkaException as exc:
                raise SinkError(f"reading the partitions of {topic}: {kafka_reason(exc)}") from None
            if found is None or found.error is not None or not found.partitions:
                raise SinkError(
                    f"topic {topic} has no partitions on the broker: create it (eventscript topology plan --apply)"
                )
            counts[topic] = len(found.partitions)
        return counts[topic]

    return partitions_of


def ensure_topics(topo: Topology, topics: Iterable[str], partitions: int) -> None:
    """Create the sink's topics that are missing, as the worker creates its output topics (the
    inputs' partition count; refused with ``create_topics: false``)."""
    try:
        Admin(topo).create({t: topo.topics.get(t) or TopicSpec(partitions=partitions) for t in topics})
    except TopologyError as exc:
        raise SinkError(str(exc)) from None


def sink_topics(cfg: ProgramConfig, outputs: Iterable[str]) -> list[str]:
    """The topics a program's outputs (event names) and $error records go to."""
    topics = {cfg.error_topic}
    for name in outputs:
        topic = cfg.output_topic(name)
        if topic is not None:
            topics.add(topic)
    return sorted(topics)


def with_topics(
    cfg: ProgramConfig, outputs: Iterable[str], output_topics: dict[str, str], error_topic: str | None
) -> ProgramConfig:
    """The program's configuration with its outputs sent to other topics (``--output-topic
    EVENT=TOPIC``, EVENT ``default`` for every output not named) and its $error records to
    ``error_topic``; the task then writes exactly the records it would, to those topics."""
    known = set(outputs)
    unknown = sorted(e for e in output_topics if e != "default" and e not in known)
    if unknown:
        raise SinkError(
            f"--output-topic {unknown[0]}=...: program {cfg.name} has no output event {unknown[0]} "
            f"(its outputs: {', '.join(sorted(known)) or 'none'}; 'default' names all others)"
        )
    if not output_topics and error_topic is None:
        return cfg
    outs = dict(cfg.outputs)
    outs.update(output_topics)
    return cfg.model_copy(update={"outputs": outs, "errors": error_topic or cfg.errors})
