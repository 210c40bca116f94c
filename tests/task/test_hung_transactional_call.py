"""A transactional call that never returns (librdkafka's send_offsets_to_transaction after a broker
kill: issues 5456 and 5511) is given up, through the worker's real ``Waiting`` with calls that
block on an event instead of a broker.

The call runs on a thread of its own; the worker waits for it at most ``HANG_GRACE`` past the
timeout it gave, then raises ``ProducerHung`` (the worker replaces the producer and rejoins:
tests/kafka/test_hung_send_offsets.py). The hung producer is never called again, a stop still
ends the wait, and given-up calls still blocked are bounded (``MAX_HUNG``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException

from eventscript.kafka import waiting
from eventscript.kafka.waiting import Waiting
from eventscript.kafka.worker_errors import ProducerHung, StoppedWaiting, WorkerError

GRACE = 0.5
SLICE = 0.3


class BlockingCall:
    """A transactional call that blocks until ``release`` (as librdkafka's untimed wait), and
    counts how often it was made."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.calls = 0

    def __call__(self, timeout: float) -> None:
        self.calls += 1
        self.released.wait()

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def short_limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(waiting, "TXN_TIMEOUT", SLICE)
    monkeypatch.setattr(waiting, "TXN_SLICE", SLICE)
    monkeypatch.setattr(waiting, "HANG_GRACE", GRACE)
    yield


def _waits() -> tuple[Waiting, list[str]]:
    faults: list[str] = []
    return Waiting("p", faults.append), faults


def test_a_call_that_never_returns_is_given_up_after_its_grace(short_limits: None) -> None:
    waits, _ = _waits()
    call = BlockingCall()
    started = time.monotonic()
    try:
        with pytest.raises(ProducerHung) as raised:
            waits.txn_call("sending the offsets", call)
        took = time.monotonic() - started
        assert SLICE + GRACE <= took < SLICE + GRACE + 1.5, took
        assert raised.value.producer_failed  # the worker replaces the producer (``_rejoin``)
        assert waits.producer_hung
        assert waits.call_since is None and not waits.on_broker
        assert waits.hung_calls() == 1
    finally:
        call.release()


def test_the_hung_producer_is_not_called_again_until_a_new_one_is_made(short_limits: None) -> None:
    waits, _ = _waits()
    hung = BlockingCall()
    try:
        with pytest.raises(ProducerHung):
            waits.txn_call("sending the offsets", hung)
        other = BlockingCall()
        other.release()  # (would return at once)
        with pytest.raises(ProducerHung):
            waits.txn_call("aborting", other)
        assert other.calls == 0, "a call was made on the producer whose call hung"
        waits.new_producer()
        waits.txn_call("initialising", other)
        assert other.calls == 1
    finally:
        hung.release()


def test_a_call_that_returns_in_time_and_its_errors_are_as_before(short_limits: None) -> None:
    waits, faults = _waits()
    results: list[float] = []
    waits.txn_call("committing", results.append)
    assert results == [SLICE]
    attempts = iter([KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True), None])

    def times_out_once(timeout: float) -> None:
        err = next(attempts)
        if err is not None:
            raise KafkaException(err)

    waits.txn_call("committing", times_out_once)  # resumed once, then done
    assert faults == ["commit_failed"]

    def requires_abort(timeout: float) -> None:
        raise KafkaException(KafkaError(KafkaError._STATE, "abort", txn_requires_abort=True))

    with pytest.raises(KafkaException):
        waits.txn_call("committing", requires_abort)
    assert not waits.producer_hung


def test_the_worker_beats_while_it_waits_for_a_slow_call(short_limits: None) -> None:
    waits, _ = _waits()
    beats: list[float] = []

    def slow(timeout: float) -> None:
        time.sleep(SLICE + GRACE / 2)  # past its timeout, not past the grace
        beats.append(waits.last_loop)

    before = waits.last_loop
    waits.txn_call("sending the offsets", slow)
    assert beats and beats[0] > before, "the loop did not beat while the call was under way"
    assert not waits.producer_hung


def test_a_stop_ends_the_wait_for_a_hung_call(short_limits: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waiting, "HANG_GRACE", 30.0)
    waits, _ = _waits()
    call = BlockingCall()
    threading.Timer(0.2, waits.stopping.set).start()
    started = time.monotonic()
    try:
        with pytest.raises(StoppedWaiting):
            waits.txn_call("sending the offsets", call)
        assert time.monotonic() - started < SLICE + 1.5
        assert waits.unresolved  # nothing more is committed, aborted or flushed
    finally:
        call.release()


def test_too_many_calls_still_blocked_stop_the_worker(short_limits: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waiting, "MAX_HUNG", 2)
    waits, _ = _waits()
    calls = [BlockingCall() for _ in range(3)]
    try:
        for call in calls[:2]:
            with pytest.raises(ProducerHung):
                waits.txn_call("sending the offsets", call)
            waits.new_producer()
        with pytest.raises(WorkerError, match="3 transactional calls of librdkafka are still blocked"):
            waits.txn_call("sending the offsets", calls[2])
    finally:
        for call in calls:
            call.release()


def test_given_up_calls_that_return_are_no_longer_counted(short_limits: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waiting, "MAX_HUNG", 1)
    waits, _ = _waits()
    first, second = BlockingCall(), BlockingCall()
    try:
        with pytest.raises(ProducerHung):
            waits.txn_call("sending the offsets", first)
        first.release()
        deadline = time.monotonic() + 5
        while waits.hung_calls() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert waits.hung_calls() == 0, "the given-up call's thread did not end once the call returned"
        waits.new_producer()
        with pytest.raises(ProducerHung):  # one blocked at once is allowed: not a WorkerError
            waits.txn_call("sending the offsets", second)
    finally:
        second.release()
