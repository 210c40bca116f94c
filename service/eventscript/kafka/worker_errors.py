"""The ways a program worker stops going on, shared by its parts (worker.py, checkpoint.py,
task_manager.py, waiting.py): raised where the fault is seen, handled by the worker's loop."""

from __future__ import annotations


class WorkerError(Exception):
    """The worker cannot go on: it fails with this error, which the runner reports before stopping
    the other workers of the process."""


class MemberEnded(Exception):
    """The group member can go no further: its consumer reported a fatal error (librdkafka's
    ``_FATAL``, e.g. "Static consumer fenced by other consumer with same group.instance.id", whose
    ``fatal()`` is false, or any error whose ``fatal()`` is true). The consumer will never fetch or
    commit again, so the worker drops its tasks without committing and rejoins with a new consumer
    (``ProgramWorker._rejoin``) rather than staying alive with partitions no one processes.

    ``producer_failed``: the exactly-once producer failed fatally too (fenced by a newer producer
    of its transactional id, or its transaction timed out while the worker was frozen): it is
    replaced as well, and its transaction is left to the broker (it was aborted or fenced).

    ``consumer_failed``: the consumer is dead and is replaced (a new member joins); otherwise the
    consumer lives on and the tasks of its current assignment are made again, restored from the
    committed state (a commit refused for the group's generation: the consumer's own rebalance
    then says what it really owns), which spares the group a rebalance per refused commit.
    """

    def __init__(self, message: str, producer_failed: bool = False, consumer_failed: bool = False) -> None:
        super().__init__(message)
        self.producer_failed = producer_failed
        self.consumer_failed = consumer_failed


class ProducerHung(MemberEnded):
    """A transactional call of the exactly-once producer did not return long after its timeout.

    librdkafka's ``send_offsets_to_transaction`` waits for its result with no time limit, and the
    coordinator request behind it never times out (librdkafka issues 5456 and 5511, open in 2.16):
    after a broker is killed it can wait for good. The call is made on a thread of its own
    (``Waiting.txn_call``), and when it is given up the batch is given up with it: its
    transaction is never committed (the new producer's ``init_transactions`` fences and aborts
    it), every task is made again from the last commit, and the worker goes on with a new
    producer. The hung producer is never called again nor closed: its call may still be under way
    on the other thread, which keeps it until the call returns."""

    def __init__(self, message: str) -> None:
        super().__init__(message, producer_failed=True)


class StoppedWaiting(Exception):
    """A stop was asked for while a transactional call waited for the broker. The call's outcome
    is unknown and librdkafka accepts no other transactional call until it ends, so the worker
    stops without committing or aborting: the broker aborts the open transaction when its timeout
    passes, or the next worker with the same transactional id fences it and finishes it (a commit
    that reached the broker completes, anything else is aborted); either way the batch is
    processed again from the last commit."""
