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
from collections.abc import Sequence
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
        wv, gv = want.get("value"), got.get("value")
        return f"value: expected {json.dumps(wv)}, got {json.dumps(gv)}{_value_hint(wv, gv)}"
    if "key" in want and not same_value(want["key"], got.get("key")):
        wk, gk = want["key"], got.get("key")
        return f"key: expected {json.dumps(wk)}, got {json.dumps(gk)}{_key_hint(wk, gk)}"
    return None


def _value_hint(want: Any, got: Any) -> str:
    """Why two values that read alike differ: a long is not a double (``5`` is not ``5.0``), and a
    structure's fields come in declared order."""
    numbers = (int, float)
    if isinstance(want, numbers) and isinstance(got, numbers) and not isinstance(want, bool) and want == got:
        return " (a long is written without a fraction, a double with one: write it as the output does)"
    if _reordered(want, got):
        return " (the same fields in another order: write a structure's fields in their declared order)"
    return ""


def _reordered(want: Any, got: Any) -> bool:
    """Whether two structures hold the same fields and values, in another order."""
    if not (isinstance(want, dict) and isinstance(got, dict)) or list(want) == list(got) or set(want) != set(got):
        return False
    return all(same_value(want[k], got[k]) for k in want)


def _key_hint(want: Any, got: Any) -> str:
    """A key written as its one component: a key is the list of its components."""
    if not isinstance(want, list) and isinstance(got, list) and len(got) == 1 and same_value(want, got[0]):
        return f" (a key is the list of its components: write {json.dumps(got)})"
    return ""


def _shown_expected(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> list[str]:
    """The expected lines for the diff: one that matches an emitted line (a time written
    ``...:00Z`` for the printed ``...:00.000000Z``, no ``key``) is shown as that line is printed, so
    the diff marks only the lines that differ; the others as written."""
    unused = list(range(len(actual)))
    shown = []
    for want in expected:
        match = next((i for i in unused if line_difference(want, actual[i]) is None), None)
        if match is None:
            shown.append(json_line(want))
        else:
            unused.remove(match)
            shown.append(json_line(actual[match]))
    return shown


def compare(
    expected: list[dict[str, Any]], actual: list[dict[str, Any]], places: Sequence[str] | None = None
) -> list[str]:
    """Readable differences (empty when the outputs agree). ``places[i]`` names where expected
    line i was written (``e.jsonl:3``); without it, ``line i+1``."""
    problems: list[str] = []
    for i, (w, g) in enumerate(zip(expected, actual)):
        diff = line_difference(w, g)
        if diff:
            problems.append(f"{places[i] if places else f'line {i + 1}'}: {diff}")
    if len(expected) != len(actual):
        problems.append(f"{len(expected)} event{'' if len(expected) == 1 else 's'} expected, {len(actual)} emitted")
    if problems:
        shown = [json_line(x) for x in actual]
        ud = difflib.unified_diff(_shown_expected(expected, actual), shown, "expected", "actual", lineterm="", n=2)
        problems.append("\n".join(ud))
    return problems


#: One expected line, as ``eventscript test`` prints it: what a line without these fields lacks.
EXPECTED_EXAMPLE = '{"time": "2026-01-01T08:05:00Z", "event": "LeftOpen", "value": {"door": "front"}}'
#: The fields every expected line has (the comparison reads them all).
REQUIRED_FIELDS = ("time", "event", "value")


class ExpectedError(ValueError):
    """An expected file's line that cannot be compared: ``line`` and ``col`` (1-based) place it."""

    def __init__(self, line: int, col: int, message: str, hint: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line, self.col, self.message, self.hint = line, col, message, hint

    def render(self, file: str) -> str:
        """``file:line:col: error: message`` and the hint, as the trace's and programs' errors read."""
        return f"{file}:{self.line}:{self.col}: error: {self.message}\n    hint: {self.hint}"


def _json_problem(number: int, line: str, exc: json.JSONDecodeError) -> ExpectedError:
    """A line that is not JSON: where, and what a newcomer most likely wrote instead."""
    if not line.lstrip().startswith(("{", "[")):
        hint = (
            f"each line is one event as 'eventscript test' prints it, e.g. {EXPECTED_EXAMPLE} "
            "(not the trace's Name(value)); run the test without --expect to see the lines"
        )
    else:
        hint = f"write JSON: names and strings in double quotes, no trailing comma, e.g. {EXPECTED_EXAMPLE}"
    return ExpectedError(number, exc.colno, f"not JSON: {exc.msg[0].lower()}{exc.msg[1:]}", hint)


def _line_problem(number: int, line: str, obj: Any) -> ExpectedError | None:
    """Why a JSON line cannot be an expected event, or None."""
    if not isinstance(obj, dict):
        return ExpectedError(
            number, 1, "expected a JSON object, one event a line", f"write one event a line, e.g. {EXPECTED_EXAMPLE}"
        )
    missing = [f for f in REQUIRED_FIELDS if f not in obj]
    if missing:
        return ExpectedError(
            number,
            1,
            f"the line has no {', '.join(repr(f) for f in missing)}",
            f"every line has time, event and value, as 'eventscript test' prints them: {EXPECTED_EXAMPLE}",
        )
    if instant(obj["time"]) is None:
        return ExpectedError(
            number,
            line.find('"time"') + 1 or 1,
            f"time {obj['time']!r} is not an ISO-8601 time",
            f"write it as {TIME_EXAMPLE!r} (fractional seconds and an offset are optional; UTC when none is given)",
        )
    return None


def read_expected_numbered(text: str) -> list[tuple[int, dict[str, Any]]]:
    """The expected lines with their line numbers in the file (blank lines are skipped, so the
    n-th event is not always line n); ExpectedError when one is not a JSON object with a time, an
    event and a value, or when its ``time`` is not an ISO-8601 time (it could never match: said
    here, where the line is known)."""
    lines: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _json_problem(number, line, exc) from None
        problem = _line_problem(number, line, obj)
        if problem:
            raise problem
        lines.append((number, obj))
    return lines


def read_expected(text: str) -> list[dict[str, Any]]:
    """The expected lines (``read_expected_numbered`` without the numbers)."""
    return [obj for _, obj in read_expected_numbered(text)]
