"""Comparing emitted events with expected JSON lines, and showing the differences readably.

The rules are the conformance suite's: ``time``, ``event`` and ``value`` must match, and ``key``
where the expected line has one; doubles within 1e-9 relative and never confused with longs; for
``$error`` only the code is compared. ``time`` is compared as an instant, not as text: expected
files are written by hand, and ``2026-01-01T08:05:00Z`` is the instant the tester prints as
``2026-01-01T08:05:00.000000Z`` (both read by the parser the trace reader uses).
"""

from __future__ import annotations

import difflib
import json
import math
from typing import Any

from ..engine.encoding import json_line
from ..engine.timeutil import parse_time

#: What an expected line's ``time`` should look like, for the messages that refuse one.
TIME_EXAMPLE = "2026-01-01T08:05:00Z"


def same_value(want: Any, got: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is type(got) and want == got
    if isinstance(want, float) or isinstance(got, float):
        if not (isinstance(want, float) and isinstance(got, float)):
            return False  # a double must be written as a double, a long as a long
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return want == got or abs(want - got) <= 1e-9 * max(abs(want), abs(got), 1e-300)
    if isinstance(want, dict) and isinstance(got, dict):
        return list(want) == list(got) and all(same_value(want[k], got[k]) for k in want)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(same_value(w, g) for w, g in zip(want, got))
    return type(want) is type(got) and want == got


def instant(text: Any) -> int | None:
    """``text`` as microseconds since the epoch, or None when it is not an ISO-8601 time string."""
    if not isinstance(text, str):
        return None
    try:
        return parse_time(text)
    except ValueError:  # (TimeRangeError, a day out of range for its month: ValueErrors too)
        return None


def time_difference(want: Any, got: Any) -> str | None:
    """How two ``time`` fields differ as instants (None when they are one instant)."""
    if want == got:
        return None
    expected = instant(want)
    if expected is None:
        return f"time: expected {want!r}, which is not an ISO-8601 time such as {TIME_EXAMPLE!r}; got {got!r}"
    return None if expected == instant(got) else f"time: expected {want!r}, got {got!r}"


def line_difference(want: dict[str, Any], got: dict[str, Any]) -> str | None:
    timing = time_difference(want.get("time"), got.get("time"))
    if timing:
        return timing
    if want.get("event") != got.get("event"):
        return f"event: expected {want.get('event')!r}, got {got.get('event')!r}"
    if want.get("event") == "$error":
        wv = want.get("value")
        wc = wv.get("code") if isinstance(wv, dict) else None
        gv = got.get("value")
        gc = gv.get("code") if isinstance(gv, dict) else None
        if wc != gc:
            return f"$error code: expected {wc!r}, got {gc!r}"
    elif not same_value(want.get("value"), got.get("value")):
        return f"value: expected {json.dumps(want.get('value'))}, got {json.dumps(got.get('value'))}"
    if "key" in want and not same_value(want["key"], got.get("key")):
        return f"key: expected {json.dumps(want['key'])}, got {json.dumps(got.get('key'))}"
    return None


def compare(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> list[str]:
    """Readable differences (empty when the outputs agree)."""
    problems: list[str] = []
    for i, (w, g) in enumerate(zip(expected, actual), 1):
        diff = line_difference(w, g)
        if diff:
            problems.append(f"line {i}: {diff}")
    if len(expected) != len(actual):
        problems.append(f"{len(expected)} events expected, {len(actual)} emitted")
    if problems:

        def show(lines: list[dict[str, Any]]) -> list[str]:
            return [json_line(x) for x in lines]

        ud = difflib.unified_diff(show(expected), show(actual), "expected", "actual", lineterm="", n=2)
        problems.append("\n".join(ud))
    return problems


def read_expected(text: str) -> list[dict[str, Any]]:
    """The expected lines; ValueError naming the line when one is not a JSON object, or when its
    ``time`` is not an ISO-8601 time (it could never match: said here, where the line is known)."""
    lines: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"line {number}: not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ValueError(f'line {number}: expected a JSON object like {{"time": ..., "event": ...}}')
        if "time" in obj and instant(obj["time"]) is None:
            raise ValueError(
                f"line {number}: time {obj['time']!r} is not an ISO-8601 time; write it as {TIME_EXAMPLE!r} "
                "(fractional seconds and an offset are optional; UTC when none is given)"
            )
        lines.append(obj)
    return lines
