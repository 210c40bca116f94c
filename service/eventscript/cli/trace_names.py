"""Trace events that no program will read, said before the run (``eventscript test``).

A misspelt event name in a trace (``DoorClosd()``) is no trace error: the language reports it as
``$error`` 1 among the outputs, as a worker would for such a record. But a user who wrote the
trace by hand meant a declared event, and the output line carries neither the place in the trace
nor the name that was meant. So ``test`` warns once per such name, on stderr, at its first
occurrence (``file:line:col``), with the closest name that would have been read; the outputs and
the exit status stay what the language says.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TextIO

from ..language.hints import did_you_mean, listing
from ..tester.trace import TraceEvent, TraceItem


def warn_unread_events(items: list[TraceItem], readable: Collection[str], unread: str, out: TextIO) -> int:
    """Print a warning for the first event of each name in ``items`` that is not in ``readable``
    (the names the programs take from the trace); ``unread`` says why, with ``{name}`` for the
    name. Return how many names were warned about."""
    warned: set[str] = set()
    for item in items:
        if not isinstance(item, TraceEvent) or item.name in readable or item.name in warned:
            continue
        warned.add(item.name)
        suggestion = did_you_mean(item.name, readable) or f"the events read are: {listing(readable)}"
        print(
            f"{item.pos}: warning: {unread.format(name=repr(item.name))}; {suggestion} "
            "(each such event is an $error 1 in the output)",
            file=out,
        )
    return len(warned)
