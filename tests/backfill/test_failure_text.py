"""What a failed Spark job tells the user: the executor's own exception, not py4j's wrapper."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from eventscript.backfill.main import _spark_failure


def test_a_known_backfill_error_is_shown_by_its_message() -> None:
    text = (
        "An error occurred while calling o74.getResult.\nTraceback (most recent call last):\n"
        '  File "x.py", line 3\neventscript.backfill.task_stage.BackfillError: task 1 was given record t:0:5\n'
    )
    assert _spark_failure(Exception(text)) == "task 1 was given record t:0:5"


def test_any_other_python_exception_is_shown_by_its_last_line() -> None:
    text = (
        "An error occurred while calling o74.getResult.\n: org.apache.spark.SparkException: Job aborted\n"
        "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback (most recent "
        'call last):\n  File "worker.py", line 9, in main\nImportError: cannot import x\nDuring handling:\n'
        "ModuleNotFoundError: No module named 'eventscript'\n\tat org.apache.spark.api.python.Foo(Bar.scala:1)\n"
    )
    assert _spark_failure(Exception(text)) == "ModuleNotFoundError: No module named 'eventscript'"


def test_without_a_python_exception_the_first_line_is_shown() -> None:
    assert _spark_failure(Exception("Job 3 cancelled\nmore")) == "Job 3 cancelled"
    assert _spark_failure(Exception("")) == "Exception"
