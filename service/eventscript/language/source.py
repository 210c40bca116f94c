"""Source files and positions.

Every token and syntax-tree node carries a :class:`Pos` so that any diagnostic, at any stage of
the compiler, can say ``file:line:col`` and show the offending line. Included files keep their
own :class:`SourceFile`, so positions inside an ``#include``d file point into that file.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path

BYTE_ORDER_MARK = "\ufeff"
_NEWLINE = re.compile("\n")


@dataclass(eq=False)
class SourceFile:
    """The text of one program or included file, with a line index for position lookups."""

    name: str
    text: str
    path: Path | None = None
    _line_starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        # A UTF-8 byte-order mark (editors on Windows write one) is not part of the program: drop
        # it so that it is neither an "unexpected character" nor shifts the columns of line 1.
        if self.text.startswith(BYTE_ORDER_MARK):
            self.text = self.text[len(BYTE_ORDER_MARK) :]
        # (found by the regular expression engine, not a Python loop over every character: a
        # trace of 100,000 events is four million characters)
        self._line_starts = [0, *(m.end() for m in _NEWLINE.finditer(self.text))]

    @classmethod
    def read(cls, path: str | Path) -> SourceFile:
        p = Path(path)
        return cls(name=str(path), text=p.read_text(encoding="utf-8"), path=p)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line] + 1

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        if line < 1 or line > len(self._line_starts):
            return ""
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    def pos(self, offset: int) -> Pos:
        line, col = self.line_col(offset)
        return Pos(self, offset, line, col)


@dataclass(eq=False, slots=True)
class Pos:
    """A point in a source file. ``order`` makes positions comparable across included files.

    Treated as immutable, but not a frozen dataclass: the lexer makes one per token, and a frozen
    dataclass's ``__init__`` (``object.__setattr__`` per field) costs three times a plain one's.
    Equality is identity (``eq=False``), so a position may be a dictionary key."""

    source: SourceFile
    offset: int
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.source.name}:{self.line}:{self.col}"


#: A position for things that have no place in a file (built-ins, synthesized nodes).
BUILTIN_SOURCE = SourceFile(name="<builtin>", text="")
NOWHERE = Pos(BUILTIN_SOURCE, 0, 1, 1)
