"""The cut: each input partition's offset range, fixed on the driver before any task runs.

``--from`` and ``--to`` bound every partition's range: a whole number is an offset (``--to`` is
exclusive), anything else is a time (ISO-8601, as in traces), meaning the first offset whose
record timestamp is at or after it — Kafka's ``offsetsForTimes``. Without them a range is
everything the source holds when the backfill starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.timeutil import parse_time
from .plan import OffsetRange, TaskSlice


class CutError(Exception):
    pass


@dataclass(frozen=True)
class Bound:
    """An offset, or a time in ms (the first offset whose timestamp is at or after it)."""

    offset: int | None = None
    time_ms: int | None = None

    @staticmethod
    def parse(text: str | None, option: str) -> Bound | None:
        if text is None:
            return None
        t = text.strip()
        if t.isdigit():
            return Bound(offset=int(t))
        try:
            return Bound(time_ms=parse_time(t) // 1000)
        except ValueError as exc:
            raise CutError(
                f"{option} {text!r}: give an offset (a whole number) or a time such as 2026-01-31T12:00:00Z ({exc})"
            ) from None


def first_offset_at(times: list[tuple[int, int]], time_ms: int, end: int) -> int:
    """Kafka's offsetsForTimes over (offset, timestamp) pairs in offset order: the first offset
    whose timestamp is at or after ``time_ms``; ``end`` when there is none."""
    for offset, ts in times:
        if ts >= time_ms:
            return offset
    return end


def bounded(
    topic: str,
    partition: int,
    low: int,
    high: int,
    start: Bound | None,
    stop: Bound | None,
    times: list[tuple[int, int]] | None = None,
) -> OffsetRange:
    """The range [low, high) of a partition narrowed by --from and --to."""
    begin, end = low, high
    if start is not None:
        if start.offset is not None:
            begin = max(low, start.offset)
        else:
            assert times is not None and start.time_ms is not None
            begin = first_offset_at(times, start.time_ms, high)
    if stop is not None:
        if stop.offset is not None:
            end = min(high, stop.offset)
        else:
            assert times is not None and stop.time_ms is not None
            end = first_offset_at(times, stop.time_ms, high)
    return OffsetRange(topic, partition, begin, max(begin, end))


def slices(topics: list[str], partitions: int, ranges: dict[tuple[str, int], OffsetRange]) -> list[TaskSlice]:
    """One slice per partition number, with every input topic's range of that partition."""
    out = []
    for p in range(partitions):
        rs = [ranges.get((t, p), OffsetRange(t, p, 0, 0)) for t in topics]
        out.append(TaskSlice(p, rs))
    return out
