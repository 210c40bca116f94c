"""Recovery is exact: a rewound, revoked or lost task never changes an output (issue: recovery).

Each test injects one fault on purpose into a worker running in this process against the real
broker, while a producer writes keyed records with record timestamps (``clock: record``, so the
run is deterministic): a commit failing with ILLEGAL_GENERATION (at-least-once: the consumer's
offset commit; exactly-once: ``send_offsets_to_transaction``), a transaction whose commit fails
and is aborted, and a lost assignment followed by the group handing the task back.

Afterwards, per key, the outputs with repeated ids dropped equal an uninterrupted run over the
same records (``kafka_helpers.Oracle``), every repeat is a byte-identical copy of the first, and
every instance in the worker's committed store equals the uninterrupted run's. The faults are
injected through subclasses of the confluent-kafka clients; everything else is real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka_helpers import (
    Broker,
    KeyedProducer,
    Oracle,
    RunnerThread,
    committed_states,
    outputs_by_key,
    program_topology,
    read_many,
    wait_for,
)

from count_programs import COUNT_QUIET

PROGRAM = COUNT_QUIET

PARTITIONS = 3
KEYS = 60
RECORDS = 2500  # at least
RECORDS_AFTER = 300  # written after the last fault
RECORDS_MAX = 30_000  # a bound, never reached when the faults come
RATE = 500.0


class Faults:
    """Which fault to inject, and at which calls of the faulty operation (1-based)."""

    def __init__(self, kind: str, at: tuple[int, ...]) -> None:
        self.kind = kind
        self.at = set(at)
        self.calls = 0
        self.injected = 0
        self.worker: Any = None

    def due(self, kind: str) -> bool:
        if kind != self.kind:
            return False
        self.calls += 1
        if self.calls in self.at:
            self.injected += 1
            return True
        return False


def _clients(faults: Faults) -> tuple[type[Consumer], type[Producer]]:
    class FaultyConsumer(Consumer):
        def commit(self, *args: Any, **kwargs: Any) -> Any:
            if faults.due("illegal_generation_alo"):
                raise KafkaException(KafkaError(KafkaError.ILLEGAL_GENERATION, "injected"))
            return super().commit(*args, **kwargs)

        def consume(self, *args: Any, **kwargs: Any) -> Any:
            w = faults.worker
            if (
                faults.kind == "lost"
                and w is not None
                and w.tasks
                and w.ready
                and any(t.position for t in w.tasks.values())
                and faults.due("lost")
            ):
                # What librdkafka does when the session times out and the member rejoins: the
                # lost callback, then the same partition assigned again.
                lost = [TopicPartition(w.rep_topic, min(w.tasks))]
                w._on_lost(self, lost)
                w._on_assign(self, lost)
            return super().consume(*args, **kwargs)

    class FaultyProducer(Producer):
        def send_offsets_to_transaction(self, *args: Any, **kwargs: Any) -> Any:
            if faults.due("illegal_generation_eos"):
                raise KafkaException(KafkaError(KafkaError.ILLEGAL_GENERATION, "injected", txn_requires_abort=True))
            return super().send_offsets_to_transaction(*args, **kwargs)

        def commit_transaction(self, *args: Any, **kwargs: Any) -> Any:
            if faults.due("abort"):
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "injected", txn_requires_abort=True))
            return super().commit_transaction(*args, **kwargs)

    return FaultyConsumer, FaultyProducer


def _run_with_faults(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guarantee: str, faults: Faults
) -> None:
    from eventscript.kafka import worker as worker_module
    from eventscript.kafka.clients import ClientSupplier

    name, topo_path = program_topology(
        broker,
        tmp_path,
        PROGRAM,
        "recover",
        "Tick",
        partitions=PARTITIONS,
        settings={"clock": "record", "guarantee": guarantee, "commit_interval_ms": 30},
    )
    consumer_cls, producer_cls = _clients(faults)

    class FaultySupplier(ClientSupplier):
        def consumer(self, conf: dict[str, Any]) -> Any:
            return consumer_cls(conf)

        def producer(self, conf: dict[str, Any]) -> Any:
            return producer_cls(conf)

    original_open = worker_module.ProgramWorker._open

    def _open(self: Any) -> None:
        faults.worker = self
        original_open(self)

    monkeypatch.setattr(worker_module.ProgramWorker, "_open", _open)

    producer = KeyedProducer(broker, f"{name}-in", PARTITIONS)
    run = RunnerThread(topo_path, supplier=FaultySupplier()).start()  # the records must come while it runs
    # Records keep coming until every fault is injected and RECORDS_AFTER more were written after
    # the last one (a count of calls is reached sooner or later, however loaded the machine).
    writing = producer.start(RECORDS_MAX, KEYS, rate=RATE)
    try:
        wait_for(
            lambda: faults.injected == len(faults.at) or not writing.is_alive(),
            180,
            what=f"{len(faults.at)} faults injected",
        )
        enough = max(RECORDS, producer.sent + RECORDS_AFTER)
        wait_for(lambda: producer.sent >= enough or not writing.is_alive(), 120, what="records after the faults")
    finally:
        producer.stop.set()
        writing.join(60)
    assert run.finish(240) == 0, [w.failure for w in run.runner.workers]
    assert faults.injected == len(faults.at), f"only {faults.injected} of {len(faults.at)} faults were injected"
    faults_seen = run.faults()
    # (a commit refused for the group's generation makes the member rejoin instead of rewinding)
    assert faults_seen["rewound"] + faults_seen["rejoined"] >= faults.injected, faults_seen

    raw = read_many(broker, [f"{name}-in", f"{name}-out", f"{name}-err"], dedupe=False)
    assert len(raw[f"{name}-in"]) == producer.sent >= RECORDS
    assert raw[f"{name}-err"] == []
    oracle = Oracle(PROGRAM, "Tick", raw[f"{name}-in"])
    got, repeats = outputs_by_key(raw[f"{name}-out"])
    print(f"{faults.kind}: {faults.injected} faults, {sum(map(len, got.values()))} outputs, {repeats} repeats")
    assert any(line[0] == "Quiet" for lines in oracle.outputs.values() for line in lines), "no timer fired"
    assert set(got) == set(oracle.outputs)
    for key, lines in oracle.outputs.items():
        assert got[key] == lines, f"key {key}: outputs differ from the uninterrupted run"
    assert committed_states(tmp_path / "state") == oracle.states


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_commit_failing_with_illegal_generation(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guarantee: str
) -> None:
    kind = "illegal_generation_alo" if guarantee == "at_least_once" else "illegal_generation_eos"
    _run_with_faults(broker, tmp_path, monkeypatch, guarantee, Faults(kind, (4, 9, 15)))


@pytest.mark.kafka
@pytest.mark.slow
def test_aborted_transaction(broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run_with_faults(broker, tmp_path, monkeypatch, "exactly_once", Faults("abort", (3, 8, 14)))


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_lost_assignment(broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guarantee: str) -> None:
    _run_with_faults(broker, tmp_path, monkeypatch, guarantee, Faults("lost", (20, 60, 110)))
