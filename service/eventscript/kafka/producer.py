"""The worker's producer side: every record of a batch produced into it (its transaction, with
exactly-once), the transaction begun on the batch's first record, and what the delivery reports
tell the commit (the changelog offsets the stores reach, a failed delivery).

Apart from the loop (``worker.py``) and the commit (``checkpoint.py``) so that what one record
costs to send is in one place: the tasks call ``send`` twice per record at many keys (an output
and, at commit, a changelog record).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from ..state.changelog import framed_batch

log = logging.getLogger("eventscript.kafka.worker")

#: Delivery errors of records purged from the queue by an abort (``abort_transaction`` purges
#: what was not sent): their batch is already aborted, so they say nothing of the next one.
PURGED = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})


class BatchProducer:
    """One worker's producer, and the state of the batch being produced."""

    def __init__(
        self, name: str, producer: Any, eos: bool, changelog_topic: str, queue_full: Callable[[float], float]
    ) -> None:
        self.name = name
        self.producer = producer
        self.eos = eos
        self.changelog_topic = changelog_topic
        #: With exactly-once: a transaction is open (begun by the batch's first record).
        self.txn_open = False
        #: Records produced since the worker started.
        self.produced = 0
        #: The first failed delivery (or fatal producer error) since the last commit, if any.
        self.delivery_error: KafkaError | None = None
        #: Changelog partition → the offset after its last record delivered in this batch.
        self.changelog_end: dict[int, int] = {}
        #: Called while the producer's queue is full (the broker is slow or away), with when it
        #: became full (0.0 the first time); returns that time (worker.py: ``_queue_full``).
        self._queue_full = queue_full
        self._made: tuple[Any, Any] | None = None

    def begin(self) -> None:
        if self.eos and not self.txn_open:
            self.producer.begin_transaction()
            self.txn_open = True

    def on_error(self, err: KafkaError) -> None:
        """The producer's ``error_cb``."""
        if err.fatal():
            log.error("%s: producer: %s", self.name, err)
            self.delivery_error = err
        else:
            log.warning("%s: producer: %s", self.name, err)

    def on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            if err.code() not in PURGED:
                self.delivery_error = err
            return
        if msg.topic() == self.changelog_topic:
            p = msg.partition()
            end = msg.offset() + 1
            if end > self.changelog_end.get(p, 0):
                self.changelog_end[p] = end

    def refused(self, exc: KafkaException) -> None:
        """``produce`` raised: with exactly-once the transaction has become abortable (a delivery
        failed) or is in a state that takes no record (librdkafka's ``_STATE``). The record is
        dropped and the batch fails: the commit sees ``delivery_error``, aborts and rewinds, and
        the record is processed again. Anything else is raised (a programming error)."""
        err: KafkaError = exc.args[0]
        if not self.eos or not (err.code() == KafkaError._STATE or err.txn_requires_abort() or err.fatal()):
            raise exc
        if self.delivery_error is None:
            log.warning(
                "%s: the producer refused a record (%s); the batch is aborted and processed again", self.name, err
            )
            self.delivery_error = err

    def senders(self) -> tuple[Any, Any]:
        """The tasks' ``send`` and ``send_changelog`` (made on first use, over the producer)."""
        if self._made is None:
            self._made = self._senders()
        return self._made

    def _senders(self) -> tuple[Any, Any]:
        """``send`` and ``send_changelog``: produce into the current batch. Closures over the
        producer rather than methods (called twice per record at many keys).

        A delivery report is asked for only where it is needed: the last changelog record of a
        task in a batch (its offset moves the store checkpoint). A failed delivery is caught
        otherwise: with exactly-once the transaction then fails to commit, which rewinds the
        batch; with at-least-once the idempotent producer's gapless guarantee turns it into a
        fatal error (reported through error_cb) that stops the offsets from being committed.
        """
        produce = self.producer.produce
        on_delivery = self.on_delivery
        eos = self.eos

        def send(
            topic: str, partition: int, key: bytes | None, value: bytes | None, headers: Any, ts: int, changelog: bool
        ) -> None:
            if eos and not self.txn_open:
                self.begin()
            cb = on_delivery if changelog else None
            full_since = 0.0
            while True:
                try:
                    produce(topic, value, key, partition, cb, None, ts, headers)
                    break
                except BufferError:  # the producer's queue is full: let it deliver
                    full_since = self._queue_full(full_since)
                except KafkaException as exc:  # the transaction is abortable: the batch fails
                    self.refused(exc)
                    return
            self.produced += 1

        def send_changelog(
            topic: str,
            partition: int,
            records: dict[bytes, bytes | None],
            frame: bytes,
            ts: int,
            key_headers: dict[bytes, Any] | None = None,
            /,
        ) -> None:
            """A task's changelog records of one commit (``Task.send_changelog``, the collector's
            ``SendChangelog``), as ``framed_batch`` gives them: one loop here rather than a call of
            ``send`` each; only the last asks for its delivery report."""
            if not records:
                return
            if eos and not self.txn_open:
                self.begin()
            batch = framed_batch(records, frame, key_headers)
            for i in range(len(batch) - 1):
                k, v, h = batch[i]
                try:
                    produce(topic, v, k, partition, None, None, ts, h)
                except BufferError:  # the producer's queue is full: let it deliver
                    send(topic, partition, k, v, h, ts, False)
                    self.produced -= 1
                except KafkaException as exc:  # the transaction is abortable: the batch fails
                    self.refused(exc)
                    return
            k, v, h = batch[-1]
            send(topic, partition, k, v, h, ts, True)
            self.produced += len(batch) - 1

        return send, send_changelog
