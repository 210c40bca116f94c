"""The reference interpreter on every conformance case, the shared suite's and our own.

The tester must pass them (tests/tester/test_own_cases.py, ../shared/conformance/run); the
reference, an oracle for the differential tests, must too, compared as the shared runner compares
(its ``same_line``): each disagreement found so far was a reference bug the random programs never
reached (a time inside an emitted structure, a time key component). A case using what the
reference does not model (an arrive pattern with no match within two years) is skipped.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import CASES
from eventscript.language.source import SourceFile
from eventscript.language.types import StructType
from eventscript.tester.trace import Timestamp, event_argument, parse_trace

from .interpreter import Reference, ReferenceError_, Trace, run_reference

OWN_CASES = Path(__file__).resolve().parents[1] / "cases"
ALL_CASES = sorted(p for root in (CASES, OWN_CASES) if root.exists() for p in root.iterdir() if p.is_dir())


def _runner() -> ModuleType:
    """The shared suite's runner script, for its comparison of two output lines."""
    loader = importlib.machinery.SourceFileLoader("conformance_run", str(CASES.parent / "run"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _trace(path: Path, first_stage: str) -> Trace:
    """A case's trace as the reference's data (read with the tester's parser: both read one
    format); ``P(1)`` for a structure of one field is that structure written positionally."""
    inputs = Reference(first_stage).checked.inputs
    items: list[tuple[Any, ...]] = []
    for item in parse_trace(SourceFile(str(path), path.read_text())):
        if isinstance(item, Timestamp):
            items.append(("time", item.time))
            continue
        value = event_argument(item)
        declared = inputs.get(item.name)
        if declared is not None and isinstance(declared.ty, StructType) and not isinstance(value, (dict, list)):
            value = [value]
        items.append(("event", item.name, value))
    return Trace(items)


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_the_reference_passes_the_case(case: Path) -> None:
    if not (CASES.parent / "run").exists():
        pytest.skip("../shared/conformance is not beside the checkout")
    single = case / "program.es"
    programs = [single] if single.exists() else sorted(case.glob("stage*.es"), key=lambda p: int(p.stem[5:]))
    sources = [p.read_text() for p in programs]
    try:
        got = run_reference(
            sources if len(sources) > 1 else sources[0], _trace(case / "input.trace", sources[0]), error_keys=True
        )
    except ReferenceError_ as exc:
        pytest.skip(f"not modelled by the reference: {exc}")
    want = [json.loads(line) for line in (case / "expected.jsonl").read_text().splitlines() if line.strip()]
    lines = [{**g, "value": {"code": g["value"]}} if g["event"] == "$error" else g for g in got]
    same_line = _runner().same_line
    differences = [f"line {i + 1}: {d}" for i, (w, g) in enumerate(zip(want, lines)) if (d := same_line(w, g))]
    assert not differences and len(want) == len(lines), (differences[:3], len(want), len(lines))
