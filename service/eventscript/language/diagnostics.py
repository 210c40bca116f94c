"""Compiler diagnostics: errors and warnings with a position, a message and a hint.

Every stage of the compiler reports through a :class:`Diagnostics` collection instead of
raising, so one run reports every problem it can find. Rendering follows the familiar
``file:line:col: error: message`` form, followed by the source line and a caret.
"""

from __future__ import annotations

from collections.abc import Iterator
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
        """``file:line:col: severity: message``, the source line, a caret, and the hint."""
        lines = [f"{self.pos}: {self.severity.value}: {self.message}"]
        text = self.pos.source.line_text(self.pos.line)
        if text:
            shown = text.expandtabs(1)
            lines.append("    " + shown)
            lines.append("    " + " " * (self.pos.col - 1) + "^")
        if self.hint:
            lines.append(f"    hint: {self.hint}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"{self.pos}: {self.severity.value}: {self.message}"


class Diagnostics:
    """An ordered collection of diagnostics, de-duplicated by position and message."""

    def __init__(self) -> None:
        self._items: list[Diagnostic] = []
        self._seen: set[tuple[str, int, str]] = set()

    def error(self, pos: Pos, message: str, hint: str | None = None, code: str = "") -> None:
        self._add(Diagnostic(Severity.ERROR, pos, message, hint, code))

    def warning(self, pos: Pos, message: str, hint: str | None = None, code: str = "") -> None:
        self._add(Diagnostic(Severity.WARNING, pos, message, hint, code))

    def _add(self, d: Diagnostic) -> None:
        key = (d.pos.source.name, d.pos.offset, d.message)
        if key in self._seen:
            return
        self._seen.add(key)
        self._items.append(d)

    def extend(self, other: Diagnostics) -> None:
        for d in other:
            self._add(d)

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self._items)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self._items if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self._items if d.severity is Severity.WARNING]

    def sorted(self) -> list[Diagnostic]:
        return sorted(self._items, key=lambda d: (d.pos.source.name, d.pos.offset))

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
