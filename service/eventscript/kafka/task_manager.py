"""The worker's tasks: which it owns, which it keeps warm, and how they come and go (as Kafka
Streams' TaskManager).

Owning partition p of the program's repartition topic means owning task p, so on assignment the
manager makes task p, adds partition p of every input topic to the consumer's assignment and
pauses them until the task's state is restored (``restore_pending``: its local store and the tail
of its changelog, a time-boxed slice per turn of the loop). On revocation the worker first commits
the batch (checkpoint.py), then the manager closes the tasks; a lost assignment drops them without
committing. A rewind (back to the last commit) rebuilds every task from its store and moves its
inputs back to the committed offsets, keeping them paused until that is done.

Standby replicas (``num_standby``): warm copies of some tasks the worker does not own, read from
their changelogs (kafka/standby.py), retargeted after every change of the assignment; when one of
them is assigned, its store becomes the task's and the restore replays the tail only.

The manager does not poll the consumer nor commit: the worker's loop passes it the consumer it
acts on (a rejoin replaces the consumer).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from ..automata.compiled import CompiledProgram
from ..task.task import Task
from ..topology.config import ProgramConfig
from . import waiting
from .generation import group_generation, member_of
from .metrics import restore_to_go
from .restore import Restoration, RestoreError
from .standby import Standbys, StandbyTask, standby_tasks
from .state import Position, tp_name
from .worker_errors import MemberEnded, WorkerError

log = logging.getLogger("eventscript.kafka.worker")

#: Seconds of changelog replay per turn of the loop (the consumer is polled in between).
RESTORE_SLICE = 0.5
#: Seconds every read of what a restore needs (the committed offsets, from the group
#: coordinator; the changelog's topic id, from the admin client) may fail before the member is
#: ended and joins again with a new consumer: after a broker outage a client's connection can
#: stay broken while a new client connects at once. (A failed topic id read makes a new admin
#: client anyway: ``ProgramWorker._changelog_id``.)
COORDINATOR_STALL = 60.0
#: Seconds between two attempts at those reads (some fail at once, e.g. an unknown topic).
RESTORE_RETRY = 0.5


class TaskManager:
    """The tasks and standby tasks of one program worker."""

    def __init__(
        self,
        cfg: ProgramConfig,
        program: CompiledProgram,
        partitions: int,
        rep_topic: str,
        changelog_topic: str,
        state_root: Path,
        progress_plan: Any,
        metrics: Any = None,
        changelog_id: Callable[[], str | None] = lambda: None,
        owner_epochs: bool = True,
    ) -> None:
        self.cfg = cfg
        self.name = cfg.name
        self.program = program
        self.partitions = partitions
        self.rep_topic = rep_topic
        self.changelog_topic = changelog_topic
        self.state_root = state_root
        self.progress_plan = progress_plan
        self.metrics = metrics
        #: changelog_id() → the changelog's topic id now (kafka/topic_ids.py; None: not known),
        #: which the restore and the standbys compare with the one a store was written from (a
        #: recreated changelog: issue 20 fault 5).
        self._changelog_id = changelog_id
        #: Whether restored tasks take the group generation as their owner epoch (kafka/generation.py:
        #: only under the classic group protocol).
        self.owner_epochs = owner_epochs
        self.tasks: dict[int, Task] = {}
        #: Tasks waiting for their state to be restored (paused meanwhile).
        self.restore_queue: list[int] = []
        #: Each task's committed input offsets, as read when it was restored or rewound and moved on
        #: by each commit (checkpoint.py): every commit sends every running task's position starting
        #: from them, so that a commit always carries offsets, and with them the group generation
        #: that fences a zombie (a task that processed nothing since would otherwise send none).
        self.committed_offsets: dict[int, Position] = {}
        #: Tasks rewound but not yet moved back to the committed offsets (see finish_rewind).
        self.rewinding: set[int] = set()
        #: Tasks restored but whose inputs are not yet at the committed offsets the restore
        #: replayed the changelog to (see ``_start_restored``); they stay in ``restore_queue``.
        self._positioning: dict[int, Position] = {}
        #: The changelog replay under way (tasks in it stay in restore_queue until it ends).
        self._restoring: Restoration | None = None
        self._restore_started = 0.0
        #: Since when every read of the committed offsets for a restore has failed (None: it has not).
        self._committed_failing_since: float | None = None
        #: No attempt at the restore's reads before this (``RESTORE_RETRY`` after a failed one).
        self._restore_retry_at = 0.0
        self._restorer: Consumer | None = None
        #: Warm copies of other workers' tasks (num_standby > 0).
        self._standbys: Standbys | None = None
        #: The group member id each task was assigned under (``generation.member_of``; None: not
        #: known): see ``member_replaced``.
        self.assigned_under: dict[int, bytes | None] = {}

    # -- read-only views -------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Every task restored and none rewinding (read by the health server's thread, hence
        the copy of the task table)."""
        return not self.rewinding and not self.restore_queue and all(t.restored for t in list(self.tasks.values()))

    def standby(self, p: int) -> StandbyTask | None:
        """This worker's standby replica of task ``p``, or None (read by the state endpoint's
        thread, hence the copy)."""
        standbys = self._standbys
        return None if standbys is None else dict(standbys.tasks).get(p)

    def task_partitions(self, p: int) -> list[TopicPartition]:
        """Every partition task ``p`` reads: its repartition partition and its inputs'."""
        tps = [TopicPartition(self.rep_topic, p)]
        tps.extend(TopicPartition(i.topic, p) for i in self.cfg.inputs)
        return tps

    # -- opening and closing ---------------------------------------------------------------------

    def open(self, restorer: Consumer, standby_reader: Consumer | None, member: Callable[[], Consumer]) -> None:
        """Take the consumer that replays changelogs and, with ``num_standby``, the one that keeps
        the standbys warm; they read the group's committed offsets through ``member()``, the
        group member's consumer (a call, not a copy: a rejoin replaces the consumer)."""
        self._restorer = restorer
        if standby_reader is not None:
            self._standbys = Standbys(
                self.name,
                self.changelog_topic,
                [i.topic for i in self.cfg.inputs] + [self.rep_topic],
                self.state_root,
                standby_reader,
                lambda tps: member().committed(tps, timeout=1.0),
                self._changelog_id,
            )

    def step_standbys(self) -> None:
        if self._standbys is not None:
            self._standbys.step()

    def close(self) -> None:
        """Close every task (after the final commit) and the readers of restores and standbys."""
        for task in self.tasks.values():
            task.close()
        self.tasks.clear()
        if self._restorer is not None:
            self._restorer.close()
        if self._standbys is not None:
            self._standbys.close()

    # -- the assignment --------------------------------------------------------------------------

    def assign(self, consumer: Consumer, partitions: list[TopicPartition], senders: tuple[Any, Any]) -> None:
        """Make the tasks of the newly assigned repartition partitions (``senders``: the
        producer's ``send`` and ``send_changelog``), add their inputs to the assignment and pause
        them until they are restored."""
        new: list[TopicPartition] = []
        extra: list[TopicPartition] = []
        member = member_of(consumer)
        for tp in partitions:
            if tp.topic != self.rep_topic or tp.partition in self.tasks:
                continue
            p = tp.partition
            self.assigned_under[p] = None if member is None else member[1]
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
            task.set_progress(self.progress_plan, commit_markers_first=True)
            task.attach(*senders)
            self.restore_queue.append(p)
            new.append(tp)
            extra.extend(TopicPartition(i.topic, p) for i in self.cfg.inputs)
        consumer.incremental_assign(list(partitions) + extra)
        if new or extra:
            consumer.pause(new + extra)
        log.info("%s: assigned tasks %s", self.name, sorted(tp.partition for tp in new))
        self._retarget_standbys()
        self._rebalanced("assigned")

    def member_replaced(self, consumer: Consumer) -> bool:
        """Whether the consumer is no longer the group member some task was assigned under: it
        left the group (its session ended), or librdkafka joined it again on its own, with a new
        member id, before the worker heard of the loss (a worker frozen past its session and
        resumed). Such a task is another member's now; a commit would carry the old member's
        batch under the new member's generation, which the broker accepts (it checks the
        generation, not who owns the partitions): a zombie's offsets and changelog records over
        the new owner's (kafka/checkpoint.py refuses it)."""
        now = member_of(consumer)
        if now is None:
            return False  # (a layout generation.py does not know: as before)
        generation, member = now
        if generation < 0 or not member:
            return True
        return any(self.assigned_under.get(p) not in (None, member) for p in self.tasks)

    def owned_among(self, partitions: list[TopicPartition]) -> list[int]:
        """The tasks this worker owns among ``partitions``."""
        return [tp.partition for tp in partitions if tp.topic == self.rep_topic and tp.partition in self.tasks]

    def revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Close the revoked tasks (their batch is committed first, by the worker) and give their
        partitions back."""
        revoked = self.owned_among(partitions)
        tps = self._forget(revoked)
        other = [tp for tp in partitions if tp.topic != self.rep_topic or tp.partition not in revoked]
        consumer.incremental_unassign(tps + other)
        log.info("%s: revoked tasks %s", self.name, sorted(revoked))
        self._retarget_standbys()
        self._rebalanced("revoked")

    def lose(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Drop the lost tasks without committing (another member may own them now)."""
        lost = [tp.partition for tp in partitions if tp.topic == self.rep_topic]
        consumer.incremental_unassign(self._forget(lost))

    def after_loss(self) -> None:
        """The assignment changed by a loss (after the rest of the tasks went back to the commit)."""
        self._retarget_standbys()
        self._rebalanced("lost")

    def _forget(self, ps: list[int]) -> list[TopicPartition]:
        """Close the tasks ``ps`` and forget them; returns their partitions."""
        tps: list[TopicPartition] = []
        for p in ps:
            task = self.tasks.pop(p, None)
            if task is not None:
                task.close()
            self.committed_offsets.pop(p, None)
            self.rewinding.discard(p)
            self._positioning.pop(p, None)
            if p in self.restore_queue:
                self.restore_queue.remove(p)
            tps.extend(self.task_partitions(p))
        return tps

    def drop_all(self) -> list[int]:
        """Close every task without committing (the member ended); returns the tasks it owned."""
        owned = sorted(self.tasks)
        for task in self.tasks.values():
            task.close()
        self.tasks.clear()
        self.committed_offsets.clear()
        self.restore_queue.clear()
        self.rewinding.clear()
        self._committed_failing_since = None
        self._restore_retry_at = 0.0
        self._positioning.clear()
        if self._restoring is not None:
            self._restoring = None
            if self._restorer is not None:
                self._restorer.unassign()
        self._retarget_standbys()
        self._rebalanced("lost")
        return owned

    def _retarget_standbys(self) -> None:
        """Stand by for the tasks the rule of kafka/standby.py picks for the tasks now owned."""
        if self._standbys is not None:
            self._standbys.retarget(standby_tasks(set(self.tasks), self.partitions, self.cfg.num_standby))

    def _rebalanced(self, kind: str) -> None:
        if self.metrics is not None:
            self.metrics.rebalance(self.name, kind)
            self.metrics.tasks(self.name, len(self.tasks))

    # -- back to the last commit -----------------------------------------------------------------

    def rewind(self, consumer: Consumer) -> None:
        """Rebuild every restored task from its store (instances, repartition marks, record clock)
        and read its inputs again from the committed offsets."""
        for p, task in self.tasks.items():
            if p in self.restore_queue:
                continue  # not restored yet: nothing processed, its inputs are still at the commit
            task.rewind()  # nothing is processed until the inputs are back at the commit
            self.rewinding.add(p)
        self.finish_rewind(consumer)

    def finish_rewind(self, consumer: Consumer) -> None:
        """Move the rewound tasks' inputs to their committed offsets; if those cannot be read
        now, keep the tasks paused and try again on the next turn of the loop."""
        # A task revoked and assigned again meanwhile is a new one, restoring: not this rewind's.
        tasks = [self.tasks[p] for p in self.rewinding if p in self.tasks and p not in self.restore_queue]
        tps = [TopicPartition(ip.topic, ip.partition) for task in tasks for ip in task.inputs]
        if tps:
            try:
                consumer.pause(tps)
                committed = committed_offsets(consumer, tps)
            except KafkaException as exc:
                log.warning("%s: cannot read the committed offsets to rewind (%s); retrying", self.name, exc)
                return
            elsewhere = self._committed_elsewhere(committed)
            for p in sorted(elsewhere):
                log.warning(
                    "%s task %d: its inputs were committed past this worker's last commit (another member "
                    "owned it meanwhile): restoring it from the changelog instead of going back to the local store",
                    self.name,
                    p,
                )
                self.rewinding.discard(p)
                self.restore_queue.append(p)  # (still paused: the restore places its inputs)
            committed = [tp for tp in committed if tp.partition not in elsewhere]
            tasks = [task for task in tasks if task.partition not in elsewhere]
            tps = [tp for tp in tps if tp.partition not in elsewhere]
            moved = True
            for tp in committed:
                if tp.offset >= 0:
                    self.committed_offsets.setdefault(tp.partition, {})[tp_name(tp.topic, tp.partition)] = tp.offset
                tp.offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                try:
                    consumer.seek(tp)
                except KafkaException as exc:
                    # Resuming would read on from where the input was, past the records the
                    # rewind must process again (their effect is gone from the rebuilt state).
                    log.warning(
                        "%s: cannot move %s:%d back to the committed offset %d (%s); retrying",
                        self.name,
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
            if tps:
                consumer.resume(tps)
        self.rewinding.clear()

    def _committed_elsewhere(self, committed: list[TopicPartition]) -> set[int]:
        """The tasks whose committed offsets are not the ones this worker last read or committed:
        another member committed them since (this one was a zombie: frozen past its session, cut
        off). Their local stores hold this worker's last commit, not the group's: going back to
        them at the new offsets would run every later record on an older state of its key (the
        fault harness's at_least_once-wall: a Quiet count of 21 where 51 was due)."""
        moved: set[int] = set()
        for tp in committed:
            known = self.committed_offsets.get(tp.partition, {}).get(tp_name(tp.topic, tp.partition))
            if tp.offset >= 0 and known != tp.offset:
                moved.add(tp.partition)
        return moved

    # -- restoring -------------------------------------------------------------------------------

    def restore_pending(self, consumer: Consumer) -> None:
        """Restore the tasks waiting for it by replaying their changelog partitions together from
        their stores' checkpoints (a current store: only the tail), one time-boxed slice per turn
        of the loop (kafka/restore.py), so the worker keeps polling and stays in its group however
        long the replay takes. A changelog that cannot be restored raises :class:`WorkerError`."""
        assert self._restorer is not None
        if self._positioning:
            self._start_restored(consumer)
        if self._restoring is None:
            queued = [p for p in self.restore_queue if p not in self._positioning]
            if not queued:
                return
            tasks = [self.tasks[p] for p in queued if p in self.tasks]
            self._restore_started = time.monotonic()
            if self._restore_started < self._restore_retry_at:
                return
            try:
                what = "the committed offsets"
                committed = self._committed(consumer, tasks)
                what = "the changelog's topic id"
                changelog_id = self._changelog_id()
            except KafkaException as exc:
                now = time.monotonic()
                since = self._committed_failing_since = self._committed_failing_since or now
                if now - since > COORDINATOR_STALL:
                    self._committed_failing_since = None
                    raise MemberEnded(
                        f"{what} to restore tasks {sorted(t.partition for t in tasks)} could not be "
                        f"read for {now - since:.0f} s (last: {exc}); a new consumer joins",
                        consumer_failed=True,
                    ) from exc
                self._restore_retry_at = now + RESTORE_RETRY
                log.warning(
                    "%s: cannot read %s to restore tasks %s (%s); retrying",
                    self.name,
                    what,
                    sorted(t.partition for t in tasks),
                    exc,
                )
                return  # the tasks stay paused in restore_queue; tried again on the next turn
            self._committed_failing_since = None
            # Also a store at the committed position reads the changelog past its checkpoint:
            # another owner's commits that moved no input (timers) are there, and the records of a
            # batch that never committed, which the task must write again (issue 20, faults 1, 2).
            replay = {task.partition: task for task in tasks}
            self._restoring = Restoration(
                self.name,
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
                log.warning("%s: %s; retrying", self.name, exc)
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
            self.metrics.restore_progress(self.name, restore_to_go(restoration))
        if restoration.done:
            self._restoring = None
            # The generation now: the one the tasks were assigned in, or a later one (a rebalance
            # that kept them); a later owner's is higher either way.
            generation = group_generation(consumer, self.name) if self.owner_epochs else None
            for task in restoration.finish(generation):
                task.restored = False  # (nothing processed, no timer fired, until its inputs are placed)
                self._positioning[task.partition] = restoration.committed[task.partition]
            self._start_restored(consumer)
            self._restore_done()

    def _start_restored(self, consumer: Consumer) -> None:
        """Tasks whose state is back at the committed offsets the restore read: move their inputs
        to exactly those offsets, then start them and read their inputs. The consumer's own
        position of a newly assigned partition is the committed offset librdkafka fetched when it
        was assigned, and falls back to ``auto.offset.reset`` (the earliest record) when that
        fetch failed (a broker outage): resuming there would process again, on top of the
        restored state, every record the state already holds (seen in the fault harness: outputs
        repeated under exactly-once with other values). A seek that fails is tried again on the
        next turn of the loop, the task still paused and not ready.

        A partition librdkafka never started cannot be moved by a seek: its own query of the
        committed offset, answered NOT_COORDINATOR for the whole request (a coordinator that moved
        or was away), leaves it waiting for good (librdkafka issue 5586, open in 2.16). Such
        inputs are assigned again at the offsets instead, which needs no query."""
        for p, offsets in list(self._positioning.items()):
            task = self.tasks.get(p)
            if task is None:
                del self._positioning[p]
                continue
            places = [
                TopicPartition(ip.topic, ip.partition, at if (at := offsets.get(ip.name, 0)) > 0 else OFFSET_BEGINNING)
                for ip in task.inputs
            ]
            try:
                try:
                    for tp in places:
                        consumer.seek(tp)
                except KafkaException:
                    consumer.incremental_unassign([TopicPartition(tp.topic, tp.partition) for tp in places])
                    consumer.incremental_assign(places)
                    consumer.pause(places)  # (resumed below with the task's other partitions)
            except KafkaException as exc:
                log.warning(
                    "%s: cannot move task %d's inputs to the offsets it was restored to (%s); retrying",
                    self.name,
                    p,
                    exc,
                )
                continue
            del self._positioning[p]
            if p in self.restore_queue:
                self.restore_queue.remove(p)
            task.resume()  # (drops records fetched before the seek)
            task.start_wall_clock()
            consumer.resume(self.task_partitions(p))

    def _restore_done(self) -> None:
        if self.metrics is not None:
            self.metrics.observe_restore(self.name, time.monotonic() - self._restore_started)
            self.metrics.restore_progress(self.name, {})
            self.metrics.status(self.name, sum(t.engine.instance_count for t in self.tasks.values()), 0)

    def _committed(self, consumer: Consumer, tasks: list[Task]) -> dict[int, Position]:
        tps = [TopicPartition(ip.topic, ip.partition) for t in tasks for ip in t.inputs]
        out: dict[int, Position] = {t.partition: {} for t in tasks}
        for tp in committed_offsets(consumer, tps):
            out[tp.partition][tp_name(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else 0
            if tp.offset >= 0:
                self.committed_offsets.setdefault(tp.partition, {})[tp_name(tp.topic, tp.partition)] = tp.offset
        return out


def committed_offsets(consumer: Consumer, tps: list[TopicPartition]) -> list[TopicPartition]:
    """The group's committed offsets of ``tps`` (a negative offset: none committed). A partition
    answered with an error (the group coordinator moving or loading after a broker outage) raises
    :class:`KafkaException` like a failed request: read as "none committed" it would restore the
    task to the start of its changelog and process its inputs again from the start."""
    committed = consumer.committed(tps, timeout=waiting.slice_of_timeout())
    for tp in committed:
        if tp.error is not None:
            raise KafkaException(tp.error)
    return committed
