"""Running the project's tester in-process, and putting its output in the reference's form."""

from __future__ import annotations

import os
from typing import Any
from unittest import mock

from eventscript.automata.compile import compile_source
from eventscript.engine.engine import LAZY_MODE_ENV
from eventscript.language.source import SourceFile
from eventscript.tester.pipeline import run_trace
from eventscript.tester.trace import parse_trace


def compiles(source: str) -> bool:
    return compile_source(source, name="ref").ok


def run_tester(
    source: str | list[str], trace_text: str, *, lazy: bool, error_keys: bool = False
) -> list[dict[str, Any]]:
    """What ``eventscript test`` prints for a program (or a pipeline of them), one dict per line;
    ``$error`` reduced to its code (and its key, with ``error_keys``).

    ``lazy``: on the lazy DFA, run twice, with its transition cache and with the fallback
    simulation forced on (the third engine); the two must agree before either is compared."""
    if not lazy:
        return _run(source, trace_text, lazy=False, error_keys=error_keys)
    cached = _run(source, trace_text, lazy=True, mode="cache", error_keys=error_keys)
    simulated = _run(source, trace_text, lazy=True, mode="simulate", error_keys=error_keys)
    assert cached == simulated, "the lazy DFA's cache and its fallback simulation disagree"
    return cached


def _run(
    source: str | list[str], trace_text: str, *, lazy: bool, mode: str = "auto", error_keys: bool = False
) -> list[dict[str, Any]]:
    programs = [
        compile_source(s, name=f"stage{i + 1}", force_lazy=lazy).require()
        for i, s in enumerate([source] if isinstance(source, str) else source)
    ]
    lines: list[dict[str, Any]] = []
    with mock.patch.dict(os.environ, {LAZY_MODE_ENV: mode}):
        run_trace(programs, parse_trace(SourceFile("<trace>", trace_text)), lambda line: lines.append(line.to_json()))
    return [comparable(line, error_keys=error_keys) for line in lines]


def comparable(line: dict[str, Any], *, error_keys: bool = False) -> dict[str, Any]:
    """A line as the conformance runner compares it: of an ``$error``, only its code counts (and,
    with ``error_keys``, its key: the runner compares a key wherever the expected line has one)."""
    if line["event"] == "$error":
        out = {"time": line["time"], "event": "$error", "value": line["value"]["code"]}
        if error_keys and "key" in line:
            out["key"] = line["key"]
        return out
    return {k: line[k] for k in ("time", "event", "value", "key") if k in line}
