"""``eventscript test --expect``: an expected line's ``time`` is compared as an instant, not as text.

Expected files are written by hand; ``2026-01-01T00:01:00Z`` once failed against the tester's own
``2026-01-01T00:01:00.000000Z`` although both name one instant.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eventscript.cli.main import main
from eventscript.tester.expect import compare, read_expected

ECHO = "in string S\nout string O\n( S(x) { !>O(x); } )*\n"
TRACE = '[2026-01-01 00:00:00]\nS("a")\n[00:01]\nS("b")\n'
#: What the tester prints for ECHO over TRACE.
PRINTED = [
    {"time": "2026-01-01T00:00:00.000000Z", "event": "O", "value": "a"},
    {"time": "2026-01-01T00:01:00.000000Z", "event": "O", "value": "b"},
]


def _test_with_expected(tmp_path: Path, second_time: str) -> int:
    """``eventscript test`` of ECHO over TRACE, expecting PRINTED with the second line's time
    written as ``second_time``."""
    (tmp_path / "echo.es").write_text(ECHO, encoding="utf-8")
    (tmp_path / "echo.trace").write_text(TRACE, encoding="utf-8")
    (tmp_path / "e.jsonl").write_text(
        '{"time": "2026-01-01T00:00:00.000000Z", "event": "O", "value": "a"}\n'
        f'{{"time": "{second_time}", "event": "O", "value": "b"}}\n',
        encoding="utf-8",
    )
    trace, program, expected = (str(tmp_path / name) for name in ("echo.trace", "echo.es", "e.jsonl"))
    return main(["test", "--trace", trace, program, "--expect", expected])


@pytest.mark.parametrize(
    "written",
    [
        "2026-01-01T00:01:00Z",  # no fractional seconds
        "2026-01-01T00:01:00.000Z",  # milliseconds
        "2026-01-01T01:01:00+01:00",  # an offset
        "2026-01-01 00:01",  # no seconds, no zone (UTC), a space as in traces
    ],
)
def test_other_forms_of_the_same_instant_match(
    tmp_path: Path, written: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _test_with_expected(tmp_path, written) == 0
    assert "ok: 2 events as expected" in capsys.readouterr().out


def test_another_instant_is_a_mismatch_naming_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _test_with_expected(tmp_path, "2026-01-01T00:02:00Z") == 1
    out = capsys.readouterr().out
    assert "e.jsonl:2: time: expected '2026-01-01T00:02:00Z', got '2026-01-01T00:01:00.000000Z'" in out


def test_a_time_that_is_not_a_time_is_refused_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _test_with_expected(tmp_path, "yesterday") == 2
    err = capsys.readouterr().err
    assert "e.jsonl:2:2: error: time 'yesterday' is not an ISO-8601 time" in err
    assert "write it as '2026-01-01T08:05:00Z'" in err


def test_compare_alone_says_an_unreadable_expected_time_is_not_a_time() -> None:
    """``compare`` is also called on lines not read by ``read_expected`` (the conformance runners)."""
    want = [PRINTED[0], {**PRINTED[1], "time": "soon"}]
    assert compare(want, PRINTED)[0].startswith(
        "line 2: time: expected 'soon', which is not an ISO-8601 time such as '2026-01-01T08:05:00Z'"
    )


def test_read_expected_keeps_the_time_as_written() -> None:
    """An expected line is kept as written: a line that differs is shown so in the diff."""
    assert (
        read_expected('{"time": "2026-01-01T00:01:00Z", "event": "O", "value": 1}\n')[0]["time"]
        == "2026-01-01T00:01:00Z"
    )
