"""What the worker commits, and when: the batch's outputs and changelog records, its tasks' input
offsets, and after the commit the stores' checkpoints (as Kafka Streams' commit of a
StreamThread and Quix Streams' checkpoint).

Exactly-once (EOS v2): the queued records are produced in one Kafka transaction and the tasks'
input positions are committed with ``send_offsets_to_transaction`` and the consumer's group
metadata, which fences zombie members. At-least-once: the outputs are acknowledged first, then the
offsets are committed (asynchronously, its result awaited in short slices of polling). Only after
the commit are the changed instance snapshots written to the local stores (with the changelog
offsets the batch reached), so that a store never gets ahead of the committed offsets.

A commit that fails goes back to the last commit (``rewind``): every task is rebuilt from its
store and its inputs read again from the committed offsets. A commit refused for the group's
generation (``MIGRATED``, Kafka Streams' TaskMigratedException) or a fenced producer ends the
group member instead (:class:`MemberEnded`): another member owns the tasks now.

After a commit, consumed repartition records are purged (DeleteRecords), and the worker's
status metrics are updated.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from ..engine.tuning import settle_gc
from ..topology.config import ProgramConfig
from . import waiting
from .producer import BatchProducer
from .state import tp_name
from .task_manager import TaskManager
from .waiting import Waiting
from .worker_errors import MemberEnded, WorkerError

log = logging.getLogger("eventscript.kafka.worker")

#: Records produced since the last commit that make a commit due before its interval.
MAX_OUTBOX = 20_000
#: Seconds between purges of consumed repartition records.
PURGE_INTERVAL = 30.0
#: Commit errors that mean the group gave this member's tasks to another (Kafka Streams'
#: TaskMigratedException): every task is lost, and the member rejoins.
MIGRATED = (KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID, KafkaError.FENCED_INSTANCE_ID)
#: Why a commit is refused before it is sent (``TaskManager.member_replaced``).
NOT_THE_MEMBER = (
    "the consumer is no longer the group member its tasks were assigned under (its session ended): "
    "the broker would not fence this commit"
)


class CommitHost(Protocol):
    """What the checkpoint needs of the worker: its current clients (a rejoin replaces them) and
    a way to keep the consumer served while an at-least-once commit waits."""

    consumer: Consumer | None
    producer: Producer | None
    output: BatchProducer | None

    def poll_while_committing(self, timeout: float) -> None:
        """Poll the consumer once (records go to the tasks' buffers; a member ended raises)."""


class Checkpoint:
    """The commit cycle of one program worker."""

    def __init__(
        self,
        cfg: ProgramConfig,
        host: CommitHost,
        tasks: TaskManager,
        waits: Waiting,
        admin: Callable[[], Any],
        stat: Callable[[str, int], None],
        fault: Callable[[str], None],
        metrics: Any = None,
        stall_limit: float | None = None,
    ) -> None:
        self.cfg = cfg
        #: At-least-once: a batch during which the loop stalled for longer than this (about the
        #: group's session timeout, seconds: ``worker.stall_limit``) is not committed
        #: (``_stalled``). None: never checked.
        self.stall_limit = stall_limit
        self.name = cfg.name
        self.eos = cfg.guarantee == "exactly_once"
        self.rep_topic = tasks.rep_topic
        self.host = host
        self.tasks = tasks
        self.waits = waits
        self._make_admin = admin
        self._stat = stat
        self._fault = fault
        self.metrics = metrics
        self.interval = cfg.commit_interval / 1000
        #: The last commit failed (not ready until one succeeds).
        self.failed = False
        #: Something was processed (or a marker queued) since the last commit.
        self.dirty = False
        self.last_commit = time.monotonic()
        #: Records produced (``output.produced``) at the last commit.
        self.produced_at_commit = 0
        #: Changelog records of the batch, per task, written to its store once committed.
        self._pending_store: dict[int, dict[bytes, bytes | None]] = {}
        #: The outcome of the at-least-once offset commit under way (``_on_commit``): None while
        #: unknown, else the error (``NO_ERROR`` when it succeeded).
        self._offsets_result: KafkaError | None = None
        #: An at-least-once commit is waiting for its result: a revocation meanwhile commits
        #: nothing more (the commit under way covers the batch), a lost assignment's rewind waits
        #: for the result (``_rewind_deferred``) so the stores are at the committed offsets.
        self.waiting_for_result = False
        self._rewind_deferred = False
        #: Repartition records consumed and committed are deleted (DeleteRecords), as Kafka
        #: Streams purges its repartition topics; offsets purged so far, and when.
        self._purged: dict[int, int] = {}
        self._last_purge = time.monotonic()
        self._purge_supported = True
        self._purge_failures = 0
        self._admin: Any = None

    # -- when ------------------------------------------------------------------------------------

    def commit_if_due(self) -> None:
        """Commit when the interval has passed or the batch has grown past ``MAX_OUTBOX``
        records, if anything happened since the last. When the interval has passed the tasks
        also mark their progress: under exactly-once in the batch's transaction, under
        at-least-once once the batch is committed (``_mark_committed_progress``)."""
        output = self.host.output
        assert output is not None
        tasks = self.tasks.tasks.values()
        # A task with records again after an idle marker has written the marker saying so and
        # waits for it to be committed before it processes them (``Task.wants_commit``).
        asked = [task for task in tasks if task.wants_commit]
        if asked:
            self.dirty = True
        due = bool(asked) or time.monotonic() - self.last_commit >= self.interval
        if due and self.eos and sum([task.write_progress() for task in tasks]) > 0:
            self.dirty = True  # progress markers go out with the batch
        elif due and not self.eos and sum([task.forward_fetched() for task in tasks]) > 0:
            self.dirty = True  # (the records re-published ahead belong to the batch)
        if self.dirty and (due or output.produced - self.produced_at_commit > MAX_OUTBOX):
            self.commit()
        if due and not self.eos and not self.dirty:
            self._mark_committed_progress()
        for task in asked:
            task.wants_commit = False

    def _mark_committed_progress(self) -> None:
        """At-least-once: the tasks' progress markers, written only when nothing is processed
        that no commit covers (after a commit, or a rewind to the last one). A marker written
        before its batch's commit lets readers take the batch's records; were the worker killed
        before the commit, the task's next owner would write them again from the last commit
        (the same ids, later offsets) after a reader had taken the first copies, and a reader's
        instance would take them twice (an extra ``$error`` for F2 in the killed-midway
        fridge-alerts run, issue 21). Written after it, a marker releases only committed
        records; the copies of a batch done again both wait, until the next owner's marker,
        beside each other, where the reader drops the repeat (``streams.WriterStreams``). The
        markers go out with the producer's next sends; none waits for them (a marker lost with
        the worker is written again by the task's next owner)."""
        for task in self.tasks.tasks.values():
            task.write_progress(forward=False)

    def new_producer(self) -> None:
        """A new producer counts its records from 0."""
        self.produced_at_commit = 0

    @property
    def open(self) -> bool:
        """Something is processed or produced that no commit covers yet."""
        output = self.host.output
        return self.dirty or (output is not None and output.txn_open)

    # -- what ------------------------------------------------------------------------------------

    def produce_outboxes(self) -> None:
        """Records a task queued while detached (none in normal operation)."""
        output = self.host.output
        assert output is not None
        for task in self.tasks.tasks.values():
            kept = task.take_outputs()
            if kept:
                send = output.senders()[0]
                for r in kept:
                    send(
                        r.topic,
                        -1 if r.partition is None else r.partition,
                        r.key,
                        r.value,
                        r.headers,
                        r.timestamp,
                        r.changelog,
                    )

    def positions(self) -> list[TopicPartition]:
        """Every running task's input positions: its committed offsets moved on by what it processed."""
        out = []
        for p, task in self.tasks.tasks.items():
            for name, off in {**self.tasks.committed_offsets.get(p, {}), **task.position}.items():
                topic, _, part = name.rpartition(":")
                out.append(TopicPartition(topic, int(part), off))
        return out

    def commit(self, in_rebalance: bool = False) -> None:
        """Commit the batch: changelog writes, outputs and input positions, atomically (EOS).
        ``in_rebalance``: called from a rebalance callback, where the consumer must not be polled."""
        producer, consumer, output = self.host.producer, self.host.consumer, self.host.output
        assert producer is not None and consumer is not None and output is not None
        if self.waits.unresolved:
            return  # stopping with a call unresolved (StoppedWaiting): nothing can be committed
        if self.waiting_for_result:
            return  # a revocation while the commit of this batch waits for its result: that commit covers it
        if self._stalled():
            return
        tasks = self.tasks.tasks
        if (tasks or output.txn_open) and self.tasks.member_replaced(consumer):
            # Before the batch's changelog records are sent (Task.changelog_records sends them):
            # at least once, a refused commit still left them in the changelog, under the epoch
            # the task took from the consumer's newer generation (ProgramWorker._rejoin's
            # restore), and that epoch fenced the new owner's later records on every restore.
            # (Only what the worker knows: a refusal the broker gives later, as
            # ILLEGAL_GENERATION, comes after they were sent; a restore takes its epoch above
            # such records too, kafka/restore.py.) Checked whenever a commit would send anything:
            # with tasks it sends their input positions, processed or not -- a member's batch
            # that moved no input is refused too, or a consumer that is no member (generation -1,
            # which the broker does not check) would commit a zombie's old offsets.
            self._rewind_deferred = False
            self._commit_failed(KafkaException(KafkaError(KafkaError.UNKNOWN_MEMBER_ID, NOT_THE_MEMBER)))
            return
        for p, task in tasks.items():
            changes = task.changelog_records()
            if changes:
                self._pending_store.setdefault(p, {}).update(changes)
        self.produce_outboxes()
        positions = self.positions()
        if not positions and not output.txn_open:
            self.dirty = False
            return
        started = time.monotonic()
        committing = dict(tasks)
        try:
            if self.eos:
                output.begin()
                # Delivery errors show before the offsets are sent; what is still queued when the
                # broker is slow is flushed by commit_transaction, which can be resumed.
                producer.flush(waiting.slice_of_timeout())
                if output.delivery_error is not None:
                    raise KafkaException(output.delivery_error)
                if positions:
                    meta = consumer.consumer_group_metadata()
                    self.waits.txn_call(
                        "sending the offsets to", lambda t: producer.send_offsets_to_transaction(positions, meta, t)
                    )
                self.waits.txn_call("committing", lambda t: producer.commit_transaction(t))
                output.txn_open = False
            else:
                remaining = self._flush(producer)
                if output.delivery_error is not None and output.delivery_error.fatal():
                    raise WorkerError(
                        f"{self.name}: producer failed: {output.delivery_error}; "
                        f"records since the last commit will be processed again after a restart"
                    )
                if remaining or output.delivery_error is not None:
                    raise KafkaException(output.delivery_error or KafkaError(KafkaError._TIMED_OUT))
                if positions:
                    self._commit_offsets(consumer, positions, in_rebalance)
        except KafkaException as exc:
            self._rewind_deferred = False  # the failure's rewind is the one deferred
            self._commit_failed(exc)
            return
        self.failed = False
        self.dirty = False
        self.last_commit = time.monotonic()
        self.produced_at_commit = output.produced
        self._stat("commits", 1)
        if self.metrics is not None:
            self.metrics.observe_commit(self.name, time.monotonic() - started)
        # Only the tasks of this batch still owned: an at-least-once commit polls while it waits,
        # and a task revoked meanwhile (and perhaps assigned again: a new one, restoring) is not.
        owned = {p: task for p, task in committing.items() if tasks.get(p) is task}
        self._checkpoint_stores(owned, output)
        settle_gc()  # (the batch's new instances, now in the store, are long-lived: engine/tuning.py)
        if self._rewind_deferred:  # the assignment was lost while the commit waited
            self._rewind_deferred = False
            self.rewind()
            return
        if time.monotonic() - self._last_purge >= PURGE_INTERVAL:
            self._purge_repartition()
        self._report(consumer)

    def _stalled(self) -> bool:
        """At-least-once: whether the batch must not be committed because the loop stalled for
        about the session timeout or longer while it was made -- then every task goes back to the last
        commit instead (a task another member committed meanwhile is restored: task_manager.py).

        A worker frozen past its session (the fault harness's SIGSTOP; a paused VM) resumes in the
        middle of its loop, processes what it had fetched and commits before librdkafka tells it
        that the group gave its tasks away. Under exactly-once the transaction's group metadata
        fences that commit; under at-least-once the changelog records are written before the offset
        commit is refused, and they carry the zombie's old input position, which the new owner's
        commits cover: a later restore applied them over the new owner's newer records (seen: a
        key's count back at 33 where 67 was due)."""
        gap = self.waits.stall_seen()
        if self.eos or self.stall_limit is None or gap <= self.stall_limit:
            return False
        log.warning(
            "%s: the worker was stalled for %.1f s, about the group's session timeout or longer (limit %.1f s): "
            "another member may own its tasks now; the batch is not committed and every task goes back to the "
            "last commit",
            self.name,
            gap,
            self.stall_limit,
        )
        self.failed = True
        self._fault("commit_failed")
        self.rewind_when_resolved()
        return True

    def _checkpoint_stores(self, owned: dict[int, Any], output: BatchProducer) -> None:
        """After a commit: write the batch's changelog records to the stores of the tasks still
        owned, with the changelog offset each reached, its input positions and its owner epoch
        (kept from its first commit on, not from its restore: kafka/restore.py), and move on the
        committed offsets the next commit starts from."""
        for p, changes in self._pending_store.items():
            if (held := owned.get(p)) is not None:
                held.store.write(changes, output.changelog_end.get(p), dict(held.position), None, held.owner_epoch)
        self._pending_store.clear()
        for p, task in owned.items():
            if p not in output.changelog_end and task.position:
                task.store.write({}, None, dict(task.position), None, task.owner_epoch)
        output.changelog_end.clear()
        for p, task in owned.items():
            self.tasks.committed_offsets.setdefault(p, {}).update(task.position)

    def _report(self, consumer: Consumer) -> None:
        if self.metrics is None:
            return
        tasks = self.tasks.tasks
        self.metrics.status(self.name, sum(t.engine.instance_count for t in tasks.values()), self._lag(consumer))
        self.metrics.state_sizes(self.name, lambda: {p: t.store.disk_bytes() for p, t in tasks.items()})
        if self.cfg.clock == "record":
            self.metrics.event_times(self.name, {p: (t.clock.now(), t.held_back) for p, t in tasks.items()})

    def _flush(self, producer: Producer) -> int:
        """At-least-once: wait up to ``TXN_TIMEOUT`` for the batch's records to be acknowledged, a
        ``TXN_SLICE`` at a time (the loop counts as alive meanwhile; a stop ends the wait after one
        slice: what is not acknowledged is processed again by the next worker). Returns how many
        records are still waiting."""
        deadline = time.monotonic() + waiting.TXN_TIMEOUT
        while True:
            remaining = producer.flush(min(waiting.TXN_SLICE, max(0.0, deadline - time.monotonic())))
            if not remaining or self.waits.stopping.is_set() or time.monotonic() >= deadline:
                return int(remaining)
            self.waits.beat()

    def on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """The result of an asynchronous offset commit (the consumer's ``on_commit``, served by
        its poll)."""
        if err is None:
            err = next((tp.error for tp in partitions if tp.error is not None), None)
        self._offsets_result = err if err is not None else KafkaError(KafkaError.NO_ERROR)

    def _commit_offsets(self, consumer: Consumer, positions: list[TopicPartition], in_rebalance: bool) -> None:
        """At-least-once: commit the input positions and wait for the broker's answer.

        A synchronous commit has no timeout: while the broker is away it blocks until librdkafka
        gives up on the request, longer than the liveness limit, and a stop is not seen. So the
        commit is made asynchronously and the consumer is polled in short slices until its
        result arrives (``on_commit``): the worker stays alive, records fetched meanwhile go to
        the tasks' buffers, and after ``TXN_SLICE`` the worker is not ready and a stop
        ends the wait (``StoppedWaiting``: the outcome is unknown, nothing more is committed and
        the stores are not written, so they never get ahead of the committed offsets). A failed
        commit raises ``KafkaException`` for ``_commit_failed``. Inside a rebalance callback the
        consumer cannot be polled, and the commit is synchronous as before."""
        if in_rebalance:
            consumer.commit(offsets=positions, asynchronous=False)
            return
        self._offsets_result = None
        self.waiting_for_result = True
        started = time.monotonic()
        try:
            consumer.commit(offsets=positions, asynchronous=True)
            while self._offsets_result is None:
                waited = time.monotonic() - started
                if waited >= waiting.TXN_SLICE:
                    if self.waits.stopping.is_set():
                        raise self.waits.stop_unresolved(f"the offset commit waited {waited:.0f} s for the broker")
                    if not self.waits.on_broker:
                        self.waits.on_broker = True  # not ready while the outcome is unknown
                        self._fault("commit_failed")
                        log.warning(
                            "%s: the offset commit has waited %.0f s for the broker; waiting on", self.name, waited
                        )
                self.waits.beat()  # waiting for the broker, not hung
                # A commit usually takes a few milliseconds: poll in short slices at first (the
                # consumer returns at the end of its timeout, not when the result arrives).
                self.host.poll_while_committing(0.002 if waited < 0.1 else 0.1)
        finally:
            self.waiting_for_result = False
            self.waits.on_broker = False
        result = self._offsets_result
        assert result is not None
        if result.code() != KafkaError.NO_ERROR:
            raise KafkaException(result)

    # -- when it fails ---------------------------------------------------------------------------

    def _commit_failed(self, exc: KafkaException) -> None:
        err: KafkaError = exc.args[0]
        output = self.host.output
        assert output is not None
        if err.code() in MIGRATED:
            # Another member owns the tasks now (this one was a zombie: frozen, cut off, or
            # fenced): nothing of this batch may be committed, and going back to the last commit
            # would process records and fire timers the new owner has already handled.
            self._fault("commit_failed")
            output.delivery_error = None
            if self.eos and err.fatal():
                raise MemberEnded(
                    f"commit failed: {err} (the group moved the tasks to another member)", producer_failed=True
                ) from exc
            if self.eos and output.txn_open:
                self.abort()
            raise MemberEnded(f"commit failed: {err} (the group moved the tasks to another member)") from exc
        if self.eos and err.fatal():
            # Fenced (a newer producer of this transactional id, or the transaction timed out
            # while the worker was frozen): another member may own the tasks now. Close them
            # without committing and rejoin with a new producer, as Kafka Streams does.
            self._fault("commit_failed")
            raise MemberEnded(f"transaction failed fatally: {err}", producer_failed=True) from exc
        log.warning("%s: commit failed: %s; going back to the last commit", self.name, err)
        self.failed = True
        self._fault("commit_failed")
        output.delivery_error = None
        if self.eos:
            # Anything short of a fatal error is aborted: an error that requires it, and a record
            # whose delivery failed (a stall outlasting message.timeout.ms), whose report carries
            # no flags but leaves the transaction in the abortable state. An abort librdkafka
            # refuses is fatal (``abort``).
            self.abort()
        self.rewind()

    def abort(self) -> None:
        """Abort the open transaction (resumed while it times out, as ``Waiting.txn_call`` says)."""
        producer, output = self.host.producer, self.host.output
        assert producer is not None and output is not None
        try:
            self.waits.txn_call("aborting", lambda t: producer.abort_transaction(t))
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.fatal():
                # Fenced while the commit failed (the broker aborted the transaction when it timed
                # out, a broker outage longer than transaction.timeout.ms, and bumped the epoch):
                # the broker ended the transaction; close the tasks and rejoin with a new producer.
                raise MemberEnded(f"aborting the transaction failed fatally: {err}", producer_failed=True) from exc
            raise WorkerError(f"{self.name}: cannot abort the transaction: {exc}") from exc
        output.txn_open = False
        self._fault("transaction_aborted")

    def forget_batch(self) -> None:
        """Nothing of the batch will be committed: forget its changelog records."""
        self._pending_store.clear()
        output = self.host.output
        if output is not None:
            output.changelog_end.clear()
        self.dirty = False

    def rewind(self) -> None:
        """Back to the last commit: forget the batch, rebuild every task from its store and read
        its inputs again from the committed offsets (task_manager.py)."""
        consumer = self.host.consumer
        assert consumer is not None
        self.forget_batch()
        self._fault("rewound")
        self.tasks.rewind(consumer)

    def rewind_when_resolved(self) -> None:
        """Rewind now, or, while an at-least-once commit waits for its result, once it has one
        (the stores must first be at the offsets that commit reaches)."""
        if self.waiting_for_result:
            self._rewind_deferred = True
        else:
            self.rewind()

    def drop(self) -> None:
        """Every task is dropped without committing: forget the batch and any failure."""
        self.forget_batch()
        self._rewind_deferred = False
        self.failed = False

    # -- after the commit ------------------------------------------------------------------------

    def _purge_repartition(self) -> None:
        """Delete the repartition records every task has consumed and committed."""
        self._last_purge = time.monotonic()
        if not self._purge_supported:
            return
        offsets: dict[tuple[str, int], int] = {}
        for p, task in self.tasks.tasks.items():
            off = task.position.get(tp_name(self.rep_topic, p))
            if off is not None and off > self._purged.get(p, 0):
                offsets[(self.rep_topic, p)] = off
        if not offsets:
            return
        from .admin import purge

        if self._admin is None:
            self._admin = self._make_admin()
        problems = purge(self._admin, offsets, timeout=5.0)
        if problems:
            self._purge_failures += 1
            # A client whose request failed may stay stuck (the restore's admin client did, for over
            # a minute after a broker outage: ``ProgramWorker._changelog_id``): a new one next time.
            self._admin = None
            # Given up only on a broker that never deleted anything: one that did supports it, and
            # its failures pass (an outage, a partition moving); with the repartition topic's
            # infinite retention, purging nothing more after an outage would keep every record.
            unsupported = any("UNSUPPORTED" in p.upper() for p in problems)
            if unsupported or (not self._purged and self._purge_failures >= 3):
                # e.g. the embedded broker, which has no DeleteRecords
                self._purge_supported = False
                log.warning(
                    "%s: the broker does not delete records (%s): consumed repartition records are "
                    "kept until the topic's retention removes them",
                    self.name,
                    problems[0],
                )
            elif self._purged:  # (a broker that deleted records before: an outage or a move, said)
                log.warning("%s: purging the repartition topic: %s", self.name, "; ".join(problems))
            else:  # (whether it deletes at all is not known yet: said once, above, if it never does;
                # the embedded broker of ``dev`` warned a newcomer twice of a transport failure)
                log.info("%s: purging the repartition topic: %s", self.name, "; ".join(problems))
            return
        self._purge_failures = 0
        for (_, p), off in offsets.items():
            self._purged[p] = off

    def _lag(self, consumer: Consumer) -> int:
        """Records behind the input high watermarks (from the consumer's cached fetch metadata)."""
        lag = 0
        for task in self.tasks.tasks.values():
            for ip in task.inputs:
                try:
                    _, high = consumer.get_watermark_offsets(TopicPartition(ip.topic, ip.partition), cached=True)
                except KafkaException:
                    continue
                pos = task.position.get(ip.name)
                if high >= 0 and pos is not None:
                    lag += max(0, high - pos)
        return lag
