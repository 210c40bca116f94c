"""Bad input through the embedding API and from external functions (issue 9): a clear ValueError
or an ``$error`` event, never a traceback, a hang or a silent stop."""

from __future__ import annotations

import math

import pytest

from conftest import run_program as run
from eventscript import Engine, SimulatedTimeProvider, compile_program
from eventscript.engine.timeutil import MAX_TIME, parse_time

ECHO = """
in string S
out string O
( S(x) { !>O(x); } )*
"""
TICKING = """
in {} Go
out {} Tick
( Go() ( elapse[1min]() { !>Tick({}); } )* )
"""


def engine(source: str = ECHO) -> tuple[Engine, SimulatedTimeProvider, list]:  # type: ignore[type-arg]
    out: list = []  # type: ignore[type-arg]
    clock = SimulatedTimeProvider(start=parse_time("2026-01-01T00:00:00Z"))
    eng = Engine(compile_program(source), consumer=out.append, time=clock)
    eng.start()
    return eng, clock, out


def test_feed_json_rejects_a_lone_surrogate_as_error_6() -> None:
    eng, _, out = engine()
    eng.feed_json("S", "a\ud800")
    eng.feed_json("S", "fine \U0001f600")
    assert [e.name for e in out] == ["$error", "O"]
    assert out[0].value[0] == 6 and "lone UTF-16 surrogate \\ud800" in out[0].value[1]
    assert out[1].value == "fine \U0001f600"


@pytest.mark.parametrize(
    ("t", "says"),
    [
        (parse_time("2025-12-31T23:59:59Z"), "goes back in time"),
        (math.nan, "got float nan"),
        (math.inf, "got float inf"),
        (10**20, "outside years 1 to 9999"),
        (MAX_TIME + 1, "outside years 1 to 9999"),
        (True, "got bool"),
        ("2026-01-02", "got str"),
    ],
)
def test_advance_to_refuses_what_the_trace_reader_refuses(t: object, says: str) -> None:
    eng, clock, out = engine(TICKING)
    eng.feed("Go", [])
    before = clock.now()
    with pytest.raises(ValueError, match=says):
        clock.advance_to(t)  # type: ignore[arg-type]
    assert clock.now() == before and out == []  # nothing fired, the clock did not move


def test_advance_to_still_moves_forward_and_fires() -> None:
    eng, clock, out = engine(TICKING)
    eng.feed("Go", [])
    clock.advance_to(clock.now() + 3 * 60_000_000)
    clock.advance_to(float(clock.now()))  # an integral float is a time; staying put is fine
    assert [e.name for e in out] == ["Tick"] * 3


def test_one_rule_for_both() -> None:
    """The runner's check and advance_to's are the same function: same messages."""
    from eventscript.engine.timeutil import check_clock_time

    with pytest.raises(ValueError) as info:
        check_clock_time(5, 6)
    clock = SimulatedTimeProvider(start=6)
    with pytest.raises(ValueError) as again:
        clock.advance_to(5)
    assert str(info.value) == str(again.value)


def test_an_external_function_calling_sys_exit_is_error_7_and_the_trace_goes_on() -> None:
    program = """
    function long quit(long): "sys:exit"
    in long N
    out long M
    ( N(n) { !>M(quit(n)); } )*
    """
    lines = run(program, "[2026-01-01 00:00:00]\nN(3)\n[00:01]\nN(4)")
    assert [(line["event"], line["value"]) for line in lines if line["event"] == "M"] == [("M", 0), ("M", 0)]
    errors = [line["value"] for line in lines if line["event"] == "$error"]
    assert [e["code"] for e in errors] == [7, 7]
    assert "SystemExit: 3" in errors[0]["message"]


def test_an_external_function_returning_a_lone_surrogate_is_error_7() -> None:
    program = """
    function string chr(long): "builtins:chr"
    in long N
    out string S
    ( N(n) { !>S(chr(n)); } )*
    """
    lines = run(program, "[2026-01-01 00:00:00]\nN(55296)\nN(233)")
    assert [
        (line["event"], line["value"].get("code") if line["event"] == "$error" else line["value"]) for line in lines
    ] == [("$error", 7), ("S", ""), ("S", "é")]


def test_an_external_error_message_with_a_lone_surrogate_is_spelled_out(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """$error messages go to UTF-8 outputs (JSON lines, Kafka records): the surrogate is escaped."""
    (tmp_path / "surrogate_externals.py").write_text('def boom(n):\n    raise ValueError("bad \\ud800 thing")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    program = """
    function long boom(long): "surrogate_externals:boom"
    in long N
    out long M
    ( N(n) { !>M(boom(n)); } )*
    """
    lines = run(program, "[2026-01-01 00:00:00]\nN(1)")
    message = lines[0]["value"]["message"]
    message.encode("utf-8")
    assert lines[0]["value"]["code"] == 7 and "ValueError: bad \\ud800 thing" in message
