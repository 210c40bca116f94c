"""Reading a big trace costs little (the trace reader made several times faster and leaner): the
parser reads the lexer's tokens as they come, an event keeps no places of its values until an
``$error`` 6 asks for them, and the line index is found by the regular expression engine. What
each of these must keep: the same places, the same diagnostics, the same line index."""

from __future__ import annotations

import weakref
from collections.abc import Iterator

import pytest

from eventscript.automata.compile import compile_source
from eventscript.language.diagnostics import Diagnostics
from eventscript.language.lexer import Lexer, Token
from eventscript.language.source import SourceFile
from eventscript.tester import trace as trace_module
from eventscript.tester.pipeline import run_trace
from eventscript.tester.trace import (
    FIELD_NAME,
    TraceError,
    TraceEvent,
    parse_json_lines,
    parse_trace,
    value_place,
)

TYPED = """in long N, {string a; long[] xs;} Q
out string O
( N(n) { !>O("n"); } | Q(q) { !>O(q.a); } )*
"""

#: Bad values on several lines, one inside a comment-split event, two events on one line.
SEVERAL_BAD = """[2026-01-01 00:00:00]
N(1) N(2.5)
Q({a: "x", xs: [1, 2, "3"]})
Q({a: "ok", /* a comment
   over two lines */ xs: [true]})
// a comment line
  N("text")  Q("y", 5)
"""


def errors_of(trace: str) -> list[str]:
    compiled = compile_source(TYPED, name="typed").require()
    lines: list[dict] = []  # type: ignore[type-arg]
    run_trace([compiled], parse_trace(SourceFile("t.trace", trace)), lambda line: lines.append(line.to_json()))
    return [line["value"]["message"] for line in lines if line["event"] == "$error"]


def test_several_bad_values_are_each_pointed_at_where_they_were_written() -> None:
    assert errors_of(SEVERAL_BAD) == [
        "t.trace:2:8: N: expected a long (an integer such as 3), got the number 2.5",
        "t.trace:3:23: Q: xs[2]: expected a long (an integer such as 3), got the string '3'",
        "t.trace:5:27: Q: xs[0]: expected a long (an integer such as 3), got true",
        "t.trace:7:5: N: expected a long (an integer such as 3), got the string 'text'",
        "t.trace:7:21: Q: xs: expected an array long[], got the number 5",
    ]


def test_an_event_keeps_no_places_until_asked_and_then_keeps_them() -> None:
    events = [item for item in parse_trace(SourceFile("t.trace", SEVERAL_BAD)) if isinstance(item, TraceEvent)]
    assert all(event.places is None for event in events)
    field_name = value_place(events[2], ("xs", FIELD_NAME))  # Q({a: "x", xs: ...}) on line 3
    assert (field_name.line, field_name.col) == (3, 12)
    assert events[2].places is not None and value_place(events[2], ("xs", 2)) is events[2].places[(0, "xs", 2)]
    assert all(event.places is None for event in events if event is not events[2])


def test_an_event_of_json_lines_is_pointed_at_as_a_whole() -> None:
    source = SourceFile("t.jsonl", '{"time": "2026-01-01T00:00:00Z", "event": "N", "value": {"a": 1}}\n')
    [_, event] = parse_json_lines(source)
    assert isinstance(event, TraceEvent)
    assert value_place(event, ("a",)) is event.pos and event.places == {}


def test_the_tokens_of_a_trace_are_not_all_alive_while_it_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parser holds the current token, at most the one after it, and those the frames of the
    value being read hold (as many as the value nests, not as the trace is long): the lexer's
    tokens of a trace of 100,000 events once made up most of the memory reading it took."""

    class Watched(Token):
        __slots__ = ("__weakref__",)

    made: list[weakref.ref[Token]] = []
    most_alive = 0
    tokens = Lexer.tokens

    def watched(self: Lexer, source: SourceFile, start: int = 0) -> Iterator[Token]:
        nonlocal most_alive
        for t in tokens(self, source, start):
            token = Watched(t.kind, t.text, t.value, t.pos, t.index)
            made.append(weakref.ref(token))
            yield token
            del token, t
            most_alive = max(most_alive, sum(ref() is not None for ref in made[-100:]))

    monkeypatch.setattr(trace_module.Lexer, "tokens", watched)
    items = parse_trace(SourceFile("t.trace", "[2026-01-01 00:00:00]\n" + 'N({a: "x", b: [1, 2.5]})\n' * 50))
    assert len(items) == 51 and len(made) > 500
    assert most_alive <= 6


def test_a_mistake_the_lexer_finds_later_is_still_reported_before_the_parsers() -> None:
    """As when the whole text was lexed before parsing: the lexer's first error wins."""
    with pytest.raises(TraceError) as info:
        parse_trace(SourceFile("t.trace", '[2026-01-01 00:00:00]\nN(;)\nN("unclosed)\n'))
    assert str(info.value).startswith("t.trace:3:3: error: unterminated string literal")


def test_the_tokens_one_at_a_time_are_the_token_list() -> None:
    text = 'in long N /* two\nlines */ out string O\n( N(n) { !>O("\\u00e9" + "x"); } )* // end\n#bad\n'
    listed = Lexer(Diagnostics()).tokenize(SourceFile("p.es", text))
    streamed = list(Lexer(Diagnostics()).tokens(SourceFile("p.es", text)))
    rows = [
        [(t.kind, t.text, t.value, t.pos.offset, t.pos.line, t.pos.col, t.index) for t in ts]
        for ts in (listed, streamed)
    ]
    assert rows[0] == rows[1] and rows[0][-1][0] == "EOF"


def _line_starts_character_by_character(text: str) -> list[int]:
    """The line index as it was made before (a Python loop over every character)."""
    return [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]


@pytest.mark.parametrize(
    "text",
    ["", "\n", "\n\n", "a", "a\nb", "a\nb\n", "a\r\nb\r\n", "\r\n\r\nx", "\ufeffa\nb", "\ufeff", "a\rb\n\u2028c"],
)
def test_the_line_index_is_the_one_made_character_by_character(text: str) -> None:
    source = SourceFile("t", text)
    expected = _line_starts_character_by_character(text.removeprefix("\ufeff"))
    assert [source.line_col(start) for start in expected] == [(n + 1, 1) for n in range(len(expected))]
    assert source._line_starts == expected
