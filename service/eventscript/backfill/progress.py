"""The backfill's progress line on stderr: tasks done, records read, outputs, rate and ETA.

Spark's own UI has the details (stages, executors); its address is printed first. A task
reports its counts when it ends, so the line moves task by task; the ETA assumes the remaining
tasks' records (known from the cut, offsets counted) go at the rate seen so far. The rate is
shown from :data:`RATE_FROM` records on: before that, Spark's start-up dominates the time and a
rate such as "2 records/s" would say nothing about the job.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .task_stage import TaskSummary

#: Records read before the line shows a rate and an ETA.
RATE_FROM = 10_000


def _counted(n: int, noun: str) -> str:
    """``1 key``, ``2 keys``: "1 keys live" read as a slip (an ungrouped program has one key)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class Progress:
    def __init__(self, tasks: int, planned_records: int, out: TextIO = sys.stderr, unit: str = "partitions") -> None:
        self.tasks = tasks
        self.unit = unit  # what a task is: "partitions", or "key groups" in key-parallel mode
        self.planned = planned_records
        self.out = out
        self.tty = out.isatty()
        self.started = time.monotonic()
        self.done = 0
        self.records = 0
        self.sent = 0
        self.keys = 0
        self._shown = -1  # tasks done when the last line was printed

    def spark_ui(self, url: str | None) -> None:
        if url:
            self.out.write(f"Spark UI: {url}\n")
            self.out.flush()

    def task_done(self, s: TaskSummary) -> None:
        self.done += 1
        self.records += s.records
        self.sent += s.sent
        self.keys += s.keys
        self._show(final=False)

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.records / elapsed
        text = (
            f"backfill: {self.done}/{self.tasks} {self.unit} done, {_counted(self.records, 'record')} read, "
            f"{_counted(self.keys, 'key')} live, {_counted(self.sent, 'record')} out, "
        )
        if self.records >= RATE_FROM:
            text += f"{rate:,.0f} records/s, "
        text += f"{elapsed:.1f} s"
        left = self.planned - self.records
        if self.done < self.tasks and self.records >= RATE_FROM and rate > 0 and left > 0:
            text += f", ETA {left / rate:.0f} s"
        return text

    def _show(self, final: bool) -> None:
        if final and not self.tty and self._shown == self.done:
            return  # the last task's line already said it all (it was printed twice)
        self._shown = self.done
        if self.tty and not final:
            self.out.write("\r\x1b[2K" + self.line())
        else:
            self.out.write(("\r\x1b[2K" if self.tty else "") + self.line() + "\n")
        self.out.flush()

    def finish(self) -> None:
        self._show(final=True)
