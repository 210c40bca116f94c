"""Whatever a trace holds, the tester ends in a TraceError with a position, never a traceback
(issue 9): huge or malformed timestamps, deep values, lone surrogates, bytes that are not UTF-8."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventscript.automata.compile import compile_source
from eventscript.language.source import SourceFile
from eventscript.tester.pipeline import run_trace
from eventscript.tester.trace import TraceError, parse_trace, read_trace

ECHO = """
in string S
out string O
( S(x) { !>O(x); } )*
"""


def run(trace: str, program: str = ECHO) -> list[dict]:  # type: ignore[type-arg]
    compiled = compile_source(program, name="echo").require()
    lines: list[dict] = []  # type: ignore[type-arg]
    run_trace([compiled], parse_trace(SourceFile("t.trace", trace)), lambda line: lines.append(line.to_json()))
    return lines


def error_of(trace: str) -> TraceError:
    with pytest.raises(TraceError) as info:
        run(trace)
    return info.value


@pytest.mark.parametrize(
    ("trace", "says"),
    [
        ("[2026-01-01 9223372036854775807:00:00]", "hour 9223372036854775807 is out of range 0..23"),
        ("[99999999999-01-01 00:00:00]", "year 99999999999 is out of range 1..9999"),
        ("[2026-01-01 00:00:00]\n[00:00:" + "9" * 30 + "]", "second"),
        ("[2026-01-01 00:00:1e3]", "seconds must be digits"),
        ("[2026-01-01 00:00:1.5e3]", "seconds must be digits"),
        ("[2026-02-30]", "day is out of range for month"),
        ("[0-01-01]", "year 0 is out of range"),
    ],
)
def test_impossible_timestamps_are_trace_errors(trace: str, says: str) -> None:
    err = error_of(trace)
    assert says in err.message
    assert str(err).startswith("t.trace:")


def test_a_timestamp_going_back_names_both_times() -> None:
    err = error_of('[2026-01-01 00:01:00]\nS("a")\n[00:00:30]')
    assert err.pos.line == 3
    assert "2026-01-01T00:00:30.000000Z goes back in time" in err.message
    assert "2026-01-01T00:01:00.000000Z" in err.message


def test_fractional_seconds_still_read() -> None:
    assert run('[2026-01-01 00:00:05.25]\nS("a")')[0]["time"] == "2026-01-01T00:00:05.250000Z"


@pytest.mark.parametrize("opener", ["[", "{a: "])
def test_deeply_nested_values_are_trace_errors(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    err = error_of(f"[2026-01-01 00:00:00]\nS({opener * 1000}1{closer * 1000})")
    assert "nests too deeply" in err.message
    assert err.pos.line == 2


def test_nesting_up_to_the_limit_is_read() -> None:
    # 100 levels parse; the value is then simply the wrong type for S ($error 6), not a trace error.
    lines = run(f"[2026-01-01 00:00:00]\nS({'[' * 100}1{']' * 100})")
    assert lines[0]["event"] == "$error" and lines[0]["value"]["code"] == 6


@pytest.mark.parametrize("text", ['"\\ud800"', '"a\\udc00b"', '"\\ude00\\ud83d"'])
def test_lone_surrogates_in_trace_strings_are_trace_errors(text: str) -> None:
    err = error_of(f"[2026-01-01 00:00:00]\nS({text})")
    # The lexer may find it first (at the escape) or the trace reader (at the string).
    assert "lone" in err.message and "surrogate" in err.message
    assert err.pos.line == 2 and 3 <= err.pos.col <= 5


def test_lone_surrogates_in_field_names_are_trace_errors() -> None:
    err = error_of('[2026-01-01 00:00:00]\nS({"\\ud800": "x"})')
    assert "lone" in err.message and "surrogate" in err.message


def test_a_surrogate_pair_is_one_character() -> None:
    assert run('[2026-01-01 00:00:00]\nS("\\ud83d\\ude00")')[0]["value"] == "\U0001f600"


def test_a_trace_that_is_not_utf8_names_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "bad.trace"
    path.write_bytes(b'[2026-01-01 00:00:00]\nS("caf\xe9")\n')
    with pytest.raises(TraceError) as info:
        read_trace(path)
    err = info.value
    assert "not UTF-8" in err.message and "0xE9" in err.message and "byte offset 28" in err.message
    assert (err.pos.line, err.pos.col) == (2, 7)
    assert str(err).startswith(f"{path}:2:7:")


def test_unquoted_text_says_to_quote_it() -> None:
    """S(front) said only "expected a value, found 'front'"."""
    err = error_of("[2026-01-01 00:00:00]\nS(front)\nS({door: back})")
    assert str(err) == (
        "t.trace:2:3: error: expected a value, found 'front'\n"
        "    S(front)\n"
        "      ^\n"
        '    hint: text is written in double quotes: "front"'
    )


@pytest.mark.parametrize(
    ("stamp", "time"),
    [
        ("[2026-01-01T10:00:00Z]", "2026-01-01T10:00:00.000000Z"),
        ("[2026-01-01T10:00:00.250000Z]", "2026-01-01T10:00:00.250000Z"),  # as an output's "time"
        ("[2026-01-01T9:30Z]", "2026-01-01T09:30:00.000000Z"),
        ("[2026-01-01 10:00:00Z]", "2026-01-01T10:00:00.000000Z"),
        ("[2026-01-01T10:00:00]", "2026-01-01T10:00:00.000000Z"),
    ],
)
def test_iso_timestamps_as_outputs_print_them_are_read(stamp: str, time: str) -> None:
    """[2026-01-01T10:00:00Z], copied from an output line, said "expected an hour, found 'T10'"."""
    assert run(f'{stamp}\nS("a")')[0]["time"] == time


@pytest.mark.parametrize(
    ("stamp", "col"),
    [("[2026-01-01T10:00:00+01:00]", 21), ("[2026-01-01X10:00]", 12), ("[2026-01-01 10]", 15)],
)
def test_a_timestamp_of_no_accepted_form_names_the_forms(stamp: str, col: int) -> None:
    err = error_of(f'{stamp}\nS("a")')
    assert err.pos.col == col
    assert err.hint is not None and "[2026-01-01 09:30:00]" in err.hint and "[2026-01-01T09:30:00Z]" in err.hint


def test_single_quoted_strings_get_the_programs_hint() -> None:
    """Failed('ann','x') said only: unexpected character "'"."""
    err = error_of("[2026-01-01 00:00:00]\nS('ann')")
    assert (err.message, err.hint) == ('unexpected character "\'"', 'strings are written in double quotes: "text"')


def test_trace_errors_are_rendered_as_program_diagnostics_are() -> None:
    """A trace error was one line, with neither the trace's line nor a caret."""
    err = error_of('[2026-01-01 00:00:00]\nS("a") S("b" "c")')
    lines = [
        f"t.trace:2:14: error: expected ')', found {chr(39)}\"c\"{chr(39)}",
        '    S("a") S("b" "c")',
        " " * 17 + "^",
    ]
    assert str(err) == err.diagnostic().render() == "\n".join(lines)


@pytest.mark.parametrize(
    ("trace", "where", "hint"),
    [
        ('S("a")', (1, 1), "begin with the time the run starts, e.g. [2026-01-01 09:00:00]"),
        ('2026-01-01 00:00:00\nS("a")', (1, 1), "a timestamp is written in square brackets"),
        ('[2026-01-01 00:00:00] S("a"); S("b")', (1, 29), "nothing separates events: remove the ';'"),
        ('[2026-01-01 00:00:00] S("a"), S("b")', (1, 29), "nothing separates events: remove the ','"),
        ('[2026-01-01 00:00:00] S(door: "a")', (1, 25), "a structure's fields are written in braces: {door: ...}"),
        ("[2026-01-01 00:00:00] S", (1, 24), "every event has parentheses: S() for a pure signal, S(value)"),
    ],
)
def test_a_newcomers_trace_slips_get_a_hint(trace: str, where: tuple[int, int], hint: str) -> None:
    """A first trace written like a program (';' after events), a date without brackets, a field
    name outside braces: each said only what it found, not what to write."""
    err = error_of(trace)
    assert (err.pos.line, err.pos.col) == where
    assert err.hint is not None and hint in err.hint


@pytest.mark.parametrize(
    ("value", "col", "written"),
    [(".5", 3, "0.5"), ("-.25", 4, "0.25"), ("1.", 3, "1.0"), ("-12.", 4, "12.0"), ("[2.5, .5]", 9, "0.5")],
)
def test_a_number_with_a_bare_point_says_what_to_write(value: str, col: int, written: str) -> None:
    """As in a program (the parser's bare-point slip): not "expected a value" or "expected ')'"."""
    err = error_of(f"[2026-01-01 00:00:00]\nS({value})")
    assert (err.pos.line, err.pos.col) == (2, col)
    assert err.message == "a double literal needs digits on both sides of the point"
    assert err.hint == f"write {written}"
