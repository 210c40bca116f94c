"""Time values: conversions, ISO-8601 text, and the next instant matching an arrive pattern.

A ``time`` is an int of microseconds since the epoch (UTC). Patterns are matched on the
wall-clock fields of a time zone (UTC unless the host configures another); a pattern fires at
the next matching instant strictly after the moment its timer is set (conformance choice 2).
"""

from __future__ import annotations

import calendar
import operator
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from typing import SupportsIndex

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Integer division: timedelta / timedelta is a float, which rounds MAX_TIME one microsecond past
# the last representable instant.
MIN_TIME = (datetime(1, 1, 1, tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)
MAX_TIME = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)

#: How far ahead a pattern with a wildcard year is searched (covers every Feb 29).
YEARS_AHEAD = 400
#: The largest backward clock shift (DST end) next_match allows for in a non-UTC zone.
_MAX_SHIFT_US = 3 * 3_600_000_000


class TimeRangeError(ValueError):
    """A time or pattern component outside the representable range."""


def to_datetime(t: int, tz: tzinfo = UTC) -> datetime:
    if not MIN_TIME <= t <= MAX_TIME:
        raise TimeRangeError(f"time {t} µs is outside years 1 to 9999")
    try:
        return (EPOCH + timedelta(microseconds=t)).astimezone(tz)
    except OverflowError:  # in range in UTC, but not in tz
        raise TimeRangeError(f"time {t} µs is outside years 1 to 9999 in {tz}") from None


def check_clock_time(t: object, now: int | None = None) -> int:
    """``t`` as a time the clock may move to, or ValueError saying why not.

    The one rule shared by the tester's trace reader and :meth:`SimulatedTimeProvider.advance_to`
    (embedders): a time is an int of microseconds (an integral float is taken), within years 1 to
    9999, and not before the clock's current time ``now``. Without it, NaN or a time in year
    10**9 would either corrupt the clock or make a periodic timer fire for ever.
    """
    if type(t) is not int:
        if isinstance(t, float) and t.is_integer():
            t = int(t)
        elif not isinstance(t, bool) and isinstance(t, SupportsIndex):  # numpy integers and the like
            t = operator.index(t)
        else:
            shown = f"{type(t).__name__} {t!r:.60}"
            raise ValueError(f"a time must be an int of microseconds since the epoch, got {shown}")
    if not MIN_TIME <= t <= MAX_TIME:
        raise TimeRangeError(f"time {t} µs is outside years 1 to 9999 (UTC)")
    if now is not None and t < now:
        raise ValueError(f"time {format_time(t)} goes back in time: the clock is already at {format_time(now)}")
    return t


def from_datetime(dt: datetime) -> int:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return (dt - EPOCH) // timedelta(microseconds=1)


def format_time(t: int) -> str:
    """ISO-8601 UTC with exactly six fractional digits and Z (the conformance encoding)."""
    try:
        dt = to_datetime(t)
    except TimeRangeError:
        return str(t)
    # Not strftime: %Y does not pad years before 1000 to four digits on every platform.
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}.{dt.microsecond:06d}Z"
    )


_ISO = re.compile(
    r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?\s*$",
    re.IGNORECASE,
)


def parse_time(text: str) -> int:
    """Parse ISO-8601 (date, or date and time; UTC when no offset is given) to microseconds."""
    m = _ISO.match(text)
    if not m:
        raise ValueError(f"not an ISO-8601 date-time: {text!r}")
    y, mo, d, h, mi, s, frac, off = m.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    tz: tzinfo = UTC
    if off and off.upper() != "Z":
        sign = 1 if off[0] == "+" else -1
        digits = off[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
        from datetime import timezone

        tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
    dt = datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), micro, tzinfo=tz)
    t = from_datetime(dt)
    if not MIN_TIME <= t <= MAX_TIME:
        raise TimeRangeError(f"{text!r} is outside years 1 to 9999 (UTC)")
    return t


# ---------------------------------------------------------------------------------------
# arrive patterns

_LIMITS = ((1, 9999), (1, 12), (1, 31), (0, 23), (0, 59), (0, 59))
_NAMES = ("year", "month", "day", "hour", "minute", "second")


def check_components(components: Sequence[int | None]) -> None:
    for name, (lo, hi), v in zip(_NAMES, _LIMITS, components):
        if v is not None and not lo <= v <= hi:
            raise TimeRangeError(f"{name} {v} is out of range {lo}..{hi}")


def _candidates(fixed: int | None, lo: int, hi: int) -> range:
    if fixed is None:
        return range(lo, hi + 1)
    return range(fixed, fixed + 1) if lo <= fixed <= hi else range(0)


def _walk(components: Sequence[int | None], lower: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Field tuples (y, mo, d, h, mi, s) matching the components, >= lower, in increasing order."""
    y0 = lower[0]

    def rec(i: int, prefix: tuple[int, ...], tight: bool) -> Iterator[tuple[int, ...]]:
        if i == 6:
            yield prefix
            return
        lo, hi = _LIMITS[i]
        if i == 0:
            hi = min(9999, y0 + YEARS_AHEAD) if components[0] is None else 9999
        if i == 2:
            hi = calendar.monthrange(prefix[0], prefix[1])[1]
        start = lower[i] if tight else lo
        for v in _candidates(components[i], lo, hi):
            if v < start:
                continue
            yield from rec(i + 1, (*prefix, v), tight and v == lower[i])

    yield from rec(0, (), True)


def next_match(after: int, components: Sequence[int | None], micro: int = 0, tz: tzinfo = UTC) -> int | None:
    """The first instant strictly after ``after`` whose wall-clock fields in ``tz`` match.

    ``components`` are (year, month, day, hour, minute, second), None meaning any value;
    ``micro`` is the fraction of the second (the pattern's seconds may carry one).
    Returns None when no instant matches (e.g. a fixed date in the past).
    """
    check_components(components)
    local = to_datetime(after, tz)
    start = local.replace(tzinfo=None)
    if tz is not UTC:
        # Around a backward shift of the clock (DST ends), instants later than ``after`` can
        # show earlier wall-clock times (the repeated hour): start the walk that much earlier.
        offsets = [
            to_datetime(min(MAX_TIME, max(MIN_TIME, after + d)), tz).utcoffset() or timedelta(0)
            for d in (-_MAX_SHIFT_US, 0, _MAX_SHIFT_US)
        ]
        shift = max(offsets) - min(offsets)
        if shift > timedelta(0):
            start = max(datetime.min, start - shift)
    lower = (start.year, start.month, start.day, start.hour, start.minute, start.second)
    best: int | None = None
    for fields in _walk(components, lower):
        try:
            year, month, day, hour, minute, second = fields
            cand = datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
        except ValueError:
            continue
        if tz is UTC:
            t = from_datetime(cand)
            if t > after:
                return t
            continue
        # Skip wall-clock times that do not exist in tz (a DST gap shifts them).
        if cand.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != cand.replace(tzinfo=None):
            continue
        # A wall-clock time in a repeated hour names two instants: fold 0 (the first) and fold 1.
        # Each fold alone grows with the wall-clock time, so the answer is the earlier of the
        # first fold-1 instant after ``after`` and the first fold-0 instant after it.
        t1 = from_datetime(cand.replace(fold=1))
        if t1 > after and (best is None or t1 < best):
            best = t1
        t = from_datetime(cand)
        if t > after:
            return t if best is None else min(t, best)
    return best
