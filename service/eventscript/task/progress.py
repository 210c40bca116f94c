"""Event time across topics: progress markers and what a reading task makes of them.

A task on record time writes, on every partition of every topic another program reads (and of
its program's repartition topic), a marker record "task p of program P has written everything
before record time T" (header ``es-progress``: ``P/p/T``; no key, no value). It writes them in
the same batch (transaction) as its outputs, so a reader that sees a marker has seen every record
the writer wrote before it on that partition.

A reading task knows from the topology how many tasks write each of its input partitions
(``topology/progress.py``); the partition's *watermark* is the least progress among them (None
while one has not been heard from). The task's merge releases a record only when its timestamp is
at most the least watermark of its gated partitions, so records come out in record-time order
across every upstream task, as Flink carries a watermark per source partition (and Apache Paimon
across tables). Why "at most" and not "before": a writer's later records have timestamps at least
its progress, and records of one timestamp from different partitions have no order to keep.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..topology.headers import HEADER_PROGRESS
from .codec import Headers, header

__all__ = ["HEADER_PROGRESS", "IDLE", "RESEND_S", "InputProgress", "marker_headers", "read_marker"]

#: The progress of a task with nothing more to write until its inputs have new records (every
#: one of them read to its end and idle): it holds nothing back.
IDLE = 1 << 62

#: A task writes its markers again this often (s) even when its progress stands still: a reader
#: that restarted after them needs to hear from every writer before its time moves.
RESEND_S = 10.0


def marker_headers(program: str, task: int, progress_ms: int) -> Headers:
    """The headers of a marker: ``program/task/progress_ms``."""
    return [(HEADER_PROGRESS, f"{program}/{task}/{progress_ms}".encode())]


def read_marker(headers: Headers | None) -> tuple[str, int] | None:
    """A marker's writer ("program/task") and progress (ms), or None when the record is not one."""
    raw = header(headers, HEADER_PROGRESS) if headers else None
    if raw is None:
        return None
    writer, _, ms = raw.decode().rpartition("/")
    return writer, int(ms)


@dataclass
class InputProgress:
    """The progress heard from each writer of one input partition."""

    #: The writers expected ("program/task"): every one must be heard from before time moves.
    writers: frozenset[str]
    heard: dict[str, int] = field(default_factory=dict)
    #: The least progress of the expected writers (None: one is not heard from yet).
    watermark: int | None = None

    def hear(self, writer: str, progress_ms: int) -> None:
        """A marker. A writer's progress never goes back (a marker read again after a rewind is
        older), except after it was idle (``IDLE``): it holds time back again from where it is.
        The watermark never goes back: a record older than it, written by a writer that was
        idle, is processed as it comes (as a late record of a source is)."""
        if writer not in self.writers:
            return
        before = self.heard.get(writer)
        if before is not None and progress_ms <= before and before != IDLE:
            return
        self.heard[writer] = progress_ms
        if len(self.heard) == len(self.writers):
            least = min(self.heard.values())
            if self.watermark is None or least > self.watermark:
                self.watermark = least
