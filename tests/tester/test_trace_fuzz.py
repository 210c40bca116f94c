"""Fuzzing the trace reader and the tester with mutated conformance traces (issue 9).

Each example takes one case's ``input.trace``, applies a few byte-level mutations (flips,
insertions of digits, brackets, quotes and escapes, truncation) and runs it with the case's
program(s). Whatever comes out, the only exception allowed is :class:`TraceError` (a clean,
positioned message), every output line must encode as UTF-8 JSON, and no input may take more than
5 seconds.

One thing is deliberately not run: a trace whose timestamps span far more simulated time than the
original (a mutated year 9026). There every periodic timer of the program legitimately fires once
per period across millennia; the cost is proportional to simulated time, not a reader bug.
"""

from __future__ import annotations

import time
from functools import cache
from pathlib import Path
from tempfile import TemporaryDirectory

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CASES
from eventscript.automata.compile import compile_file
from eventscript.automata.compiled import CompiledProgram
from eventscript.engine.encoding import json_line
from eventscript.tester.pipeline import run_trace
from eventscript.tester.trace import Timestamp, TraceError, TraceItem, read_trace

CASE_DIRS = sorted(p.parent for p in CASES.glob("*/input.trace")) if CASES.exists() else []
#: How much further than the original trace a mutated one may reach in simulated time and still run.
EXTRA_SPAN_US = 30 * 24 * 3600 * 1_000_000
#: Per input, reading and running together.
BUDGET_S = 5.0

INSERTS = [
    b"0",
    b"9",
    b"99999999999999999999",
    b"-",
    b".",
    b"e",
    b"1e3",
    b":",
    b"[",
    b"]",
    b"{",
    b"}",
    b"(",
    b")",
    b",",
    b'"',
    b"\\",
    b"\\u",
    b"\\ud800",
    b"\\udc00",
    b"\\ud83d\\ude00",
    b"\\n",
    b"//",
    b"\n",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xef\xbb\xbf",
    b"[" * 200,
    b"]" * 50,
    b"Start()",
    b"true",
    b"[2026-01-01]",
    b"[9999-12-31 23:59:59]",
]


@cache
def programs(case: Path) -> tuple[CompiledProgram, ...]:
    single = case / "program.es"
    paths = [single] if single.exists() else sorted(case.glob("stage*.es"))
    return tuple(compile_file(p).require() for p in paths)


@cache
def span(case: Path) -> int:
    times = [item.time for item in read_trace(case / "input.trace") if isinstance(item, Timestamp)]
    return max(times) - min(times)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[Path, bytes]:
    case = draw(st.sampled_from(CASE_DIRS))
    data = bytearray((case / "input.trace").read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            data[at:at] = draw(st.sampled_from(INSERTS))
        elif kind == "delete" and data:
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "truncate":
            del data[at:]
    return case, bytes(data)


def far_ahead(items: list[TraceItem], case: Path) -> bool:
    times = [item.time for item in items if isinstance(item, Timestamp)]
    return bool(times) and max(times) - min(times) > span(case) + EXTRA_SPAN_US


@pytest.mark.skipif(not CASE_DIRS, reason="../shared/conformance is not beside the checkout")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_mutated_traces_end_in_output_or_a_trace_error(example: tuple[Path, bytes]) -> None:
    case, data = example
    with TemporaryDirectory() as tmp:
        path = Path(tmp) / "input.trace"
        path.write_bytes(data)
        started = time.monotonic()
        try:
            items = read_trace(path)
            if far_ahead(items, case):
                return
            run_trace(list(programs(case)), items, lambda line: json_line(line.to_json()).encode("utf-8"))
        except TraceError as exc:
            assert str(exc).startswith(f"{path}:"), str(exc)  # positioned: file:line:col
        elapsed = time.monotonic() - started
    assert elapsed < BUDGET_S, f"{case.name}: {elapsed:.1f} s for {data!r}"
