"""The program worker: one consumer-group member running one program over its tasks; the loop
that wires the worker's parts (as Kafka Streams' StreamThread and Quix Streams' ``app.py``).

Its parts:

- ``task_manager.py``: which tasks the member owns and keeps warm (standbys), their creation,
  restore, rewind, revocation and loss;
- ``checkpoint.py``: what is committed and when (outputs, changelog records and input offsets,
  in one transaction with exactly-once; the stores' checkpoints after it) and what a failed
  commit does;
- ``producer.py``: the producer's side of the batch;
- ``waiting.py``: how the parts wait for a broker that is slow or away, staying alive and
  hearing a stop.

Assignment. The group's members share the program's *repartition* topic (cooperative-sticky
assignor); owning its partition p means owning task p, so on assignment the member adds
partition p of every input topic to its assignment itself. All input topics are therefore
required to have the same partition count (checked at start).

One turn of the loop: consume a batch of records into the tasks' input buffers, go on with the
restores, the standbys and a rewind under way, let each task process what it has and fire its
timers, and commit when the commit is due. On revocation the batch is committed and the tasks
closed; a lost assignment drops them without committing.

Recovery is exact: whenever a batch cannot commit (a failed commit, an aborted transaction, a lost
assignment) every task goes back to its last commit — instances, repartition marks and record
clock from the local store, inputs to the committed offsets — and the same records are processed
again, at the same record times, giving the same outputs with the same ids (``Task._next_id_bytes``).
Until that rewind is done the tasks stay paused; if the committed offsets cannot be read (the
broker is away), the rewind is retried on the next turn of the loop. A commit refused for the
group's generation, a fenced producer or a fatal consumer error ends the group member: its tasks
are closed without committing and it rejoins (``_rejoin``).

Broker stalls: a transactional call that times out is still under way in librdkafka and is
resumed (made again) until the broker answers (``Waiting.txn_call``), init_transactions included;
one that does not return at all (librdkafka's send_offsets_to_transaction after a broker kill)
is given up with its batch and its producer (``ProducerHung``: the member rejoins with a new
producer, which aborts the batch's transaction);
reads of committed offsets and seeks that fail are tried again on the next turn with the tasks
paused; a failed record delivery aborts the batch; an at-least-once offset commit is made
asynchronously and its result awaited in short slices of polling; a full producer queue is waited
on (``_queue_full``). Meanwhile the worker counts as alive; a stop asked for while a call is
unresolved ends the worker without committing or aborting (``StoppedWaiting``); a worker that
failed commits nothing on its way out (its batch may be half done).

Readiness (``ready``): the worker holds an assignment that was not lost, every task of it is
restored, and its last commit did not fail. Every failure recovered from is counted
(``metrics.FAULTS``) and repeated warnings are rate-limited (``logs.RepeatFilter``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from ..automata.compiled import CompiledProgram
from ..language.ir import ProgramIR
from ..task.task import Task
from ..topology.config import ProgramConfig, Topology
from ..topology.progress import progress_plan, topology_partitions, upstream_inputs
from ..upgrade.convert import UpgradeRefused
from . import clients, waiting
from .checkpoint import MIGRATED, Checkpoint
from .generation import owner_epochs
from .input_partitions import InputPartitionWatch
from .logs import rate_limit
from .metrics import stats_config
from .producer import BatchProducer
from .restore import open_transaction_end
from .task_manager import TaskManager
from .topic_ids import topic_id
from .waiting import Waiting
from .worker_errors import MemberEnded, StoppedWaiting, WorkerError

__all__ = ["BATCH", "MAX_REJOINS", "MIGRATED", "MemberEnded", "ProgramWorker", "StoppedWaiting", "WorkerError"]

log = logging.getLogger("eventscript.kafka.worker")


def log_failure(name: str, exc: BaseException) -> None:
    """Log why program ``name``'s worker stopped. A refusal of the topology's ``upgrade:`` policy
    is the operator's to act on and says how, in one line; it came after thirty lines of a
    crash's traceback ("worker failed"), which only a fault of the worker itself needs."""
    if isinstance(exc, UpgradeRefused):
        log.error("%s: worker stopped: %s", name, exc)
    else:
        log.error("%s: worker failed", name, exc_info=exc)


#: Records consumed per turn of the loop.
BATCH = 2_000
#: Rejoins allowed within ``REJOIN_WINDOW`` seconds before the worker gives up (two workers run with
#: the same instance id and fence each other in turn: a configuration error only a person can fix).
MAX_REJOINS = 5
REJOIN_WINDOW = 60.0


def stall_limit(consumer_conf: dict[str, Any]) -> float:
    """How long the loop may go without a beat before its batch is not committed (seconds): the
    session timeout less a heartbeat interval, since the group counts the session from the last
    heartbeat, which may come that much before the loop's last beat."""
    session = int(consumer_conf["session.timeout.ms"])
    heartbeat = int(consumer_conf.get("heartbeat.interval.ms", 0))
    return max(session - heartbeat, session // 2) / 1000


class ProgramWorker:
    """One group member running one program: its clients, its loop, and its parts (the task
    manager, the checkpoint, the producer side) wired together."""

    def __init__(
        self,
        topo: Topology,
        cfg: ProgramConfig,
        program: CompiledProgram,
        partitions: int,
        instance_id: str,
        metrics: Any = None,
        supplier: clients.ClientSupplier | None = None,
        programs: Mapping[str, ProgramIR] | None = None,
        topic_partitions: Mapping[str, int] | None = None,
    ) -> None:
        """``programs``: the topology's compiled programs by name, the writers of this one's inputs
        among them, which may show that its tasks need not re-publish each other's records
        (``topology/keyed.py``; ``TopologyRunner.prepare`` gives every worker the same).
        ``topic_partitions``: every topic's partition count on the broker when the worker was
        prepared. The progress plan counts the tasks of the programs writing its inputs from them:
        from ``topics:`` alone, a topic there that exists with another count (made before, or
        given partitions since) made it wait on too few writers (records of the others released
        without waiting on their progress) or on writers that never write (a stall)."""
        self.topo = topo
        #: Makes the worker's Kafka clients (tests pass one that wraps them).
        self.supplier = supplier or clients.ClientSupplier()
        #: The admin client that asks for the changelog's topic id (made when first needed).
        self._topic_admin: Any = None
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
        #: The stop asked for, the loop's heartbeat, and the waits for the broker (waiting.py).
        self.waits = Waiting(cfg.name, self._fault)
        self.stopping = self.waits.stopping
        partitions_of = topology_partitions(
            topo, {**(topic_partitions or {}), **{i.topic: partitions for i in cfg.inputs}}
        )
        plan = progress_plan(topo, cfg, partitions_of, programs)
        #: The tasks and standbys (task_manager.py).
        self.task_manager = TaskManager(
            cfg,
            program,
            partitions,
            self.rep_topic,
            self.changelog_topic,
            self.state_root,
            plan,
            metrics,
            self._changelog_id,
            owner_epochs(cfg.name, clients.consumer_config(topo.kafka, self.group_id)),
        )
        #: What is committed and when (checkpoint.py).
        self.checkpoint = Checkpoint(
            cfg,
            self,
            self.task_manager,
            self.waits,
            lambda: self.supplier.admin(clients.admin_config(self.topo.kafka)),
            self._stat,
            self._fault,
            metrics,
            stall_limit=stall_limit(clients.consumer_config(topo.kafka, self.group_id)),
        )
        #: Stops the worker when an input gets partitions its tasks do not cover (input_partitions.py).
        self._input_watch = InputPartitionWatch(
            cfg.name,
            [i.topic for i in cfg.inputs],
            partitions,
            [self.changelog_topic, self.rep_topic],
            upstream_inputs(topo, plan, partitions_of),
        )
        self.assigned_once = False
        #: The group took the assignment away (session timeout, broker gone) and has not given
        #: one back yet.
        self.assignment_lost = False
        self.idle_since: float | None = None
        #: Each input partition's offset at its last end-of-partition (``_held_open``).
        self._ends: dict[tuple[str, int], int] = {}
        self.failure: BaseException | None = None
        #: Records produced (``output.produced``) when they were last counted in the metrics.
        self._produced_counted = 0
        self.consumer: Consumer | None = None
        self.producer: Producer | None = None
        #: The producer's side of the batch (kafka/producer.py), made with the producer.
        self.output: BatchProducer | None = None
        #: When the worker last rejoined its group with a new consumer (``_rejoin``).
        self._rejoins: list[float] = []
        #: The member ended inside a rebalance callback, which must not raise: raised after the
        #: consumer's call returns (``_raise_if_ended``), before anything else is processed.
        self._ended: MemberEnded | None = None

    # -- status ----------------------------------------------------------------------------------

    @property
    def tasks(self) -> dict[int, Task]:
        """The tasks this worker owns, by partition (the task manager's table)."""
        return self.task_manager.tasks

    @property
    def restore_queue(self) -> list[int]:
        """The tasks waiting for their state to be restored."""
        return self.task_manager.restore_queue

    @property
    def commit_failed(self) -> bool:
        return self.checkpoint.failed

    @property
    def last_loop(self) -> float:
        """When the loop (or a wait inside it) last showed it was not hung."""
        return self.waits.last_loop

    @property
    def _txn_unresolved(self) -> bool:
        """Stopped with the batch unresolved (``Waiting.unresolved``)."""
        return self.waits.unresolved

    @property
    def ready(self) -> bool:
        """Holds an assignment that was not lost, every task of it restored, and the last commit
        succeeded. Read by the health server's thread."""
        return (
            self.assigned_once
            and not self.assignment_lost
            and not self.checkpoint.failed
            and not self.waits.on_broker
            and not self.waits.overdue()
            and self.task_manager.ready
        )

    @property
    def alive(self) -> bool:
        return self.failure is None and time.monotonic() - self.waits.last_loop < 60

    def _stat(self, name: str, n: int) -> None:
        if self.metrics is not None:
            self.metrics.count(self.cfg.name, name, n)

    def _fault(self, kind: str) -> None:
        if self.metrics is not None:
            self.metrics.fault(self.cfg.name, kind)

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
                self.waits.beat()
                try:
                    self._iterate()
                except MemberEnded as exc:
                    self._rejoin(exc)
                if until_idle is not None and self.idle_for() >= until_idle:
                    break
        except StoppedWaiting as exc:
            log.warning("%s: %s", self.cfg.name, exc)
        except BaseException as exc:
            self.failure = exc
            log_failure(self.cfg.name, exc)
            raise
        finally:
            self._close()

    def _open(self) -> None:
        kafka = self.topo.kafka
        rate_limit(log, logging.getLogger("eventscript.kafka.task"), clients.LIBRDKAFKA_LOG)
        self.consumer = self._new_consumer()
        self._new_producer()
        restorer = self.supplier.consumer(
            clients.consumer_config(
                kafka, f"{self.group_id}.restore.{self.instance_id}", **{"partition.assignment.strategy": "range"}
            )
        )
        standby_reader = None
        if self.cfg.num_standby > 0:
            standby_reader = self.supplier.consumer(
                clients.consumer_config(
                    kafka, f"{self.group_id}.standby.{self.instance_id}", **{"partition.assignment.strategy": "range"}
                )
            )
        self.task_manager.open(restorer, standby_reader, self._member)

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
        self.waits.new_producer()
        self.producer = self.supplier.producer({**conf, **stats_config(self.metrics, self.cfg.name, "producer", conf)})
        self.output = BatchProducer(self.cfg.name, self.producer, self.eos, self.changelog_topic, self._queue_full)
        self._produced_counted = 0  # (the new producer counts from 0)
        self.checkpoint.new_producer()
        if self.eos:
            producer = self.producer
            self.waits.txn_call("initialising", lambda t: producer.init_transactions(t), fault=None)

    def _new_consumer(self) -> Consumer:
        """The group member's consumer (made at start and again on each rejoin)."""
        kafka = self.topo.kafka
        # Static membership: a worker restarted within the session timeout (a rolling deploy, a
        # rescheduled pod) gets its tasks back without a rebalance moving them elsewhere.
        static = {"group.instance.id": f"{self.instance_id}"} if kafka.static_membership else {}
        conf = clients.member_consumer_config(kafka, self.group_id, on_commit=self.checkpoint.on_commit, **static)
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

    def _changelog_id(self) -> str | None:
        """The changelog's topic id now, which the restore and the standbys compare with the one
        a store was written from (a recreated changelog: issue 20 fault 5)."""
        if self._topic_admin is None:
            self._topic_admin = self.supplier.admin(clients.admin_config(self.topo.kafka))
        try:
            return topic_id(self._topic_admin, self.changelog_topic)
        except KafkaException:
            # The next attempt asks with a new admin client. One that was idle through a broker
            # outage was seen (CI, Apache Kafka 4.1, librdkafka 2.16) failing every request
            # "while waiting for controller" for over a minute after the broker was back, while
            # the worker's consumer and producer worked; the new consumer of a rejoin did not
            # help, since the admin client was kept.
            self._topic_admin = None
            raise

    def _rejoin(self, exc: MemberEnded) -> None:
        """End the group member whose tasks were lost and join again (with a new consumer if its
        consumer failed fatally, see :class:`MemberEnded`): every task is closed without
        committing (its batch is processed again by whoever owns it next, from the committed
        offsets and the committed state), an open transaction is aborted, and the new member
        restores whatever tasks the group gives it. As Kafka Streams does on a
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
                self.checkpoint.abort()
            except MemberEnded as fenced:  # the producer was fenced too: replaced below
                log.warning("%s: %s", self.cfg.name, fenced)
                producer_failed = True
        if producer_failed and self.output is not None:
            self.output.txn_open = False  # a failed producer's transaction cannot be aborted: the broker ends it
        owned = self._drop_all_tasks()
        if producer_failed and self.producer is not None:
            old_producer, self.producer = self.producer, None
            if not self.waits.producer_hung:  # (a hung call may still be under way in it: left alone)
                try:
                    old_producer.purge()  # its queued records belong to the failed transaction
                except Exception as purge_exc:
                    log.warning("%s: dropping the failed producer's records: %s", self.cfg.name, purge_exc)
            self._new_producer()
        if not exc.consumer_failed:
            consumer = self._member()
            under = {p: self.task_manager.assigned_under.get(p) for p in owned}
            consumer.incremental_unassign([tp for p in owned for tp in self.task_manager.task_partitions(p)])
            self._on_assign(consumer, [TopicPartition(self.rep_topic, p) for p in owned])
            # Still the member's they were assigned to: if librdkafka joined again meanwhile, the
            # group takes them away, and nothing of them is committed until then (member_replaced).
            self.task_manager.assigned_under.update(under)
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
        self._ends.clear()  # (a new member's partitions report their ends anew)
        self.consumer = self._new_consumer()
        self._join()

    def _drop_all_tasks(self) -> list[int]:
        """Close every task without committing and forget the batch: nothing of it was committed.
        Returns the tasks it owned."""
        if self.output is not None and self.output.txn_open:
            try:
                self.checkpoint.abort()
            except MemberEnded as fenced:  # the broker ends a fenced producer's transaction
                log.warning("%s: %s", self.cfg.name, fenced)
                self.output.txn_open = False
        self.checkpoint.drop()
        self.assignment_lost = True  # not ready until the group assigns tasks again
        return self.task_manager.drop_all()

    def _close(self) -> None:
        try:
            if self.failure is None and self.consumer is not None and self.producer is not None:
                self.checkpoint.commit()
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
        self.task_manager.close()
        if self.producer is not None and not self.waits.unresolved and not self.waits.producer_hung:
            if self.output is not None and self.output.txn_open:
                try:
                    self.producer.abort_transaction(waiting.TXN_TIMEOUT)
                except Exception:
                    pass
            self.producer.flush(waiting.TXN_SLICE)  # after the final commit nothing is left but when it failed

    # -- the loop -------------------------------------------------------------------------------------

    def _iterate(self) -> None:
        assert self.consumer is not None and self.producer is not None
        manager = self.task_manager
        if manager.rewinding:
            manager.finish_rewind(self.consumer)
        got = self._take(self.consumer.consume(num_messages=BATCH, timeout=self._poll_timeout()))
        self._raise_if_ended()
        self._input_watch.check(self.consumer)
        manager.restore_pending(self.consumer)
        manager.step_standbys()
        worked = 0
        for task in list(manager.tasks.values()):
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
            self.checkpoint.dirty = True
        self.checkpoint.produce_outboxes()
        self.producer.poll(0)
        self.checkpoint.commit_if_due()
        # Idle: caught up on every turn of the wait, not just the first. A rebalance that brings
        # tasks to restore, or an input held back by a transaction left open, ends it.
        if (not got and not worked) or self.idle_since is not None:
            if not self._all_caught_up():
                self.idle_since = None
            elif self.idle_since is None:
                self.idle_since = time.monotonic()

    def _take(self, msgs: list[Any]) -> int:
        """Put consumed records into their tasks' input buffers (processed on the next turn);
        returns how many. Also called while an at-least-once commit waits for its result."""
        got = 0
        tasks = self.task_manager.tasks
        now = time.monotonic()  # (when each record of the poll was fetched: read once for all)
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    task = tasks.get(m.partition())
                    if task is not None:
                        task.mark_eof(m.topic(), m.partition())
                        self._ends[(m.topic(), m.partition())] = m.offset()
                    continue
                if err.fatal() or err.code() == KafkaError._FATAL:
                    # librdkafka reports its fatal consumer errors with code _FATAL and fatal()
                    # false: either way the consumer is dead.
                    raise MemberEnded(f"consumer failed fatally: {err}", consumer_failed=True)
                log.warning("%s: consumer: %s", self.cfg.name, err)
                continue
            task = tasks.get(m.partition())
            if task is not None and task.group.add(m, now):  # (not Task.add: this loop sees every record)
                got += 1
        if got:
            self._stat("consumed", got)
            self.idle_since = None
        return got

    def poll_while_committing(self, timeout: float) -> None:
        """Serve the consumer while an at-least-once commit waits for its result (checkpoint.py):
        records fetched meanwhile go to the tasks' buffers; a member ended meanwhile raises."""
        self._take(self._member().consume(num_messages=BATCH, timeout=timeout))
        self._raise_if_ended()

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
        timeout = min(0.1, self.checkpoint.interval)
        if self.cfg.clock == "wall":
            now_us = time.time_ns() // 1000
            for task in self.task_manager.tasks.values():
                nxt = task.next_timer()
                if nxt is not None:
                    timeout = min(timeout, max(0.0, (nxt - now_us) / 1e6))
        return timeout

    def _all_caught_up(self) -> bool:
        """Ready, every input at its end with nothing buffered, and no input's end held back by a
        transaction still open: a ``read_committed`` reader is told of the end at the first record
        of the oldest open transaction, and a writer killed mid-transaction leaves it open until
        the broker aborts it (``transaction.timeout.ms`` later); what was committed after it is
        still to come. (``--until-idle`` had a worker end there, with those records unread.)"""
        return self.ready and all(t.drained() for t in self.task_manager.tasks.values()) and not self._held_open()

    def _held_open(self) -> bool:
        """Whether an input partition's last end-of-partition (its last stable offset) is short of
        its high watermark: a transaction still open there (librdkafka's cached watermark of the
        last fetch: no request)."""
        consumer = self._member()
        tasks = self.task_manager.tasks
        for (topic, partition), end in self._ends.items():
            if partition in tasks and open_transaction_end(consumer, topic, partition, end) is not None:
                return True
        return False

    def idle_for(self) -> float:
        """Seconds since the worker last had input, with every task caught up (0: not idle).
        Read by the runner's thread (``TopologyRunner.run``'s ``until_idle``)."""
        if self.idle_since is None or self.checkpoint.open or not self.ready:
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
        if self.stopping.is_set() and now - since >= waiting.TXN_SLICE:
            raise self.waits.stop_unresolved(
                f"the producer's queue stayed full for {now - since:.0f} s (the broker is slow or away)"
            )
        self.waits.beat()  # waiting for the broker, not hung
        self.producer.poll(0.05)
        return since

    # -- rebalancing -----------------------------------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.idle_since = None  # (before the tasks show: the runner's thread reads idle_for)
        self.assigned_once = True
        self.assignment_lost = False
        assert self.output is not None
        self.task_manager.assign(consumer, partitions, self.output.senders())

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = self.task_manager.owned_among(partitions)
        if revoked and self.failure is None:  # a failed worker's batch may be half done: never commit it
            try:
                self.checkpoint.commit(in_rebalance=True)  # finish and commit the batch before giving the tasks away
            except StoppedWaiting as exc:
                log.warning("%s: commit on revocation: %s", self.cfg.name, exc)
            except MemberEnded as exc:
                self._ended = exc  # every task is lost: rejoin once the consumer's call returns
            except WorkerError:
                raise  # the transaction is in an unknown state: going on would commit it later
            except Exception:
                log.exception("%s: commit on revocation failed", self.cfg.name)
        self.task_manager.revoke(consumer, partitions)

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
                self.checkpoint.abort()
            except MemberEnded as fenced:  # (inside a rebalance callback: raised once it returns)
                self.output.txn_open = False
                self._ended = fenced
        self.task_manager.lose(consumer, partitions)
        self.checkpoint.rewind_when_resolved()
        self.task_manager.after_loss()
