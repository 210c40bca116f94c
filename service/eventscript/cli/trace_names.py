"""Trace events that no program will read, said on stderr before the run (``eventscript test``,
``dev``, ``produce``): once per name, at its first ``file:line:col``, with the name that was
probably meant (``tester/unread.py`` finds them; the playground underlines them in the trace)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TextIO

from ..tester.trace import TraceItem
from ..tester.unread import unread_events


def warn_unread_events(items: list[TraceItem], readable: Collection[str], unread: str, out: TextIO) -> int:
    """Print a warning for the first event of each name in ``items`` that is not in ``readable``
    (the names the programs take from the trace); ``unread`` says why, with ``{name}`` for the
    name. Return how many names were warned about."""
    found = unread_events(items, readable)
    for u in found:
        print(f"{u.event.pos}: warning: {u.warning(unread)}", file=out)
    return len(found)
