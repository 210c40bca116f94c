"""The worker's producer side (kafka/producer.py) under a transaction that went wrong, driven
through the real ``Task`` (issue 20 fault 7): librdkafka refuses records once the transaction is
abortable (KafkaException ``_STATE``), and reports the records an abort purged as failed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from eventscript.kafka.producer import BatchProducer
from eventscript.state.changelog import batch_frame

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "task"))
from task_helpers import T0, make_task, tick


class AbortableProducer:
    """A transactional producer stand-in: takes ``accept`` records, then refuses every produce as
    librdkafka does once the transaction is abortable; ``abort_transaction`` purges what it holds
    and reports each purged record with ``_PURGE_QUEUE`` (as librdkafka does, on the next poll)."""

    def __init__(self, accept: int) -> None:
        self.accept = accept
        self.queued: list[tuple[Any, ...]] = []
        self.begun = 0

    def begin_transaction(self) -> None:
        self.begun += 1

    def produce(self, topic: str, value: Any, key: Any, partition: int, cb: Any, *rest: Any) -> None:
        if len(self.queued) >= self.accept:
            raise KafkaException(KafkaError(KafkaError._STATE, "Operation not valid in state AbortableError"))
        self.queued.append((topic, partition, cb))

    def abort_transaction(self, on_delivery: Any) -> None:
        purged, self.queued = self.queued, []
        for topic, partition, _ in purged:
            on_delivery(KafkaError(KafkaError._PURGE_QUEUE), _Message(topic, partition))


class _Message:
    def __init__(self, topic: str, partition: int) -> None:
        self._topic, self._partition = topic, partition

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition


def _producing_task(tmp_path: Path, producer: AbortableProducer) -> tuple[Any, BatchProducer]:
    output = BatchProducer("p", producer, True, "p-changelog", lambda since: since)
    task = make_task(tmp_path / "store")
    task.attach(*output.senders())
    task.load_from_store()
    return task, output


def test_a_record_refused_by_an_abortable_transaction_fails_the_batch_instead_of_the_worker(tmp_path: Path) -> None:
    """On db30bd4 ``send`` let the KafkaException out of ``Task.process``, which ended the worker."""
    producer = AbortableProducer(accept=2)
    task, output = _producing_task(tmp_path, producer)
    for n in range(5):
        task.add(tick(n, T0 + n, "a"))
    task.process(0)
    task.send_changelog("p-changelog", 0, task.changelog_records(), batch_frame(b"{}", None), T0)
    assert len(producer.queued) == 2
    assert output.delivery_error is not None and output.delivery_error.code() == KafkaError._STATE, (
        "the commit must see the failure, abort and rewind"
    )
    task.close()


def test_records_purged_by_an_abort_do_not_fail_the_next_batch(tmp_path: Path) -> None:
    """On db30bd4 the purge reports of an aborted batch set the delivery error again after the
    worker had cleared it, so the next, healthy batch was aborted too."""
    producer = AbortableProducer(accept=100)
    task, output = _producing_task(tmp_path, producer)
    for n in range(3):
        task.add(tick(n, T0 + n, "a"))
    task.process(0)
    task.send_changelog("p-changelog", 0, task.changelog_records(), batch_frame(b"{}", None), T0)
    assert producer.queued, "the batch produced nothing to purge"
    output.delivery_error = None  # the worker's _commit_failed, before it aborts
    producer.abort_transaction(output.on_delivery)
    assert output.delivery_error is None, f"the purge of the aborted batch failed the next: {output.delivery_error}"
    # A real failure is still seen.
    output.on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT), _Message("out", 0))
    assert output.delivery_error is not None and output.delivery_error.code() == KafkaError._MSG_TIMED_OUT
    task.close()
