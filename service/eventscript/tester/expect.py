"""Comparing emitted events with expected JSON lines, and showing the differences readably.

The rules are the conformance suite's: ``time``, ``event`` and ``value`` must match, and ``key``
where the expected line has one; doubles within 1e-9 relative and never confused with longs; for
``$error`` only the code is compared.
"""

from __future__ import annotations

import difflib
import json
import math
from typing import Any

from ..engine.encoding import json_line


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


def line_difference(want: dict[str, Any], got: dict[str, Any]) -> str | None:
    for f in ("time", "event"):
        if want.get(f) != got.get(f):
            return f"{f}: expected {want.get(f)!r}, got {got.get(f)!r}"
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
    """The expected lines; ValueError naming the line when one is not a JSON object."""
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
        lines.append(obj)
    return lines
