"""Standby replicas: warm copies of tasks this worker does not own (``num_standby``, as Kafka
Streams' ``num.standby.replicas``).

A standby keeps a task's local store close to its owner's by reading the task's changelog
partition continuously, with the restore's apply rule (kafka/restore.py, :class:`Coverage`): a
record applies only once the input position its batch reached is within the committed offsets.
Records are applied in changelog order and only as a prefix — the standby stops at the first
record not covered yet and waits for the owner's next commit — so the store always equals a
restore of the changelog up to its checkpoint, and a record of an aborted batch is never
applied unless the restore itself would apply it. The restore's owner-epoch rule applies too
(``state.changelog.EpochFence``): a zombie's record written after a newer owner's is passed over,
and the store keeps the highest epoch applied with its checkpoint, for the restore that goes on
from there. When the task is then assigned to this worker
(a fail-over, a rebalance), the restore finds the store's checkpoint near the end of the
changelog and replays only the tail.

The store's input position is set to a marker (:func:`standby_position`: an offset no commit
has), never to a committed position: the standby cannot know that it has read every record of
the owner's last commit, so the restore always replays from the checkpoint to the end.

Which tasks (:func:`standby_tasks`): the consumer group does not tell a member what the others
own, so each worker picks, among the tasks it does not own, the ``num_standby`` × (tasks it owns)
that come next after its own tasks in task order, wrapping around. With a balanced assignment
every task then has ``num_standby`` standbys on other workers (two workers: each stands by for
the other's tasks).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from ..state.changelog import EpochFence
from .restore import ChangelogRecord, Coverage, RestoreError, keep_info, log_zombie_record, read_changelog, start_offset
from .state import Position, TaskStore, tp_name

log = logging.getLogger("eventscript.kafka.worker")

#: Seconds between reads of the committed offsets of the standby tasks' inputs.
COMMITTED_INTERVAL = 1.0
#: Changelog records a standby holds while it waits for a commit; past this it stops reading.
MAX_PENDING = 100_000
#: Changelog records read per turn of the worker's loop.
READ_BATCH = 2_000


def standby_tasks(owned: set[int], partitions: int, num_standby: int) -> set[int]:
    """The tasks a worker owning ``owned`` stands by for: of those it does not own, the
    ``num_standby`` × len(owned) nearest after one of its own in task order (wrapping around),
    ties by task number. A worker owning nothing stands by for nothing."""
    if num_standby <= 0 or not owned:
        return set()
    others = [t for t in range(partitions) if t not in owned]
    others.sort(key=lambda t: (min((t - q) % partitions for q in owned), t))
    return set(others[: num_standby * len(owned)])


def standby_position(changelog_topic: str, partition: int) -> Position:
    """The input position written with a standby's store: an offset no commit has (-1), so the
    restore never takes the store for the committed state and replays the tail."""
    return {tp_name(changelog_topic, partition): -1}


@dataclass
class StandbyTask:
    """One warm copy: the task's store and the changelog records not applied yet."""

    partition: int
    store: TaskStore
    #: The owner-epoch rule, from the highest epoch the store had applied.
    fence: EpochFence
    pending: list[ChangelogRecord] = field(default_factory=list)
    applied: int = 0


class Standbys:
    """The standby tasks of one program worker. The worker calls :meth:`retarget` after each
    change of its assignment (and :meth:`release` before it opens a task's store itself), and
    :meth:`step` once per turn of its loop."""

    def __init__(
        self,
        program: str,
        changelog_topic: str,
        input_topics: list[str],
        state_root: Path,
        reader: Any,
        committed: Any,
        changelog_id: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.program = program
        self.changelog_topic = changelog_topic
        self.input_topics = input_topics
        self.state_root = state_root
        #: A consumer of its own, assigned the changelog partitions of the standby tasks.
        self.reader = reader
        #: committed(list[TopicPartition]) → list[TopicPartition]: the group's committed offsets.
        self.committed = committed
        #: changelog_id() → the changelog's topic id now (kafka/topic_ids.py; None: not known),
        #: asked when standbys start: a store of another changelog of that name is wiped.
        self.changelog_id = changelog_id
        self.tasks: dict[int, StandbyTask] = {}
        self._positions: dict[int, Position] = {}
        self._last_committed = 0.0
        self._paused: set[int] = set()

    def retarget(self, wanted: set[int]) -> None:
        """Stand by for exactly the tasks ``wanted`` (none of which this worker owns)."""
        for p in sorted(set(self.tasks) - wanted):
            self.release(p)
        new = sorted(wanted - set(self.tasks))
        if not new:
            return
        try:
            changelog_id = self.changelog_id()
        except KafkaException as exc:  # tried again at the next retarget
            log.warning(
                "%s: no standby for tasks %s now: changelog %s: %s", self.program, new, self.changelog_topic, exc
            )
            return
        tps = []
        for p in new:
            store = TaskStore(self.state_root / f"task-{p}")
            try:
                start = start_offset(self.program, self.reader, self.changelog_topic, p, store, "standby", changelog_id)
            except RestoreError as exc:  # tried again at the next retarget
                log.warning("%s: no standby for task %d now: %s", self.program, p, exc)
                store.close()
                continue
            self.tasks[p] = StandbyTask(p, store, EpochFence(store.epoch))
            tps.append(TopicPartition(self.changelog_topic, p, start if start > 0 else OFFSET_BEGINNING))
            log.info("%s: standby for task %d from changelog offset %d", self.program, p, start)
        self.reader.incremental_assign(tps)
        self._last_committed = 0.0  # read the new tasks' committed offsets on the next step

    def release(self, p: int) -> None:
        """Stop standing by for task ``p`` (it is about to be owned, or is no longer wanted):
        apply nothing more, close its store so that the task can open it."""
        task = self.tasks.pop(p, None)
        if task is None:
            return
        try:
            self.reader.incremental_unassign([TopicPartition(self.changelog_topic, p)])
        except KafkaException as exc:
            log.warning("%s: standby task %d: %s", self.program, p, exc)
        self._positions.pop(p, None)
        self._paused.discard(p)
        log.info(
            "%s: standby for task %d stopped at changelog offset %d (%d records applied); %d skipped as an earlier "
            "owner's written after a later owner's",
            self.program,
            p,
            task.store.checkpoint,
            task.applied,
            task.fence.skipped,
        )
        task.store.close()

    def close(self) -> None:
        for p in list(self.tasks):
            self.release(p)
        self.reader.close()

    def step(self) -> None:
        """Read what the changelog has for the standby tasks, without waiting, and apply what
        the committed offsets cover."""
        if not self.tasks:
            return
        records, _ = read_changelog(self.program, self.reader, READ_BATCH, 0)
        for rec in records:
            task = self.tasks.get(rec[0])
            if task is not None:
                task.pending.append(rec)
        if time.monotonic() - self._last_committed >= COMMITTED_INTERVAL:
            self._refresh_committed()
        for task in self.tasks.values():
            if task.pending:
                self._apply(task)
        self._throttle()

    def _refresh_committed(self) -> None:
        """Read the committed offsets of the standby tasks' inputs (not more often than every
        COMMITTED_INTERVAL, also when the broker does not answer: the loop must go on)."""
        self._last_committed = time.monotonic()
        tps = [TopicPartition(t, p) for p in self.tasks for t in self.input_topics]
        try:
            answer = self.committed(tps)
        except KafkaException as exc:
            log.debug("%s: standby: committed offsets not available now: %s", self.program, exc)
            return
        positions: dict[int, Position] = {p: {} for p in self.tasks}
        for tp in answer:
            if tp.partition in positions:
                positions[tp.partition][tp_name(tp.topic, tp.partition)] = max(tp.offset, 0)
        self._positions = positions

    def _apply(self, task: StandbyTask) -> None:
        """Apply the longest prefix of the pending records that the committed offsets cover."""
        committed = self._positions.get(task.partition)
        if committed is None:
            return
        rule = Coverage(committed)
        changes: dict[bytes, bytes | None] = {}
        infos: dict[bytes, bytes | None] = {}
        n = 0
        fence = task.fence
        skipped_before = fence.skipped
        for p, offset, key, value, es_pos, info, gen in task.pending:
            if not rule.covers(es_pos):
                break
            n += 1
            if not fence.admits(gen):
                log_zombie_record(self.program, p, offset, gen, fence)
                continue
            changes[key] = value
            keep_info(infos, key, value, info)
        if n:
            end = task.pending[n - 1][1] + 1
            position = standby_position(self.changelog_topic, task.partition)
            task.store.write(changes, end, position, infos, fence.highest)
            del task.pending[:n]
            task.applied += n - (fence.skipped - skipped_before)

    def _throttle(self) -> None:
        """Stop reading a task's changelog while too much of it waits for a commit."""
        for p, task in self.tasks.items():
            tp = [TopicPartition(self.changelog_topic, p)]
            if len(task.pending) >= MAX_PENDING and p not in self._paused:
                self.reader.pause(tp)
                self._paused.add(p)
            elif len(task.pending) < MAX_PENDING // 2 and p in self._paused:
                self.reader.resume(tp)
                self._paused.discard(p)
