"""Records an upstream task wrote again, dropped where a reader can tell them (at-least-once).

An at-least-once writer task killed before its commit is done again by its next owner, from its
last commit: the records of the lost batch are written a second time, with the same ``es-id``s,
at later offsets; a zombie (an owner frozen past its session timeout) may write its own copies
after the new owner's. A stateful program downstream that took both copies would count twice.
Two rules, each free while nothing restarts, tell the copies on a gated input partition (one
with progress markers, ``progress.py``):

- **Late writes.** A writer's later records have timestamps at least its marked progress: that
  is the markers' promise, which a merge relies on. So a record whose timestamp is below the
  progress of every writer of its partition was written again after its writer (its next owner)
  had marked past it: a repeat, or a zombie's copy of what the new owner wrote. One comparison
  per record. (An ``$error`` record may be earlier than its writer's clock: it carries the bad
  record's own time, so it is never taken for a late write. Nor is anything while a writer of
  the partition is idle: ``IDLE`` promises nothing of the times of its next records.)
- **Restarts.** A task that starts from a commit (a new owner, a restore, a rewind) says so on the
  first markers it writes (header ``es-restarted``). The records it writes again are not late
  (their originals were never marked past: an at-least-once writer marks after its commit,
  ``kafka/checkpoint.py``), but both copies wait for the new owner's marker. A reader that hears
  a restart drops the repeats among the records it holds and keeps the ids of what it holds from
  then on, dropping a record whose id it has, until the restarted writer's progress passes every
  record held when it restarted: by then the originals have gone, and so have the copies (which
  share their timestamps). The watch is kept with the reader's commits (``CopiesSeen.watched``):
  restarted from one, it reads after its position the copies of records it took before it; and
  kept, ended, until the committed position passes the marker that ended it, since a reader
  restarted before that marker reads the copies before the markers that make them late. A
  partition several tasks write is read per key (``streams.py``),
  whose queues drop a repeat queued under its key, so this rule serves the partitions one task
  writes, read in offset order.

Left to the reader: a zombie's write ahead of its successor's progress that lands after the
successor's marker passed every record held at its restart; and topics without markers (as Kafka
Streams under at-least-once, a reader takes both copies).
"""

from __future__ import annotations

import collections

from ..topology.headers import HEADER_EVENT, HEADER_ID, HEADER_RESTARTED
from .codec import Headers, header
from .copies import CopiesSeen, Watch
from .progress import InputProgress
from .record import Record

#: The header a task's first markers after it starts from a commit carry (``Task.write_progress``).
RESTARTED: tuple[str, bytes] = (HEADER_RESTARTED, b"1")

ERROR_EVENT = b"$error"


def restarted(headers: Headers | None) -> bool:
    """Whether a marker says its writer started from a commit."""
    return header(headers, HEADER_RESTARTED) is not None


def id_of(msg: Record) -> bytes:
    """The ``es-id`` of ``msg`` (empty: none, never taken for a repeat)."""
    return header(msg.headers(), HEADER_ID) or b""


class RepeatGuard:
    """The two rules above for one gated input partition."""

    def __init__(self, progress: InputProgress, by_id: bool, name: str, memory: CopiesSeen) -> None:
        self.progress = progress
        #: Whether restarts are handled here (a partition one task writes; else its queues do).
        self.by_id = by_id
        #: "topic:partition", and where a watch after a restart is kept: the task's
        #: ``CopiesSeen``, written with each commit (``CopiesSeen.watched``).
        self.name = name
        self.memory = memory
        #: Below this record time (ms) every writer has marked its progress (None: one has not
        #: been heard from): a record below it is a late write.
        self.floor: int | None = None

    def heard(self, held: collections.deque[Record] | None, restart: bool, offset: int) -> list[Record]:
        """A marker was taken in (``InputProgress.hear``), at ``offset``; ``restart``: it says its
        writer restarted. Returns the held records that are repeats, taken out of ``held`` (a
        deque in offset order: the partition's buffer or inbox)."""
        self.floor = self.progress.promised()
        memory = self.memory
        watch = memory.watched.get(self.name)
        if watch is not None and watch.ended_at is not None:
            watch = None if restart else watch  # (a new restart: a new watch, the old ids kept)
        elif watch is not None and self.floor is not None and watch.until is not None and self.floor > watch.until:
            watch.ended_at = offset  # (kept for a restart from before here: ``Watch``)
            memory.dirty = True
            watch = None
        if not (restart and self.by_id and held):
            return []
        # The held records are compared among themselves: one held when an earlier restart was
        # heard is watched already, and one taken since was compared as it came (``admit``).
        scanned: dict[bytes, int] = {}
        kept: list[Record] = []
        repeats: list[Record] = []
        until = watch.until if watch is not None else None
        for msg in held:
            rid = id_of(msg)
            if rid and rid in scanned:
                repeats.append(msg)
                continue
            scanned[rid] = msg.offset()
            kept.append(msg)
            ts = msg.timestamp()[1]
            if until is None or ts > until:
                until = ts
        before = memory.watched.get(self.name)
        memory.watched[self.name] = Watch(until, scanned if before is None else {**before.ids, **scanned})
        memory.dirty = True
        if repeats:
            held.clear()
            held.extend(kept)
        return repeats

    def admit(self, msg: Record, ts: int) -> bool:
        """Whether ``msg`` (a record of the partition, timestamp ``ts`` ms) is taken: False for a
        late write or a repeat of a record held since a restart. (Taken, without asking, a record
        at or past ``floor`` while no watch is kept: ``PartitionGroup.add`` asks only otherwise.)"""
        floor = self.floor
        if floor is not None and ts < floor and header(msg.headers(), HEADER_EVENT) != ERROR_EVENT:
            return False
        watched = self.memory.watched
        if watched:
            watch = watched.get(self.name)
            if watch is not None:
                rid = id_of(msg)
                if rid:
                    ids = watch.ids
                    if rid in ids:
                        return False
                    if watch.ended_at is None:
                        ids[rid] = msg.offset()
                        self.memory.dirty = True
        return True
