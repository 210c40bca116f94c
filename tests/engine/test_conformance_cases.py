"""Every conformance case (../shared/conformance/cases) run in-process through the tester, on the
eager DFA and again on the lazy DFA, compared with expected.jsonl by the suite's own rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import CASES, read_jsonl
from eventscript.automata.compile import compile_file
from eventscript.tester.expect import compare
from eventscript.tester.pipeline import OutputLine, run_trace
from eventscript.tester.trace import read_trace

CASE_DIRS = sorted(p for p in CASES.iterdir() if p.is_dir()) if CASES.exists() else []


def programs(case: Path) -> list[Path]:
    single = case / "program.es"
    if single.exists():
        return [single]
    stages = sorted(case.glob("stage*.es"), key=lambda p: int("".join(c for c in p.stem if c.isdigit()) or 0))
    assert stages, f"{case.name}: no program.es and no stageN.es"
    return stages


def run_case(case: Path, *, lazy: bool) -> list[dict[str, Any]]:
    compiled = [compile_file(p, force_lazy=lazy).require() for p in programs(case)]
    if lazy:
        assert all(c.machine.kind == "lazy" for c in compiled)
    out: list[dict[str, Any]] = []

    def sink(line: OutputLine) -> None:
        out.append(line.to_json())

    run_trace(compiled, read_trace(case / "input.trace"), sink)
    return out


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_conformance_case(case: Path, lazy: bool) -> None:
    expected = read_jsonl(case / "expected.jsonl")
    actual = run_case(case, lazy=lazy)
    problems = compare(expected, actual)
    assert not problems, f"{case.name} ({'lazy' if lazy else 'eager'} DFA):\n" + "\n".join(problems)


def test_the_suite_is_there(cases_dir: Path) -> None:
    assert len([p for p in cases_dir.iterdir() if p.is_dir()]) >= 50
    for case in CASE_DIRS:
        assert (case / "input.trace").exists() and (case / "expected.jsonl").exists(), case.name


def test_compare_reports_differences() -> None:
    # The comparison the cases rely on is strict where the README says so.
    want = [{"time": "t", "event": "E", "value": 1.0}, {"time": "t", "event": "$error", "value": {"code": 2}}]
    assert (
        compare(
            want,
            [
                {"time": "t", "event": "E", "value": 1.0 + 1e-12},
                {"time": "t", "event": "$error", "value": {"code": 2, "message": "any"}},
            ],
        )
        == []
    )
    assert compare(
        want, [{"time": "t", "event": "E", "value": 1}, {"time": "t", "event": "$error", "value": {"code": 2}}]
    )
    assert compare(
        want, [{"time": "t", "event": "E", "value": 1.0}, {"time": "t", "event": "$error", "value": {"code": 3}}]
    )
    assert compare(want, want[:1])
