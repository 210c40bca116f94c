"""A shipped topology's sample trace made longer in a generic way, for the runs with faults: copies
of it side by side (their string values renamed per copy, so each copy has keys of its own), in
rounds (each round shifted in time past the last one's end, so the timers of the round before
have fired). Every copy of a keyed topology then gives its own copy of the sample's outputs; an
unkeyed one (all records one instance) sees the copies' records together, which the simulated run
gives as well. The copies of a round start a random number of seconds apart (``seed``), so their
records interleave differently from one seed to another.
"""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from eventscript.tester.trace import Timestamp, TraceEvent, read_trace

HOUR_US = 3_600_000_000
#: A string that is an ISO-8601 time (big-trades' ``when``): shifted with its copy, not renamed.
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def longer_trace(original: Path, out: Path, *, side_by_side: int, rounds: int, seed: int) -> Path:
    """Write ``side_by_side`` x ``rounds`` copies of the trace ``original`` to ``out``."""
    items = read_trace(str(original))
    stamps = [item.time for item in items if isinstance(item, Timestamp)]
    span = stamps[-1] - stamps[0]
    # A round lasts a whole number of hours (hourly windows stay aligned), an hour or more past
    # the last copy's end (its copies start up to half a span apart).
    step = (span * 3 // 2 // HOUR_US + 2) * HOUR_US
    rng = random.Random(seed)
    entries: list[tuple[int, int, int, TraceEvent | None]] = []
    for n in range(side_by_side * rounds):
        within = 0 if n % side_by_side == 0 else rng.randrange(span // 2 // 1_000_000 + 1) * 1_000_000
        offset = n // side_by_side * step + within
        now = stamps[0]
        for i, item in enumerate(items):
            if isinstance(item, Timestamp):
                now = item.time
                entries.append((now + offset, n, i, None))  # (a time passing without records)
            else:
                renamed = [_copied(arg, n, offset) for arg in item.args]
                entries.append((now + offset, n, i, TraceEvent(item.name, renamed, item.pos)))
    entries.sort(key=lambda e: e[:3])
    lines: list[str] = []
    last: int | None = None
    for at, _, _, event in entries:
        if at != last:
            lines.append(f"[{_stamp(at)}]")
            last = at
        if event is not None:
            lines.append(f"{event.name}({', '.join(_literal(a) for a in event.args)})")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _copied(value: Any, n: int, offset_us: int) -> Any:
    """A trace value in copy ``n``: strings renamed (times shifted), inside structures too."""
    if isinstance(value, str):
        if _ISO_TIME.match(value):
            when = datetime.fromisoformat(value) + timedelta(microseconds=offset_us)
            return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return value if n == 0 else f"{value}-c{n}"
    if isinstance(value, dict):
        return {k: _copied(v, n, offset_us) for k, v in value.items()}
    if isinstance(value, list):
        return type(value)(_copied(v, n, offset_us) for v in value)
    return value


def _literal(value: Any) -> str:
    """A value as a trace writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        fields = (f"{k if _IDENT.fullmatch(k) else json.dumps(k)}: {_literal(v)}" for k, v in value.items())
        return "{" + ", ".join(fields) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    raise TypeError(f"a trace value of type {type(value).__name__}: {value!r}")


def _stamp(us: int) -> str:
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")
