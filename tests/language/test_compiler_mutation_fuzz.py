"""Mutation fuzzing of the compiler and the trace reader with the shipped programs and traces.

Seeds: every program and trace of the conformance cases (``../shared/conformance/cases``) and of
the shipped topologies (``topologies/**``). Mutations: byte flips, deleted and duplicated tokens,
inserted digits, brackets and quotes, several at a time. Whatever the input, compiling must end in
a program or a :class:`CompileError`-style diagnostic list, reading and running a trace must end
in output or a :class:`TraceError`, and no input may take more than 5 seconds.
``MUTATION_EXAMPLES`` sets the number of inputs per test (``make fuzz`` runs many more).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from conftest import CASES, ROOT
from eventscript.automata.compile import compile_source
from eventscript.language.diagnostics import CompileError
from eventscript.language.source import SourceFile
from eventscript.tester.pipeline import run_trace
from eventscript.tester.trace import TraceError, parse_trace

EXAMPLES = int(os.environ.get("MUTATION_EXAMPLES", "100"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TIME_LIMIT = 5.0

PROGRAMS = sorted([*CASES.glob("*/*.es"), *(ROOT / "topologies").rglob("*.es")]) if CASES.exists() else []
TRACES = sorted([*CASES.glob("*/input.trace"), *(ROOT / "topologies").rglob("*.trace")]) if CASES.exists() else []
TOKEN = re.compile(r"\s+|\w+|\"(?:\\.|[^\"\\])*\"|//[^\n]*|.", re.S)
INSERTS = [*"0123456789([{}])\"'", "9999999999999999999999", "-", ".", ":", "\\"]

pytestmark = pytest.mark.skipif(not PROGRAMS, reason="../shared/conformance is not beside the checkout")


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Path]) -> tuple[Path, str]:
    """A seed file and its text after one to four mutations."""
    path = draw(st.sampled_from(seeds))
    text = path.read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "delete", "duplicate", "insert"]))
        if kind == "flip":
            data = bytearray(text.encode("utf-8"))
            i = draw(st.integers(0, max(len(data) - 1, 0)))
            if data:
                data[i] ^= 1 << draw(st.integers(0, 7))
            text = data.decode("utf-8", errors="replace")
            continue
        tokens = TOKEN.findall(text) or [""]
        i = draw(st.integers(0, len(tokens) - 1))
        if kind == "delete":
            del tokens[i]
        elif kind == "duplicate":
            tokens.insert(i, tokens[i])
        else:
            tokens.insert(i, draw(st.sampled_from(INSERTS)))
        text = "".join(tokens)
    return path, text


def _timed(what: str, started: float) -> None:
    elapsed = time.perf_counter() - started
    assert elapsed < TIME_LIMIT, f"{what} took {elapsed:.1f} s (limit {TIME_LIMIT} s)"


@FUZZ
@given(mutated(PROGRAMS))
def test_mutated_programs_compile_or_are_rejected_with_diagnostics(drawn: tuple[Path, str]) -> None:
    path, text = drawn
    note(f"mutated from {path}:\n{text}")
    started = time.perf_counter()
    comp = compile_source(SourceFile(str(path), text, path=path))
    try:
        comp.require()
    except CompileError:
        assert comp.diagnostics.has_errors
    _timed("compiling", started)


def _program_for(trace: Path):  # type: ignore[no-untyped-def]
    sources = sorted(trace.parent.glob("*.es"))
    stage = trace.parent / "program.es"
    chosen = [stage] if stage.exists() else sources
    return [compile_source(SourceFile.read(p)).require() for p in chosen]


@FUZZ
@given(mutated(TRACES))
def test_mutated_traces_run_or_are_rejected_with_a_position(drawn: tuple[Path, str]) -> None:
    path, text = drawn
    note(f"mutated from {path}:\n{text}")
    programs = _program_for(path)
    started = time.perf_counter()
    try:
        run_trace(programs, parse_trace(SourceFile(str(path), text)), lambda line: line.to_json())
    except TraceError as exc:
        assert exc.pos.source.name == str(path) and exc.message
    _timed("reading and running the trace", started)
