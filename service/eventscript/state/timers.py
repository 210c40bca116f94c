"""The timer index: pending timers of instances that are not in memory.

A task must know its next deadline without holding every instance. The store keeps one index
entry per stored snapshot with a pending timer, ordered by (deadline, sequence number) — the
order of the in-memory ``TimerQueue`` — and this :class:`TimerIndex` is the queue's backing
(``engine.time_provider.TimerBacking``): when the queue is about to fire a timer at or after the
earliest held-out one, it asks the index to ``pull`` the due entries; each one whose instance is
not in memory is loaded (``Engine.restore`` puts its timer back in the queue with its own deadline
and sequence number), so timers fire in exactly the order they would if everything were in memory.

A scan position (``horizon``) moves forward through the index as time passes it: every entry up to
it has been dealt with. An entry is stale when the stored snapshot of its instance no longer has
that timer (a later snapshot re-armed, stopped or fired it, or the instance ended): the scan
deletes it. An entry of an instance that is in memory is left to the queue (its in-memory timer
is authoritative; the store drops the entry at the instance's next write). The cache never
evicts an instance whose timer is at or before the horizon (the scan has passed it): none is,
in practice, since the scan only passes deadlines that are due and those fire at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine.engine import Engine
from ..engine.time_provider import NO_BACKLOG, TimerQueue
from .keyinfo import snapshot_of
from .store import TaskStore, TimerKey, parse_index_key, snapshot_fields

#: Index entries dealt with per pull (the queue pulls again if it needs more).
PULL_BATCH = 512
_BEFORE_ALL: TimerKey = (-(1 << 63), -1)


class TimerIndex:
    """The backing of a task's timer queue: its store's timer index."""

    def __init__(self, store: TaskStore, engine: Engine) -> None:
        self.store = store
        self.engine = engine
        #: (deadline, seq) of the last index entry the scan passed.
        self.horizon: TimerKey = _BEFORE_ALL
        self._after: bytes | None = None
        #: Instances loaded because their timer came due, and stale entries dropped (counters).
        self.loaded = 0
        self.dropped = 0
        #: Whether a key's stored snapshot is older than its instance in memory was (it ended or
        #: was drained since the last commit: ``InstanceCache.out_of_date``). Its entry is left
        #: as one of an instance in memory is: loaded, the committed snapshot would come back to
        #: life and fire a timer the instance no longer had (a random-kills run: a fridge Cold
        #: again, its restored Warm's alert fired all the same).
        self.out_of_date: Callable[[tuple[Any, ...], bytes], bool] = lambda key, kb: False

    def reset(self, queue: TimerQueue) -> None:
        """Start over (the task reloaded its committed state): nothing passed, nothing in memory."""
        queue.backing = self
        self.horizon = _BEFORE_ALL
        self._after = None
        self.store.passed_index.clear()
        self._set_backlog(queue, next(self.store.index_after(None), None))

    def pull(self, queue: TimerQueue, now: int) -> None:
        store = self.store
        contexts = self.engine.contexts
        restore = self.engine.restore
        passed = store.passed_index
        following: bytes | None = None
        for n, entry in enumerate(store.index_after(self._after)):
            deadline, seq, kb = parse_index_key(entry)
            if deadline > now or n >= PULL_BATCH:
                following = entry
                break
            self._after = entry
            self.horizon = (deadline, seq)
            raw = store.get(kb)
            key, timer = snapshot_fields(raw) if raw is not None else (None, None)
            if raw is None or key is None or timer != (deadline, seq):
                store.delete(entry)
                self.dropped += 1
            elif key in contexts or self.out_of_date(key, kb):
                passed[kb] = entry
            else:
                raw = snapshot_of(raw)  # (without its key's information)
                current = raw if store.translate is None else store.translate(kb, raw)  # (another version's)
                if current is not None:
                    restore(current)
                    self.loaded += 1
                else:  # dropped by an upgrade (its tombstone is written at the next commit)
                    store.delete(entry)
                    self.dropped += 1
        self._set_backlog(queue, following)

    @staticmethod
    def _set_backlog(queue: TimerQueue, entry: bytes | None) -> None:
        if entry is None:
            queue.backlog_deadline, queue.backlog_seq = NO_BACKLOG, 0
        else:
            queue.backlog_deadline, queue.backlog_seq, _ = parse_index_key(entry)
