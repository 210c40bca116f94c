"""``$error`` 2 names what the discarding instance waited for, in program terms (event names,
case-clause classes, time markers as written), on every executor."""

from __future__ import annotations

import pytest

from conftest import run_program

DOOR = """
in {string d;} Opened group(Opened.d), {string d;} Closed group(Closed.d)
out string Left
( Opened() ( Closed() | elapse[5 minutes]() { !>Left(group[0]); } ) )*
"""

CLASSES = """
in long A case { A > 10 ? Big : Small }
out long B
( Big(x) Small(y) { !>B(x + y); } )*
"""


def _messages(source: str, trace: str, force_lazy: bool) -> list[str]:
    out = run_program(source, trace, force_lazy=force_lazy)
    return [o["value"]["message"] for o in out if o["event"] == "$error"]


@pytest.mark.parametrize("force_lazy", [False, True], ids=["eager", "lazy"])
def test_the_message_names_the_events_and_timers_the_state_waits_for(force_lazy: bool) -> None:
    trace = '[2026-01-01 00:00:00] Closed({d: "a"}) Opened({d: "a"}) Opened({d: "a"})'
    assert _messages(DOOR, trace, force_lazy) == [
        "unexpected event Closed: the instance waits for Opened",
        "unexpected event Opened: the instance waits for Closed or elapse[5 minutes]()",
    ]


@pytest.mark.parametrize("force_lazy", [False, True], ids=["eager", "lazy"])
def test_a_classified_event_names_its_class_and_the_classes_waited_for(force_lazy: bool) -> None:
    trace = "[2026-01-01 00:00:00] A(1) A(20) A(30)"
    assert _messages(CLASSES, trace, force_lazy) == [
        "unexpected event A (Small): the instance waits for Big",
        "unexpected event A (Big): the instance waits for Small",
    ]


#: No variables, initial actions nor timers: the compact executor (a table of state numbers).
COMPACT = """
in {string d;} Opened group(Opened.d), {string d;} Closed group(Closed.d)
out string Shut
( Opened() Closed() { !>Shut(group[0]); } )*
"""


def test_the_compact_executor_says_the_same_also_of_a_key_without_an_instance() -> None:
    from eventscript.automata.compile import compile_source
    from eventscript.engine.engine import Engine

    assert Engine(compile_source(COMPACT, name="p").require()).executor.kind == "compact"
    trace = '[2026-01-01 00:00:00] Closed({d: "a"}) Opened({d: "a"}) Opened({d: "a"})'
    assert _messages(COMPACT, trace, False) == [
        "unexpected event Closed: the instance waits for Opened",
        "unexpected event Opened: the instance waits for Closed",
    ]
