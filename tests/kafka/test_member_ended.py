"""A consumer or an exactly-once producer that failed fatally ends the group member, and the worker
joins again with new clients (issue 20: the wedged worker of tests/chaos/README.md, and fault 8).

After a broker kill the chaos harness saw librdkafka report "Static consumer fenced by other
consumer with same group.instance.id" as a consumer error of code ``_FATAL`` whose ``fatal()`` is
false; the worker logged it as a warning and went on with a dead consumer, and its partitions were
processed no further. Here the worker's consumer (made through a wrapping ``ClientSupplier``)
delivers that error once the worker has processed some records and from then on fetches nothing,
as a dead consumer does. The worker must close its tasks without committing, make a new consumer,
rejoin, and process every record: per key, the outputs with repeated ids dropped equal an
uninterrupted run (``kafka_helpers.Oracle``).

Fault 8: an exactly-once worker whose producer was fenced (``_FENCED``, fatal: a newer producer of
its transactional id, or its transaction rolled back while it was frozen) exited and relied on
being restarted. Here the first producer's ``commit_transaction`` fails so, and every
transactional call after it too; the worker must close its tasks, make a new producer and rejoin.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka_helpers import (
    Broker,
    KeyedProducer,
    Oracle,
    RunnerThread,
    outputs_by_key,
    program_topology,
    read_many,
    wait_for,
)

from count_programs import COUNT

PROGRAM = COUNT
PARTITIONS = 2
KEYS = 20
RECORDS = 1200
RATE = 400.0
FENCED = "Static consumer fenced by other consumer with same group.instance.id"


class FatalMessage:
    """A consumed "message" that carries only an error, as librdkafka delivers its fatal error."""

    def __init__(self, err: KafkaError) -> None:
        self._err = err

    def error(self) -> KafkaError:
        return self._err

    def topic(self) -> str | None:
        return None

    def partition(self) -> int:
        return -1


class DyingConsumer:
    """The worker's real group consumer, which reports the fatal error on the first ``consume``
    after ``arm()`` and is dead from then on: it fetches nothing more."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.armed = threading.Event()
        self.dead = False

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        if self.dead:
            time.sleep(max(0.0, min(timeout, 0.1)))
            return []
        if self.armed.is_set():
            self.dead = True
            err = KafkaError(KafkaError._FATAL, FENCED)
            assert not err.fatal()  # as librdkafka reports it
            return [FatalMessage(err)]
        return self._client.consume(num_messages=num_messages, timeout=timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class FencedProducer:
    """The worker's real producer, whose first ``commit_transaction`` after ``arm()`` fails with a
    fatal ``_FENCED`` error, as does every transactional call after it (as librdkafka's).

    ``on_abort``: that commit fails with an abortable timeout instead, and the abort that follows
    finds the producer fenced (a broker outage past transaction.timeout.ms: the broker aborted the
    transaction and bumped the epoch; seen in test_outages.py's broker outage)."""

    CALLS = ("begin_transaction", "send_offsets_to_transaction", "commit_transaction", "abort_transaction")

    def __init__(self, client: Any, on_abort: bool = False) -> None:
        self._client = client
        self.armed = threading.Event()
        self.dead = False
        self.on_abort = on_abort
        self._timed_out = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name not in self.CALLS:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.on_abort and not self._timed_out and name == "commit_transaction" and self.armed.is_set():
                self._timed_out = True
                raise KafkaException(
                    KafkaError(KafkaError._TIMED_OUT, "injected: commit timed out", txn_requires_abort=True)
                )
            fenced_now = (name == "abort_transaction") if self.on_abort else (name == "commit_transaction")
            if self.dead or (fenced_now and self.armed.is_set() and (self._timed_out or not self.on_abort)):
                self.dead = True
                raise KafkaException(KafkaError(KafkaError._FENCED, "injected: producer fenced", fatal=True))
            return attr(*args, **kwargs)

        return call


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_fatal_consumer_error_rejoins(broker: Broker, tmp_path: Path, guarantee: str) -> None:
    _run(broker, tmp_path, guarantee, "consumer")


@pytest.mark.kafka
@pytest.mark.slow
def test_fenced_producer_rejoins(broker: Broker, tmp_path: Path) -> None:
    _run(broker, tmp_path, "exactly_once", "producer")


@pytest.mark.kafka
@pytest.mark.slow
def test_producer_fenced_when_aborting_a_failed_commit_rejoins(broker: Broker, tmp_path: Path) -> None:
    """The commit fails (abortable) and the abort finds the producer fenced: on 6353945 the worker
    failed ("cannot abort the transaction: ... fenced"); it must rejoin with a new producer."""
    _run(broker, tmp_path, "exactly_once", "producer", fenced_on_abort=True)


def _run(broker: Broker, tmp_path: Path, guarantee: str, failing: str, fenced_on_abort: bool = False) -> None:
    from eventscript.kafka.clients import ClientSupplier

    name, topo_path = program_topology(
        broker,
        tmp_path,
        PROGRAM,
        "fenced",
        "Tick",
        partitions=PARTITIONS,
        settings={"clock": "record", "guarantee": guarantee, "commit_interval_ms": 50},
    )
    members: list[DyingConsumer] = []
    producers: list[FencedProducer] = []

    class Supplier(ClientSupplier):
        def producer(self, conf: dict[str, Any]) -> Any:
            producers.append(FencedProducer(super().producer(conf), on_abort=fenced_on_abort))
            return producers[-1]

        def consumer(self, conf: dict[str, Any]) -> Any:
            client = super().consumer(conf)
            if ".restore." in conf["group.id"] or ".standby." in conf["group.id"]:
                return client  # the readers of restores and standbys
            members.append(DyingConsumer(client))
            return members[-1]

    run = RunnerThread(topo_path, supplier=Supplier()).start()
    producer = KeyedProducer(broker, f"{name}-in", PARTITIONS)
    writing = producer.start(RECORDS, KEYS, rate=RATE)
    wait_for(lambda: producer.sent >= RECORDS // 3, 60, what="a third of the records written")
    dying = members[0] if failing == "consumer" else producers[0]
    dying.armed.set()
    wait_for(lambda: dying.dead, 30, what="the fatal error delivered")
    writing.join(60)
    assert run.finish(180) == 0, [w.failure for w in run.runner.workers]
    if failing == "consumer":
        assert len(members) >= 2, "the worker made no new consumer after its consumer failed fatally"
    else:  # (the consumer lives on: the tasks of its assignment are made again)
        assert len(producers) >= 2, "the worker made no new producer after its producer was fenced"

    raw = read_many(broker, [f"{name}-in", f"{name}-out", f"{name}-err"], dedupe=False)
    assert len(raw[f"{name}-in"]) == RECORDS
    assert raw[f"{name}-err"] == []
    oracle = Oracle(PROGRAM, "Tick", raw[f"{name}-in"])
    got, repeats = outputs_by_key(raw[f"{name}-out"])
    if guarantee == "exactly_once":
        assert repeats == 0
    assert set(got) == set(oracle.outputs)
    for key, lines in oracle.outputs.items():
        assert got[key] == lines, f"key {key}: outputs differ from the uninterrupted run"
    faults = run.faults()
    assert faults["rejoined"] == 1, faults
