"""Restoring tasks from their changelog a slice at a time, so the worker stays in its group.

A task that lands on a worker without a current local store replays its changelog partition
from the store's checkpoint (from the start, without a store) to the end-of-partition signal —
never to a precomputed end offset — applying each record only if the input position it carries
(header ``es-pos``) is within the committed offsets. With tens of millions of instances that takes
minutes; done in one go inside the poll loop it would outlast ``max.poll.interval.ms`` and the
group would throw the worker out. So a :class:`Restoration` reads at most a time budget's worth
of records per turn of the worker's loop (``step``), and the loop keeps polling its consumer (the
restoring tasks' inputs stay paused) between slices, as Kafka Streams restores between polls.

The end a ``read_committed`` reader is told of is the last stable offset: the first record of the
oldest transaction still open on the partition. A worker that hung or was killed while committing
(a broker outage, a frozen process) leaves its transaction open until the broker aborts it, up to
the writer's ``transaction.timeout.ms`` later, and every record committed after it by the task's
next owner is unreadable until then. A restore that stopped there gave the task a state older
than the committed offsets it resumed its inputs from: its timers fired again and its keys
started over (the fault harness's exactly-once failure of 2026-11-26, 1 run in 7). So a partition
counts as restored only once the end it reported is also its high watermark: while a transaction
holds it back, the restore waits (``open_transaction_end``).

Records that the committed offsets cover are also checked against their owner epoch (``es-gen``,
``state.changelog.EpochFence``): one written by an owner the task had left (a zombie whose
producer sent its queued records late) after a newer owner's is skipped, and its key is written
again at the task's next commit, as the keys of uncommitted records are (a compaction could
otherwise leave the zombie's record as the key's only one). The restored task then takes its own
epoch, above every one applied (``Task.take_epoch``); the store keeps it from the task's first
commit on (kafka/checkpoint.py), not before.

That epoch is also above the epochs of the records skipped as not covered: the task's next commit
covers their input position (it processes the same inputs again), and from then on every replay
applies them. Their epoch can be above the one the task would take otherwise: a worker restarted
at once keeps its static member's generation, so its epoch is raised one above its old store's
highest (``state.changelog.owner_epoch``), and when its first commit is refused (after its changelog records
were sent, at least once) the raised base is in those records only. An owner below them had every
record it wrote skipped by later replays as an earlier owner's (the fault harness's
at_least_once-record failure: a task's counts back from 22 to 10, its timers firing again).

A restore's store must equal a replay of the changelog up to its checkpoint, also when its task
never commits: a worker frozen past its session (a zombie) that resumes and joins again restores
the tasks it had while their new owner goes on committing, and is dropped before its first commit.
So the checkpoint it writes stops at the first record the committed offsets it read did not cover
(what the owner committed after they were read is one: the next restore, reading newer offsets,
applies it), and the store does not take the zombie's own epoch, which comes from the generation it
had before it froze and can be above the new owner's (a later restore from the store then skipped
every record the owner committed after it). Both were seen as a duplicate timer output under
exactly-once: an instance of long ago back with the clock of the owner's last commit, its timer
firing again at that clock.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from ..state.changelog import HEADER_EPOCH, EpochFence, decode_int, split_batch_frame
from ..state.keyinfo import HEADER_KEY_INFO, stored_value
from ..task.task import Task
from .state import HEADER_POSITION, Position, TaskStore, committed_covers, decode_position

log = logging.getLogger("eventscript.kafka.worker")

#: Records applied to a store in one write batch.
WRITE_BATCH = 1000
#: Seconds to wait for a changelog partition's end offset.
END_TIMEOUT = 10.0
#: Seconds between the warnings of a restore waiting for a transaction left open (the broker
#: aborts it after the writer's transaction.timeout.ms, 60 s: a longer wait is worth a look).
HELD_WARNING_INTERVAL = 60.0

#: A changelog record as the restore reads it: partition, offset, key, value (as the store keeps
#: it: a snapshot with its key's information in front, ``state.keyinfo.stored_value``; None: a
#: tombstone), its ``es-pos`` (the input position of the batch that wrote it: in its value's batch
#: frame, ``state.changelog.split_batch_frame``, or a header), a
#: tombstone's key information (its ended marker, from its ``es-key`` header; None: none, and for
#: every snapshot, whose information is in its value) and its ``es-gen`` (its owner's epoch, as its ``es-pos``:
#: ``state.changelog.EpochFence``; None: none).
ChangelogRecord = tuple[int, int, bytes, "bytes | None", "bytes | None", "bytes | None", "bytes | None"]


class RestoreError(Exception):
    """A changelog replay cannot go on. ``transient``: the broker answered with an error that may
    pass (a partition's leader moving after a broker outage): the restore is tried again."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


def keep_info(infos: dict[bytes, bytes | None], key: bytes, value: bytes | None, info: bytes | None) -> None:
    """Note a tombstone's key information (its ended marker, ``read_changelog``) for the store
    write that applies it; a tombstone without one (written before the header existed) drops
    what the store kept about the key. A snapshot's information is inside its value: nothing to
    note (a marker noted earlier in the batch is stale once the key has a value again)."""
    if value is None:
        infos[key] = info


def read_changelog(
    program: str, consumer: Any, batch: int, timeout: float
) -> tuple[list[ChangelogRecord], dict[int, int]]:
    """One fetch of changelog records: the records, and the partitions that reported their end,
    with the offset each reported it at (a ``read_committed`` reader's end: the last stable
    offset). Shared by the restore, the standby replicas (kafka/standby.py) and the state dump."""
    records: list[ChangelogRecord] = []
    at_end: dict[int, int] = {}
    for m in consumer.consume(num_messages=batch, timeout=timeout):
        err = m.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                at_end[m.partition()] = m.offset()
            elif err.fatal():
                raise RestoreError(f"{program}: changelog reader: {err}")
            continue
        hdr = info = gen = None
        for k, v in m.headers() or ():
            if k == HEADER_POSITION:
                hdr = v
            elif k == HEADER_KEY_INFO:
                info = v
            elif k == HEADER_EPOCH:
                gen = v
        value, hdr, gen = split_batch_frame(m.value(), hdr, gen)  # (the position and epoch before the value)
        value, info = stored_value(value, info)  # (the information in the value; a tombstone's beside it)
        records.append((m.partition(), m.offset(), m.key(), value, hdr, info, gen))
    return records, at_end


def open_transaction_end(consumer: Any, topic: str, partition: int, end: int) -> int | None:
    """The high watermark of a changelog partition whose reported ``end`` (``read_changelog``'s,
    the last stable offset) is short of it -- a transaction is still open there, and records
    committed after its first one cannot be read yet -- or None when the end is the partition's
    (or the reader does not know its high watermark). The high watermark is the one of the
    reader's last fetch (librdkafka's cached value: no request)."""
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=END_TIMEOUT, cached=True)
    except KafkaException:
        return None
    return high if high is not None and high > end else None


def start_offset(
    program: str, consumer: Any, topic: str, partition: int, store: TaskStore, who: str, changelog_id: str | None = None
) -> int:
    """Where to read a task's changelog from: the store's checkpoint, unless the store belongs to
    another log -- the changelog was recreated (a partition-count fix, a forced hand-over, a new
    broker or cluster) and the old log's instances must not be mixed with the new one's: then the
    store is wiped, the replay starts from the beginning and the log says so. Told by the
    changelog's topic id (``changelog_id``, the changelog's now; the store keeps the one it was
    written from), and, for a store or broker without ids, by a checkpoint beyond the changelog's
    end. The store then keeps ``changelog_id``. 0: from the beginning. ``who`` names the reader in
    the log line."""
    checkpoint = store.checkpoint
    kept = store.changelog_id
    if checkpoint > 0 and changelog_id is not None and kept is not None and kept != changelog_id:
        log.warning(
            "%s task %d: the local store (%s) was written from changelog %s with topic id %s, and %s now has "
            "topic id %s: the changelog was recreated; the store is wiped and the %s replays the changelog from "
            "the start",
            program,
            partition,
            store.path,
            topic,
            kept,
            topic,
            changelog_id,
            who,
        )
        return _wiped(store, changelog_id)
    if checkpoint <= 0:
        return _kept(store, changelog_id, kept, 0)
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=END_TIMEOUT, cached=False)
    except KafkaException as exc:
        raise RestoreError(
            f"{program}: cannot read the end of changelog {topic}:{partition} to check task "
            f"{partition}'s local store against it: {exc}",
            transient=not (exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].fatal()),
        ) from exc
    if checkpoint <= end:
        return _kept(store, changelog_id, kept, checkpoint)
    log.warning(
        "%s task %d: the local store's checkpoint (offset %d) is beyond the end of changelog %s:%d (%d): "
        "the changelog was recreated; the store (%s) is wiped and the %s replays the changelog from the start",
        program,
        partition,
        checkpoint,
        topic,
        partition,
        end,
        store.path,
        who,
    )
    return _wiped(store, changelog_id)


def _wiped(store: TaskStore, changelog_id: str | None) -> int:
    """Wipe the store of another log; it follows ``changelog_id`` from now on. 0: from the start."""
    store.wipe()
    if changelog_id is not None:
        store.keep_changelog_id(changelog_id)
    return 0


def _kept(store: TaskStore, changelog_id: str | None, kept: str | None, offset: int) -> int:
    """The store is of this changelog: remember its id if it did not know it; ``offset`` back."""
    if changelog_id is not None and kept != changelog_id:
        store.keep_changelog_id(changelog_id)
    return offset


class Coverage:
    """The apply rule of changelog records: a record applies only if the input position its batch
    reached (``es-pos``) is within the committed offsets, so records of transactions that never
    committed are ignored, even on a broker that shows aborted transactions to read_committed
    readers. The records of one batch carry the same header: the last answer is kept."""

    __slots__ = ("_answer", "_last", "committed")

    def __init__(self, committed: Position) -> None:
        self.committed = committed
        self._last: bytes | None = None
        self._answer = True

    def covers(self, es_pos: bytes | None) -> bool:
        if es_pos is None:
            return True
        if es_pos != self._last:
            self._last = es_pos
            self._answer = committed_covers(decode_position(es_pos), self.committed)
        return self._answer


def log_zombie_record(program: str, partition: int, offset: int, gen: bytes | None, fence: EpochFence) -> None:
    """Say (at debug) that a changelog record was skipped as a zombie's: see ``EpochFence``."""
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "%s task %d: changelog offset %d skipped: written by owner epoch %s after epoch %d's records (an "
            "earlier owner's record sent late)",
            program,
            partition,
            offset,
            gen.decode(errors="replace") if gen is not None else "?",
            fence.highest,
        )


@dataclass
class Restoration:
    """Replays the changelog partitions of several tasks together, a slice per ``step``."""

    program: str
    restorer: Any  # a Consumer, assigned to the changelog partitions being replayed
    changelog_topic: str
    tasks: dict[int, Task]
    committed: dict[int, Position]
    #: The changelog's topic id now (kafka/topic_ids.py; None: not known): a store written from
    #: another changelog of the same name is wiped and replayed from the start.
    changelog_id: str | None = None
    started: float = field(default_factory=time.monotonic)
    pending: dict[int, dict[bytes, bytes | None]] = field(default_factory=dict)
    #: The key information of the pending records (``state.keyinfo``), written with them.
    infos: dict[int, dict[bytes, bytes | None]] = field(default_factory=dict)
    last: dict[int, int] = field(default_factory=dict)
    applied: dict[int, int] = field(default_factory=dict)
    skipped: dict[int, int] = field(default_factory=dict)
    remaining: set[int] = field(default_factory=set)
    starts: dict[int, int] = field(default_factory=dict)
    #: The keys of the records skipped (not covered, or a zombie's): written again at the task's
    #: next commit.
    uncommitted: dict[int, set[bytes]] = field(default_factory=dict)
    #: Each partition's owner-epoch rule, from the highest epoch its store had applied.
    fences: dict[int, EpochFence] = field(default_factory=dict)
    #: Per partition, the highest epoch of the records skipped as not covered: a later replay may
    #: apply them, so the task's own epoch goes above it too (see the module).
    passed_epochs: dict[int, int] = field(default_factory=dict)
    #: Where each partition last reported its end (the last stable offset).
    ends: dict[int, int] = field(default_factory=dict)
    #: Per partition, the first record skipped as not covered by the committed offsets, and the
    #: highest epoch applied before it: the store's checkpoint stops there (``_checkpoint``).
    gaps: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: Since when a partition's end has been held back by an open transaction (see the module),
    #: and when the restore last said so.
    held_since: dict[int, float] = field(default_factory=dict)
    _held_warned: dict[int, float] = field(default_factory=dict)

    def begin(self) -> None:
        self.starts = {
            p: start_offset(self.program, self.restorer, self.changelog_topic, p, t.store, "restore", self.changelog_id)
            for p, t in self.tasks.items()
        }
        self.remaining = set(self.tasks)
        for p in self.tasks:
            self.pending[p] = {}
            self.infos[p] = {}
            self.applied[p] = self.skipped[p] = 0
            self.uncommitted[p] = set()
            self.fences[p] = EpochFence(self.tasks[p].store.epoch)
        self.restorer.assign(
            [
                TopicPartition(self.changelog_topic, p, off if off > 0 else OFFSET_BEGINNING)
                for p, off in self.starts.items()
            ]
        )

    @property
    def done(self) -> bool:
        return not self.remaining

    def step(self, budget: float, batch: int = 2000) -> None:
        """Read changelog records for at most ``budget`` seconds (or until every partition is at
        its end); the worker polls its consumer between steps."""
        deadline = time.monotonic() + budget
        rules = {p: Coverage(c) for p, c in self.committed.items()}
        while self.remaining and time.monotonic() < deadline:
            records, at_end = read_changelog(
                self.program, self.restorer, batch, min(0.2, max(0.0, deadline - time.monotonic()))
            )
            for p, offset, key, value, es_pos, info, gen in records:
                if p not in self.tasks:
                    continue
                self.last[p] = offset + 1
                if not rules[p].covers(es_pos):
                    self.skipped[p] += 1
                    self.uncommitted[p].add(key)
                    if p not in self.gaps:
                        self.gaps[p] = (offset, self.fences[p].highest)
                    if gen is not None:
                        self.passed_epochs[p] = max(self.passed_epochs.get(p, 0), decode_int(gen))
                elif self.fences[p].admits(gen):
                    self.pending[p][key] = value
                    keep_info(self.infos[p], key, value, info)
                    self.applied[p] += 1
                else:
                    log_zombie_record(self.program, p, offset, gen, self.fences[p])
                    self.uncommitted[p].add(key)
                if len(self.pending[p]) >= WRITE_BATCH:
                    checkpoint, epoch = self._checkpoint(p, self.fences[p])
                    self.tasks[p].store.write(self.pending[p], checkpoint, None, self.infos[p], epoch)
                    self.pending[p] = {}
                    self.infos[p] = {}
            self.ends.update(at_end)
            for p in [p for p, end in self.ends.items() if self.last.get(p, 0) > end]:
                del self.ends[p]  # records came after the end it reported: at the end no more
            self._settle_ends()

    def _settle_ends(self) -> None:
        """Count as restored the partitions whose reported end is their high watermark; one whose
        end an open transaction holds back goes on being read (and checked again on each step:
        its end is reported again when the transaction ends and the last stable offset moves)."""
        for p in sorted(self.remaining):
            end = self.ends.get(p)
            if end is None:
                continue
            high = None if p not in self.tasks else open_transaction_end(self.restorer, self.changelog_topic, p, end)
            if high is None:
                self.remaining.discard(p)
                continue
            now = time.monotonic()
            if p not in self.held_since:
                self.held_since[p] = self._held_warned[p] = now
                log.warning(
                    "%s task %d: changelog %s:%d has a transaction still open from offset %d (the partition ends at "
                    "%d): another worker's, which hung or stopped while committing. Records committed after it "
                    "cannot be read until it ends, so the restore waits until it is committed or aborted (the "
                    "broker aborts it once the writer's transaction.timeout.ms has passed)",
                    self.program,
                    p,
                    self.changelog_topic,
                    p,
                    end,
                    high,
                )
            elif now - self._held_warned[p] >= HELD_WARNING_INTERVAL:
                self._held_warned[p] = now
                log.warning(
                    "%s task %d: changelog %s:%d still has a transaction open from offset %d after %.0f s; a "
                    "transaction the broker never ends (a hanging transaction) is found and aborted with Kafka's "
                    "kafka-transactions.sh (find-hanging, abort)",
                    self.program,
                    p,
                    self.changelog_topic,
                    p,
                    end,
                    now - self.held_since[p],
                )

    def _checkpoint(self, p: int, fence: EpochFence) -> tuple[int | None, int]:
        """The changelog offset and the highest epoch a store write of partition ``p`` may keep:
        where the replay is, or the first record it skipped as not covered and the highest epoch
        before it (see the module). A record skipped there may be one committed after the
        committed offsets were read: a store whose checkpoint passed it would never apply it, yet
        its task may never commit to write the key again."""
        gap = self.gaps.get(p)
        if gap is not None:
            return gap
        return self.last.get(p), fence.highest

    def drop(self, p: int) -> None:
        """A task given away while it restores: forget it (its partition still reports its end)."""
        self.tasks.pop(p, None)
        self.pending.pop(p, None)
        self.infos.pop(p, None)
        self.uncommitted.pop(p, None)
        self.passed_epochs.pop(p, None)

    def finish(self, generation: int | None = None) -> list[Task]:
        """Write what is left, move each store to the committed position, load the tasks, and
        give each the owner epoch of a member of group ``generation`` (None: not known, the
        task writes none), which its store keeps as the highest epoch from its first commit on."""
        for p, task in self.tasks.items():
            fence = self.fences.get(p) or EpochFence(task.store.epoch)
            checkpoint, highest = self._checkpoint(p, fence)
            task.store.write(self.pending.get(p, {}), checkpoint, self.committed[p], self.infos.get(p, {}), highest)
            task.load_from_store()
            # (the store keeps the epoch from the task's first commit on: see the module)
            read = max(fence.highest, self.passed_epochs.get(p, 0))
            epoch = task.take_epoch(generation, read)
            held = self.held_since.get(p)
            log.info(
                "%s task %d: changelog from offset %d: %d applied, %d skipped (uncommitted), %d skipped (an "
                "earlier owner's, written after a later owner's)%s%s%s",
                self.program,
                p,
                self.starts.get(p, 0),
                self.applied.get(p, 0),
                self.skipped.get(p, 0),
                fence.skipped,
                "" if held is None else f"; waited {time.monotonic() - held:.1f} s for an open transaction to end",
                "" if p not in self.gaps else f"; the store's checkpoint stays at offset {checkpoint} until a commit",
                "" if epoch is None else f"; owner epoch {epoch} (generation {generation}, highest epoch read {read})",
            )
            # A later commit may cover the skipped records' input position: then a replay applies
            # them, unless the task writes those keys again (Task.rewrite_at_next_commit).
            task.rewrite_at_next_commit(self.uncommitted.get(p, ()))
        self.restorer.unassign()
        return list(self.tasks.values())
