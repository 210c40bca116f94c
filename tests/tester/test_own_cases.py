"""Our own hand-derived conformance cases (tests/cases/<name>/), one pytest item per case.

Each case was derived by hand from the language document and the binding choices of
../shared/conformance/README.md (its README.md says which sections and why), never copied from the
tester's output. They are run by the shared suite's own runner (../shared/conformance/run, given
the case folder), through the `eventscript test` command of this environment, so that they are
judged exactly as the hidden conformance cases will be: same command line, same comparison.

A case the product fails, where the document says the case is right, is marked xfail(strict=True)
in KNOWN_PRODUCT_BUGS with the reason, so that fixing the product turns it into an XPASS failure
and the mark must then be removed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHARED

OWN_CASES = Path(__file__).resolve().parents[1] / "cases"
RUNNER = SHARED / "conformance" / "run"
EVENTSCRIPT = Path(sys.executable).with_name("eventscript")

# case name -> why the product is wrong (the document's section), for cases kept as xfail.
KNOWN_PRODUCT_BUGS: dict[str, str] = {}

CASE_DIRS = sorted(p for p in OWN_CASES.iterdir() if p.is_dir())


def run_cases(*cases: Path) -> subprocess.CompletedProcess[str]:
    """Run the shared runner on case folders with this environment's `eventscript test`."""
    if not RUNNER.exists():
        pytest.skip("../shared/conformance/run is not beside the checkout")
    command = str(EVENTSCRIPT) if EVENTSCRIPT.exists() else shutil.which("eventscript")
    assert command, "no eventscript command: install the project into this environment"
    env = dict(os.environ, ES_TEST_CMD=f"{command} test", ES_CASE_TIMEOUT="60")
    return subprocess.run(
        [sys.executable, str(RUNNER), *map(str, cases)], capture_output=True, text=True, env=env, timeout=120
    )


def _marks(case: Path) -> list[pytest.MarkDecorator]:
    reason = KNOWN_PRODUCT_BUGS.get(case.name)
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=_marks(c)) for c in CASE_DIRS])
def test_own_case(case: Path) -> None:
    result = run_cases(case)
    assert result.returncode == 0 and "1 passed, 0 failed" in result.stdout, (
        f"{case.name}:\n{result.stdout}{result.stderr}"
    )


def test_every_case_is_complete() -> None:
    """A case needs a program (or stages), a trace, valid expected lines and a README with its reasoning."""
    assert len(CASE_DIRS) >= 30
    for case in CASE_DIRS:
        assert (case / "program.es").exists() or list(case.glob("stage*.es")), case.name
        assert (case / "input.trace").exists(), case.name
        assert (case / "README.md").read_text().strip(), case.name
        lines = [json.loads(line) for line in (case / "expected.jsonl").read_text().splitlines() if line.strip()]
        assert all({"time", "event", "value"} <= set(line) for line in lines), case.name
    assert set(KNOWN_PRODUCT_BUGS) <= {c.name for c in CASE_DIRS}, "an xfail names a case that does not exist"


def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    """The harness can fail: the same case with one expected value changed is reported."""
    case = tmp_path / "changed"
    shutil.copytree(OWN_CASES / "long-arithmetic-java", case)
    expected = case / "expected.jsonl"
    expected.write_text(expected.read_text().replace('"value": -3}', '"value": -4}', 1))
    result = run_cases(case)
    assert result.returncode == 1 and "0 passed, 1 failed" in result.stdout, result.stdout
