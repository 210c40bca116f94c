"""Implementations of the standard library (signatures and docs: language/stdlib.py).

Each overload id of ``language.stdlib`` maps to a Python function here. Functions that can fail
take the error reporter first (``FAILING``): they report an ``$error`` and return their result
type's default, so evaluation of the enclosing expression goes on, as the language requires.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC
from decimal import Decimal
from typing import Any

from .timeutil import TimeRangeError, format_time, parse_time, to_datetime
from .values import LONG_MAX, LONG_MIN, double_to_long, wrap

#: err(ctx, code, message): reports an $error for the instance ctx (see engine.Engine.report_error).
Report = Callable[[Any, int, str], None]

US = {
    "microseconds": 1,
    "milliseconds": 1_000,
    "seconds": 1_000_000,
    "minutes": 60_000_000,
    "hours": 3_600_000_000,
    "days": 86_400_000_000,
}


def _after(unit_us: int) -> Callable[[int, int], int]:
    def after(n: int, t: int) -> int:
        return wrap(t + n * unit_us)

    return after


def _between(unit_us: int) -> Callable[[int, int], int]:
    def between(a: int, b: int) -> int:
        d = b - a
        q = abs(d) // unit_us
        return -q if d < 0 else q

    return between


def _field(attr: str) -> Callable[[Report, Any, int], int]:
    def get(err: Report, ctx: Any, t: int) -> int:
        try:
            dt = to_datetime(t, UTC)
        except TimeRangeError as exc:
            err(ctx, 8, str(exc))
            return 0
        if attr == "dayOfWeek":
            return dt.isoweekday()
        if attr == "dayOfYear":
            return dt.timetuple().tm_yday
        if attr == "millisecond":
            return dt.microsecond // 1000
        return int(getattr(dt, attr))

    return get


def format_double(x: float) -> str:
    """Doubles as text, as Java's Double.toString: plain decimal with at least one fractional
    digit for 10^-3 <= |x| < 10^7, else computerized scientific notation (1.0E7, 1.5E-4); the
    digits are the shortest that read back as the same double (two where that is closer: 4.9E-324)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    a = abs(x)
    if 1e-3 <= a < 1e7:
        return repr(x)  # Python's repr is plain decimal in this range, with a fraction
    sign = "-" if x < 0 else ""
    d = Decimal(repr(a)).normalize()
    t = d.as_tuple()
    ds = "".join(map(str, t.digits))
    # operator: the exponent is a str ('n', 'N', 'F') only for NaN and infinity, returned above
    exponent = len(ds) - 1 + t.exponent  # type: ignore[operator]
    if len(ds) == 1:
        ds, exponent = _closest_two_digits(a, int(ds), exponent)
    mantissa = ds[0] + "." + (ds[1:] or "0")
    return f"{sign}{mantissa}E{exponent}"


def _closest_two_digits(a: float, digit: int, exponent: int) -> tuple[str, int]:
    """Java's digits for a double whose shortest decimal has one digit: of the decimals of one or
    two digits that read back as ``a``, the closest to it (even last digit on a tie). Only a tiny
    subnormal has another than ``digit`` itself: Double.MIN_VALUE is 4.9E-324, not 5.0E-324."""
    exact = Decimal(a)
    scaled = [(k, exponent - 1) for k in range(max(10, 10 * digit - 9), min(99, 10 * digit + 9) + 1)]
    if digit == 1:  # 1E-323 may be closer to 9.9E-324
        scaled += [(k, exponent - 2) for k in range(90, 100)]
    fits = [(k, e) for k, e in scaled if float(Decimal(k).scaleb(e)) == a]
    k, e = min(fits, key=lambda c: (abs(Decimal(c[0]).scaleb(c[1]) - exact), c[0] % 2))
    return str(k).rstrip("0"), e + 1


def to_string(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return format_double(x)
    return str(x)


def _plain_number(s: str) -> bool:
    """Python's int() and float() also take "1_000" and non-ASCII digits; the language does not."""
    return s.isascii() and "_" not in s


def long_string(err: Report, ctx: Any, s: str) -> int:
    try:
        if not _plain_number(s):
            raise ValueError(s)
        v = int(s.strip())
    except ValueError:
        err(ctx, 8, f"cannot convert {s!r} to long")
        return 0
    if not LONG_MIN <= v <= LONG_MAX:
        err(ctx, 8, f"{s!r} is out of the range of long")
        return 0
    return v


def double_string(err: Report, ctx: Any, s: str) -> float:
    try:
        if not _plain_number(s):
            raise ValueError(s)
        return float(s.strip())
    except ValueError:
        err(ctx, 8, f"cannot convert {s!r} to double")
        return 0.0


def time_string(err: Report, ctx: Any, s: str) -> int:
    try:
        return parse_time(s)
    except (ValueError, TimeRangeError) as exc:
        err(ctx, 8, str(exc))
        return 0


def substring(err: Report, ctx: Any, s: str, begin: int, end: int) -> str:
    if not 0 <= begin <= end <= len(s):
        err(ctx, 5, f"substring({begin}, {end}) is outside a string of length {len(s)}")
        return ""
    return s[begin:end]


def java_round(x: float) -> int:
    """Java's Math.round: the nearest long, halves up; NaN gives 0, infinities saturate.

    ``floor(x + 0.5)`` is wrong where the sum rounds (0.49999999999999994 + 0.5 == 1.0), so the
    fraction is compared instead (``x - floor(x)`` is exact)."""
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return LONG_MAX if x > 0 else LONG_MIN
    f = math.floor(x)
    r = f + 1 if x - f >= 0.5 else f
    return max(LONG_MIN, min(LONG_MAX, r))


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _log(x: float) -> float:
    if x > 0:
        return math.log(x)
    if x == 0:
        return -math.inf
    return math.nan


def _pow(x: float, y: float) -> float:
    # math.pow raises where IEEE 754 (and Java) give an infinity: keep its sign, which is the
    # sign of x when y is an odd integer (pow(-0.0, -1.0) is -Infinity, pow(-10.0, 401.0) too).
    odd = math.isfinite(y) and y.is_integer() and y % 2 == 1
    try:
        r = math.pow(x, y)
    except OverflowError:
        return -math.inf if x < 0 and odd else math.inf
    except ValueError:
        if x == 0.0 and y < 0:
            return math.copysign(math.inf, x) if odd else math.inf
        return math.nan
    return r


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _floor(x: float) -> float:
    # copysign keeps the sign of a zero result, as Java: floor(-0.0) and ceil(-0.5) are -0.0.
    return math.copysign(float(math.floor(x)), x) if math.isfinite(x) else x


def _ceil(x: float) -> float:
    return math.copysign(float(math.ceil(x)), x) if math.isfinite(x) else x


def _min_double(a: float, b: float) -> float:
    """Java's ``Math.min``: NaN if either is, and -0.0 below 0.0 (whichever comes first)."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == 0.0 and b == 0.0:
        return -0.0 if math.copysign(1.0, a) < 0 or math.copysign(1.0, b) < 0 else 0.0
    return min(a, b)


def _max_double(a: float, b: float) -> float:
    """Java's ``Math.max``: NaN if either is, and 0.0 above -0.0 (whichever comes first)."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == 0.0 and b == 0.0:
        return 0.0 if math.copysign(1.0, a) > 0 or math.copysign(1.0, b) > 0 else -0.0
    return max(a, b)


IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {
    "microsecondsAfter": _after(US["microseconds"]),
    "millisecondsAfter": _after(US["milliseconds"]),
    "secondsAfter": _after(US["seconds"]),
    "minutesAfter": _after(US["minutes"]),
    "hoursAfter": _after(US["hours"]),
    "daysAfter": _after(US["days"]),
    "microsecondsBetween": _between(US["microseconds"]),
    "millisecondsBetween": _between(US["milliseconds"]),
    "secondsBetween": _between(US["seconds"]),
    "minutesBetween": _between(US["minutes"]),
    "hoursBetween": _between(US["hours"]),
    "daysBetween": _between(US["days"]),
    **{
        name: _field(name)
        for name in (
            "year",
            "month",
            "day",
            "hour",
            "minute",
            "second",
            "millisecond",
            "microsecond",
            "dayOfWeek",
            "dayOfYear",
        )
    },
    "epochMillis": lambda t: t // 1000,
    "epochMicros": lambda t: t,
    "timeOfEpochMillis": lambda n: wrap(n * 1000),
    "timeOfEpochMicros": lambda n: n,
    "time_string": time_string,
    "long_long": lambda x: x,
    "long_double": double_to_long,
    "long_string": long_string,
    "double_double": lambda x: x,
    "double_long": float,
    "double_string": double_string,
    "string_any": to_string,
    "length_string": len,
    "length_array": len,
    "substring": substring,
    "indexOf": lambda s, sub: s.find(sub),
    "contains": lambda s, sub: sub in s,
    "startsWith": lambda s, p: s.startswith(p),
    "endsWith": lambda s, p: s.endswith(p),
    "toUpperCase": lambda s: s.upper(),
    "toLowerCase": lambda s: s.lower(),
    "trim": lambda s: s.strip(),
    "abs_long": lambda x: wrap(abs(x)),
    "abs_double": abs,
    "min_long": min,
    "min_double": _min_double,
    "max_long": max,
    "max_double": _max_double,
    "sqrt": _sqrt,
    "floor": _floor,
    "ceil": _ceil,
    "round": java_round,
    "pow": _pow,
    "exp": _exp,
    "log": _log,
    "isNaN": math.isnan,
}

#: Overloads whose implementation takes the error reporter as first argument.
FAILING = frozenset(
    {
        "time_string",
        "long_string",
        "double_string",
        "substring",
        "year",
        "month",
        "day",
        "hour",
        "minute",
        "second",
        "millisecond",
        "microsecond",
        "dayOfWeek",
        "dayOfYear",
    }
)

#: Overloads that need the engine's clock rather than an implementation here.
CLOCK = frozenset({"now"})

__all__ = ["CLOCK", "FAILING", "IMPLEMENTATIONS", "format_double", "format_time", "to_string"]
