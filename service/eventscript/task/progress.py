"""Event time across topics: progress markers and what a reading task makes of them.

A task on record time writes, on every partition of every topic another program reads (and of
its program's repartition topic), a marker record "task p of program P has written everything
before record time T" (header ``es-progress``: ``P/p/T``; no key, no value). It writes them in
the same batch (transaction) as its outputs, so a reader that sees a marker has seen every record
the writer wrote before it on that partition.

A reading task knows from the topology how many tasks write each of its input partitions
(``topology/progress.py``); the partition's *watermark* is the least progress among them (None
while one has not been heard from), or, on a partition only some of them write (each upstream task
t writing partition t only: ``ProgressPlan.placed``), the least among those while none of them is
idle (``InputProgress.own``). The task's merge releases a record only when its timestamp is
before the least watermark of its gated partitions, so records come out in record-time order
across every upstream task, as Flink carries a watermark per source partition (and Apache Paimon
across tables). Why "before" and not "at most": a writer's later records have timestamps at least
its progress, so more of that very time may still come from it; only once every writer has passed
a time are its records all there, to be taken in one order (``streams.py``) whatever order the
writers' commits landed in.

Two times per writer: its *progress* says what the merge may release, its *reached* time how far
the reader's clock may move without a record (``Task.move_to_progress``). They differ only for a
writer that is idle: it holds nothing back (``IDLE``) but its clock is where its last record took
it (header ``es-reached``). A reader's clock follows the least reached time, idle or not, so where
it ends does not depend on when each writer went idle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..topology.headers import HEADER_PROGRESS, HEADER_REACHED
from .codec import Headers, header

__all__ = [
    "HEADER_PROGRESS",
    "IDLE",
    "RESEND_S",
    "InputProgress",
    "marker_headers",
    "read_marker",
    "read_reached",
]

#: The progress of a task with nothing more to write until its inputs have new records (every
#: one of them read to its end and idle): it holds nothing back.
IDLE = 1 << 62

#: A task writes its markers again this often (s) even when its progress stands still: a reader
#: that restarted after them needs to hear from every writer before its time moves.
RESEND_S = 10.0


def marker_headers(program: str, task: int, progress_ms: int, reached_ms: int | None = None) -> Headers:
    """The headers of a marker: ``program/task/progress_ms``, and the time the writer's clock
    reached when that is not its progress (an idle writer's)."""
    headers: Headers = [(HEADER_PROGRESS, f"{program}/{task}/{progress_ms}".encode())]
    if reached_ms is not None and reached_ms != progress_ms:
        headers.append((HEADER_REACHED, b"%d" % reached_ms))
    return headers


def read_marker(headers: Headers | None) -> tuple[str, int] | None:
    """A marker's writer ("program/task") and progress (ms), or None when the record is not one."""
    raw = header(headers, HEADER_PROGRESS) if headers else None
    if raw is None:
        return None
    writer, _, ms = raw.decode().rpartition("/")
    return writer, int(ms)


def read_reached(headers: Headers | None) -> int | None:
    """An idle marker's reached time (ms), or None when it carries none (its progress is it)."""
    raw = header(headers, HEADER_REACHED) if headers else None
    return int(raw) if raw is not None else None


@dataclass
class InputProgress:
    """The progress heard from each writer of one input partition."""

    #: The writers expected ("program/task"): every one must be heard from before time moves.
    writers: frozenset[str]
    heard: dict[str, int] = field(default_factory=dict)
    #: The least progress of the expected writers (None: one is not heard from yet; ``IDLE``:
    #: every one is idle), and the highest it has been while one was not idle.
    watermark: int | None = None
    floor: int | None = None
    #: Each writer's reached time, and the least of them (None: one is not heard from yet): how
    #: far the reader's clock may move on its own. It never goes back either.
    reached_by: dict[str, int] = field(default_factory=dict)
    reached: int | None = None
    #: The writers whose records the partition holds, where not all of them (None: all): the
    #: others' records go to other partitions (``ProgressPlan.placed``). While those are not idle,
    #: their progress alone moves the watermark; the others' markers still count for idleness, so
    #: that the partition holds nothing back (``IDLE``) only when every writer is idle, as where all
    #: write it: a reader idle on its writer's account alone would let the readers after it (and
    #: its program's other tasks, through its repartition markers) move past the records that
    #: writer has when it wakes (tests/task/test_idle_pause.py, sector-divergence).
    own: frozenset[str] | None = None

    @property
    def holders(self) -> frozenset[str]:
        """The writers whose records the partition holds."""
        return self.writers if self.own is None else self.own

    def holds(self, writer: str) -> bool:
        """Whether ``writer``'s records may be on the partition."""
        return self.own is None or writer in self.own

    def hear(self, writer: str, progress_ms: int, reached_ms: int | None = None) -> None:
        """A marker. A writer's progress never goes back (a marker read again after a rewind is
        older), except after it was idle (``IDLE``): it holds time back again from where it is.
        The watermark never goes back below where it was before every writer went idle: a
        record older than that, written by a writer that was idle, is processed as it comes (as
        a late record of a source is). But it comes back from ``IDLE`` as soon as one writer
        has records again: were it kept there, a partition whose writers had all been idle
        once (a quiet night, a pause in the input) would release every later record as it
        came, in whatever order the writers' commits landed."""
        if writer not in self.writers:
            return
        before = self.heard.get(writer)
        if before is not None and progress_ms <= before and before != IDLE:
            return
        self.heard[writer] = progress_ms
        self.reached_by[writer] = reached_ms if reached_ms is not None else progress_ms
        heard = self.heard
        if len(heard) == len(self.writers):
            own = self.own_least()
            if own is not None:  # (a tuple's min, not a generator's: a marker costs ~1 µs less)
                least, reached = own, min(map(self.reached_by.__getitem__, self._own))
            else:
                least, reached = min(heard.values()), min(self.reached_by.values())
            if least < IDLE:
                if self.floor is None or least > self.floor:
                    self.floor = least
                self.watermark = self.floor
            else:
                self.watermark = IDLE
            if self.reached is None or reached > self.reached:
                self.reached = reached

    def own_least(self) -> int | None:
        """The least progress of the ``own`` writers, once each is heard from and none is idle
        (None: no ``own``, one not heard from, or one idle: then every writer's counts)."""
        own = self._own
        if not own:
            return None
        heard = self.heard
        if len(own) == 1:
            least = heard.get(own[0])
        else:
            times = list(map(heard.get, own))
            least = None if None in times else min(times)  # type: ignore[type-var]
        return None if least is None or least >= IDLE else least

    def promised(self) -> int | None:
        """The least time the partition's writers promise for their next records (ms): the
        least progress of the writers whose records are here (``holders``) once each is heard
        from and none is idle (None otherwise: an idle writer promises nothing of its next
        records' times, and its clock may move on before it writes a marker again). Below it a
        record is a late write (``repeats.RepeatGuard``)."""
        if self.own is not None:
            return self.own_least()
        heard = self.heard.values()
        return min(heard) if len(heard) == len(self.writers) and max(heard) < IDLE else None

    def __post_init__(self) -> None:
        #: ``own`` as a tuple (none: empty), for ``own_least``'s look-ups in C.
        self._own: tuple[str, ...] = tuple(sorted(self.own)) if self.own is not None else ()
