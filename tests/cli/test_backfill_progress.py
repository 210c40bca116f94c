"""The backfill's progress lines (issue 27): the last line is not printed twice, and a rate (or an
ETA) appears only once enough records were read for it to mean something."""

from __future__ import annotations

import io

from eventscript.backfill.progress import RATE_FROM, Progress
from eventscript.backfill.task_stage import TaskSummary


def _lines(records_per_task: int, tasks: int = 2) -> list[str]:
    out = io.StringIO()
    progress = Progress(tasks, records_per_task * tasks, out)
    for t in range(tasks):
        progress.task_done(TaskSummary(task=t, records=records_per_task, sent=1, keys=1))
    progress.finish()
    return out.getvalue().splitlines()


def test_the_last_line_is_printed_once() -> None:
    lines = _lines(17)
    assert len(lines) == 2
    assert lines[-1].startswith("backfill: 2/2 partitions done, 34 records read")


def test_a_small_job_shows_no_rate() -> None:
    assert not any("records/s" in line or "ETA" in line for line in _lines(17))


def test_a_large_job_shows_its_rate_and_eta() -> None:
    lines = _lines(RATE_FROM)
    assert "records/s" in lines[0] and "ETA" in lines[0]  # one task of two done
    assert "records/s" in lines[-1] and "ETA" not in lines[-1]


def test_one_key_and_one_record_are_singular() -> None:
    """An ungrouped program (one key) printed "1 keys live"."""
    out = io.StringIO()
    progress = Progress(1, 1, out)
    progress.task_done(TaskSummary(task=0, records=1, sent=1, keys=1))
    assert "1/1 partitions done, 1 record read, 1 key live, 1 record out" in out.getvalue()
