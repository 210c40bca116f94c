"""The backfill's old module name: the task stage is in ``backfill/task_stage.py`` (issue 19
renamed it; three unrelated ``runner.py`` files were one too many). Kept so that code importing
the old name still works."""

from .task_stage import (
    END_MARKER_OFFSET,
    STATE_ROWS_PER_BATCH,
    WAIT_FOR_ALL_INPUTS_MS,
    BackfillError,
    TaskStage,
    TaskSummary,
    compiled_program,
    record_clock_config,
    state_batch,
)

__all__ = [
    "END_MARKER_OFFSET",
    "STATE_ROWS_PER_BATCH",
    "WAIT_FOR_ALL_INPUTS_MS",
    "BackfillError",
    "TaskStage",
    "TaskSummary",
    "compiled_program",
    "record_clock_config",
    "state_batch",
]
