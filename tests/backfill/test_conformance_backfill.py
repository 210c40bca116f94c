"""Every single-program conformance case, backfilled on Spark from a topic export of its trace,
gives the tester's events, in the tester's order (issue 7, "Done when": equivalence).

The export holds exactly the records ``eventscript produce`` publishes for the trace (events
keyed by group key, and ticks for time advances), so this is the run the worker's own
conformance test makes on Kafka, with the backfill in place of the worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from trace_export import CASES, SINGLE, case_topology, expected_lines, trace_rows, write_jsonl_export

from eventscript.backfill.job import Totals, check_totals, export_plan, outputs, run_locally
from eventscript.backfill.sink import output_json
from eventscript.tester.expect import compare

pytestmark = pytest.mark.skipif(not SINGLE, reason="../shared/conformance is not beside the checkout")


def difference(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> str | None:
    """The tester's own comparison (eventscript test --expect), as one message or None."""
    return "\n".join(compare(want, got)) or None


def _export(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    topo = case_topology(case)
    path = write_jsonl_export(trace_rows(topo, CASES / case / "input.trace", monkeypatch), tmp_path / "in.jsonl")
    return export_plan(topo, topo.programs[0], [str(path)])


@pytest.mark.spark
def test_every_case_backfilled_on_spark_equals_the_tester(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = []
    for case in SINGLE:
        (tmp_path / case).mkdir()
        plan = _export(case, tmp_path / case, monkeypatch)
        totals = Totals()
        got = [output_json(r) for r in outputs(spark, plan, totals)]
        check_totals(totals, plan)
        problem = difference(expected_lines(case), got)
        if problem:
            failures.append(f"{case}: {problem}")
    assert not failures, "\n".join(failures)


def test_every_case_through_the_task_stage_without_spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same, with the task stage called directly: tells a Spark problem from a task problem."""
    failures = []
    for case in SINGLE:
        (tmp_path / case).mkdir()
        got = [output_json(r) for r in run_locally(_export(case, tmp_path / case, monkeypatch))]
        problem = difference(expected_lines(case), got)
        if problem:
            failures.append(f"{case}: {problem}")
    assert not failures, "\n".join(failures)
