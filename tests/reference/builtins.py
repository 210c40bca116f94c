"""Standard-library functions of docs/language.md section 8 beyond arithmetic and the clock.

Written from the table there, with Java's semantics where it names them (``Math.round``,
``Long.parseLong``-like parsing, NaN and infinities instead of exceptions): Python's ``math``
raises where Java returns NaN or an infinity, so each function says what it returns instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

OUT_OF_BOUNDS, INVALID_OPERATION = 5, 8
_DAY = 86_400_000_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ISO_TEXT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?)?(Z|[+-][0-9]{2}:[0-9]{2})?"
)
_LONG_TEXT = re.compile(r"[+-]?[0-9]+")
_DOUBLE_TEXT = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[dDfF]?")


def iso_text(t: int) -> str:
    """A time as the output writes it (docs/language.md 10.2): ISO-8601 UTC, six fractional
    digits, ``Z``, the year in four digits (strftime writes year 930 as ``930``)."""
    d = _date(t)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}.{d.microsecond:06d}Z"


def _date(t: int) -> datetime:
    return EPOCH + timedelta(microseconds=t)


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 or x != x else math.nan


def _log(x: float) -> float:
    if x != x or x < 0:
        return math.nan
    return -math.inf if x == 0 else math.log(x)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except OverflowError:  # Java: an infinity of the sign the exact result would have
        return -math.inf if x < 0 and y == int(y) and int(y) % 2 else math.inf
    except ValueError:  # a negative base and a fraction: NaN; zero to a negative power: infinity
        return math.inf if x == 0 else math.nan


def _floor(x: float) -> float:
    # Java keeps the sign of a zero result: floor(-0.0) is -0.0
    return x if x != x or math.isinf(x) else math.copysign(float(math.floor(x)), x)


def _ceil(x: float) -> float:
    # Java keeps the sign of a zero result: ceil(-0.5) and ceil(-0.0) are -0.0
    return x if x != x or math.isinf(x) else math.copysign(float(math.ceil(x)), x)


def to_long(x: float, rounding: Callable[[float], int]) -> int:
    """A double made a long as Java does: NaN 0, beyond the range the nearest bound, else rounded."""
    if x != x:
        return 0
    if x >= 2.0**63:
        return 2**63 - 1
    if x <= -(2.0**63):
        return -(2**63)
    return rounding(x)


def _half_up(x: float) -> int:
    low = math.floor(x)
    return low + 1 if x - low >= 0.5 else low


def _round(x: float) -> int:
    """Java's ``Math.round``: the floor of x + 1/2 computed exactly."""
    return to_long(x, _half_up)


_PURE: dict[str, Callable[..., Any]] = {
    "sqrt": _sqrt,
    "log": _log,
    "exp": _exp,
    "pow": _pow,
    "floor": _floor,
    "ceil": _ceil,
    "round": _round,
    "isNaN": lambda x: x != x,
    "indexOf": lambda s, sub: s.find(sub),
    "startsWith": lambda s, p: s.startswith(p),
    "endsWith": lambda s, p: s.endswith(p),
    "toUpperCase": str.upper,
    "toLowerCase": str.lower,
    "trim": lambda s: s.strip("".join(chr(c) for c in range(33))),  # Java: every char up to U+0020
    "hour": lambda t: _date(t).hour,
    "dayOfWeek": lambda t: _date(t).isoweekday(),
    "dayOfYear": lambda t: _date(t).timetuple().tm_yday,
    "year": lambda t: _date(t).year,
    "month": lambda t: _date(t).month,
    "day": lambda t: _date(t).day,
    "epochMillis": lambda t: t // 1000,  # rounded down (docs/language.md 8)
    "epochMicros": lambda t: t,
    "microsecond": lambda t: t % 1_000_000,
}
#: docs/language.md 4.1: a time is an instant of years 1 to 9999 (UTC).
MIN_TIME = (datetime(1, 1, 1, tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)
MAX_TIME = (datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)
#: Functions that make a time from a count of units (docs/language.md 8), and their unit.
TIME_MAKERS = {
    "microsecondsAfter": 1,
    "millisecondsAfter": 1000,
    "secondsAfter": 10**6,
    "minutesAfter": 60 * 10**6,
    "hoursAfter": 3600 * 10**6,
    "daysAfter": _DAY,
    "timeOfEpochMillis": 1000,
    "timeOfEpochMicros": 1,
}


def make_time(name: str, args: list[Any], error: Callable[[int, str], None]) -> int:
    """``secondsAfter(n, t)``, ``timeOfEpochMillis(n)`` and the like, computed exactly: a result
    outside years 1 to 9999 is ``$error`` 8 and the epoch (docs/language.md 7.7)."""
    t = args[0] * TIME_MAKERS[name] + (args[1] if len(args) > 1 else 0)
    if MIN_TIME <= t <= MAX_TIME:
        return t
    error(INVALID_OPERATION, f"{name}: the time is outside years 1 to 9999")
    return 0


def parse_time(text: str, error: Callable[[int, str], None]) -> int:
    """``time(string)``: ISO-8601, a date or a date and time, UTC without an offset; else
    ``$error`` 8 and the epoch. (The generator only writes plainly valid or plainly broken text.)"""
    try:
        if not _ISO_TEXT.fullmatch(text):  # fromisoformat also takes "00:00:010" (1.0 seconds)
            raise ValueError(text)
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        error(INVALID_OPERATION, f"cannot parse {text!r} as a time")
        return 0
    return ((when if when.tzinfo else when.replace(tzinfo=UTC)) - EPOCH) // timedelta(microseconds=1)


def call(name: str, args: list[Any], error: Callable[[int, str], None]) -> Any:
    """The function's value; ``NotImplementedError`` for one the reference does not model."""
    if name in TIME_MAKERS:
        return make_time(name, args, error)
    fn = _PURE.get(name)
    if fn is not None:
        return fn(*[float(a) if isinstance(a, int) and name in ("sqrt", "log", "exp", "pow") else a for a in args])
    if name == "substring":
        text, begin, end = args
        if not 0 <= begin <= end <= len(text):
            error(OUT_OF_BOUNDS, f"substring({begin}, {end}) is outside a string of length {len(text)}")
            return ""
        return text[begin:end]
    if name in ("hoursBetween", "daysBetween"):
        size = _DAY if name == "daysBetween" else 3_600_000_000
        d = args[1] - args[0]
        return d // size if d >= 0 else -((-d) // size)
    raise NotImplementedError(f"the reference does not implement {name}()")


def parse_long(text: str, error: Callable[[int, str], None]) -> int:
    """``long(string)``: a decimal integer, surrounding blanks allowed; else ``$error`` 8 and 0."""
    stripped = text.strip(" \t\n\r\f")
    if _LONG_TEXT.fullmatch(stripped) and -(2**63) <= int(stripped) < 2**63:
        return int(stripped)
    error(INVALID_OPERATION, f"cannot parse {text!r} as a long")
    return 0


def parse_double(text: str, error: Callable[[int, str], None]) -> float:
    """``double(string)``: a number (Java's ``Double.parseDouble``); else ``$error`` 8 and 0.0."""
    stripped = text.strip("".join(chr(c) for c in range(33)))
    if _DOUBLE_TEXT.fullmatch(stripped):
        return float(stripped.rstrip("dDfF"))
    error(INVALID_OPERATION, f"cannot parse {text!r} as a double")
    return 0.0
