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


#: ``eventscript: allow`` in a line comment, and the comma-separated codes after it.
_ALLOW = re.compile(r"//.*?\beventscript:\s*allow\b(?P<codes>[ \t]*[\w-]+(?:[ \t]*,[ \t]*[\w-]+)*)?")
_CODE = re.compile(r"[\w-]+")
_COMMENT_ONLY = re.compile(r"[ \t]*//")


def allows_in(source: SourceFile) -> list[Allowed]:
    """The codes the allow comments of ``source`` name, each with the line it covers: its own
    line, or, for a comment alone on its line, the next line that is not a comment alone."""
    found: list[Allowed] = []
    if "eventscript:" not in source.text:  # most programs: no line to look at
        return found
    lines = source.text.split("\n")
    start = 0
    for number, text in enumerate(lines, 1):
        m = _ALLOW.search(text)
        if m is not None:
            covered = _covered_line(lines, number) if _COMMENT_ONLY.match(text) else number
            codes_at = m.start("codes") if m["codes"] else m.end()
            found += _codes(source, start + codes_at, m["codes"] or "", covered)
        start += len(text) + 1
    return found


def _covered_line(lines: list[str], number: int) -> int:
    """The line a comment alone on line ``number`` covers: the next that is not a comment alone
    (so that a reason and an allow can stand on lines of their own above the code)."""
    following = number + 1
    while following <= len(lines) and _COMMENT_ONLY.match(lines[following - 1]):
        following += 1
    return following


def _codes(source: SourceFile, offset: int, text: str, covered: int) -> list[Allowed]:
    if not _CODE.search(text):  # "allow" and nothing after it
        return [Allowed("", source.pos(offset), covered)]
    return [Allowed(m[0], source.pos(offset + m.start()), covered) for m in _CODE.finditer(text)]


class Acceptance:
    """The allow comments of one compilation: which warnings they accept, and what is wrong with
    them (a code that is no warning's; an allow that accepted nothing)."""

    def __init__(self, main: SourceFile) -> None:
        self._files: dict[int, list[Allowed]] = {}
        self._used: set[int] = set()
        #: How many warnings were accepted (``check`` says so).
        self.accepted = 0
        self._scan(main)

    def _scan(self, source: SourceFile) -> list[Allowed]:
        """The allows of ``source``, read once (an included file's, when a warning first points
        into it)."""
        allows = self._files.get(id(source))
        if allows is None:
            allows = self._files[id(source)] = allows_in(source)
        return allows

    def accepts(self, d: Diagnostic) -> bool:
        """Whether an allow comment accepts ``d`` (a warning with a code, on the allow's line)."""
        if d.severity is not Severity.WARNING or not d.code:
            return False
        for a in self._scan(d.pos.source):
            if a.code == d.code and a.line == d.pos.line:
                self._used.add(id(a))
                self.accepted += 1
                return True
        return False

    def report(self, d: Diagnostics, *, complete: bool) -> None:
        """Warn about allows naming unknown codes, and, when ``complete`` (the program compiled
        without errors and every analysis ran to the end), about allows that accepted nothing: an
        allow left behind after a fix would hide a later warning of its kind on that line."""
        for allows in self._files.values():
            for a in allows:
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
