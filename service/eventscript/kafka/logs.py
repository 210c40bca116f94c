"""Calm logs during an outage: repeated warnings and errors are rate-limited.

With the broker gone a worker hits the same failure many times a second (librdkafka's connection
errors, failed commits, rewinds); one line per kind of failure and window says as much, and the
next line of that kind tells how many like it were held back. Messages are alike when they agree
once their numbers are blanked out (offsets, ports, counts and durations vary from one to the
next). INFO and below pass untouched.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

_NUMBERS = re.compile(r"\d+")


class RepeatFilter(logging.Filter):
    """Let through the first of a run of like WARNING+ records per ``window`` seconds."""

    def __init__(self, window: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window = window
        self._clock = clock
        self._seen: dict[tuple[str, int, str], list[float | int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, record.levelno, _NUMBERS.sub("#", record.getMessage())[:300])
        now = self._clock()
        seen = self._seen.get(key)
        if seen is not None and now - seen[0] < self.window:
            seen[1] += 1
            return False
        held = int(seen[1]) if seen is not None else 0
        if len(self._seen) > 10_000:
            self._seen.clear()
        self._seen[key] = [now, 0]
        if held:
            record.msg = f"{record.getMessage()} ({held} more like this in the last {self.window:.0f} s)"
            record.args = None
        return True


def rate_limit(*loggers: logging.Logger, window: float = 10.0) -> None:
    """Install one RepeatFilter on each logger (once: calling again changes nothing)."""
    for logger in loggers:
        if not any(isinstance(f, RepeatFilter) for f in logger.filters):
            logger.addFilter(RepeatFilter(window))
