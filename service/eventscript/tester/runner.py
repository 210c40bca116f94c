"""The tester's old module name: the simulated-time pipeline is in ``tester/pipeline.py`` (issue 19
renamed it; three unrelated ``runner.py`` files were one too many). Kept so that code importing
the old name still works."""

from .pipeline import OutputLine, Pipeline, run_trace, timed_events

__all__ = ["OutputLine", "Pipeline", "run_trace", "timed_events"]
