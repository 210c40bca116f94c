"""Reading the trace a command was given (``--trace FILE``), or saying why it cannot be read.

Every command that takes a trace (``test``, ``dev``, ``produce``, ``export``) reports the same two
problems the same way: a file that cannot be read (the reason, not Python's ``[Errno 2] ...``) and
a trace with a mistake in it (``TraceError`` names file:line:col and what is wrong).
"""

from __future__ import annotations

import sys

from ..tester.trace import TraceError, TraceItem, read_trace


def read_trace_or_report(path: str) -> list[TraceItem] | None:
    """The items of the trace at ``path``, or None after printing to stderr why not."""
    try:
        return read_trace(path)
    except OSError as exc:
        print(f"{path}: error: cannot read the trace: {exc.strerror or exc}", file=sys.stderr)
    except TraceError as exc:
        print(str(exc), file=sys.stderr)
    return None
