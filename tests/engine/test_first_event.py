"""A grouped program's instance is created, and its initial actions run in it, when the first
event of its key arrives (conformance README: "a grouped program creates an instance (and runs
the initial actions in it) when the first event for that key arrives"; document 3.2: resources
are allocated when a key value is first encountered), whether or not that event can then be
matched. An event the start state does not take is discarded as any instance's is ($error 2,
choice 12): the instance stays, with what its initial actions did, and its start state's timer.

Checked on every engine (eager, compact with records, lazy with its cache and its simulation)
through the tester, against hand-derived lines.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_retire import on_and_off

from eventscript.engine.engine import COMPACT_ENV
from reference.compare import run_tester

T = "2026-01-01T00:00:{:02d}.000000Z"

#: Initial actions emit and remember the time; B cannot start a match.
STARTED = """in string A group(A), string B group(B)
out string Started, long Took
{ t0 = now(); !>Started(group[0]); }
( A() { !>Took(secondsBetween(t0, now())); } )*
"""

#: The start state has a timer: it runs from the key's first event, accepted or not.
TIMED = """in string A group(A), string B group(B)
out string Quiet
( A() | elapse[5 seconds]() { !>Quiet(group[0]); } )*
"""


def _runs(source: str, trace: str) -> list[list[dict[str, Any]]]:
    """The tester's lines on the eager DFA (compact on and off) and the lazy one (both modes)."""
    runs = list(on_and_off(COMPACT_ENV, lambda: run_tester(source, trace, lazy=False, error_keys=True)))
    runs.append(run_tester(source, trace, lazy=True, error_keys=True))
    return runs


def _line(sec: int, event: str, value: Any, key: str) -> dict[str, Any]:
    return {"time": T.format(sec), "event": event, "value": value, "key": [key]}


def test_a_discarded_first_event_creates_the_instance_and_runs_its_initial_actions() -> None:
    trace = '[2026-01-01 00:00:00] B("k")\n[2026-01-01 00:00:07] A("k")\n[2026-01-01 00:00:09] A("j")\n'
    expected = [
        _line(0, "Started", "k", "k"),
        _line(0, "$error", 2, "k"),  # created, then B discarded
        _line(7, "Took", 7, "k"),  # t0 is the first event's time, not A's
        _line(9, "Started", "j", "j"),
        _line(9, "Took", 0, "j"),
    ]
    for run in _runs(STARTED, trace):
        assert run == expected


def test_the_start_state_timer_runs_from_a_discarded_first_event() -> None:
    trace = '[2026-01-01 00:00:00] B("k")\n[2026-01-01 00:00:03] A("j")\n[2026-01-01 00:00:20]\n'
    expected = [
        _line(0, "$error", 2, "k"),
        _line(5, "Quiet", "k", "k"),  # 5 s after k's instance started with the discarded B
        _line(8, "Quiet", "j", "j"),
        _line(10, "Quiet", "k", "k"),
        _line(13, "Quiet", "j", "j"),
        _line(15, "Quiet", "k", "k"),
        _line(18, "Quiet", "j", "j"),
        _line(20, "Quiet", "k", "k"),
    ]
    for run in _runs(TIMED, trace):
        assert run == expected


@pytest.mark.parametrize("retire", ["on", "off"])
def test_a_start_state_with_no_way_out_ends_the_new_instance_each_time(
    retire: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that is its initial block alone: every event of a key creates an instance,
    whose initial actions run, then is discarded; the instance, at an accepting state with no way
    out, ends at once, so the key's next event creates another."""
    monkeypatch.setenv("EVENTSCRIPT_RETIRE", retire)
    src = "in string A group(A)\nout string Hello\n{ !>Hello(group[0]); }\n"
    trace = '[2026-01-01 00:00:00] A("k")\n[2026-01-01 00:00:01] A("k")\n'
    expected = [
        _line(0, "Hello", "k", "k"),
        _line(0, "$error", 2, "k"),
        _line(1, "Hello", "k", "k"),
        _line(1, "$error", 2, "k"),
    ]
    for run in _runs(src, trace):
        assert run == expected
