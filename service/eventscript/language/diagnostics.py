"""Compiler diagnostics: errors and warnings with a position, a message and a hint.

Every stage of the compiler reports through a :class:`Diagnostics` collection instead of
raising, so one run reports every problem it can find. Rendering follows the familiar
``file:line:col: error: message`` form, followed by the source line and a caret.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from .source import Pos


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    pos: Pos
    message: str
    hint: str | None = None
    code: str = ""

    def render(self) -> str:
        """``file:line:col: severity: message``, the source line, a caret, and the hint.

        A long line is shown as a window around the caret, so that a generated one-line program
        with thousands of errors does not print its whole text thousands of times.
        """
        lines = [str(self), *self.quote()]
        if self.hint:
            lines.append(f"    hint: {self.hint}")
        return "\n".join(lines)

    def quote(self) -> list[str]:
        """The lines under the message: the source line (a window of it) and a caret under the
        column; none when the line has no text. (Also under a topology's finding that carries a
        program's warning: ``topology.findings.program_diagnostic``.)"""
        text = self.pos.source.line_text(self.pos.line)
        if not text:
            return []
        shown, caret = quote_window(text, self.pos.col - 1)
        return ["    " + shown, "    " + " " * caret + "^"]

    def __str__(self) -> str:
        """``file:line:col: severity: message [code]`` (the code, when there is one, is what an
        ``// eventscript: allow CODE`` comment names: language.allow)."""
        tag = f" [{self.code}]" if self.code else ""
        return f"{self.pos}: {self.severity.value}: {self.message}{tag}"


#: At most this many characters of a source line are quoted under a message.
QUOTE_WIDTH = 100
ELLIPSIS = "..."
#: At most this many errors (and as many warnings) are kept; the rest are only counted.
MAX_MESSAGES = 50


def quote_window(text: str, index: int, width: int = QUOTE_WIDTH) -> tuple[str, int]:
    """The part of ``text`` to quote for a caret at ``index`` (0-based), and the caret's column
    in it. Lines up to ``width`` characters are quoted whole; longer ones are cut to ``width``
    characters around the caret, with "..." where text was left out. Tabs count as one column,
    like the column numbers of positions."""
    text = text.expandtabs(1)
    index = max(0, min(index, len(text)))
    if len(text) <= width:
        return text, index
    start = max(0, min(index - width // 2, len(text) - width))
    end = start + width
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS if end < len(text) else ""
    return prefix + text[start:end] + suffix, len(prefix) + index - start


@dataclass(frozen=True)
class Omitted:
    """The summary line for messages beyond :data:`MAX_MESSAGES`: "... and N more errors"."""

    severity: Severity
    count: int
    source_name: str

    @property
    def message(self) -> str:
        noun = self.severity.value + ("s" if self.count != 1 else "")
        return f"and {self.count} more {noun} (only the first {MAX_MESSAGES} are shown)"

    def render(self) -> str:
        return f"{self.source_name}: {self.severity.value}: {self.message}"

    def __str__(self) -> str:
        return self.render()


class Diagnostics:
    """An ordered collection of diagnostics, de-duplicated by position and message.

    Only the first :data:`MAX_MESSAGES` errors and warnings are kept (a generated program can
    have tens of thousands); :meth:`sorted` ends with an :class:`Omitted` line per severity
    that had more.
    """

    def __init__(self, accept: Callable[[Diagnostic], bool] | None = None) -> None:
        #: Says whether a warning is accepted where it is (an allow comment, language.allow):
        #: accepted ones are left out as they come, before the limit of MAX_MESSAGES counts them.
        self._accept = accept
        self._items: list[Diagnostic] = []
        self._seen: set[tuple[str, int, str]] = set()
        self._kept: dict[Severity, int] = {Severity.ERROR: 0, Severity.WARNING: 0}
        self._omitted: dict[Severity, Omitted] = {}

    def error(self, pos: Pos, message: str, hint: str | None = None, code: str = "") -> None:
        self._add(Diagnostic(Severity.ERROR, pos, message, hint, code))

    def warning(self, pos: Pos, message: str, hint: str | None = None, code: str = "") -> None:
        self._add(Diagnostic(Severity.WARNING, pos, message, hint, code))

    def _add(self, d: Diagnostic) -> None:
        key = (d.pos.source.name, d.pos.offset, d.message)
        if key in self._seen:
            return
        self._seen.add(key)
        if self._accept is not None and self._accept(d):
            return
        if self._kept[d.severity] >= MAX_MESSAGES:
            before = self._omitted.get(d.severity)
            self._omitted[d.severity] = Omitted(d.severity, (before.count if before else 0) + 1, d.pos.source.name)
            return
        self._kept[d.severity] += 1
        self._items.append(d)

    def extend(self, other: Diagnostics) -> None:
        for d in other:
            self._add(d)
        for o in other.omitted:
            before = self._omitted.get(o.severity)
            self._omitted[o.severity] = Omitted(o.severity, (before.count if before else 0) + o.count, o.source_name)

    @property
    def omitted(self) -> list[Omitted]:
        """Summaries of the messages left out beyond :data:`MAX_MESSAGES`, errors first."""
        return [self._omitted[s] for s in (Severity.ERROR, Severity.WARNING) if s in self._omitted]

    def has_room(self, severity: Severity) -> bool:
        """Whether one more message of this severity would be kept (and so shown)."""
        return self._kept[severity] < MAX_MESSAGES

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self._items)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self._items if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self._items if d.severity is Severity.WARNING]

    def sorted(self) -> list[Diagnostic | Omitted]:
        """The kept diagnostics in file order, then a summary of any left out."""
        kept = sorted(self._items, key=lambda d: (d.pos.source.name, d.pos.offset))
        return [*kept, *self.omitted]

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def render(self) -> str:
        return "\n".join(d.render() for d in self.sorted())


class CompileError(Exception):
    """Raised by entry points that need a program when the source has errors."""

    def __init__(self, diagnostics: Diagnostics) -> None:
        self.diagnostics = diagnostics
        first = diagnostics.errors[0] if diagnostics.errors else None
        super().__init__(str(first) if first else "compilation failed")
