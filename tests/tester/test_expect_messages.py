"""``eventscript test --expect``, as a newcomer writing an expected file by hand meets it: each
mistake in the file is refused as ``file:line:col: error:`` with what to write instead, each
difference names the expected file's own line, and the diff marks only the lines that differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventscript.cli.main import main
from eventscript.tester.expect import compare

ECHO = "in long S\nout long O\n( S(x) { !>O(x); } )*\n"
TRACE = "[2026-01-01 00:00:00]\nS(1)\n[00:01]\nS(2)\n[00:02]\nS(3)\n"
EXAMPLE = '{"time": "2026-01-01T08:05:00Z", "event": "LeftOpen"'


def _expect(tmp_path: Path, expected: str) -> int:
    """``eventscript test`` of ECHO over TRACE against ``expected`` (the file ``e.jsonl``)."""
    for name, text in (("echo.es", ECHO), ("echo.trace", TRACE), ("e.jsonl", expected)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    trace, program, want = (str(tmp_path / name) for name in ("echo.trace", "echo.es", "e.jsonl"))
    return main(["test", "--trace", trace, program, "--expect", want])


@pytest.mark.parametrize(
    ("written", "says", "hint"),
    [
        ("O(1)", ":1:1: error: not JSON: expecting value", "not the trace's Name(value)"),
        ("{'time': 'x'}", ":1:2: error: not JSON: expecting property name", "names and strings in double quotes"),
        ('{"event": "O", "value": 1}', ":1:1: error: the line has no 'time'", EXAMPLE),
        ('{"time": "2026-01-01T00:00:00Z", "name": "O", "value": 1}', ":1:1: error: the line has no 'event'", EXAMPLE),
        ('[{"time": "2026-01-01T00:00:00Z"}]', ":1:1: error: expected a JSON object", EXAMPLE),
    ],
)
def test_a_line_that_is_no_expected_event_is_placed_and_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], written: str, says: str, hint: str
) -> None:
    assert _expect(tmp_path, written + "\n") == 2
    err = capsys.readouterr().err
    assert f"e.jsonl{says}" in err
    assert "hint: " in err and hint in err


def test_a_difference_names_the_expected_files_line_past_blank_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = (
        '{"time": "2026-01-01T00:00:00Z", "event": "O", "value": 1}\n\n'
        '{"time": "2026-01-01T00:01:00Z", "event": "O", "value": 2}\n'
        '{"time": "2026-01-01T00:02:00Z", "event": "O", "value": 4}\n'
    )
    assert _expect(tmp_path, written) == 1
    out = capsys.readouterr().out
    assert "e.jsonl:4: value: expected 4, got 3\n" in out


def test_the_diff_marks_only_the_lines_that_differ(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Lines that match, though written with another form of their time, are no - and + pair."""
    written = (
        '{"time": "2026-01-01T00:00:00Z", "event": "O", "value": 1}\n'
        '{"time": "2026-01-01T00:01:00Z", "event": "O", "value": 2}\n'
        '{"time": "2026-01-01T00:02:00Z", "event": "O", "value": 4}\n'
    )
    assert _expect(tmp_path, written) == 1
    diff = capsys.readouterr().out.split("+++ actual\n", 1)[1]
    changed = [line for line in diff.splitlines() if line[:1] in "-+"]
    assert changed == [
        '-{"time": "2026-01-01T00:02:00Z", "event": "O", "value": 4}',
        '+{"time": "2026-01-01T00:02:00.000000Z", "event": "O", "value": 3}',
    ]


def test_a_long_written_as_a_double_says_why_it_differs() -> None:
    want = [{"time": "2026-01-01T00:00:00Z", "event": "O", "value": 5.0}]
    got = [{"time": "2026-01-01T00:00:00.000000Z", "event": "O", "value": 5}]
    assert compare(want, got)[0] == (
        "line 1: value: expected 5.0, got 5 (a long is written without a fraction, a double with one: "
        "write it as the output does)"
    )


def test_a_count_of_one_reads_as_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _expect(tmp_path, '{"time": "2026-01-01T00:00:00Z", "event": "O", "value": 1}\n') == 1
    assert "1 event expected, 3 emitted" in capsys.readouterr().out


def test_a_structure_in_another_field_order_says_the_order_is_declared() -> None:
    want = [{"time": "2026-01-01T00:00:00Z", "event": "O", "value": {"b": 2, "a": 1}}]
    got = [{"time": "2026-01-01T00:00:00.000000Z", "event": "O", "value": {"a": 1, "b": 2}}]
    assert compare(want, got)[0].endswith(
        "(the same fields in another order: write a structure's fields in their declared order)"
    )


def test_a_key_written_as_its_component_says_a_key_is_a_list() -> None:
    want = [{"time": "2026-01-01T00:00:00Z", "event": "O", "value": 1, "key": "ann"}]
    got = [{"time": "2026-01-01T00:00:00.000000Z", "event": "O", "value": 1, "key": ["ann"]}]
    assert compare(want, got)[0] == (
        'line 1: key: expected "ann", got ["ann"] (a key is the list of its components: write ["ann"])'
    )
