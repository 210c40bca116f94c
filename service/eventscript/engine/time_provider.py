"""The time provider: the engine's clock and its timers (language document §6.1, footnote 19).

Each instance context has at most one pending timer. All pending timers of all instances (and,
in a pipeline, of all engines sharing the provider) sit in one priority queue ordered by
deadline, then by the order in which they were set, so ties fire in set order. Cancelling is
lazy: a cancelled entry stays in the heap, marked dead, and is skipped when it surfaces.

Three providers plug into the same engine:

- :class:`SimulatedTimeProvider` — the tester's clock, and ``clock: record`` in the Kafka worker
  (time is what the trace or the record timestamps say; timers fire as that time passes them);
- :class:`WallClockTimeProvider` — the worker's real clock; the host polls it for due timers.
"""

from __future__ import annotations

import heapq
import itertools
import time
from typing import Any, Protocol


class TimerTarget(Protocol):
    """Who is told when a timer fires (the engine that owns the instance context)."""

    def fire_timer(self, ctx: Any, deadline: int) -> None: ...


class TimerEntry:
    __slots__ = ("alive", "ctx", "deadline", "seq", "target")

    def __init__(self, deadline: int, seq: int, target: TimerTarget, ctx: Any) -> None:
        self.deadline = deadline
        self.seq = seq
        self.target = target
        self.ctx = ctx
        self.alive = True

    def __lt__(self, other: TimerEntry) -> bool:
        return (self.deadline, self.seq) < (other.deadline, other.seq)


class TimerQueue:
    """Pending timers of many instances: one entry per instance context (``ctx.timer``)."""

    def __init__(self) -> None:
        self._heap: list[TimerEntry] = []
        self._seq = itertools.count()
        self.pending = 0

    def set(self, target: TimerTarget, ctx: Any, deadline: int, seq: int | None = None) -> TimerEntry:
        old = ctx.timer
        if old is not None and old.alive:
            old.alive = False
            self.pending -= 1
        entry = TimerEntry(deadline, next(self._seq) if seq is None else seq, target, ctx)
        if seq is not None:
            self.bump(seq)
        heapq.heappush(self._heap, entry)
        ctx.timer = entry
        self.pending += 1
        return entry

    def bump(self, seq: int) -> None:
        """Make later timers sort after ``seq`` (used when restoring saved timers)."""
        nxt = next(self._seq)
        if nxt <= seq:
            self._seq = itertools.count(seq + 1)
        else:
            self._seq = itertools.count(nxt)

    def cancel(self, ctx: Any) -> None:
        old = ctx.timer
        if old is not None:
            if old.alive:
                old.alive = False
                self.pending -= 1
            ctx.timer = None

    def peek(self) -> TimerEntry | None:
        heap = self._heap
        while heap and not heap[0].alive:
            heapq.heappop(heap)
        return heap[0] if heap else None

    def pop_due(self, now: int) -> TimerEntry | None:
        """The earliest live timer with deadline <= now, removed from the queue, or None."""
        e = self.peek()
        if e is None or e.deadline > now:
            return None
        heapq.heappop(self._heap)
        e.alive = False
        self.pending -= 1
        if e.ctx.timer is e:
            e.ctx.timer = None
        return e

    def next_deadline(self) -> int | None:
        e = self.peek()
        return None if e is None else e.deadline

    def clear(self) -> None:
        for e in self._heap:
            if e.alive:
                e.alive = False
                if e.ctx.timer is e:
                    e.ctx.timer = None
        self._heap.clear()
        self.pending = 0


class TimeProvider:
    """The interface the engine uses: the current time, and one timer per instance."""

    def __init__(self) -> None:
        self.timers = TimerQueue()

    def now(self) -> int:
        raise NotImplementedError

    def set_timer(self, target: TimerTarget, ctx: Any, deadline: int) -> None:
        self.timers.set(target, ctx, deadline)

    def cancel_timer(self, ctx: Any) -> None:
        self.timers.cancel(ctx)

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def run_due(self) -> int:
        """Fire every timer due at the current time (including ones set while firing)."""
        fired = 0
        now = self.now()
        while (e := self.timers.pop_due(now)) is not None:
            e.target.fire_timer(e.ctx, e.deadline)
            fired += 1
        return fired


class SimulatedTimeProvider(TimeProvider):
    """Time moves only when the host says so (the tester, record-time replays)."""

    def __init__(self, start: int = 0) -> None:
        super().__init__()
        self._now = start

    def now(self) -> int:
        return self._now

    def set_now(self, t: int) -> None:
        self._now = t

    def advance_to(self, t: int) -> int:
        """Fire due timers in deadline order, each at its own deadline, then move to ``t``.

        Timers set while firing are considered too. Time never moves backwards.
        """
        fired = 0
        while (e := self.timers.pop_due(t)) is not None:
            if e.deadline > self._now:
                self._now = e.deadline
            e.target.fire_timer(e.ctx, e.deadline)
            fired += 1
        if t > self._now:
            self._now = t
        return fired


class WallClockTimeProvider(TimeProvider):
    """The real clock, in microseconds since the epoch; the host calls ``run_due`` often."""

    def __init__(self, clock: Any = None) -> None:
        super().__init__()
        self._clock = clock or time.time_ns

    def now(self) -> int:
        return self._clock() // 1000

    def run_due(self) -> int:
        fired = 0
        while (e := self.timers.pop_due(self.now())) is not None:
            e.target.fire_timer(e.ctx, e.deadline)
            fired += 1
        return fired
