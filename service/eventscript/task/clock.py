"""A task's clock: record time, the wall clock or simulated time, behind one interface.

The task asks its clock the same questions whatever the clock is — move for this record, fire
what is due after it, wake up on its own, what to persist — and each clock answers for itself,
so the task has no branch on which clock it runs. All are the engine's time providers too.
"""

from __future__ import annotations

from typing import Any

from ..engine.time_provider import SimulatedTimeProvider, TimeProvider, WallClockTimeProvider
from ..engine.timeutil import MAX_TIME
from ..state.changelog import decode_clock


class TaskClock(TimeProvider):
    """What a task asks of its clock (every time is in µs, every record timestamp in ms)."""

    #: Where the last record moved the clock (µs), -1 if it did not (for observers: a key-parallel
    #: backfill needs to know whether a record moved the clock to its own timestamp).
    moved_to = -1
    #: The latest record timestamp (ms) the task can process: a later one cannot be taken to (an
    #: attribute, not a method: the task reads it for every record).
    max_record_ms = 1 << 62

    def starts_program(self, ts_ms: int) -> bool:
        """Before an ungrouped program has started: set the clock for its start at a record of
        this timestamp; whether the program starts there (else it starts as its task does)."""
        return False

    def starts_with_task(self) -> bool:
        """Whether an ungrouped program starts when its task does (then the clock is set for it)."""
        return False

    def to_record(self, ts_ms: int) -> int:
        """Move for a record of this timestamp, firing the timers due before it; how many fired."""
        raise NotImplementedError

    def fire_due(self) -> bool:
        """After a record: fire the timers it set due at once; whether any were due."""
        return False

    def poll(self) -> int:
        """Between records: fire the timers due now; how many fired."""
        return 0

    def next_wake(self) -> int | None:
        """When ``poll`` has something to do next (µs), or None: never on its own."""
        return None

    def restore(self, saved: bytes | None) -> None:
        """Go back to the clock as persisted (``unsaved``'s last value, None: never saved)."""

    def unsaved(self) -> bytes | None:
        """The clock to persist with the task's state if it moved since last asked, else None."""
        return None


class RecordClock(SimulatedTimeProvider, TaskClock):
    """Record time: the clock is the latest record timestamp, and it is task state (saved and
    restored with the instances, so records read again are processed at the times they had)."""

    max_record_ms = MAX_TIME // 1000

    def __init__(self) -> None:
        super().__init__()
        self._saved = 0

    def starts_program(self, ts_ms: int) -> bool:
        t = self.moved_to = max(ts_ms * 1000, self._now)
        self.set_now(t)
        return True

    def to_record(self, ts_ms: int) -> int:
        t = ts_ms * 1000
        if t >= self._now:
            self.moved_to = t
            return self.advance_to(t)
        return 0  # record time never moves backwards: a late record is processed at the current time

    def fire_due(self) -> bool:
        if self.timers.due(self._now):
            self.run_due()  # timers set due now fire at once, as in the tester
            return True
        return False

    def restore(self, saved: bytes | None) -> None:
        self._saved = decode_clock(saved)
        self.set_now(self._saved)

    def unsaved(self) -> bytes | None:
        if self._now == self._saved:
            return None
        self._saved = self._now
        return b"%d" % self._now


class WallClock(WallClockTimeProvider, TaskClock):
    """The wall clock: read before each record, timers fired between records by the host's loop.

    It reads whole milliseconds (a record timestamp's resolution): a wall-clock program's
    emissions then carry their time in the record timestamp alone, without an ``es-time``
    header (``Task._output_handler`` adds one only for a time finer than a millisecond)."""

    def __init__(self, clock: Any = None) -> None:
        super().__init__(clock, resolution_us=1000)

    def starts_program(self, ts_ms: int) -> bool:
        self.refresh()
        return False

    def starts_with_task(self) -> bool:
        self.refresh()
        return True

    def to_record(self, ts_ms: int) -> int:
        self.refresh()
        return 0

    def poll(self) -> int:
        now = self.refresh()
        if not self.timers.due(now):
            return 0
        return self.run_due()  # each firing names its cause (the task's timer hook)

    def next_wake(self) -> int | None:
        return self.next_deadline()


class SimulatedClock(SimulatedTimeProvider, TaskClock):
    """Simulated time (the tester, language document §6.5): the host moves it to each trace
    timestamp (µs, with no record needed), not the records, which are processed at the time the
    host has set. One clock is shared by every task of a simulation, as one time provider drives
    every engine of the tester: the timers of all programs sit in one queue and fire in one
    global order (deadline, then the order they were set), each at its deadline. The host also
    says when timers due now fire — after a trace event and everything it caused downstream, not
    after each record (a record a task hands to the next program inside an emission must not fire
    the emitting program's timers in the middle of its transition) — so ``fire_due`` leaves them
    to it. An ungrouped program starts as its task does, at the first timestamp. Nothing is
    persisted: a simulation is never restored."""

    def starts_with_task(self) -> bool:
        return True

    def to_record(self, ts_ms: int) -> int:
        return 0  # the host has moved the clock to the trace time already (in µs: finer than the record's ms)

    def poll(self) -> int:
        return self.run_due()

    def next_wake(self) -> int | None:
        return self.next_deadline()


def clock_for(kind: str) -> TaskClock:
    """The clock of a program's ``clock:`` setting ("record" or "wall")."""
    return RecordClock() if kind == "record" else WallClock()
