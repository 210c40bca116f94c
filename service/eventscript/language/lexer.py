"""The lexer: source text to tokens, with ``#include`` directives spliced in.

``#include "file"`` works like C's: the included file's tokens replace the directive, so an
include may appear anywhere a declaration can. Paths are relative to the including file.
Tokens from an included file keep positions in that file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import ClassVar

from .diagnostics import Diagnostics
from .source import Pos, SourceFile

KEYWORDS = frozenset(
    {
        "in",
        "out",
        "type",
        "function",
        "case",
        "group",
        "for",
        "new",
        "true",
        "false",
        "arrive",
        "elapse",
        "elapsed",
    }
)

# Longest first, so that "<=" wins over "<".
PUNCTUATION = (
    "!>",
    "==",
    "!=",
    "<=",
    ">=",
    "&&",
    "||",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    "?",
    ".",
    "=",
    "<",
    ">",
    "+",
    "-",
    "*",
    "/",
    "%",
    "!",
    "&",
    "|",
)

MAX_INCLUDE_DEPTH = 32

#: The tokens most of a program is made of, as alternatives of one pattern that the lexer matches
#: at each position (as CPython's tokenize does); the group that matched names the kind. Order
#: matters: comments before "/", longer punctuation before its prefixes. A number ends where the
#: language's grammar ends it ("5msec" is 5 and msec; "1.e3" is 1 . e3), and only simple strings
#: are here: a string with an escape, a surrogate or no closing quote goes the long way, which
#: says what is wrong. ``\w`` is exactly ``str.isalnum()`` or "_", as the language's words are.
_COMMON_TOKEN = re.compile(
    "(?:"
    + "|".join(
        (
            r"(?P<word>[A-Za-z_$]\w*)",
            "(?P<punctuation>"
            + "|".join(re.escape(p) for p in PUNCTUATION if len(p) > 1)
            + "|["
            + "".join(re.escape(p) for p in PUNCTUATION if len(p) == 1 and p != "/")
            + r"]|/(?![/*]))",
            r"(?P<newline>\n)",
            r"(?P<number>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)",
            '(?P<string>"[^"\\\\\\n\\ud800-\\udfff]*")',
            r"(?P<space>[ \t\r\f\v]+)",
            r"(?P<line_comment>//[^\n]*)",
            r"(?P<block_comment>/\*)",
        )
    )
    + r")[ \t\r\f\v]*"  # the blanks after a token, in the same step
)
#: The rest of an identifier after its first character.
_WORD_TAIL = re.compile(r"\w*")

#: Integer literals with more significant digits are rejected by the lexer: far beyond a long (19
#: digits) and a double (309), and below Python's limit for converting text to int (4,300 digits)
#: (a trace may still hold a long integer meant for a double: the runner reports that one).
MAX_INT_DIGITS = 4000
LONG_RANGE_HINT = (
    "a long holds -9223372036854775808 to 9223372036854775807; for larger numbers write a double, e.g. 1e20"
)


ESCAPES_HINT = "the escapes are \\n \\t \\r \\b \\f \\\" \\' \\\\ \\0 and \\uXXXX; write a backslash as \\\\"
SURROGATE_HINT = (
    "\\uD800 to \\uDFFF are halves of a UTF-16 pair: write a high half \\uD800-\\uDBFF followed by "
    'a low half \\uDC00-\\uDFFF ("\\uD83D\\uDE00"), or the character itself'
)


def _is_surrogate(ch: str) -> bool:
    return "\ud800" <= ch <= "\udfff"


def _hex4(text: str, start: int) -> int | None:
    """The value of four hexadecimal digits at ``start``, or None."""
    digits = text[start : start + 4]
    if len(digits) == 4 and all(h in "0123456789abcdefABCDEF" for h in digits):
        return int(digits, 16)
    return None


def _line_end(text: str, i: int) -> int:
    j = text.find("\n", i)
    return len(text) if j < 0 else j


def _unexpected_hint(ch: str) -> str | None:
    if ch == "'":
        return 'strings are written in double quotes: "text"'
    if ch in "`\u2018\u2019\u201c\u201d":
        return 'strings are written in plain double quotes: "text"'
    if _is_surrogate(ch):
        return "the program text contains half of a UTF-16 surrogate pair: save it as UTF-8"
    return None


@dataclass(slots=True, unsafe_hash=True)
class Token:
    """A token. ``kind`` is the punctuation or keyword text itself, or IDENT/INT/FLOAT/STRING/EOF.

    Treated as immutable and hashable, but not a frozen dataclass: the lexer makes one per token,
    and a frozen dataclass's ``__init__`` (``object.__setattr__`` per field) costs three times a
    plain one's."""

    kind: str
    text: str
    value: object
    pos: Pos
    #: Position of the token in the whole spliced stream: program-text order across includes.
    index: int = 0

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.text!r} @ {self.pos})"

    def int_value(self) -> int:
        """The value of an INT token, typed (the parser asks only after checking the kind)."""
        assert isinstance(self.value, int), self
        return self.value

    def float_value(self) -> float:
        """The value of a FLOAT token, typed (the parser asks only after checking the kind)."""
        assert isinstance(self.value, float), self
        return self.value


def touching(first: Token, second: Token) -> bool:
    """Whether ``second`` follows ``first`` in the same file with nothing between them (``.5``,
    ``1.``: a number written with a bare point, which the parser and the trace reader point out)."""
    return first.pos.source is second.pos.source and first.pos.offset + len(first.text) == second.pos.offset


BARE_POINT = "a double literal needs digits on both sides of the point"


class Lexer:
    """Turns one source file (and what it includes) into a token list."""

    def __init__(
        self,
        diagnostics: Diagnostics,
        *,
        allow_include: bool = True,
        on_line_comment: Callable[[Pos, str], None] | None = None,
    ) -> None:
        self.diagnostics = diagnostics
        self.allow_include = allow_include
        #: Told of each line comment (where it starts, its text from ``//``), of the program and
        #: of what it includes: allow comments (language/allow.py) are comments only where the
        #: lexer reads one, not inside a string literal.
        self.on_line_comment = on_line_comment
        self._stack: list[Path] = []
        self._scanned = 0  # the tokens the last scan made (the index of the EOF token after them)

    def tokenize(self, source: SourceFile) -> list[Token]:
        tokens: list[Token] = []
        self._enter(source)
        try:
            self._lex_into(source, tokens)
        finally:
            self._stack.clear()
        tokens.append(Token("EOF", "", None, source.pos(len(source.text)), len(tokens)))
        return tokens

    def tokens(self, source: SourceFile, start: int = 0) -> Iterator[Token]:
        """The tokens of ``source`` from offset ``start`` on, one at a time, the same as
        :meth:`tokenize`'s list (EOF last): a reader that consumes them as they come (the trace
        reader) keeps none of those it has read alive."""
        self._enter(source)
        # (chained, not a generator around the scanner's: one step less for each token)
        return chain(self._scan(source, 0, start), self._end(source))

    def _end(self, source: SourceFile) -> Iterator[Token]:
        """The EOF token after :meth:`_scan` has read ``source`` to its end."""
        self._stack.clear()
        yield Token("EOF", "", None, source.pos(len(source.text)), self._scanned)

    def _enter(self, source: SourceFile) -> None:
        if source.path is not None:
            # The including file itself is on the stack, so that a.es -> b.es -> a.es is a cycle
            # reported in b.es rather than a.es being spliced in a second time.
            self._stack.append(source.path.resolve())

    # -- scanning -------------------------------------------------------------------------

    def _lex_into(self, src: SourceFile, out: list[Token]) -> None:
        """Append the tokens of ``src`` (and of what it includes) to ``out``."""
        out.extend(self._scan(src, len(out)))

    def _scan(self, src: SourceFile, index: int, start: int = 0) -> Generator[Token, None, int]:
        """The tokens of ``src`` (and of what it includes) from offset ``start``, numbered from
        ``index`` on; returns the number after the last (and keeps it in ``_scanned``).

        The common tokens come from one match of :data:`_COMMON_TOKEN` at each position, and the
        position of a token from a line count kept while scanning: a bisect and two calls per
        token made up most of the compile time of lexing. Whatever the pattern does not match
        (directives, letters outside ASCII, strings with escapes, stray characters) goes to
        :meth:`_irregular`, which says what is wrong.
        """
        text = src.text
        n = len(text)
        match = _COMMON_TOKEN.match
        i = start
        line, col = src.line_col(start)
        line_start = start - col + 1
        at_line_start = col == 1
        pending: list[Token] = []  # the tokens of an irregular reader (or an included file)
        while i < n:
            m = match(text, i)
            if m is None:
                if text[i] == "#" and at_line_start:
                    i = self._directive(src, i, pending)
                else:
                    at_line_start = False
                    i = self._irregular(src, i, pending)
                for token in pending:
                    token.index = index
                    index += 1
                    yield token
                pending.clear()
                # Strings may continue past a backslash-newline: find the line anew.
                line, col = src.line_col(i)
                line_start = i - col + 1
                continue
            kind = m.lastgroup
            if kind == "word":
                at_line_start = False
                word = m["word"]
                yield Token(
                    word if word in KEYWORDS else "IDENT",
                    word,
                    word,
                    Pos(src, i, line, i - line_start + 1),
                    index,
                )
                index += 1
            elif kind == "punctuation":
                at_line_start = False
                p = m["punctuation"]
                yield Token(p, p, None, Pos(src, i, line, i - line_start + 1), index)
                index += 1
            elif kind == "newline":
                at_line_start = True
                line += 1
                line_start = i + 1
            elif kind == "number":
                at_line_start = False
                yield self._number(m["number"], Pos(src, i, line, i - line_start + 1), index)
                index += 1
            elif kind == "string":
                at_line_start = False
                quoted = m["string"]
                yield Token("STRING", quoted, quoted[1:-1], Pos(src, i, line, i - line_start + 1), index)
                index += 1
            elif kind == "block_comment":
                close = text.find("*/", i + 2)
                if close < 0:
                    self.diagnostics.error(src.pos(i), "unterminated comment", "close it with */")
                    self._scanned = index
                    return index
                last_newline = text.rfind("\n", i, close)
                if last_newline >= 0:
                    line += text.count("\n", i, close)
                    line_start = last_newline + 1
                i = close + 2
                continue
            elif kind == "line_comment" and self.on_line_comment is not None:
                self.on_line_comment(Pos(src, i, line, i - line_start + 1), m["line_comment"])
            # else: blanks, or a line comment (which ends before its newline)
            i = m.end()
        self._scanned = index
        return index

    def _irregular(self, src: SourceFile, i: int, out: list[Token]) -> int:
        """The token at ``i`` that :data:`_COMMON_TOKEN` does not match; returns where it ends."""
        text = src.text
        ch = text[i]
        if ch.isalpha():  # a letter outside ASCII starts an identifier too
            j = _WORD_TAIL.match(text, i + 1).end()  # type: ignore[union-attr]  # \w* always matches
            word = text[i:j]
            out.append(Token(word if word in KEYWORDS else "IDENT", word, word, src.pos(i), len(out)))
            return j
        if ch == '"':
            return self._string(src, i, out)
        if ch == "'" and text.find("'", i + 1, _line_end(text, i)) > 0:
            # 'text' as in other languages: say so once, then read it as a string so that
            # the rest of the program is still checked.
            self.diagnostics.error(src.pos(i), 'unexpected character "\'"', _unexpected_hint(ch))
            return self._string(src, i, out, quote="'")
        self.diagnostics.error(src.pos(i), f"unexpected character {ch!r}", _unexpected_hint(ch))
        return i + 1

    def _number(self, lexeme: str, pos: Pos, index: int) -> Token:
        """The INT or FLOAT token of a lexeme :data:`_COMMON_TOKEN` matched as a number."""
        if not lexeme.isdigit():  # a fraction or an exponent
            value = float(lexeme)
            if value == float("inf"):  # 1e400: Python rounds it to Infinity without a word
                self.diagnostics.error(
                    pos,
                    f"{lexeme} is beyond the range of a double (at most about 1.8e308)",
                    "write a smaller number; for Infinity, divide: 1.0 / 0.0",
                )
                value = 0.0
            return Token("FLOAT", lexeme, value, pos, index)
        # Leading zeros count towards Python's conversion limit too: convert without them.
        significant = lexeme.lstrip("0") or "0"
        if len(significant) > MAX_INT_DIGITS:
            # No type of the language could hold the number. The token keeps 0 so that
            # nothing later trips over it.
            self.diagnostics.error(
                pos, f"integer literal out of range: it has {len(significant)} digits", LONG_RANGE_HINT
            )
            return Token("INT", lexeme, 0, pos, index)
        return Token("INT", lexeme, int(significant), pos, index)

    _ESCAPES: ClassVar[dict[str, str]] = {
        "n": "\n",
        "t": "\t",
        "r": "\r",
        "b": "\b",
        "f": "\f",
        '"': '"',
        "\\": "\\",
        "'": "'",
        "0": "\0",
    }

    def _string(self, src: SourceFile, i: int, out: list[Token], quote: str = '"') -> int:
        text = src.text
        n = len(text)
        j = i + 1
        chars: list[str] = []
        while j < n and text[j] != quote:
            c = text[j]
            if c == "\n":
                break
            if c == "\\":
                if j + 1 >= n:
                    break
                e = text[j + 1]
                if e == "u":
                    j = self._unicode_escape(src, j, chars)
                    continue
                if e in self._ESCAPES:
                    chars.append(self._ESCAPES[e])
                else:
                    self.diagnostics.error(src.pos(j), f"unknown escape sequence \\{e}", ESCAPES_HINT)
                j += 2
                continue
            if _is_surrogate(c):  # only from program text given as a Python string (files are UTF-8)
                self.diagnostics.error(
                    src.pos(j), f"lone surrogate character U+{ord(c):04X} in a string literal", SURROGATE_HINT
                )
            else:
                chars.append(c)
            j += 1
        if j >= n or text[j] != quote:
            self.diagnostics.error(src.pos(i), "unterminated string literal", 'close it with " on the same line')
            out.append(Token("STRING", text[i:j], "".join(chars), src.pos(i), len(out)))
            return j
        out.append(Token("STRING", text[i : j + 1], "".join(chars), src.pos(i), len(out)))
        return j + 1

    def _unicode_escape(self, src: SourceFile, j: int, chars: list[str]) -> int:
        """``\\uXXXX`` at ``j``; a UTF-16 surrogate pair of two escapes is one character.

        A surrogate on its own is not a character: such a string could not be written as UTF-8
        (or JSON) later, so it is rejected here, where the program can say where it is.
        """
        code = _hex4(src.text, j + 2)
        if code is None:
            self.diagnostics.error(
                src.pos(j), "bad \\u escape: four hexadecimal digits must follow", "write e.g. \\u00e9 for \u00e9"
            )
            return j + 2
        if 0xD800 <= code <= 0xDBFF and src.text.startswith("\\u", j + 6):
            low = _hex4(src.text, j + 8)
            if low is not None and 0xDC00 <= low <= 0xDFFF:
                chars.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                return j + 12
        if 0xD800 <= code <= 0xDFFF:
            self.diagnostics.error(src.pos(j), f"lone surrogate \\u{code:04X} in a string literal", SURROGATE_HINT)
            return j + 6
        chars.append(chr(code))
        return j + 6

    def _directive(self, src: SourceFile, i: int, out: list[Token]) -> int:
        text = src.text
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        line = text[i:end]
        body = line[1:].strip()
        pos = src.pos(i)
        if not body.startswith("include"):
            self.diagnostics.error(pos, f"unknown directive {line.strip()!r}", 'the only directive is #include "file"')
            return end
        if not self.allow_include:
            self.diagnostics.error(pos, "#include is not allowed here")
            return end
        rest = body[len("include") :].strip()
        if len(rest) < 2 or rest[0] != '"' or rest.find('"', 1) < 0:
            self.diagnostics.error(pos, "#include needs a quoted file name", 'write #include "types.es"')
            return end
        name = rest[1 : rest.find('"', 1)]
        base = src.path.parent if src.path is not None else Path.cwd()
        try:
            target = (base / name).resolve()
        except (OSError, ValueError) as exc:  # ValueError: a NUL character in the name
            self.diagnostics.error(pos, f"cannot read included file {name!r}: {exc}")
            return end
        if target in self._stack or (src.path is not None and target == src.path.resolve()):
            self.diagnostics.error(pos, f"#include cycle: {name!r} is already being included")
            return end
        if len(self._stack) >= MAX_INCLUDE_DEPTH:
            self.diagnostics.error(pos, "#include nesting is too deep")
            return end
        try:
            included = SourceFile(
                name=str(Path(src.name).parent / name) if src.path else name,
                text=target.read_text(encoding="utf-8"),
                path=target,
            )
        except OSError as exc:
            self.diagnostics.error(
                pos,
                f"cannot read included file {name!r}: {exc.strerror or exc}",
                "the path is relative to the including file",
            )
            return end
        except UnicodeDecodeError:
            self.diagnostics.error(pos, f"included file {name!r} is not UTF-8 text")
            return end
        except ValueError as exc:
            self.diagnostics.error(pos, f"cannot read included file {name!r}: {exc}")
            return end
        self._stack.append(target)
        try:
            self._lex_into(included, out)
        finally:
            self._stack.pop()
        return end


def tokenize(
    source: SourceFile,
    diagnostics: Diagnostics,
    *,
    allow_include: bool = True,
    on_line_comment: Callable[[Pos, str], None] | None = None,
) -> list[Token]:
    return Lexer(diagnostics, allow_include=allow_include, on_line_comment=on_line_comment).tokenize(source)
