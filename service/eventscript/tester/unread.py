"""Trace events that no program will read, found before a run (``eventscript test``, ``dev``,
``produce`` and the playground).

A misspelt event name in a trace (``DoorClosd()``) is no trace error: the language reports it as
``$error`` 1 among the outputs, as a worker would for such a record. But a user who wrote the
trace by hand meant a declared event, and the output line carries neither the place in the trace
nor the name that was meant. So each such name is told once, at its first occurrence, with the
closest name that would have been read; the outputs stay what the language says.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ..language.hints import did_you_mean, listing
from .trace import TraceEvent, TraceItem

#: What every warning about an unread event ends with: it is no error of the trace.
CONSEQUENCE = "(each such event is an $error 1 in the output)"


@dataclass(frozen=True)
class UnreadEvent:
    """The first event of a name no program reads, and what to say of it: the close name that
    would have been read (``did you mean 'DoorClosed'?``), or the names that are."""

    event: TraceEvent
    suggestion: str

    def warning(self, unread: str) -> str:
        """The warning's text after its place; ``unread`` says why, with ``{name}`` for the name."""
        return f"{unread.format(name=repr(self.event.name))}; {self.suggestion} {CONSEQUENCE}"


def unread_events(items: list[TraceItem], readable: Collection[str]) -> list[UnreadEvent]:
    """The first event of each name in ``items`` that is not in ``readable`` (the names the
    programs take from the trace), in trace order."""
    found: dict[str, UnreadEvent] = {}
    for item in items:
        if not isinstance(item, TraceEvent) or item.name in readable or item.name in found:
            continue
        suggestion = did_you_mean(item.name, readable) or f"the events read are: {listing(readable)}"
        found[item.name] = UnreadEvent(item, suggestion)
    return list(found.values())
