"""How the worker waits for the broker without ceasing to be alive or deaf to a stop.

The loop (worker.py), the commit (checkpoint.py) and the task manager (task_manager.py) all make
calls that can wait on a broker that is slow or away. They share one :class:`Waiting`: the stop
asked for, when the loop last showed it was not hung, whether a call's outcome is unknown (the
worker is not ready meanwhile), and whether the worker stopped with its batch unresolved (nothing
more may then be committed, aborted or flushed).

Transactional calls are made on a thread of their own (``on_own_thread``) and awaited with a
deadline: librdkafka's ``send_offsets_to_transaction`` can block for good (``ProducerHung``), and
the worker must then give its batch up rather than wait with it.

The limits are read from this module when a wait starts (``waiting.TXN_SLICE``), so that tests
shorten them with ``monkeypatch.setattr(waiting, ...)``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from .worker_errors import ProducerHung, StoppedWaiting, WorkerError

T = TypeVar("T")

log = logging.getLogger("eventscript.kafka.worker")

TXN_TIMEOUT = 30.0
#: The longest single wait of a transactional call or a read of committed offsets: a call still
#: under way when it ends is made again (resumed), so a stop asked for while the broker is away
#: is noticed within this many seconds, well inside the runner's grace period.
TXN_SLICE = 5.0
#: Seconds a transactional call may go on past the timeout it was given before it is taken for
#: hung and given up (``ProducerHung``). librdkafka's ``send_offsets_to_transaction`` waits for
#: its result with no limit, and the group coordinator request behind it is never timed out
#: (librdkafka issues 5456 and 5511, open in 2.16: ``rd_kafka_txn_op_req1(rk, rko,
#: RD_POLL_INFINITE)`` in rdkafka_txnmgr.c, ``creq_ts_timeout`` never read in rdkafka_coord.c):
#: with the coordinator's broker killed it was seen waiting for good. A request sent to a broker
#: that stopped answering returns after ``socket.timeout.ms`` (60 s), which this cuts short too: the
#: batch is then given up a little early, never committed twice. Far inside the consumer's
#: ``max.poll.interval.ms`` (300 s), so the group keeps the member while it waits.
HANG_GRACE = 15.0
#: Seconds between two beats of the loop while it waits for a transactional call.
BEAT_EVERY = 0.25
#: Given-up calls still blocked at once past which the worker stops (``WorkerError``): each keeps
#: its producer, and that producer's librdkafka threads, until it returns.
MAX_HUNG = 3


def slice_of_timeout() -> float:
    """One wait's limit: the transaction timeout, cut to a slice so that a stop is seen."""
    return min(TXN_TIMEOUT, TXN_SLICE)


class Waiting:
    """The worker's state while it waits for the broker (shared by its parts)."""

    def __init__(self, name: str, fault: Callable[[str], None]) -> None:
        self.name = name
        self._fault = fault
        self.stopping = threading.Event()
        #: When the loop last showed it is not hung (liveness: ``ProgramWorker.alive``).
        self.last_loop = time.monotonic()
        #: A call is waiting for the broker and its outcome is unknown (not ready meanwhile).
        self.on_broker = False
        #: Stopped with the batch unresolved -- a transactional call or an at-least-once offset
        #: commit whose outcome is unknown, or a batch half produced (the producer's queue stayed
        #: full): nothing more is committed, aborted or flushed; the next start processes it again.
        self.unresolved = False
        #: When the transactional call under way started (None: none). librdkafka's
        #: send_offsets_to_transaction ignores its timeout while the broker does not answer
        #: (librdkafka issue 5456): a call past its slice is seen from the worker (``overdue``),
        #: not from a timeout it never gets, and given up after ``HANG_GRACE``.
        self.call_since: float | None = None
        #: A transactional call of the current producer was given up (``ProducerHung``) and may
        #: still be blocked on its thread: the producer must not be called, flushed, purged or
        #: closed again. Cleared when the worker makes a new producer (``new_producer``).
        self.producer_hung = False
        #: The threads of given-up calls, kept to bound how many may block at once (``MAX_HUNG``).
        self._hung_calls: list[threading.Thread] = []
        #: The longest the loop went without a beat since ``stall_seen`` was last read: a process
        #: frozen (SIGSTOP, a VM paused) or starved for longer than the group's session timeout
        #: may have been replaced by another member meanwhile (``Checkpoint.commit``).
        self.longest_gap = 0.0

    def new_producer(self) -> None:
        """The worker made a new producer: no call of it has hung."""
        self.producer_hung = False

    def overdue(self) -> bool:
        """A transactional call has been under way longer than it was allowed (see ``call_since``)."""
        since = self.call_since
        return since is not None and time.monotonic() - since > TXN_SLICE

    def beat(self) -> None:
        """The loop (or a wait inside it) is alive."""
        now = time.monotonic()
        if now - self.last_loop > self.longest_gap:
            self.longest_gap = now - self.last_loop
        self.last_loop = now

    def stall_seen(self) -> float:
        """The longest the loop went without a beat since this was last asked, until now (seconds)."""
        gap = max(self.longest_gap, time.monotonic() - self.last_loop)
        self.longest_gap = 0.0
        return gap

    def stop_unresolved(self, what: str) -> StoppedWaiting:
        """The error that ends a wait a stop interrupted: the batch is left unresolved."""
        self.unresolved = True
        return StoppedWaiting(f"stopped while {what}; the batch is processed again on the next start")

    def txn_call(self, what: str, call: Callable[[float], Any], fault: str | None = "commit_failed") -> None:
        """Make a transactional call (``call(timeout)``), resuming it while it times out.

        A transactional call that times out is still under way inside librdkafka: the only
        call it then accepts is the same one again, which resumes it (any other, an abort
        included, fails with ``_CONFLICT``). Its outcome is unknown until then -- a commit may
        have reached the broker -- so neither giving up nor aborting is right; the worker waits
        for the broker, not ready, and stays alive. Errors that are not retriable (one that
        requires an abort, a fatal one) are raised for the commit's failure handling; a stop
        asked for while waiting raises :class:`StoppedWaiting` (the call waits ``TXN_SLICE`` at
        most at a time, so the stop is seen soon).

        A call that does not return at all (``HANG_GRACE`` past its timeout) is given up with
        the producer: :class:`ProducerHung`. That is safe where resuming is not possible: the
        transaction's outcome is settled by the new producer's ``init_transactions`` (a commit
        the broker had begun completes, anything else is aborted), and the tasks start again from
        what the group has committed."""
        waited = 0
        try:
            while True:
                if self.producer_hung:
                    raise ProducerHung(f"{what} the transaction: an earlier call of this producer never returned")
                started = self.call_since = time.monotonic()
                try:
                    self._await(what, call, slice_of_timeout())
                    if waited == 0 and fault is not None and time.monotonic() - started > TXN_SLICE:
                        self._fault(fault)  # it waited for the broker past its slice (librdkafka 5456)
                    return
                except KafkaException as exc:
                    err: KafkaError = exc.args[0]
                    if err.fatal() or err.txn_requires_abort() or not err.retriable():
                        raise
                    if self.stopping.is_set():
                        raise self.stop_unresolved(
                            f"{what} the transaction waited for the broker ({err.str()})"
                        ) from exc
                    waited += 1
                    self.on_broker = True  # not ready while the outcome is unknown
                    self.beat()  # waiting for the broker, not hung
                    if waited == 1 and fault is not None:
                        self._fault(fault)
                    log.warning("%s: %s the transaction: %s; resuming the call (%d)", self.name, what, err, waited)
        finally:
            self.on_broker = False
            self.call_since = None

    def _await(self, what: str, call: Callable[[float], Any], timeout: float) -> Any:
        """``call(timeout)`` made on a thread of its own, awaited until it returns, a stop (once it
        has had its slice), or ``HANG_GRACE`` past its timeout (``ProducerHung``). The worker's
        loop beats meanwhile: it is waiting for librdkafka, not hung."""
        started = time.monotonic()
        future, thread = on_own_thread(f"{self.name}: {what} the transaction", lambda: call(timeout))
        deadline = started + timeout + HANG_GRACE
        while True:
            try:
                return future.result(timeout=max(0.0, min(BEAT_EVERY, deadline - time.monotonic())))
            except FutureTimeout:
                pass
            now = time.monotonic()
            self.beat()
            if self.stopping.is_set() and now - started >= TXN_SLICE:
                raise self.stop_unresolved(f"{what} the transaction waited {now - started:.0f} s for librdkafka")
            if now >= deadline:
                raise self._give_up(what, thread, now - started, timeout)

    def _give_up(self, what: str, thread: threading.Thread, waited: float, timeout: float) -> Exception:
        """The error that ends a transactional call which did not return: :class:`ProducerHung`,
        or :class:`WorkerError` when more than ``MAX_HUNG`` given-up calls are still blocked
        (each holds a producer and its threads: a process that keeps hanging must be restarted)."""
        self.producer_hung = True
        self._hung_calls = [t for t in self._hung_calls if t.is_alive()] + [thread]
        if len(self._hung_calls) > MAX_HUNG:
            return WorkerError(
                f"{self.name}: {len(self._hung_calls)} transactional calls of librdkafka are still blocked "
                f"(the last: {what} the transaction, for {waited:.0f} s; librdkafka issues 5456, 5511); "
                f"restart the worker"
            )
        log.error(
            "%s: %s the transaction has not returned for %.0f s (its timeout: %.0f s; librdkafka issues 5456, "
            "5511): giving the batch up; a new producer aborts its transaction and the tasks start again from "
            "the last commit",
            self.name,
            what,
            waited,
            timeout,
        )
        return ProducerHung(f"{what} the transaction did not return for {waited:.0f} s")

    def hung_calls(self) -> int:
        """Given-up calls still blocked on their threads."""
        self._hung_calls = [t for t in self._hung_calls if t.is_alive()]
        return len(self._hung_calls)


def on_own_thread(name: str, call: Callable[[], T]) -> tuple[Future[T], threading.Thread]:
    """Start ``call()`` on a daemon thread of its own; its outcome is the future's. A daemon, so
    that a call that never returns keeps no process from exiting (``concurrent.futures``'
    executors join their threads at exit)."""
    future: Future[T] = Future()

    def run() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(call())
        except BaseException as exc:
            future.set_exception(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return future, thread
