"""The program worker: one consumer-group member running one program over its tasks.

Assignment. The group's members share the program's *repartition* topic (cooperative-sticky
assignor); owning its partition p means owning task p, so on assignment the member adds
partition p of every input topic to its assignment itself. All input topics are therefore
required to have the same partition count (checked at start).

One batch, exactly-once (EOS v2): records are processed in each task (outputs, ``$error``
records, re-published records and changelog writes queue up), then in one Kafka transaction the
queued records are produced and the tasks' input positions are committed with
``send_offsets_to_transaction`` and the consumer's group metadata, which fences zombie members.
Only after the transaction commits are the changed instance snapshots written to the local
stores. If the transaction must be aborted, every task is rebuilt from its store (the committed
state) and its inputs are rewound to the committed offsets.

At-least-once: outputs are produced and acknowledged first, then offsets are committed.

On assignment a task is paused until its state is restored from its local store and the tail of
its changelog; on revocation the batch is committed and the task closed; a lost assignment
drops the tasks without committing.

Standby replicas (``num_standby``): besides its own tasks the worker keeps warm copies of some
tasks it does not own, reading their changelogs (kafka/standby.py); when one of them is assigned
to it, its store already holds nearly all of the task's state and the restore replays the tail.

Recovery is exact: whenever a batch cannot commit (a failed commit, an aborted transaction, a lost
assignment) every task goes back to its last commit — instances, repartition marks and record
clock from the local store, inputs to the committed offsets — and the same records are processed
again, at the same record times, giving the same outputs with the same ids (``Task._next_id_bytes``).
Until that rewind is done the tasks stay paused; if the committed offsets cannot be read (the
broker is away), the rewind is retried on the next turn of the loop.

Broker stalls: a transactional call that times out is still under way in librdkafka and is
resumed (made again) until the broker answers (``_txn_call``), init_transactions included; reads
of committed offsets and seeks that fail are tried again on the next turn with the tasks paused;
a failed record delivery aborts the batch; an at-least-once offset commit is made asynchronously
and its result awaited in short slices of polling (``_commit_offsets``); a full producer queue
is waited on (``_queue_full``). Meanwhile the worker counts as alive; a stop asked for while a
call is unresolved ends the worker without committing or aborting (``StoppedWaiting``); a
worker that failed commits nothing on its way out (its batch may be half done).

Readiness (``ready``): the worker holds an assignment that was not lost, every task of it is
restored, and its last commit did not fail. Every failure recovered from is counted
(``metrics.FAULTS``) and repeated warnings are rate-limited (``logs.RepeatFilter``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from ..automata.compiled import CompiledProgram
from ..task.task import Task
from ..topology.config import ProgramConfig, Topology
from ..topology.progress import progress_plan, topology_partitions
from . import clients
from .input_partitions import InputPartitionWatch
from .logs import rate_limit
from .metrics import restore_to_go, stats_config
from .producer import BatchProducer
from .restore import Restoration, RestoreError
from .standby import Standbys, standby_tasks
from .state import Position, tp_name
from .topic_ids import topic_id

log = logging.getLogger("eventscript.kafka.worker")

BATCH = 2_000
MAX_OUTBOX = 20_000
TXN_TIMEOUT = 30.0
#: The longest single wait of a transactional call or a read of committed offsets: a call still
#: under way when it ends is made again (resumed), so a stop asked for while the broker is away
#: is noticed within this many seconds, well inside the runner's grace period.
TXN_SLICE = 5.0
#: Seconds of changelog replay per turn of the loop (the consumer is polled in between).
RESTORE_SLICE = 0.5
#: Seconds between purges of consumed repartition records.
PURGE_INTERVAL = 30.0


class WorkerError(Exception):
    pass


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


#: Rejoins allowed within ``REJOIN_WINDOW`` seconds before the worker gives up (two workers run with
#: the same instance id and fence each other in turn: a configuration error only a person can fix).
MAX_REJOINS = 5
REJOIN_WINDOW = 60.0
#: Commit errors that mean the group gave this member's tasks to another (Kafka Streams'
#: TaskMigratedException): every task is lost, and the member rejoins.
MIGRATED = (KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID, KafkaError.FENCED_INSTANCE_ID)


class StoppedWaiting(Exception):
    """A stop was asked for while a transactional call waited for the broker. The call's outcome
    is unknown and librdkafka accepts no other transactional call until it ends, so the worker
    stops without committing or aborting: the broker aborts the open transaction when its timeout
    passes, or the next worker with the same transactional id fences it and finishes it (a commit
    that reached the broker completes, anything else is aborted); either way the batch is
    processed again from the last commit."""


class ProgramWorker:
    def __init__(
        self,
        topo: Topology,
        cfg: ProgramConfig,
        program: CompiledProgram,
        partitions: int,
        instance_id: str,
        metrics: Any = None,
        supplier: clients.ClientSupplier | None = None,
    ) -> None:
        self.topo = topo
        #: Makes the worker's Kafka clients (tests pass one that wraps them).
        self.supplier = supplier or clients.ClientSupplier()
        self.cfg = cfg
        self.program = program
        self.partitions = partitions
        self.instance_id = instance_id
        self.metrics = metrics
        self.group_id = topo.group_id(cfg)
        self.rep_topic = topo.repartition_topic(cfg)
        self.changelog_topic = topo.changelog_topic(cfg)
        self.eos = cfg.guarantee == "exactly_once"
        self.state_root = topo.state_path(cfg)
        self.progress_plan = progress_plan(
            topo, cfg, topology_partitions(topo, {i.topic: partitions for i in cfg.inputs})
        )
        self.tasks: dict[int, Task] = {}
        self.restore_queue: list[int] = []
        #: Stops the worker when an input gets partitions its tasks do not cover (input_partitions.py).
        self._input_watch = InputPartitionWatch(
            cfg.name, [i.topic for i in cfg.inputs], partitions, [self.changelog_topic, self.rep_topic]
        )
        #: The changelog replay under way (tasks in it stay in restore_queue until it ends).
        self._restoring: Restoration | None = None
        self._restore_started = 0.0
        self.stopping = threading.Event()
        self.assigned_once = False
        #: The group took the assignment away (session timeout, broker gone) and has not given
        #: one back yet; and whether the last commit failed.
        self.assignment_lost = False
        self.commit_failed = False
        #: Tasks rewound but not yet moved back to the committed offsets (see _finish_rewind).
        self._rewinding: set[int] = set()
        self.last_loop = time.monotonic()
        self.idle_since: float | None = None
        self.failure: BaseException | None = None
        #: A transactional call is waiting for the broker (not ready meanwhile).
        self._txn_waiting = False
        #: When the transactional call under way started (None: none). librdkafka's
        #: send_offsets_to_transaction ignores its timeout while the broker does not answer
        #: (librdkafka issue 5456): it blocks until its request times out (socket.timeout.ms, 60 s),
        #: so a call past its slice is seen from here (``ready``), not from a timeout it never gets.
        self._txn_call_since: float | None = None
        #: Stopped with the batch unresolved -- a transactional call or an at-least-once offset
        #: commit whose outcome is unknown, or a batch half produced (the producer's queue stayed
        #: full): nothing more is committed, aborted or flushed; the next start processes it again.
        self._txn_unresolved = False
        #: The outcome of the at-least-once offset commit under way (``_on_commit``): None while
        #: unknown, else the error (``NO_ERROR`` when it succeeded).
        self._offsets_result: KafkaError | None = None
        #: An at-least-once commit is waiting for its result: a revocation meanwhile commits
        #: nothing more (the commit under way covers the batch), a lost assignment's rewind waits
        #: for the result (``_rewind_deferred``) so the stores are at the committed offsets.
        self._commit_waiting = False
        self._rewind_deferred = False
        #: Inside a rebalance callback, where the consumer must not be polled.
        self._in_rebalance = False
        self._dirty_since_commit = False
        self._pending_store: dict[int, dict[bytes, bytes | None]] = {}
        self._last_commit = time.monotonic()
        #: Records produced (``output.produced``) when they were last counted in the metrics, and
        #: at the last commit.
        self._produced_at_commit = 0
        self._produced_counted = 0
        self.commit_interval = cfg.commit_interval / 1000
        self.consumer: Consumer | None = None
        self.producer: Producer | None = None
        #: The producer's side of the batch (kafka/producer.py), made with the producer.
        self.output: BatchProducer | None = None
        self._restorer: Consumer | None = None
        #: Warm copies of other workers' tasks (num_standby > 0).
        self._standbys: Standbys | None = None
        #: Repartition records consumed and committed are deleted (DeleteRecords), as Kafka
        #: Streams purges its repartition topics; offsets purged so far, and when.
        self._purged: dict[int, int] = {}
        self._last_purge = time.monotonic()
        self._purge_supported = True
        self._purge_failures = 0
        self._admin: Any = None
        #: Each task's committed input offsets, as read when it was restored or rewound and moved on
        #: by each commit: every commit sends every running task's position starting from them, so
        #: that a commit always carries offsets, and with them the group generation that fences a
        #: zombie (a task that processed nothing since would otherwise send none).
        self._committed_at: dict[int, Position] = {}
        #: When the worker last rejoined its group with a new consumer (``_rejoin``).
        self._rejoins: list[float] = []
        #: The member ended inside a rebalance callback, which must not raise: raised after the
        #: consumer's call returns (``_raise_if_ended``), before anything else is processed.
        self._ended: MemberEnded | None = None

    # -- status ----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Holds an assignment that was not lost, every task of it restored, and the last commit
        succeeded. Read by the health server's thread, hence the copy of the task table."""
        return (
            self.assigned_once
            and not self.assignment_lost
            and not self.commit_failed
            and not self._txn_waiting
            and not self._txn_overdue()
            and not self._rewinding
            and not self.restore_queue
            and all(t.restored for t in list(self.tasks.values()))
        )

    def _txn_overdue(self) -> bool:
        """A transactional call has been under way longer than it was allowed (see _txn_call_since)."""
        since = self._txn_call_since
        return since is not None and time.monotonic() - since > TXN_SLICE

    @property
    def alive(self) -> bool:
        return self.failure is None and time.monotonic() - self.last_loop < 60

    def _stat(self, name: str, n: int) -> None:
        if self.metrics is not None:
            self.metrics.count(self.cfg.name, name, n)

    def _fault(self, kind: str) -> None:
        if self.metrics is not None:
            self.metrics.fault(self.cfg.name, kind)

    def _rebalanced(self, kind: str) -> None:
        if self.metrics is not None:
            self.metrics.rebalance(self.cfg.name, kind)
            self.metrics.tasks(self.cfg.name, len(self.tasks))

    # -- lifecycle -------------------------------------------------------------------------------------

    def stop(self) -> None:
        self.stopping.set()

    def run(self, until_idle: float | None = None) -> None:
        """Run until stop() (or, with ``until_idle``, until no input arrived for that many seconds
        after every partition reached its end)."""
        try:
            self._open()
            self._join()
            while not self.stopping.is_set():
                self.last_loop = time.monotonic()
                try:
                    self._iterate()
                except MemberEnded as exc:
                    self._rejoin(exc)
                if until_idle is not None and self._idle_for() >= until_idle:
                    break
        except StoppedWaiting as exc:
            log.warning("%s: %s", self.cfg.name, exc)
        except BaseException as exc:
            self.failure = exc
            log.exception("%s: worker failed", self.cfg.name)
            raise
        finally:
            self._close()

    def _open(self) -> None:
        kafka = self.topo.kafka
        rate_limit(log, logging.getLogger("eventscript.kafka.task"), clients.LIBRDKAFKA_LOG)
        self.consumer = self._new_consumer()
        self._new_producer()
        self._restorer = self.supplier.consumer(
            clients.consumer_config(
                kafka, f"{self.group_id}.restore.{self.instance_id}", **{"partition.assignment.strategy": "range"}
            )
        )
        if self.cfg.num_standby > 0:
            reader = self.supplier.consumer(
                clients.consumer_config(
                    kafka, f"{self.group_id}.standby.{self.instance_id}", **{"partition.assignment.strategy": "range"}
                )
            )
            # (self.consumer, not a copy: a rejoin replaces the consumer)
            self._standbys = Standbys(
                self.cfg.name,
                self.changelog_topic,
                [i.topic for i in self.cfg.inputs] + [self.rep_topic],
                self.state_root,
                reader,
                lambda tps: self._member().committed(tps, timeout=1.0),
                self._changelog_id,
            )

    def _new_producer(self) -> None:
        """The worker's producer and its batch side (made at start, and again on a rejoin after the
        exactly-once producer failed fatally: a new one fences the old transactional epoch)."""
        kafka = self.topo.kafka
        txid = f"{self.group_id}.{self.instance_id}" if self.eos else None
        # At-least-once: a record must never be dropped unnoticed. The gapless guarantee makes a
        # failed delivery fatal; it does not cover message timeouts, so records never time out
        # (an undelivered record keeps the batch from committing instead).
        extra = {} if self.eos else {"enable.gapless.guarantee": True, "message.timeout.ms": 0}
        conf = clients.producer_config(kafka, txid, error_cb=self._on_producer_error, **extra)
        self.output = None  # (the old one's error_cb must not report into the new batch)
        self.producer = self.supplier.producer({**conf, **stats_config(self.metrics, self.cfg.name, "producer", conf)})
        self.output = BatchProducer(self.cfg.name, self.producer, self.eos, self.changelog_topic, self._queue_full)
        self._produced_counted = self._produced_at_commit = 0  # (the new producer counts from 0)
        if self.eos:
            producer = self.producer
            self._txn_call("initialising", lambda t: producer.init_transactions(t), fault=None)

    def _new_consumer(self) -> Consumer:
        """The group member's consumer (made at start and again on each rejoin)."""
        kafka = self.topo.kafka
        # Static membership: a worker restarted within the session timeout (a rolling deploy, a
        # rescheduled pod) gets its tasks back without a rebalance moving them elsewhere.
        static = {"group.instance.id": f"{self.instance_id}"} if kafka.static_membership else {}
        conf = clients.consumer_config(kafka, self.group_id, on_commit=self._on_commit, **static)
        return self.supplier.consumer({**conf, **stats_config(self.metrics, self.cfg.name, "consumer", conf)})

    def _member(self) -> Consumer:
        assert self.consumer is not None
        return self.consumer

    def _join(self) -> None:
        self._member().subscribe(
            [self.rep_topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )

    def _raise_if_ended(self) -> None:
        ended, self._ended = self._ended, None
        if ended is not None:
            raise ended

    def _rejoin(self, exc: MemberEnded) -> None:
        """End the group member whose tasks were lost and join again (with a new consumer if its
        consumer failed fatally, see :class:`MemberEnded`): every task is closed without committing (its batch is
        processed again by whoever owns it
        next, from the committed offsets and the committed state), an open transaction is aborted,
        and the new member restores whatever tasks the group gives it. As Kafka Streams does on a
        TaskMigratedException. A worker that must rejoin again and again (``MAX_REJOINS`` within
        ``REJOIN_WINDOW``) stops with an error instead."""
        now = time.monotonic()
        if exc.consumer_failed:
            self._rejoins = [t for t in self._rejoins if now - t < REJOIN_WINDOW] + [now]
        if len(self._rejoins) > MAX_REJOINS:
            raise WorkerError(
                f"{self.cfg.name}: the group member ended {len(self._rejoins)} times within "
                f"{REJOIN_WINDOW:.0f} s (last: {exc}); is another worker running with instance id "
                f"{self.instance_id!r}? Give each worker its own instance id"
            ) from exc
        log.warning("%s: %s; closing every task without committing and joining the group again", self.cfg.name, exc)
        self._fault("rejoined")
        producer_failed = exc.producer_failed
        if not producer_failed and self.output is not None and self.output.txn_open:
            try:
                self._abort()
            except MemberEnded as fenced:  # the producer was fenced too: replaced below
                log.warning("%s: %s", self.cfg.name, fenced)
                producer_failed = True
        if producer_failed and self.output is not None:
            self.output.txn_open = False  # a failed producer's transaction cannot be aborted: the broker ends it
        owned = sorted(self.tasks)
        self._drop_all_tasks()
        if producer_failed and self.producer is not None:
            old_producer, self.producer = self.producer, None
            try:
                old_producer.purge()  # its queued records belong to the failed transaction
            except Exception as purge_exc:
                log.warning("%s: dropping the failed producer's records: %s", self.cfg.name, purge_exc)
            self._new_producer()
        if not exc.consumer_failed:
            consumer = self._member()
            consumer.incremental_unassign([tp for p in owned for tp in self._task_partitions(p)])
            self._on_assign(consumer, [TopicPartition(self.rep_topic, p) for p in owned])
            return
        old, self.consumer = self.consumer, None
        # Not ready until the new member has its assignment: with no task left, ``ready`` would
        # otherwise hold (every task of none restored) while the member is not in the group yet.
        self.assigned_once = False
        if old is not None:
            try:
                old.close()  # (no task left: the revoke callback commits nothing)
            except Exception as close_exc:
                log.warning("%s: closing the ended consumer: %s", self.cfg.name, close_exc)
        self.consumer = self._new_consumer()
        self._join()

    def _drop_all_tasks(self) -> None:
        """Close every task without committing and forget the batch: nothing of it was committed."""
        if self.output is not None and self.output.txn_open:
            try:
                self._abort()
            except MemberEnded as fenced:  # the broker ends a fenced producer's transaction
                log.warning("%s: %s", self.cfg.name, fenced)
                self.output.txn_open = False
        for task in self.tasks.values():
            task.close()
        self.tasks.clear()
        self._committed_at.clear()
        self.restore_queue.clear()
        self._rewinding.clear()
        if self._restoring is not None:
            self._restoring = None
            if self._restorer is not None:
                self._restorer.unassign()
        self._pending_store.clear()
        if self.output is not None:
            self.output.changelog_end.clear()
        self._dirty_since_commit = False
        self._rewind_deferred = False
        self.commit_failed = False
        self.assignment_lost = True  # not ready until the group assigns tasks again
        self._retarget_standbys()
        self._rebalanced("lost")

    def _close(self) -> None:
        try:
            if self.failure is None and self.consumer is not None and self.producer is not None:
                self._commit()
        except StoppedWaiting as exc:
            log.warning("%s: final commit: %s", self.cfg.name, exc)
        except MemberEnded as exc:
            log.warning("%s: final commit: %s; closing the tasks without committing", self.cfg.name, exc)
            if exc.producer_failed and self.output is not None:
                self.output.txn_open = False  # (the broker ends a failed producer's transaction)
            self._drop_all_tasks()
        except Exception:
            log.exception("%s: final commit failed", self.cfg.name)
        if self.consumer is not None:
            try:
                self.consumer.close()  # leaves the group; the revoke callback commits (nothing left)
            except Exception:
                log.exception("%s: closing the consumer", self.cfg.name)
        for task in self.tasks.values():
            task.close()
        self.tasks.clear()
        if self._restorer is not None:
            self._restorer.close()
        if self._standbys is not None:
            self._standbys.close()
        if self.producer is not None and not self._txn_unresolved:
            if self.output is not None and self.output.txn_open:
                try:
                    self.producer.abort_transaction(TXN_TIMEOUT)
                except Exception:
                    pass
            self.producer.flush(TXN_SLICE)  # after the final commit nothing is left but when it failed

    # -- the loop -------------------------------------------------------------------------------------

    def _iterate(self) -> None:
        assert self.consumer is not None and self.producer is not None
        if self._rewinding:
            self._finish_rewind()
        got = self._take(self.consumer.consume(num_messages=BATCH, timeout=self._poll_timeout()))
        self._raise_if_ended()
        self._input_watch.check(self.consumer)
        self._restore_pending()
        if self._standbys is not None:
            self._standbys.step()
        worked = 0
        for task in list(self.tasks.values()):
            worked += task.process(self.cfg.max_task_idle_ms)
            worked += self._fire_timers(task) + task.move_to_progress()
            if task.counts:
                for kind, n in task.counts.items():
                    self._stat(kind, n)
                task.counts.clear()
        assert self.output is not None
        produced = self.output.produced - self._produced_counted
        if produced:
            self._stat("produced", produced)
            self._produced_counted = self.output.produced
        if worked:
            self._dirty_since_commit = True
        self._produce_outboxes()
        self.producer.poll(0)
        due = time.monotonic() - self._last_commit >= self.commit_interval
        if due and sum([task.write_progress() for task in self.tasks.values()]) > 0:
            self._dirty_since_commit = True  # progress markers go out with the batch
        if self._dirty_since_commit and (due or self.output.produced - self._produced_at_commit > MAX_OUTBOX):
            self._commit()
        if not got and not worked and self.idle_since is None and self._all_caught_up():
            self.idle_since = time.monotonic()

    def _take(self, msgs: list[Any]) -> int:
        """Put consumed records into their tasks' input buffers (processed on the next turn);
        returns how many. Also called while an at-least-once commit waits for its result."""
        got = 0
        tasks = self.tasks
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    task = tasks.get(m.partition())
                    if task is not None:
                        task.mark_eof(m.topic(), m.partition())
                    continue
                if err.fatal() or err.code() == KafkaError._FATAL:
                    # librdkafka reports its fatal consumer errors with code _FATAL and fatal()
                    # false: either way the consumer is dead.
                    raise MemberEnded(f"consumer failed fatally: {err}", consumer_failed=True)
                log.warning("%s: consumer: %s", self.cfg.name, err)
                continue
            task = tasks.get(m.partition())
            if task is not None and task.group.add(m):  # (not Task.add: this loop sees every record)
                got += 1
        if got:
            self._stat("consumed", got)
            self.idle_since = None
        return got

    def _fire_timers(self, task: Task) -> int:
        """Fire the task's due wall-clock timers, and observe how long after its deadline the
        earliest of them fired (``eventscript_timer_lateness_seconds``)."""
        deadline = task.next_timer() if self.metrics is not None else None
        now_us = time.time_ns() // 1000
        fired = task.fire_timers()
        if fired and deadline is not None and deadline <= now_us:
            self.metrics.observe_timer_lateness(self.cfg.name, (now_us - deadline) / 1e6)
        return fired

    def _poll_timeout(self) -> float:
        timeout = min(0.1, self.commit_interval)
        if self.cfg.clock == "wall":
            now_us = time.time_ns() // 1000
            for task in self.tasks.values():
                nxt = task.next_timer()
                if nxt is not None:
                    timeout = min(timeout, max(0.0, (nxt - now_us) / 1e6))
        return timeout

    def _all_caught_up(self) -> bool:
        return self.ready and all(t.drained() for t in self.tasks.values())

    def _idle_for(self) -> float:
        if self.idle_since is None or self._dirty_since_commit or (self.output is not None and self.output.txn_open):
            return 0.0
        return time.monotonic() - self.idle_since

    # -- producing ------------------------------------------------------------------------------------

    def _on_producer_error(self, err: KafkaError) -> None:
        """The producer's ``error_cb`` (the producer is made before its ``BatchProducer``)."""
        if self.output is not None:
            self.output.on_error(err)
        elif err.fatal():
            log.error("%s: producer: %s", self.cfg.name, err)
        else:
            log.warning("%s: producer: %s", self.cfg.name, err)

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        """A delivery report (``BatchProducer.on_delivery``)."""
        assert self.output is not None
        self.output.on_delivery(err, msg)

    def _queue_full(self, since: float) -> float:
        """The producer's queue is full (the broker is slow or away): let it deliver for a moment.
        The worker counts as alive meanwhile; a stop asked for once the queue has stayed full for
        ``TXN_SLICE`` ends the worker without committing its half-produced batch. Returns when the
        queue became full (``since``, or now on the first call)."""
        assert self.producer is not None
        now = time.monotonic()
        since = since or now
        if self.stopping.is_set() and now - since >= TXN_SLICE:
            self._txn_unresolved = True
            raise StoppedWaiting(
                f"stopped while the producer's queue stayed full for {now - since:.0f} s (the "
                f"broker is slow or away); the batch is processed again on the next start"
            )
        self.last_loop = now  # waiting for the broker, not hung
        self.producer.poll(0.05)
        return since

    def _produce_outboxes(self) -> None:
        """Records a task queued while detached (none in normal operation)."""
        assert self.output is not None
        for task in self.tasks.values():
            kept = task.take_outputs()
            if kept:
                send = self.output.senders()[0]
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

    # -- committing -----------------------------------------------------------------------------------

    def _positions(self) -> list[TopicPartition]:
        """Every running task's input positions: its committed offsets moved on by what it processed."""
        out = []
        for p, task in self.tasks.items():
            for name, off in {**self._committed_at.get(p, {}), **task.position}.items():
                topic, _, part = name.rpartition(":")
                out.append(TopicPartition(topic, int(part), off))
        return out

    def _commit(self) -> None:
        """Commit the batch: changelog writes, outputs and input positions, atomically (EOS)."""
        assert self.producer is not None and self.consumer is not None
        if self._txn_unresolved:
            return  # stopping with a call unresolved (StoppedWaiting): nothing can be committed
        if self._commit_waiting:
            return  # a revocation while the commit of this batch waits for its result: that commit covers it
        for p, task in self.tasks.items():
            changes = task.changelog_records()
            if changes:
                self._pending_store.setdefault(p, {}).update(changes)
        self._produce_outboxes()
        positions = self._positions()
        output = self.output
        assert output is not None
        if not positions and not output.txn_open:
            self._dirty_since_commit = False
            return
        started = time.monotonic()
        committing = dict(self.tasks)
        try:
            if self.eos:
                output.begin()
                producer = self.producer
                # Delivery errors show before the offsets are sent; what is still queued when the
                # broker is slow is flushed by commit_transaction, which can be resumed.
                producer.flush(min(TXN_TIMEOUT, TXN_SLICE))
                if output.delivery_error is not None:
                    raise KafkaException(output.delivery_error)
                if positions:
                    meta = self.consumer.consumer_group_metadata()
                    self._txn_call(
                        "sending the offsets", lambda t: producer.send_offsets_to_transaction(positions, meta, t)
                    )
                self._txn_call("committing", lambda t: producer.commit_transaction(t))
                output.txn_open = False
            else:
                remaining = self._flush()
                if output.delivery_error is not None and output.delivery_error.fatal():
                    raise WorkerError(
                        f"{self.cfg.name}: producer failed: {output.delivery_error}; "
                        f"records since the last commit will be processed again after a restart"
                    )
                if remaining or output.delivery_error is not None:
                    raise KafkaException(output.delivery_error or KafkaError(KafkaError._TIMED_OUT))
                if positions:
                    self._commit_offsets(positions)
        except KafkaException as exc:
            self._rewind_deferred = False  # the failure's rewind is the one deferred
            self._commit_failed(exc)
            return
        self.commit_failed = False
        self._dirty_since_commit = False
        self._last_commit = time.monotonic()
        self._produced_at_commit = output.produced
        self._stat("commits", 1)
        if self.metrics is not None:
            self.metrics.observe_commit(self.cfg.name, time.monotonic() - started)
        # Only the tasks of this batch still owned: an at-least-once commit polls while it waits,
        # and a task revoked meanwhile (and perhaps assigned again: a new one, restoring) is not.
        owned = {p: task for p, task in committing.items() if self.tasks.get(p) is task}
        for p, changes in self._pending_store.items():
            if (held := owned.get(p)) is not None:
                held.store.write(changes, output.changelog_end.get(p), dict(held.position))
        self._pending_store.clear()
        for p, task in owned.items():
            if p not in output.changelog_end and task.position:
                task.store.write({}, None, dict(task.position))
        output.changelog_end.clear()
        for p, task in owned.items():
            self._committed_at.setdefault(p, {}).update(task.position)
        if self._rewind_deferred:  # the assignment was lost while the commit waited
            self._rewind_deferred = False
            self._rewind()
            return
        if time.monotonic() - self._last_purge >= PURGE_INTERVAL:
            self._purge_repartition()
        if self.metrics is not None:
            self.metrics.status(self.cfg.name, sum(t.engine.instance_count for t in self.tasks.values()), self._lag())
            self.metrics.state_sizes(self.cfg.name, lambda: {p: t.store.disk_bytes() for p, t in self.tasks.items()})
            if self.cfg.clock == "record":
                self.metrics.event_times(
                    self.cfg.name, {p: (t.clock.now(), t.held_back) for p, t in self.tasks.items()}
                )

    def _purge_repartition(self) -> None:
        """Delete the repartition records every task has consumed and committed."""
        self._last_purge = time.monotonic()
        if not self._purge_supported:
            return
        offsets: dict[tuple[str, int], int] = {}
        for p, task in self.tasks.items():
            off = task.position.get(tp_name(self.rep_topic, p))
            if off is not None and off > self._purged.get(p, 0):
                offsets[(self.rep_topic, p)] = off
        if not offsets:
            return
        from .admin import purge

        if self._admin is None:
            self._admin = self.supplier.admin(clients.admin_config(self.topo.kafka))
        problems = purge(self._admin, offsets, timeout=5.0)
        if problems:
            self._purge_failures += 1
            if self._purge_failures >= 3 or any("UNSUPPORTED" in p.upper() for p in problems):
                # e.g. the embedded broker, which has no DeleteRecords
                self._purge_supported = False
                log.warning(
                    "%s: the broker does not delete records (%s): consumed repartition records are "
                    "kept until the topic's retention removes them",
                    self.cfg.name,
                    problems[0],
                )
            else:
                log.warning("%s: purging the repartition topic: %s", self.cfg.name, "; ".join(problems))
            return
        self._purge_failures = 0
        for (_, p), off in offsets.items():
            self._purged[p] = off

    def _lag(self) -> int:
        """Records behind the input high watermarks (from the consumer's cached fetch metadata)."""
        assert self.consumer is not None
        lag = 0
        for task in self.tasks.values():
            for ip in task.inputs:
                try:
                    _, high = self.consumer.get_watermark_offsets(TopicPartition(ip.topic, ip.partition), cached=True)
                except KafkaException:
                    continue
                pos = task.position.get(ip.name)
                if high >= 0 and pos is not None:
                    lag += max(0, high - pos)
        return lag

    def _flush(self) -> int:
        """At-least-once: wait up to ``TXN_TIMEOUT`` for the batch's records to be acknowledged, a
        ``TXN_SLICE`` at a time (the loop counts as alive meanwhile; a stop ends the wait after one
        slice: what is not acknowledged is processed again by the next worker). Returns how many
        records are still waiting."""
        assert self.producer is not None
        deadline = time.monotonic() + TXN_TIMEOUT
        while True:
            remaining = self.producer.flush(min(TXN_SLICE, max(0.0, deadline - time.monotonic())))
            if not remaining or self.stopping.is_set() or time.monotonic() >= deadline:
                return int(remaining)
            self.last_loop = time.monotonic()

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """The result of an asynchronous offset commit (served by the consumer's poll)."""
        if err is None:
            err = next((tp.error for tp in partitions if tp.error is not None), None)
        self._offsets_result = err if err is not None else KafkaError(KafkaError.NO_ERROR)

    def _commit_offsets(self, positions: list[TopicPartition]) -> None:
        """At-least-once: commit the input positions and wait for the broker's answer.

        A synchronous commit has no timeout: while the broker is away it blocks until librdkafka
        gives up on the request, longer than the liveness limit, and a stop is not seen. So the
        commit is made asynchronously and the consumer is polled in short slices until its
        result arrives (``_on_commit``): the worker stays alive, records fetched meanwhile go to
        the tasks' buffers (``_take``), and after ``TXN_SLICE`` the worker is not ready and a stop
        ends the wait (``StoppedWaiting``: the outcome is unknown, nothing more is committed and
        the stores are not written, so they never get ahead of the committed offsets). A failed
        commit raises ``KafkaException`` for ``_commit_failed``. Inside a rebalance callback the
        consumer cannot be polled, and the commit is synchronous as before."""
        assert self.consumer is not None
        consumer = self.consumer
        if self._in_rebalance:
            consumer.commit(offsets=positions, asynchronous=False)
            return
        self._offsets_result = None
        self._commit_waiting = True
        started = time.monotonic()
        try:
            consumer.commit(offsets=positions, asynchronous=True)
            while self._offsets_result is None:
                waited = time.monotonic() - started
                if waited >= TXN_SLICE:
                    if self.stopping.is_set():
                        self._txn_unresolved = True
                        raise StoppedWaiting(
                            f"stopped while the offset commit waited {waited:.0f} s for the broker; "
                            f"the batch is processed again on the next start"
                        )
                    if not self._txn_waiting:
                        self._txn_waiting = True  # not ready while the outcome is unknown
                        self._fault("commit_failed")
                        log.warning(
                            "%s: the offset commit has waited %.0f s for the broker; waiting on", self.cfg.name, waited
                        )
                self.last_loop = time.monotonic()  # waiting for the broker, not hung
                # A commit usually takes a few milliseconds: poll in short slices at first (the
                # consumer returns at the end of its timeout, not when the result arrives).
                self._take(consumer.consume(num_messages=BATCH, timeout=0.002 if waited < 0.1 else 0.1))
                self._raise_if_ended()
        finally:
            self._commit_waiting = False
            self._txn_waiting = False
        result = self._offsets_result
        assert result is not None
        if result.code() != KafkaError.NO_ERROR:
            raise KafkaException(result)

    def _commit_failed(self, exc: KafkaException) -> None:
        err: KafkaError = exc.args[0]
        if err.code() in MIGRATED:
            # Another member owns the tasks now (this one was a zombie: frozen, cut off, or
            # fenced): nothing of this batch may be committed, and going back to the last commit
            # would process records and fire timers the new owner has already handled.
            self._fault("commit_failed")
            assert self.output is not None
            self.output.delivery_error = None
            if self.eos and err.fatal():
                raise MemberEnded(
                    f"commit failed: {err} (the group moved the tasks to another member)", producer_failed=True
                ) from exc
            if self.eos and self.output.txn_open:
                self._abort()
            raise MemberEnded(f"commit failed: {err} (the group moved the tasks to another member)") from exc
        if self.eos and err.fatal():
            # Fenced (a newer producer of this transactional id, or the transaction timed out
            # while the worker was frozen): another member may own the tasks now. Close them
            # without committing and rejoin with a new producer, as Kafka Streams does.
            self._fault("commit_failed")
            raise MemberEnded(f"transaction failed fatally: {err}", producer_failed=True) from exc
        log.warning("%s: commit failed: %s; going back to the last commit", self.cfg.name, err)
        self.commit_failed = True
        self._fault("commit_failed")
        assert self.output is not None
        self.output.delivery_error = None
        if self.eos:
            # Anything short of a fatal error is aborted: an error that requires it, and a record
            # whose delivery failed (a stall outlasting message.timeout.ms), whose report carries
            # no flags but leaves the transaction in the abortable state. An abort librdkafka
            # refuses is fatal (``_abort``).
            self._abort()
        self._rewind()

    def _txn_call(self, what: str, call: Any, fault: str | None = "commit_failed") -> None:
        """Make a transactional call (``call(timeout)``), resuming it while it times out.

        A transactional call that times out is still under way inside librdkafka: the only
        call it then accepts is the same one again, which resumes it (any other, an abort
        included, fails with ``_CONFLICT``). Its outcome is unknown until then -- a commit may
        have reached the broker -- so neither giving up nor aborting is right; the worker waits
        for the broker, not ready, and stays alive. Errors that are not retriable (one that
        requires an abort, a fatal one) are raised for ``_commit_failed``; a stop asked for while
        waiting raises :class:`StoppedWaiting` (the call waits ``TXN_SLICE`` at most at a time,
        so the stop is seen soon)."""
        waited = 0
        try:
            while True:
                started = self._txn_call_since = time.monotonic()
                try:
                    call(min(TXN_TIMEOUT, TXN_SLICE))
                    if waited == 0 and fault is not None and time.monotonic() - started > TXN_SLICE:
                        self._fault(fault)  # it waited for the broker past its slice (librdkafka 5456)
                    return
                except KafkaException as exc:
                    err: KafkaError = exc.args[0]
                    if err.fatal() or err.txn_requires_abort() or not err.retriable():
                        raise
                    if self.stopping.is_set():
                        self._txn_unresolved = True
                        raise StoppedWaiting(
                            f"stopped while {what} the transaction waited for the broker "
                            f"({err.str()}); the batch is processed again on the next start"
                        ) from exc
                    waited += 1
                    self._txn_waiting = True  # not ready while the outcome is unknown
                    self.last_loop = time.monotonic()  # waiting for the broker, not hung
                    if waited == 1 and fault is not None:
                        self._fault(fault)
                    log.warning("%s: %s the transaction: %s; resuming the call (%d)", self.cfg.name, what, err, waited)
        finally:
            self._txn_waiting = False
            self._txn_call_since = None

    def _abort(self) -> None:
        """Abort the open transaction (resumed while it times out, as ``_txn_call`` says)."""
        assert self.producer is not None
        producer = self.producer
        try:
            self._txn_call("aborting", lambda t: producer.abort_transaction(t))
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.fatal():
                # Fenced while the commit failed (the broker aborted the transaction when it timed
                # out, a broker outage longer than transaction.timeout.ms, and bumped the epoch):
                # the broker ended the transaction; close the tasks and rejoin with a new producer.
                raise MemberEnded(f"aborting the transaction failed fatally: {err}", producer_failed=True) from exc
            raise WorkerError(f"{self.cfg.name}: cannot abort the transaction: {exc}") from exc
        assert self.output is not None
        self.output.txn_open = False
        self._fault("transaction_aborted")

    def _rewind(self) -> None:
        """Back to the last commit: rebuild every task from its store (instances, repartition
        marks, record clock) and read its inputs again from the committed offsets."""
        assert self.consumer is not None
        self._pending_store.clear()
        if self.output is not None:
            self.output.changelog_end.clear()
        self._dirty_since_commit = False
        self._fault("rewound")
        for p, task in self.tasks.items():
            if p in self.restore_queue:
                continue  # not restored yet: nothing processed, its inputs are still at the commit
            task.rewind()  # nothing is processed until the inputs are back at the commit
            self._rewinding.add(p)
        self._finish_rewind()

    def _finish_rewind(self) -> None:
        """Move the rewound tasks' inputs to their committed offsets; if those cannot be read
        now, keep the tasks paused and try again on the next turn of the loop."""
        assert self.consumer is not None
        # A task revoked and assigned again meanwhile is a new one, restoring: not this rewind's.
        tasks = [self.tasks[p] for p in self._rewinding if p in self.tasks and p not in self.restore_queue]
        tps = [TopicPartition(ip.topic, ip.partition) for task in tasks for ip in task.inputs]
        if tps:
            try:
                self.consumer.pause(tps)
                committed = self.consumer.committed(tps, timeout=min(TXN_TIMEOUT, TXN_SLICE))
            except KafkaException as exc:
                log.warning("%s: cannot read the committed offsets to rewind (%s); retrying", self.cfg.name, exc)
                return
            moved = True
            for tp in committed:
                if tp.offset >= 0:
                    self._committed_at.setdefault(tp.partition, {})[tp_name(tp.topic, tp.partition)] = tp.offset
                tp.offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                try:
                    self.consumer.seek(tp)
                except KafkaException as exc:
                    # Resuming would read on from where the input was, past the records the
                    # rewind must process again (their effect is gone from the rebuilt state).
                    log.warning(
                        "%s: cannot move %s:%d back to the committed offset %d (%s); retrying",
                        self.cfg.name,
                        tp.topic,
                        tp.partition,
                        tp.offset,
                        exc,
                    )
                    moved = False
            if not moved:
                return
            for task in tasks:
                task.resume()  # (drops the records fetched before the seek)
            self.consumer.resume(tps)
        self._rewinding.clear()

    # -- rebalancing -----------------------------------------------------------------------------------

    def _task_partitions(self, p: int) -> list[TopicPartition]:
        tps = [TopicPartition(self.rep_topic, p)]
        tps.extend(TopicPartition(i.topic, p) for i in self.cfg.inputs)
        return tps

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.assigned_once = True
        self.assignment_lost = False
        new: list[TopicPartition] = []
        extra: list[TopicPartition] = []
        for tp in partitions:
            if tp.topic != self.rep_topic or tp.partition in self.tasks:
                continue
            p = tp.partition
            if self._standbys is not None:
                self._standbys.release(p)  # its warm store becomes the task's
            task = self.tasks[p] = Task(
                p,
                self.program,
                self.cfg,
                self.cfg.inputs,
                self.rep_topic,
                self.changelog_topic,
                self.partitions,
                self.state_root / f"task-{p}",
            )
            task.set_progress(self.progress_plan)
            assert self.output is not None
            task.attach(*self.output.senders())
            self.restore_queue.append(p)
            new.append(tp)
            extra.extend(TopicPartition(i.topic, p) for i in self.cfg.inputs)
        consumer.incremental_assign(list(partitions) + extra)
        if new or extra:
            consumer.pause(new + extra)
        log.info("%s: assigned tasks %s", self.cfg.name, sorted(tp.partition for tp in new))
        self._retarget_standbys()
        self._rebalanced("assigned")

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = [tp.partition for tp in partitions if tp.topic == self.rep_topic and tp.partition in self.tasks]
        if revoked and self.failure is None:  # a failed worker's batch may be half done: never commit it
            try:
                self._in_rebalance = True
                self._commit()  # finish and commit the batch before giving the tasks away
            except StoppedWaiting as exc:
                log.warning("%s: commit on revocation: %s", self.cfg.name, exc)
            except MemberEnded as exc:
                self._ended = exc  # every task is lost: rejoin once the consumer's call returns
            except WorkerError:
                raise  # the transaction is in an unknown state: going on would commit it later
            except Exception:
                log.exception("%s: commit on revocation failed", self.cfg.name)
            finally:
                self._in_rebalance = False
        tps: list[TopicPartition] = []
        for p in revoked:
            task = self.tasks.pop(p)
            task.close()
            self._committed_at.pop(p, None)
            self._rewinding.discard(p)
            if p in self.restore_queue:
                self.restore_queue.remove(p)
            tps.extend(self._task_partitions(p))
        other = [tp for tp in partitions if tp.topic != self.rep_topic or tp.partition not in revoked]
        consumer.incremental_unassign(tps + other)
        log.info("%s: revoked tasks %s", self.cfg.name, sorted(revoked))
        self._retarget_standbys()
        self._rebalanced("revoked")

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        log.warning(
            "%s: assignment lost: %s; its tasks are dropped, the others go back to the last commit",
            self.cfg.name,
            [tp.partition for tp in partitions],
        )
        self.assignment_lost = True
        self._fault("assignment_lost")
        if self.output is not None and self.output.txn_open:
            try:
                self._abort()
            except MemberEnded as fenced:  # (inside a rebalance callback: raised once it returns)
                self.output.txn_open = False
                self._ended = fenced
        lost = [tp.partition for tp in partitions if tp.topic == self.rep_topic]
        tps: list[TopicPartition] = []
        for p in lost:
            task = self.tasks.pop(p, None)
            if task is not None:
                task.close()
            self._committed_at.pop(p, None)
            self._rewinding.discard(p)
            if p in self.restore_queue:
                self.restore_queue.remove(p)
            tps.extend(self._task_partitions(p))
        consumer.incremental_unassign(tps)
        if self._commit_waiting:  # the stores must first be at the offsets that commit reaches
            self._rewind_deferred = True
        else:
            self._rewind()
        self._retarget_standbys()
        self._rebalanced("lost")

    def _retarget_standbys(self) -> None:
        """Stand by for the tasks the rule of kafka/standby.py picks for the tasks now owned."""
        if self._standbys is not None:
            self._standbys.retarget(standby_tasks(set(self.tasks), self.partitions, self.cfg.num_standby))

    # -- restoring ------------------------------------------------------------------------------------

    def _restore_pending(self) -> None:
        """Restore the tasks waiting for it by replaying their changelog partitions together from
        their stores' checkpoints (a current store: only the tail), one time-boxed slice per turn
        of the loop (kafka/restore.py), so the worker keeps polling and stays in its group however
        long the replay takes."""
        assert self.consumer is not None and self._restorer is not None
        if self._restoring is None:
            if not self.restore_queue:
                return
            tasks = [self.tasks[p] for p in self.restore_queue if p in self.tasks]
            self._restore_started = time.monotonic()
            try:
                committed = self._committed(tasks)
                changelog_id = self._changelog_id()
            except KafkaException as exc:
                log.warning(
                    "%s: cannot read the committed offsets to restore tasks %s (%s); retrying",
                    self.cfg.name,
                    sorted(t.partition for t in tasks),
                    exc,
                )
                return  # the tasks stay paused in restore_queue; tried again on the next turn
            # Also a store at the committed position reads the changelog past its checkpoint:
            # another owner's commits that moved no input (timers) are there, and the records of a
            # batch that never committed, which the task must write again (issue 20, faults 1, 2).
            replay = {task.partition: task for task in tasks}
            self._restoring = Restoration(
                self.cfg.name,
                self._restorer,
                self.changelog_topic,
                replay,
                {p: committed[p] for p in replay},
                changelog_id,
            )
            try:
                self._restoring.begin()
            except RestoreError as exc:
                if not exc.transient:
                    raise WorkerError(str(exc)) from exc
                # (a leader moving after a broker outage: the tasks stay paused in restore_queue)
                log.warning("%s: %s; retrying", self.cfg.name, exc)
                self._restoring = None
                return
        restoration = self._restoring
        for p in list(restoration.tasks):
            if self.tasks.get(p) is not restoration.tasks[p]:
                restoration.drop(p)  # revoked or lost meanwhile
        try:
            restoration.step(RESTORE_SLICE)
        except RestoreError as exc:
            raise WorkerError(str(exc)) from exc
        if self.metrics is not None:
            self.metrics.restore_progress(self.cfg.name, restore_to_go(restoration))
        if restoration.done:
            self._restoring = None
            self._restored(restoration.finish())
            self._restore_done()

    def _restored(self, tasks: list[Task]) -> None:
        """Tasks whose state is back: start them and read their inputs."""
        assert self.consumer is not None
        for task in tasks:
            if task.partition in self.restore_queue:
                self.restore_queue.remove(task.partition)
            task.start_wall_clock()
            self.consumer.resume(self._task_partitions(task.partition))

    def _restore_done(self) -> None:
        if self.metrics is not None:
            self.metrics.observe_restore(self.cfg.name, time.monotonic() - self._restore_started)
            self.metrics.restore_progress(self.cfg.name, {})
            self.metrics.status(self.cfg.name, sum(t.engine.instance_count for t in self.tasks.values()), 0)

    def _changelog_id(self) -> str | None:
        """The changelog's topic id now, which the restore and the standbys compare with the one
        a store was written from (a recreated changelog: issue 20 fault 5)."""
        if self._admin is None:
            self._admin = self.supplier.admin(clients.admin_config(self.topo.kafka))
        return topic_id(self._admin, self.changelog_topic)

    def _committed(self, tasks: list[Task]) -> dict[int, Position]:
        assert self.consumer is not None
        tps = [TopicPartition(ip.topic, ip.partition) for t in tasks for ip in t.inputs]
        out: dict[int, Position] = {t.partition: {} for t in tasks}
        for tp in self.consumer.committed(tps, timeout=min(TXN_TIMEOUT, TXN_SLICE)):
            out[tp.partition][tp_name(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else 0
            if tp.offset >= 0:
                self._committed_at.setdefault(tp.partition, {})[tp_name(tp.topic, tp.partition)] = tp.offset
        return out
