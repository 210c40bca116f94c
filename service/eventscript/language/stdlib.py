"""The standard library's signatures: every built-in function, its overloads and what it does.

This module holds only what the compiler needs (names, parameter and result types, docs).
The engine implements each overload under the same ``id`` (see ``engine/builtins.py``), so the
two lists cannot drift apart unnoticed: a test checks that every id here has an implementation.
``docs/language.md`` is generated from nothing; keep the docstrings here and there in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .types import BOOLEAN, DOUBLE, LONG, STRING, TIME, ArrayType, PrimitiveType, Type

#: Parameter pattern that accepts any array type.
ANY_ARRAY = "any array"
#: Parameter pattern that accepts any primitive type except object.
ANY_PRIMITIVE = "any primitive"

ParamType = Type | str


@dataclass(frozen=True)
class Overload:
    id: str
    name: str
    params: tuple[ParamType, ...]
    result: Type
    doc: str

    def signature(self) -> str:
        ps = ", ".join(str(p) for p in self.params)
        return f"{self.result} {self.name}({ps})"


def _o(id: str, name: str, params: Sequence[ParamType], result: Type, doc: str) -> Overload:
    return Overload(id, name, tuple(params), result, doc)


_TIME_AFTER = [
    ("microsecondsAfter", "microseconds"),
    ("millisecondsAfter", "milliseconds"),
    ("secondsAfter", "seconds"),
    ("minutesAfter", "minutes"),
    ("hoursAfter", "hours"),
    ("daysAfter", "days"),
]
_TIME_BETWEEN = [
    ("microsecondsBetween", "microseconds"),
    ("millisecondsBetween", "milliseconds"),
    ("secondsBetween", "seconds"),
    ("minutesBetween", "minutes"),
    ("hoursBetween", "hours"),
    ("daysBetween", "days"),
]
_TIME_FIELDS = [
    ("year", "the year, e.g. 2026"),
    ("month", "the month, 1 (January) to 12"),
    ("day", "the day of the month, 1 to 31"),
    ("hour", "the hour, 0 to 23"),
    ("minute", "the minute, 0 to 59"),
    ("second", "the second, 0 to 59"),
    ("millisecond", "the millisecond within the second, 0 to 999"),
    ("microsecond", "the microsecond within the second, 0 to 999999"),
    ("dayOfWeek", "the ISO day of the week, 1 (Monday) to 7 (Sunday)"),
    ("dayOfYear", "the day of the year, 1 to 366"),
]

OVERLOADS: list[Overload] = [
    _o(
        "now",
        "now",
        [],
        TIME,
        "The current time: the time of the event being processed (simulated, wall-clock "
        "or record time, depending on the host).",
    ),
    *[_o(n, n, [LONG, TIME], TIME, f"{n}(n, t): the time n {u} after t (n may be negative).") for n, u in _TIME_AFTER],
    *[
        _o(
            n,
            n,
            [TIME, TIME],
            LONG,
            f"{n}(a, b): whole {u} from a to b, truncated toward zero (negative if b is before a).",
        )
        for n, u in _TIME_BETWEEN
    ],
    *[_o(n, n, [TIME], LONG, f"{n}(t): {d} of t, in UTC.") for n, d in _TIME_FIELDS],
    _o("epochMillis", "epochMillis", [TIME], LONG, "Milliseconds since 1970-01-01T00:00:00Z (floor)."),
    _o("epochMicros", "epochMicros", [TIME], LONG, "Microseconds since 1970-01-01T00:00:00Z."),
    _o("timeOfEpochMillis", "timeOfEpochMillis", [LONG], TIME, "The time n milliseconds after the epoch."),
    _o("timeOfEpochMicros", "timeOfEpochMicros", [LONG], TIME, "The time n microseconds after the epoch."),
    _o(
        "time_string",
        "time",
        [STRING],
        TIME,
        "Parses an ISO-8601 date-time (UTC when no offset is given); $error 8 and the epoch if it cannot be parsed.",
    ),
    # conversions
    _o("long_long", "long", [LONG], LONG, "The value itself."),
    _o(
        "long_double",
        "long",
        [DOUBLE],
        LONG,
        "Truncates toward zero, as Java's (long) cast: NaN gives 0, values beyond the range give the nearest bound.",
    ),
    _o("long_string", "long", [STRING], LONG, "Parses a decimal integer; $error 8 and 0 if it cannot be parsed."),
    _o("double_double", "double", [DOUBLE], DOUBLE, "The value itself."),
    _o("double_long", "double", [LONG], DOUBLE, "The nearest double."),
    _o("double_string", "double", [STRING], DOUBLE, "Parses a number; $error 8 and 0.0 if it cannot be parsed."),
    _o(
        "string_any",
        "string",
        [ANY_PRIMITIVE],
        STRING,
        "The text of a value: decimal for numbers (doubles always "
        "with a fraction or exponent), true/false, ISO-8601 UTC for times.",
    ),
    # strings and arrays
    _o("length_string", "length", [STRING], LONG, "The number of characters of a string."),
    _o("length_array", "length", [ANY_ARRAY], LONG, "The number of elements of an array."),
    _o(
        "substring",
        "substring",
        [STRING, LONG, LONG],
        STRING,
        'substring(s, begin, end): characters begin to end-1; $error 5 and "" if the range is outside the string.',
    ),
    _o("indexOf", "indexOf", [STRING, STRING], LONG, "The first index of a substring, or -1."),
    _o("contains", "contains", [STRING, STRING], BOOLEAN, "Whether the first string contains the second."),
    _o("startsWith", "startsWith", [STRING, STRING], BOOLEAN, "Whether the first string starts with the second."),
    _o("endsWith", "endsWith", [STRING, STRING], BOOLEAN, "Whether the first string ends with the second."),
    _o("toUpperCase", "toUpperCase", [STRING], STRING, "The string in upper case."),
    _o("toLowerCase", "toLowerCase", [STRING], STRING, "The string in lower case."),
    _o("trim", "trim", [STRING], STRING, "The string without leading and trailing white space."),
    # arithmetic
    _o("abs_long", "abs", [LONG], LONG, "Absolute value (wraps for the most negative long, as Java)."),
    _o("abs_double", "abs", [DOUBLE], DOUBLE, "Absolute value."),
    _o("min_long", "min", [LONG, LONG], LONG, "The smaller of two values."),
    _o("min_double", "min", [DOUBLE, DOUBLE], DOUBLE, "The smaller of two values (NaN if either is NaN)."),
    _o("max_long", "max", [LONG, LONG], LONG, "The larger of two values."),
    _o("max_double", "max", [DOUBLE, DOUBLE], DOUBLE, "The larger of two values (NaN if either is NaN)."),
    _o("sqrt", "sqrt", [DOUBLE], DOUBLE, "Square root (NaN for negative values)."),
    _o("floor", "floor", [DOUBLE], DOUBLE, "The largest integral value not above x."),
    _o("ceil", "ceil", [DOUBLE], DOUBLE, "The smallest integral value not below x."),
    _o("round", "round", [DOUBLE], LONG, "The nearest long, halves rounded up (Java's Math.round)."),
    _o("pow", "pow", [DOUBLE, DOUBLE], DOUBLE, "x raised to the power y."),
    _o("exp", "exp", [DOUBLE], DOUBLE, "e raised to the power x."),
    _o("log", "log", [DOUBLE], DOUBLE, "Natural logarithm (NaN for negative values, -Infinity for 0)."),
    _o("isNaN", "isNaN", [DOUBLE], BOOLEAN, "Whether x is NaN."),
]

BUILTINS: dict[str, list[Overload]] = {}
for _ov in OVERLOADS:
    BUILTINS.setdefault(_ov.name, []).append(_ov)

BY_ID: dict[str, Overload] = {ov.id: ov for ov in OVERLOADS}


def _accepts(param: ParamType, arg: Type, promote: bool) -> bool:
    if param == ANY_ARRAY:
        return isinstance(arg, ArrayType)
    if param == ANY_PRIMITIVE:
        return isinstance(arg, PrimitiveType) and arg.name != "object"
    if param == arg:
        return True
    return promote and param == DOUBLE and arg == LONG


def resolve(name: str, args: Sequence[Type | None]) -> Overload | None:
    """The overload for these argument types: exact match first, then with long promoted to double.

    Returns None when no overload fits or when an unknown argument type leaves a choice open.
    """
    overloads = [o for o in BUILTINS.get(name, []) if len(o.params) == len(args)]
    if len(overloads) == 1 and any(a is None for a in args):
        return overloads[0]
    known = [a for a in args if a is not None]
    if len(known) != len(args):
        return None
    for promote in (False, True):
        for o in overloads:
            if all(_accepts(p, a, promote) for p, a in zip(o.params, known)):
                return o
    return None
