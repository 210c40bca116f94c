"""The lexer: source text to tokens, with ``#include`` directives spliced in.

``#include "file"`` works like C's: the included file's tokens replace the directive, so an
include may appear anywhere a declaration can. Paths are relative to the including file.
Tokens from an included file keep positions in that file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from .diagnostics import Diagnostics
from .source import Pos, SourceFile

KEYWORDS = frozenset(
    {
        "in", "out", "type", "function", "case", "group", "for", "new",
        "true", "false", "arrive", "elapse", "elapsed",
    }
)

# Longest first, so that "<=" wins over "<".
PUNCTUATION = (
    "!>", "==", "!=", "<=", ">=", "&&", "||",
    "(", ")", "[", "]", "{", "}", ",", ";", ":", "?", ".", "=",
    "<", ">", "+", "-", "*", "/", "%", "!", "&", "|",
)

MAX_INCLUDE_DEPTH = 32


def _digit(ch: str) -> bool:
    """An ASCII digit. (str.isdigit also accepts superscripts and other scripts' digits.)"""
    return "0" <= ch <= "9"


@dataclass(frozen=True, slots=True)
class Token:
    """A token. ``kind`` is the punctuation or keyword text itself, or IDENT/INT/FLOAT/STRING/EOF."""

    kind: str
    text: str
    value: object
    pos: Pos
    #: Position of the token in the whole spliced stream: program-text order across includes.
    index: int = 0

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.text!r} @ {self.pos})"


class Lexer:
    """Turns one source file (and what it includes) into a token list."""

    def __init__(self, diagnostics: Diagnostics, *, allow_include: bool = True) -> None:
        self.diagnostics = diagnostics
        self.allow_include = allow_include
        self._stack: list[Path] = []

    def tokenize(self, source: SourceFile) -> list[Token]:
        tokens: list[Token] = []
        if source.path is not None:
            # The including file itself is on the stack, so that a.es -> b.es -> a.es is a cycle
            # reported in b.es rather than a.es being spliced in a second time.
            self._stack.append(source.path.resolve())
        try:
            self._lex_into(source, tokens)
        finally:
            self._stack.clear()
        end = len(source.text)
        tokens.append(Token("EOF", "", None, source.pos(end)))
        return [Token(t.kind, t.text, t.value, t.pos, i) for i, t in enumerate(tokens)]

    # -- scanning -------------------------------------------------------------------------

    def _lex_into(self, src: SourceFile, out: list[Token]) -> None:
        text = src.text
        n = len(text)
        i = 0
        at_line_start = True
        while i < n:
            ch = text[i]
            if ch == "\n":
                at_line_start = True
                i += 1
                continue
            if ch in " \t\r\f\v":
                i += 1
                continue
            if ch == "/" and i + 1 < n and text[i + 1] == "/":
                j = text.find("\n", i)
                i = n if j < 0 else j
                continue
            if ch == "/" and i + 1 < n and text[i + 1] == "*":
                j = text.find("*/", i + 2)
                if j < 0:
                    self.diagnostics.error(src.pos(i), "unterminated comment", "close it with */")
                    return
                i = j + 2
                continue
            if ch == "#" and at_line_start:
                i = self._directive(src, i, out)
                continue
            at_line_start = False
            if ch.isalpha() or ch == "_" or ch == "$":
                j = i + 1
                while j < n and (text[j].isalnum() or text[j] == "_"):
                    j += 1
                word = text[i:j]
                kind = word if word in KEYWORDS else "IDENT"
                out.append(Token(kind, word, word, src.pos(i)))
                i = j
                continue
            if _digit(ch):
                i = self._number(src, i, out)
                continue
            if ch == '"':
                i = self._string(src, i, out)
                continue
            for p in PUNCTUATION:
                if text.startswith(p, i):
                    out.append(Token(p, p, None, src.pos(i)))
                    i += len(p)
                    break
            else:
                self.diagnostics.error(src.pos(i), f"unexpected character {ch!r}")
                i += 1

    def _number(self, src: SourceFile, i: int, out: list[Token]) -> int:
        text = src.text
        n = len(text)
        j = i
        while j < n and _digit(text[j]):
            j += 1
        is_float = False
        if j + 1 < n and text[j] == "." and _digit(text[j + 1]):
            is_float = True
            j += 1
            while j < n and _digit(text[j]):
                j += 1
        if j < n and text[j] in "eE":
            k = j + 1
            if k < n and text[k] in "+-":
                k += 1
            if k < n and _digit(text[k]):
                is_float = True
                j = k
                while j < n and _digit(text[j]):
                    j += 1
        lexeme = text[i:j]
        if j < n and (text[j].isalpha() or text[j] == "_") and text[j] not in "eE":
            # "5msec" is two tokens; that is fine. Nothing to do here.
            pass
        if is_float:
            out.append(Token("FLOAT", lexeme, float(lexeme), src.pos(i)))
        else:
            out.append(Token("INT", lexeme, int(lexeme), src.pos(i)))
        return j

    _ESCAPES: ClassVar[dict[str, str]] = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "'": "'", "0": "\0"}

    def _string(self, src: SourceFile, i: int, out: list[Token]) -> int:
        text = src.text
        n = len(text)
        j = i + 1
        chars: list[str] = []
        while j < n and text[j] != '"':
            c = text[j]
            if c == "\n":
                break
            if c == "\\":
                if j + 1 >= n:
                    break
                e = text[j + 1]
                if e == "u":
                    hexdigits = text[j + 2 : j + 6]
                    if len(hexdigits) == 4 and all(h in "0123456789abcdefABCDEF" for h in hexdigits):
                        chars.append(chr(int(hexdigits, 16)))
                        j += 6
                        continue
                    self.diagnostics.error(src.pos(j), "bad \\u escape: four hexadecimal digits must follow")
                    j += 2
                    continue
                if e in self._ESCAPES:
                    chars.append(self._ESCAPES[e])
                else:
                    self.diagnostics.error(src.pos(j), f"unknown escape sequence \\{e}")
                j += 2
                continue
            chars.append(c)
            j += 1
        if j >= n or text[j] != '"':
            self.diagnostics.error(src.pos(i), "unterminated string literal", 'close it with " on the same line')
            out.append(Token("STRING", text[i:j], "".join(chars), src.pos(i)))
            return j
        out.append(Token("STRING", text[i : j + 1], "".join(chars), src.pos(i)))
        return j + 1

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
            included = SourceFile(name=str(Path(src.name).parent / name) if src.path else name,
                                  text=target.read_text(encoding="utf-8"), path=target)
        except OSError as exc:
            self.diagnostics.error(pos, f"cannot read included file {name!r}: {exc.strerror or exc}",
                                   "the path is relative to the including file")
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


def tokenize(source: SourceFile, diagnostics: Diagnostics, *, allow_include: bool = True) -> list[Token]:
    return Lexer(diagnostics, allow_include=allow_include).tokenize(source)
