"""Reads the programs of the language document at test time (the document is never copied here).

The document's code sits between lines that start with three backquotes. Some programs are
split in two consecutive blocks (declarations in one, the regular expression in the next);
:func:`programs` joins those and tells complete programs from fragments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from conftest import LANGUAGE_DOCUMENT

DECL_KEYWORDS = ("in", "out", "type", "function")
_FIRST_WORD = re.compile(r"\s*(!>|[A-Za-z_$][A-Za-z0-9_]*|\S)")


@dataclass(frozen=True)
class Block:
    index: int
    #: 1-based line of the document where the block's text starts.
    line: int
    text: str
    #: Whether only white space separates this block's closing fence from the next opening one.
    adjacent_to_next: bool


@dataclass(frozen=True)
class DocProgram:
    text: str
    line: int
    blocks: tuple[int, ...]
    complete: bool

    @property
    def size(self) -> int:
        return len(self.text)


def document_text() -> str | None:
    if LANGUAGE_DOCUMENT is None or not Path(LANGUAGE_DOCUMENT).exists():
        return None
    return Path(LANGUAGE_DOCUMENT).read_text(encoding="utf-8")


def split_blocks(text: str) -> list[Block]:
    lines = text.split("\n")
    raw: list[tuple[int, int, list[str]]] = []  # (open fence line, close fence line, body)
    opened: int | None = None
    body: list[str] = []
    for i, line in enumerate(lines):
        if line.strip().startswith("```"):
            if opened is None:
                opened, body = i, []
            else:
                raw.append((opened, i, body))
                opened = None
        elif opened is not None:
            body.append(line)
    blocks = []
    for k, (open_, close, body) in enumerate(raw):
        adjacent = k + 1 < len(raw) and all(not line.strip() for line in lines[close + 1 : raw[k + 1][0]])
        blocks.append(Block(k, open_ + 2, "\n".join(body), adjacent))
    return blocks


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def first_word(text: str) -> str:
    m = _FIRST_WORD.match(_strip_comments(text))
    return m.group(1) if m else ""


def starts_with_declaration(text: str) -> bool:
    return first_word(text) in DECL_KEYWORDS


def _continues(text: str) -> bool:
    """Could this block be the rest of a program whose declarations came before it?"""
    w = first_word(text)
    return (
        w == "out"
        or w in ("(", "{", ".")
        or (w not in DECL_KEYWORDS and w[:1].isalpha() and re.match(r"\s*\w+\s*\(", _strip_comments(text)) is not None)
    )


def _scan(text: str) -> tuple[int | None, bool]:
    """Where the regular expression starts (None if there is none), and whether the text is
    cut short (a syntax error at its very end)."""
    from eventscript.language.diagnostics import Diagnostics
    from eventscript.language.lexer import tokenize
    from eventscript.language.parser import ParseError, Parser, parse
    from eventscript.language.source import SourceFile

    d = Diagnostics()
    parse(SourceFile("<doc>", text), d)
    cut_short = any(e.pos.offset >= len(text.rstrip()) for e in d.errors)
    p = Parser(tokenize(SourceFile("<doc>", text), Diagnostics()), Diagnostics())
    while p.at(*DECL_KEYWORDS):
        start = p.i
        try:
            p.parse_decl()
        except ParseError:
            p._skip_to_decl(start)
    return (None if p.at("EOF") else p.tok.pos.offset), cut_short


def _is_program(text: str) -> bool:
    if "..." in text:  # deliberately elided, e.g. "{}A, {}B, ..., {}Z"
        return False
    if first_word(text) not in ("in", "out"):
        return False
    start, _ = _scan(text)
    if start is None:
        return False
    # The regular expression must contain an event marker, a wildcard or an action block: a
    # line of prose that slipped into a declaration block is not one.
    return re.search(r"[A-Za-z_]\w*\s*\(|[{.]", text[start:]) is not None


@cache
def programs() -> tuple[DocProgram, ...]:
    """Every code block of the document, with split programs joined, in document order."""
    text = document_text()
    if text is None:
        return ()
    blocks = split_blocks(text)
    out: list[DocProgram] = []
    k = 0
    while k < len(blocks):
        acc = blocks[k].text
        members = [k]
        while starts_with_declaration(acc) and k + 1 < len(blocks) and _continues(blocks[k + 1].text):
            regex_start, cut_short = _scan(acc)
            if regex_start is not None and not cut_short and not blocks[k].adjacent_to_next:
                break
            k += 1
            acc = acc + "\n" + blocks[k].text
            members.append(k)
        out.append(DocProgram(acc, blocks[members[0]].line, tuple(members), _is_program(acc)))
        k += 1
    return tuple(out)


def complete_programs() -> list[DocProgram]:
    return [p for p in programs() if p.complete]


def find(substring: str, *, complete: bool | None = None) -> DocProgram:
    """The one program (or fragment, or either) containing ``substring``."""
    found = [p for p in programs() if substring in p.text and complete in (None, p.complete)]
    assert len(found) == 1, f"{substring!r} is in {len(found)} blocks of the language document"
    return found[0]
