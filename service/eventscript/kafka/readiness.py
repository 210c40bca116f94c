"""What ``/readyz`` says beyond 200 or 503: per program, whether its worker is ready and which of
its source partitions are idle (issue 21: read to their end with nothing new for their input's
``idle_timeout_ms``, they stop holding record time back, so an operator who sees a downstream
clock run ahead of a quiet source can tell why)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def idle_partitions(worker: Any) -> list[str]:
    """The worker's source partitions that hold no record time back for being idle ("topic:p"),
    as its tasks last found them. Read from the health server's thread: a copy of the task table."""
    return sorted(ip.name for task in list(worker.tasks.values()) for ip in list(task.inputs) if ip.idled)


def readiness_lines(workers: Iterable[Any]) -> list[str]:
    """One line per program: ready or not, and its idle source partitions if any."""
    lines = []
    for w in workers:
        line = f"{w.cfg.name}: {'ready' if w.ready else 'not ready'}"
        idle = idle_partitions(w)
        if idle:
            line += (
                f"; idle source partitions (read to their end, nothing new for their idle_timeout_ms: "
                f"they hold no record time back): {', '.join(idle)}"
            )
        lines.append(line)
    return lines
