"""The time provider: the engine's clock and its timers (language document §6.1, footnote 19).

Each instance context has at most one pending timer. All pending timers of all instances (and,
in a pipeline, of all engines sharing the provider) sit in one priority queue ordered by
deadline, then by the order in which they were set, so ties fire in set order. Cancelling is
lazy: a cancelled entry stays in the heap, marked dead, and is skipped when it surfaces; the
heap is rebuilt when dead entries dominate.

A host whose instances do not all fit in memory (the Kafka worker: ``eventscript.state``) keeps
the timers of the instances it evicted elsewhere and attaches a :class:`TimerBacking`: the queue
then knows the earliest held-out timer (``backlog_deadline``, ``backlog_seq``) and, before
firing anything at or after it, asks the backing to bring the due ones back (it loads their
instances, whose timers re-enter the queue with their own deadline and sequence number), so
timers fire in the same order as if every instance were in memory.

Three providers plug into the same engine:

- :class:`SimulatedTimeProvider` — the tester's clock, and ``clock: record`` in the Kafka worker
  (time is what the trace or the record timestamps say; timers fire as that time passes them);
- :class:`WallClockTimeProvider` — the worker's real clock; the host calls ``run_due`` often.
"""

from __future__ import annotations

import heapq
import time
from typing import Any, Protocol

from .timeutil import MAX_TIME, MIN_TIME, check_clock_time


class TimerTarget(Protocol):
    """Who is told when a timer fires (the engine that owns the instance context)."""

    def fire_timer(self, ctx: Any, deadline: int) -> None: ...


class TimerBacking(Protocol):
    """Timers held outside the queue (of instances not in memory)."""

    def pull(self, queue: TimerQueue, now: int) -> None:
        """Bring back held-out timers due by ``now``, in (deadline, seq) order, at least the
        earliest one (by loading their instances), and set ``queue.backlog_*`` to the earliest
        timer still held out (``NO_BACKLOG``: none)."""
        ...


#: ``TimerQueue.backlog_deadline`` when no timer is held outside the queue: after every deadline.
NO_BACKLOG = 1 << 63

# A timer entry is a list [deadline, seq, ctx, target], and [..., armed] when the host names what
# set it (``Engine.arm_of``). Lists compare element-wise in C and seq is unique, so heap
# operations never look past it. target None marks a dead entry.
DEADLINE, SEQ, CTX, TARGET, ARMED = 0, 1, 2, 3, 4


class TimerQueue:
    """Pending timers of many instances; ``ctx.timer`` is each context's live entry (or None)."""

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        self._next_seq = 0
        self.pending = 0
        self._dead = 0
        #: Where timers of instances not in memory are held (see TimerBacking), and the earliest
        #: of them (a lower bound: it may turn out stale or already in the queue).
        self.backing: TimerBacking | None = None
        self.backlog_deadline = NO_BACKLOG
        self.backlog_seq = 0
        #: The entry ``pop_due`` gave last: the timer firing now (what set it: ``armed``).
        self.firing: list[Any] | None = None

    def _pull(self, now: int) -> None:
        """Bring back the held-out timers due at ``now`` (only a backing sets a backlog deadline)."""
        if self.backing is None:
            raise RuntimeError("a timer backlog without a backing to pull it from")
        self.backing.pull(self, now)

    def set(self, target: TimerTarget, ctx: Any, deadline: int, seq: int | None = None) -> list[Any]:
        """(Re)start ctx's timer. A new timer sorts after every timer set before it."""
        old = ctx.timer
        if old is None or old[3] is None:
            self.pending += 1
        else:
            old[3] = None
            self._dead += 1
        if seq is None:
            seq = self._next_seq
            self._next_seq = seq + 1
        elif seq >= self._next_seq:
            self._next_seq = seq + 1
        entry = [deadline, seq, ctx, target]
        heapq.heappush(self._heap, entry)
        ctx.timer = entry
        if self._dead > 4096 and self._dead > 2 * self.pending:
            self._heap = [e for e in self._heap if e[3] is not None]
            heapq.heapify(self._heap)
            self._dead = 0
        return entry

    def cancel(self, ctx: Any) -> None:
        old = ctx.timer
        if old is not None:
            if old[3] is not None:
                old[3] = None
                self.pending -= 1
                self._dead += 1
            ctx.timer = None

    def peek(self) -> list[Any] | None:
        heap = self._heap
        while heap and heap[0][3] is None:
            heapq.heappop(heap)
            self._dead -= 1
        return heap[0] if heap else None

    def due(self, now: int) -> bool:
        """A cheap pre-check: is any entry (perhaps a dead one, or a held-out one) at or before ``now``?"""
        heap = self._heap
        return (bool(heap) and heap[0][0] <= now) or self.backlog_deadline <= now

    def hold(self, deadline: int, seq: int) -> None:
        """A timer now held outside the queue (its instance was evicted): the backlog starts no later."""
        if (deadline, seq) < (self.backlog_deadline, self.backlog_seq):
            self.backlog_deadline, self.backlog_seq = deadline, seq

    def pop_due(self, now: int) -> tuple[int, Any, TimerTarget] | None:
        """(deadline, ctx, target) of the earliest live timer due at ``now``, removed; or None.
        Held-out timers that come first are brought back before (``TimerBacking.pull``)."""
        heap = self._heap
        while heap or self.backlog_deadline <= now:
            if not heap:
                self._pull(now)
                continue
            e = heap[0]
            target = e[3]
            if target is None:
                heapq.heappop(heap)
                self._dead -= 1
                continue
            if self.backlog_deadline <= now and (self.backlog_deadline, self.backlog_seq) <= (e[0], e[1]):
                self._pull(now)
                continue
            if e[0] > now:
                return None
            heapq.heappop(heap)
            e[3] = None
            self.pending -= 1
            ctx = e[2]
            if ctx.timer is e:
                ctx.timer = None
            self.firing = e
            return e[0], ctx, target
        return None

    def next_deadline(self) -> int | None:
        """The earliest deadline, of the queue or held out (which may prove stale: a lower bound)."""
        e = self.peek()
        d = None if e is None else e[0]
        if self.backlog_deadline != NO_BACKLOG and (d is None or self.backlog_deadline < d):
            return self.backlog_deadline
        return d

    @property
    def next_seq(self) -> int:
        return self._next_seq

    @next_seq.setter
    def next_seq(self, seq: int) -> None:
        """Resume numbering (a host restoring timers it did not all load): new timers sort after
        every timer numbered before ``seq``."""
        self._next_seq = seq

    def clear(self) -> None:
        for e in self._heap:
            if e[3] is not None:
                e[3] = None
                if e[2].timer is e:
                    e[2].timer = None
        self._heap.clear()
        self.pending = 0
        self._dead = 0
        self.backlog_deadline = NO_BACKLOG
        self.backlog_seq = 0


def armed(entry: list[Any] | None) -> bytes | None:
    """What set the timer of ``entry`` (``Engine.arm_of``; None: nothing named, or no entry)."""
    return entry[ARMED] if entry is not None and len(entry) > ARMED else None


def timer_info(ctx: Any) -> tuple[int, int] | None:
    """(deadline, seq) of ctx's live timer, if any."""
    e = ctx.timer
    if e is None or e[3] is None:
        return None
    return e[0], e[1]


class TimeProvider:
    """The interface the engine uses: the current time, and one timer per instance context."""

    #: Can ``now()`` change while the host makes no call on this provider? True for a provider
    #: that reads a clock on each call; the engine's own providers move only when their host moves
    #: them (``set_now``, ``advance_to``, ``refresh``, ``run_due``), and then ``Engine.feed_many``
    #: reads the time once per batch (time does not move within a batch).
    moves_by_itself = True

    def __init__(self) -> None:
        self.timers = TimerQueue()

    def now(self) -> int:
        raise NotImplementedError

    def set_timer(self, target: TimerTarget, ctx: Any, deadline: int) -> list[Any]:
        return self.timers.set(target, ctx, deadline)

    def cancel_timer(self, ctx: Any) -> None:
        self.timers.cancel(ctx)

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def run_due(self) -> int:
        """Fire every timer due at the current time (including ones set while firing)."""
        fired = 0
        timers = self.timers
        while timers.due(self.now()) and (item := timers.pop_due(self.now())) is not None:
            deadline, ctx, target = item
            target.fire_timer(ctx, deadline)
            fired += 1
        return fired


class SimulatedTimeProvider(TimeProvider):
    """Time moves only when the host says so (the tester, record-time replays, backfills)."""

    moves_by_itself = False

    def __init__(self, start: int = 0) -> None:
        super().__init__()
        self._now = start

    def now(self) -> int:
        return self._now

    def set_now(self, t: int) -> None:
        self._now = t

    def advance_to(self, t: int) -> int:
        """Fire due timers in deadline order, each at its own deadline, then move to ``t``.

        Timers set while firing are considered too. Time never moves backwards: ``t`` before
        the current time, outside years 1 to 9999 or not an integer raises ValueError (the
        same rule as the tester's trace timestamps, :func:`check_clock_time`).
        """
        if type(t) is not int or not (self._now <= t <= MAX_TIME and t >= MIN_TIME):  # the fast path: one test
            t = check_clock_time(t, self._now)
        timers = self.timers
        fired = 0
        heap = timers._heap
        if (heap and heap[0][0] <= t) or timers.backlog_deadline <= t:
            while (item := timers.pop_due(t)) is not None:
                deadline, ctx, target = item
                if deadline > self._now:
                    self._now = deadline
                target.fire_timer(ctx, deadline)
                fired += 1
        if t > self._now:
            self._now = t
        return fired


class WallClockTimeProvider(TimeProvider):
    """The real clock, in microseconds since the epoch, read to ``resolution_us``.

    Time holds still while one event is processed: every ``now()`` of one transition (actions,
    the timer start, the emission times) must be the same instant. The host calls
    :meth:`refresh` before each event; ``run_due`` refreshes before each timer it fires.

    ``resolution_us`` truncates each reading to a multiple of it: the Kafka worker reads whole
    milliseconds, the resolution of a record timestamp, so that what a program emits on the wall
    clock falls on its record's timestamp and needs no finer time beside it (no ``es-time``
    header, one header fewer on nearly every output). A timer still fires at its own deadline,
    whatever its resolution.
    """

    moves_by_itself = False  # (it reads the clock in refresh and run_due, the host's calls)

    def __init__(self, clock: Any = None, resolution_us: int = 1) -> None:
        super().__init__()
        self._clock = clock or time.time_ns
        self._tick_ns = resolution_us * 1000
        self._tick_us = resolution_us
        self._now = self._clock() // self._tick_ns * resolution_us

    def refresh(self) -> int:
        t = self._clock() // self._tick_ns * self._tick_us
        if t > self._now:
            self._now = t
        return self._now

    def now(self) -> int:
        return self._now

    def run_due(self) -> int:
        """Fire every timer due by now. As in the tester, a time event happens at its deadline:
        the clock reads the deadline while the event is processed (also when the host fires it
        late, after a pause or a restart), so what it emits, and any timer it starts, is the same
        whenever the firing actually ran — and a firing replayed after a crash is an exact copy."""
        fired = 0
        timers = self.timers
        while timers.due(wall := self.refresh()) and (item := timers.pop_due(wall)) is not None:
            deadline, ctx, target = item
            self._now = deadline
            try:
                target.fire_timer(ctx, deadline)
            finally:
                self._now = wall
            fired += 1
        return fired
