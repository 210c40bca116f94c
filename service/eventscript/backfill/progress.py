"""The backfill's progress line on stderr: tasks done, records read, outputs, rate and ETA.

Spark's own UI has the details (stages, executors); its address is printed first. A task
reports its counts when it ends, so the line moves task by task; the ETA assumes the remaining
tasks' records (known from the cut, offsets counted) go at the rate seen so far.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .runner import TaskSummary


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
        text = (f"backfill: {self.done}/{self.tasks} {self.unit} done, {self.records} records read, "
                f"{self.keys} keys live, {self.sent} records out, {rate:,.0f} records/s, {elapsed:.1f} s")
        left = self.planned - self.records
        if self.done < self.tasks and rate > 0 and left > 0:
            text += f", ETA {left / rate:.0f} s"
        return text

    def _show(self, final: bool) -> None:
        if self.tty and not final:
            self.out.write("\r\x1b[2K" + self.line())
        else:
            self.out.write(("\r\x1b[2K" if self.tty else "") + self.line() + "\n")
        self.out.flush()

    def finish(self) -> None:
        self._show(final=True)
