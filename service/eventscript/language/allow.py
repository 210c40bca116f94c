"""Accepting a compiler warning where it is meant: ``// eventscript: allow CODE, ...``.

Some warnings are right for one program and wrong for another (a grouped program on a fixed set of
sensors never ends its instances, and that is fine there). As with ruff's ``# noqa: CODE`` or
rustc's ``#[allow(lint)]``, a comment names the warnings accepted on one line: at the end of the
line a warning points at, or alone on the line before it. The language's comments stay comments:
the compiler only reads them here, to leave out the warnings they accept.

Every warning has a stable code (:data:`WARNING_CODES`); :class:`Acceptance` decides, as
diagnostics are collected (``Diagnostics(accept=...)`` in ``automata.compile``), which warnings
are accepted, so that every command and host (``check``, ``test -W``, ``topology check``, the
playground) shows the same ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .check_hints import suggest
from .diagnostics import Diagnostic, Diagnostics, Severity
from .lexer import tokenize
from .source import Pos, SourceFile

#: Each compiler warning's code and what it means (docs/language.md, 9.2, has the same table).
WARNING_CODES: dict[str, str] = {
    "never-emitted": "an output event is declared but never emitted",
    "never-read": "a variable is set but never read",
    "never-set": "a variable is never given a value (each read is $error 3)",
    "maybe-unset": "a variable may be read before it is set",
    "ambiguous": "one event can match two markers (or two copies of one) from the same state",
    "same-instant": "two time markers may fire at the same instant (only the first written fires)",
    "never-ends": "a grouped program never ends (some of) its instances",
    "matches-nothing": "the regular expression matches no sequence of events",
    "hours-minutes": "a two-component arrive[...] pattern whose hour is '.' is read as hours:minutes",
    "out-of-range": "an arrive[...] component in parentheses is a constant out of range ($error 8 when set)",
    "unknown-allow": "an allow comment names a code that is not a warning's",
    "unused-allow": "an allow comment accepts no warning on its line",
}


@dataclass(frozen=True)
class Allowed:
    """One code named by an allow comment: where it is written, and the line it covers."""

    code: str
    #: Where the code is written (an unknown or unused one is warned of there).
    pos: Pos
    #: The line whose warnings it accepts.
    line: int


#: ``eventscript: allow`` in a line comment (from its ``//``), and the comma-separated codes after it.
_ALLOW = re.compile(r"//.*?\beventscript:\s*allow\b(?P<codes>[ \t]*[\w-]+(?:[ \t]*,[ \t]*[\w-]+)*)?")
_CODE = re.compile(r"[\w-]+")


class FileComments:
    """The line comments the lexer read in one file (the program or a file it includes), and the
    allows among them. Only the lexer knows what is a comment: ``"// eventscript: allow ..."``
    in a string literal is text."""

    def __init__(self, source: SourceFile) -> None:
        self.source = source
        #: The lines holding nothing but a comment (an allow there covers the next other line).
        self._alone: set[int] = set()
        self._allow_comments: list[tuple[Pos, str]] = []
        self._allows: list[Allowed] | None = None

    def add(self, pos: Pos, text: str) -> None:
        """One line comment, at ``pos``, its text from ``//`` (the lexer's ``on_line_comment``)."""
        if not self.source.line_text(pos.line)[: pos.col - 1].strip():
            self._alone.add(pos.line)
        if "eventscript:" in text:
            self._allow_comments.append((pos, text))
            self._allows = None

    def allows(self) -> list[Allowed]:
        """The codes the allow comments name, each with the line it covers: its own line, or, for a
        comment alone on its line, the next line that is not a comment alone."""
        if self._allows is None:
            self._allows = []
            for pos, text in self._allow_comments:
                m = _ALLOW.match(text)
                if m is not None:
                    covered = self._covered_line(pos.line) if pos.line in self._alone else pos.line
                    codes_at = m.start("codes") if m["codes"] else m.end()
                    self._allows += _codes(self.source, pos.offset + codes_at, m["codes"] or "", covered)
        return self._allows

    def _covered_line(self, line: int) -> int:
        """The line a comment alone on ``line`` covers: the next that is not a comment alone (so
        that a reason and an allow can stand on lines of their own above the code)."""
        following = line + 1
        while following in self._alone:
            following += 1
        return following


def allows_in(source: SourceFile) -> list[Allowed]:
    """The codes the allow comments of ``source`` itself name (not of the files it includes)."""
    comments = FileComments(source)
    tokenize(source, Diagnostics(), allow_include=False, on_line_comment=comments.add)
    return comments.allows()


def _codes(source: SourceFile, offset: int, text: str, covered: int) -> list[Allowed]:
    if not _CODE.search(text):  # "allow" and nothing after it
        return [Allowed("", source.pos(offset), covered)]
    return [Allowed(m[0], source.pos(offset + m.start()), covered) for m in _CODE.finditer(text)]


class Acceptance:
    """The allow comments of one compilation (the program's and its included files', as the lexer
    reads them: ``parse(..., on_line_comment=acceptance.read_comment)``): which warnings they
    accept, and what is wrong with them (a code that is no warning's; an allow that accepted
    nothing)."""

    def __init__(self) -> None:
        self._files: dict[int, FileComments] = {}
        self._used: set[int] = set()
        #: How many warnings were accepted (``check`` says so).
        self.accepted = 0

    def read_comment(self, pos: Pos, text: str) -> None:
        """One line comment of the program or of a file it includes, as the lexer reads it."""
        comments = self._files.get(id(pos.source))
        if comments is None:
            comments = self._files[id(pos.source)] = FileComments(pos.source)
        comments.add(pos, text)

    def accepts(self, d: Diagnostic) -> bool:
        """Whether an allow comment accepts ``d`` (a warning with a code, on the allow's line)."""
        if d.severity is not Severity.WARNING or not d.code:
            return False
        comments = self._files.get(id(d.pos.source))
        for a in comments.allows() if comments else []:
            if a.code == d.code and a.line == d.pos.line:
                self._used.add(id(a))
                self.accepted += 1
                return True
        return False

    def report(self, d: Diagnostics, *, complete: bool) -> None:
        """Warn about allows naming unknown codes, and, when ``complete`` (the program compiled
        without errors and every analysis ran to the end), about allows that accepted nothing: an
        allow left behind after a fix would hide a later warning of its kind on that line."""
        for comments in self._files.values():
            for a in comments.allows():
                if a.code not in WARNING_CODES:
                    d.warning(a.pos, _unknown_message(a.code), _unknown_hint(a.code), "unknown-allow")
                elif complete and id(a) not in self._used:
                    d.warning(
                        a.pos,
                        f"'allow {a.code}' accepts no warning: line {a.line} has no {a.code} warning",
                        "remove it (the warning it accepted is gone), or put it on the line the warning points at",
                        "unused-allow",
                    )


def _unknown_message(code: str) -> str:
    if not code:
        return "'eventscript: allow' names no warning code"
    return f"'allow {code}': {code!r} is not a warning's code"


def _unknown_hint(code: str) -> str:
    return suggest(code, WARNING_CODES, "write one of " + ", ".join(WARNING_CODES))
