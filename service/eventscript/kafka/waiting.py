"""How the worker waits for the broker without ceasing to be alive or deaf to a stop.

The loop (worker.py), the commit (checkpoint.py) and the task manager (task_manager.py) all make
calls that can wait on a broker that is slow or away. They share one :class:`Waiting`: the stop
asked for, when the loop last showed it was not hung, whether a call's outcome is unknown (the
worker is not ready meanwhile), and whether the worker stopped with its batch unresolved (nothing
more may then be committed, aborted or flushed).

The limits are read from this module when a wait starts (``waiting.TXN_SLICE``), so that tests
shorten them with ``monkeypatch.setattr(waiting, ...)``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from .worker_errors import StoppedWaiting

log = logging.getLogger("eventscript.kafka.worker")

TXN_TIMEOUT = 30.0
#: The longest single wait of a transactional call or a read of committed offsets: a call still
#: under way when it ends is made again (resumed), so a stop asked for while the broker is away
#: is noticed within this many seconds, well inside the runner's grace period.
TXN_SLICE = 5.0


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
        #: (librdkafka issue 5456): it blocks until its request times out (socket.timeout.ms, 60 s),
        #: so a call past its slice is seen from the worker (``overdue``), not from a timeout it never gets.
        self.call_since: float | None = None
        #: The longest the loop went without a beat since ``stall_seen`` was last read: a process
        #: frozen (SIGSTOP, a VM paused) or starved for longer than the group's session timeout
        #: may have been replaced by another member meanwhile (``Checkpoint.commit``).
        self.longest_gap = 0.0

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

    def txn_call(self, what: str, call: Any, fault: str | None = "commit_failed") -> None:
        """Make a transactional call (``call(timeout)``), resuming it while it times out.

        A transactional call that times out is still under way inside librdkafka: the only
        call it then accepts is the same one again, which resumes it (any other, an abort
        included, fails with ``_CONFLICT``). Its outcome is unknown until then -- a commit may
        have reached the broker -- so neither giving up nor aborting is right; the worker waits
        for the broker, not ready, and stays alive. Errors that are not retriable (one that
        requires an abort, a fatal one) are raised for the commit's failure handling; a stop
        asked for while waiting raises :class:`StoppedWaiting` (the call waits ``TXN_SLICE`` at
        most at a time, so the stop is seen soon)."""
        waited = 0
        try:
            while True:
                started = self.call_since = time.monotonic()
                try:
                    call(slice_of_timeout())
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
