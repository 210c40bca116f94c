"""The reference on the document's own examples, and the minimal disagreements found so far."""

from __future__ import annotations

import os
from typing import Any
from unittest import mock

import pytest

from eventscript.engine.engine import COMPACT_ENV, RETIRE_ENV

from .compare import run_tester
from .generate import START, render
from .interpreter import Trace, micros_of, run_reference

T0 = micros_of(START)


def _items(events: list[tuple[str, Any]]) -> list[tuple[Any, ...]]:
    return [("time", T0), *[("event", n, v) for n, v in events], ("time", T0 + 65_000_000)]


def _values(source: str, events: list[tuple[str, Any]]) -> list[Any]:
    return [line["value"] for line in run_reference(source, Trace(_items(events)))]


def test_fig3_assignments_on_two_paths_run_in_text_order() -> None:
    assert _values("in {} A\nout long B\n( A() {x=1;} | A() {x=2;} ) {!>B(x);}", [("A", {})]) == [2]


def test_an_action_copied_by_a_multiplier_runs_once_per_transition() -> None:
    src = "in long Up\nout long Count\n{ n = 0; }\n( ( Up() { n = n + 1; !>Count(n); } )+ )*"
    assert _values(src, [("Up", 1), ("Up", 1)]) == [1, 2]


def test_paths_through_an_intersection_merge_in_text_order() -> None:
    src = "in {} B, {} X\nout long L\n( .* {!>L(1);} & . )* B() {!>L(3);}"
    assert _values(src, [("B", {}), ("X", {}), ("B", {})]) == [1, 3, 1, 1, 3]


def test_actions_of_a_difference_right_operand_react_to_its_match() -> None:
    src = "in {} Fail, {} Login, {} Logout\nout {} Suspicious\n.* - ( .* Fail() Fail() Login() { !>Suspicious({}); } )"
    events = [(n, {}) for n in ["Fail", "Login", "Fail", "Fail", "Login", "Logout", "Login"]]
    assert _values(src, events) == [{}]


def test_a_path_wrapping_round_a_loop_keeps_its_order() -> None:
    src = "in long V\nout long PairSum\n( { s = 0; } ( V(x) { s = s + x; } ){2} { !>PairSum(s); } )*"
    assert _values(src, [("V", 1), ("V", 2), ("V", 10), ("V", 20)]) == [3, 30]


def test_termination_then_error_2() -> None:
    src = (
        "in {} Open, long Item, {} Close\nout long Total\nOpen() { total = 0; }\n"
        "( Item(x) { total = total + x; } )*\nClose() { !>Total(total); }"
    )
    events = [("Open", {}), ("Item", 5), ("Item", 7), ("Close", {}), ("Item", 1)]
    assert _values(src, events) == [12, 2]


@pytest.mark.parametrize(
    ("source", "events"),
    [
        ("in long A\nout long T\n( A() | ( A() & ( A() | { !>T(1); } ) ) )*", []),
        ("in long A, long C\nout long T\n( . | { !>T(5); } ){0,2} & . A()", [("C", 9)]),
    ],
)
def test_infeasible_intersection_paths_run_no_actions(source: str, events: list[tuple[str, Any]]) -> None:
    items = _items(events)
    assert run_tester(source, render(items, T0), lazy=False) == run_reference(source, Trace(items))


def test_operand_paths_of_a_difference_are_separate_paths() -> None:
    # Entering the difference, its left path meets 1 and its right path 2: no path orders them,
    # while the path through the difference meets 2 then (round the loop) 1. So 2 runs first.
    src = "in {} A, {} B\nout long L\n( ( { !>L(1); } A() - ( { !>L(2); } A() )* B() ) | A() )*"
    items = _items([("A", {})])
    assert _values(src, [("A", {})]) == [1, 2, 2, 1]
    assert run_tester(src, render(items, T0), lazy=False) == run_reference(src, Trace(items))


def test_a_new_grouped_instance_evaluates_its_start_states_time_markers() -> None:
    # docs/language.md 7.6: entering a state evaluates the time markers that can follow it, and a
    # new instance enters its start state before its first event moves it on: n is not set yet.
    src = "in long A group(A % 2)\nout long O\n( elapse[(n) sec]() | A(v) { n = v; !>O(v); } )*"
    items = [("time", T0), ("event", "A", 5), ("time", T0 + 1_000_000)]
    want = [
        {"time": "2026-01-01T00:00:00.000000Z", "event": "$error", "value": 3},
        {"time": "2026-01-01T00:00:00.000000Z", "event": "O", "value": 5, "key": [1]},
    ]
    assert run_reference(src, Trace(items)) == want
    assert run_tester(src, render(items, T0), lazy=False) == want


def test_a_timer_due_at_once_fires_after_the_event_its_instance_discarded() -> None:
    # The key's first event creates its instance, whose start state waits for the elapse: the
    # event is discarded ($error 2; README 12: the pending timer stays as it was), and the timer,
    # due at the start itself, fires at once, before the next event of the instant (README 2).
    # The reference held it back until the next trace item (fuzz seed 3401).
    src = "in long A group(A)\nout long O\n( elapse[0 sec]() { !>O(1); } A(x) { !>O(x); } )*"
    items = [("time", T0), ("event", "A", 5), ("event", "A", 5), ("time", T0 + 1_000_000)]
    assert [line["value"] for line in run_reference(src, Trace(items))] == [2, 1, 5, 1]
    assert run_tester(src, render(items, T0), lazy=False) == run_reference(src, Trace(items))


RETIRING = "in long A group(A % 2), long B group(B % 2)\nout long O\n( A(v) B() { !>O(v); } )*"
#: B(1) has no instance; A(1) B(1) match (back at the start, nothing live); then a second B(1).
RETIRING_EVENTS = [("B", 1), ("A", 1), ("B", 1), ("B", 1)]


def test_a_discarded_events_error_carries_its_key_with_or_without_an_instance() -> None:
    # docs/language.md 7.7: an $error about an event whose group key was computed carries that key;
    # the first B(1) has no instance to be discarded by, the last one has: both carry [1].
    items = _items(RETIRING_EVENTS)
    want = run_reference(RETIRING, Trace(items), error_keys=True)
    assert [line.get("key") for line in want if line["event"] == "$error"] == [[1], [1]]
    assert run_tester(RETIRING, render(items, T0), lazy=True, error_keys=True) == want
    with mock.patch.dict(os.environ, {RETIRE_ENV: "off"}):
        assert run_tester(RETIRING, render(items, T0), lazy=False, error_keys=True) == want


#: Each A(0) matches and comes back to the start, nothing live; classifying A(0) divides by zero.
CLASSIFYING = "in long A group(A % 2) case { 12 / A >= 3 ? Hi : Lo }\nout long O\n( A(v) )*"


def test_a_case_clauses_errors_carry_the_events_key_with_or_without_an_instance() -> None:
    items = _items([("A", 0), ("A", 0)])
    want = run_reference(CLASSIFYING, Trace(items), error_keys=True)
    assert [(line["value"], line.get("key")) for line in want] == [(4, [0]), (4, [0])]
    assert run_tester(CLASSIFYING, render(items, T0), lazy=True, error_keys=True) == want
    with mock.patch.dict(os.environ, {RETIRE_ENV: "off"}):
        assert run_tester(CLASSIFYING, render(items, T0), lazy=False, error_keys=True) == want


#: Matches and comes back to the start with no variable at all: a "compact" engine, which retires
#: instances by default (engine.py, COMPACT_ENV and RETIRE_ENV "auto").
BARE = "in long A group(A % 2), long B group(B % 2)\nout long O\n( A() B() { !>O(1); } )*"
KEEP_ALL = {RETIRE_ENV: "off", COMPACT_ENV: "off"}


@pytest.mark.parametrize(
    ("source", "events", "env"),
    [
        (RETIRING, RETIRING_EVENTS, {RETIRE_ENV: "on"}),
        (CLASSIFYING, [("A", 0), ("A", 0)], {RETIRE_ENV: "on"}),
        (BARE, RETIRING_EVENTS, {}),  # what `eventscript test` does by default
    ],
)
def test_retiring_an_instance_does_not_change_the_key_of_a_later_errors_line(
    source: str, events: list[tuple[str, Any]], env: dict[str, str]
) -> None:
    items = _items(events)
    with mock.patch.dict(os.environ, KEEP_ALL):
        kept = run_tester(source, render(items, T0), lazy=False, error_keys=True)
    assert [line.get("key") for line in kept if line["event"] == "$error"][-1] is not None
    with mock.patch.dict(os.environ, env):
        for name in KEEP_ALL.keys() - env.keys():
            os.environ.pop(name, None)
        assert run_tester(source, render(items, T0), lazy=False, error_keys=True) == kept


def test_a_terminated_program_does_not_classify_later_events() -> None:
    # Choice 6: after termination every declared event gets $error 2, and only that (choice 12:
    # a discarded event changes nothing): the case clause's division by zero is not evaluated.
    src = "in long A case { 12 / A >= 3 ? Hi : Lo }\nout long O\nA(v)"
    items = _items([("A", 0), ("A", 0)])
    want = [{"time": "2026-01-01T00:00:00.000000Z", "event": "$error", "value": code} for code in (4, 2)]
    assert run_reference(src, Trace(items)) == want
    assert run_tester(src, render(items, T0), lazy=False) == want


def test_a_program_that_can_match_nothing_has_not_terminated() -> None:
    # Choice 6 terminates an instance at an accepting end; an empty language has none, so its
    # events are classified (the division by zero shows) before they are discarded.
    src = "in long A case { 12 / A >= 3 ? Hi : Lo }, long C\nout long O\nA() & C()"
    items = _items([("A", 0)])
    want = [{"time": "2026-01-01T00:00:00.000000Z", "event": "$error", "value": code} for code in (4, 2)]
    assert run_reference(src, Trace(items)) == want
    assert run_tester(src, render(items, T0), lazy=False) == want


def _agree(src: str, items: list[tuple[Any, ...]], want: list[Any]) -> None:
    """The reference and the eager tester both give ``want`` (values only)."""
    assert [line["value"] for line in run_reference(src, Trace(items))] == want
    assert [line["value"] for line in run_tester(src, render(items, T0), lazy=False)] == want


def test_a_long_compared_with_a_double_is_promoted() -> None:
    # Footnote 5 of the language document: the long operand becomes a double, in a comparison too;
    # 2**63 - 1 rounds to 2.0**63, so it equals 9223372036854775807.0 (as in Java).
    src = "in long A\nout boolean F\n( A(v) { !>F(v == 9223372036854775807.0); !>F(v * 1.0 == v); } )*"
    _agree(src, _items([("A", 2**63 - 1)]), [True, True])


def test_a_computed_arrive_component_out_of_range_is_error_8_and_does_not_fire() -> None:
    # docs/language.md 5.4: a computed component out of range is $error 8 and the marker does not
    # fire; a date may hold wildcards. n = 70 is no second; n = 20 fires at 00:00:20.
    src = (
        "in long A\nout long O\n{ n = 70; }\n"
        "( A(v) { n = v; } | arrive[.:.:(n)](t) { !>O(second(t)); } | arrive[.-.-01 00:00:50]() { !>O(50); } )*"
    )
    items = [("time", T0), ("event", "A", 20), ("time", T0 + 65_000_000)]
    _agree(src, items, [8, 20, 50])


def test_a_trace_builder_may_name_fields_in_any_order() -> None:
    # docs/language.md 4.4: a builder takes its field order from the type its context fixes; in a
    # trace that is the event's declared type. Written positionally, the values come in that order.
    src = "in {string s; long k;} H\nout string S\n( H(h) { !>S(h.s + h.k); } )*"
    items = [
        ("time", T0),
        ("event", "H", {"k": 1, "s": "x"}),
        ("event", "H", {"k": 2, "s": "y"}, True),
        ("time", T0 + 1_000_000),
    ]
    _agree(src, items, ["x1", 6])


def test_a_time_made_from_epoch_units_beyond_year_9999_is_error_8_and_the_epoch() -> None:
    # docs/language.md 4.1 and 7.7: a time is of years 1 to 9999; time arithmetic leaving them is
    # $error 8 and the epoch. The engine printed "9223372036854775807" as a time, and
    # timeOfEpochMillis wrapped n * 1000 round 64 bits into 1969.
    src = "in long A\nout time M\n( A(v) { !>M(timeOfEpochMicros(v)); !>M(timeOfEpochMillis(v)); } )*"
    epoch = "1970-01-01T00:00:00.000000Z"
    _agree(src, _items([("A", 2**63 - 1)]), [8, epoch, 8, epoch])


def test_an_elapse_that_cannot_fire_is_error_8() -> None:
    # docs/language.md 7.7, code 8: a non-finite elapse amount (1.0 / 0.0) and, like any time beyond
    # year 9999, a deadline that far: the marker does not fire; the other marker still does.
    src = (
        "in long A\nout long T\n{ d = 0.0; }\n"
        "( elapse[(1.0 / d) sec]() | elapse[1.0E15 days]() | elapse[2 sec]() { !>T(1); } )"
    )
    _agree(src, _items([]), [8, 8, 1])


def test_a_field_assignment_evaluates_its_structure_before_its_value() -> None:
    # Java's order (the document's actions are Java-like, 2.5): q[5] is read, and found out of
    # bounds ($error 5), before the value u (unset, $error 3) is evaluated.
    src = "in long A\nout long O\n{ q = new {long a; string b;}[2]; }\n( A() { q[5].a = u; } )*"
    _agree(src, _items([("A", 1)]), [5, 3])


def test_a_pipeline_stage_has_started_before_any_event_reaches_it() -> None:
    # docs/language.md 10.3: the stages share one clock and start at the first timestamp; stage 1's
    # start emits S (undeclared in stage 2: $error 1) and T: stage 2's initial actions come first.
    first = 'in long A\nout string S, long T\n{ !>S("x"); !>T(1); }\n( A() )*'
    second = "in long T\nout long O\n{ !>O(0); }\n( T(v) { !>O(v); } )*"
    items = _items([])
    want = [0, 1, 1]
    assert [line["value"] for line in run_reference([first, second], Trace(items))] == want
    assert [line["value"] for line in run_tester([first, second], render(items, T0), lazy=False)] == want


def test_a_timer_firing_1000_times_at_one_instant_stops_until_the_next_event() -> None:
    # docs/language.md 7.7, code 8: an elapse of zero in a loop fires 1,000 times, then its timer
    # stops (until the next event: A re-enters the state, and it fires again).
    src = "in long A\nout long T\n{ z = 0; }\n( A() | elapse[(z) sec]() { !>T(1); } )*"
    lines = run_reference(src, Trace(_items([])))
    assert [line["value"] for line in lines] == [1] * 1000 + [8]
    assert run_tester(src, render(_items([]), T0), lazy=False) == lines


def test_time_of_text_that_is_not_iso_8601_is_error_8() -> None:
    # docs/language.md 8, time(s): "00:00:010" has three digits of seconds, which ISO-8601 does not
    # allow (Python's fromisoformat reads it as 1.0 seconds): $error 8 and the epoch.
    src = 'in long A\nout time M\n( A(v) { !>M(time("2026-01-01T00:00:0" + v + "Z")); } )*'
    _agree(src, _items([("A", 10), ("A", 7)]), [8, "1970-01-01T00:00:00.000000Z", "2026-01-01T00:00:07.000000Z"])


def test_a_time_before_year_1000_is_written_with_four_digits() -> None:
    # docs/language.md 10.2: times in ISO-8601; the year has four digits (0930, not 930).
    src = "in long A\nout time M\n( A(v) { !>M(daysAfter(v, now())); } )*"
    _agree(src, _items([("A", -400_000)]), ["0930-11-03T00:00:00.000000Z"])


def test_an_inputs_name_matches_every_event_of_its_classes_also_a_shared_classs() -> None:
    # Document footnote 9: Purchase(p) is (CompPurchase(p) | OtherPurchase(p)); the input alphabet
    # has one symbol per class name (footnote 17). A class both inputs share is one symbol, so
    # A() also takes B(5), a Pos event (docs/language.md 3.2). The reference took only A's events.
    src = (
        "in long A case { A > 0 ? Pos : Neg }, long B case { B > 0 ? Pos : Zero }\nout long O\n"
        "( A(x) { !>O(x); } | Zero() | Pos(y) { !>O(y + 1000); } )*"
    )
    items = _items([("B", 5), ("B", 0), ("A", -1)])
    assert [line["value"] for line in run_reference(src, Trace(items))] == [5, 1005, -1]
    assert run_tester(src, render(items, T0), lazy=False) == run_reference(src, Trace(items))


def test_a_zero_result_of_floor_and_ceil_keeps_its_sign_as_in_java() -> None:
    src = 'in double D\nout string S\n( D(d) { !>S(floor(d) + " " + ceil(d) + " " + ceil(d - 0.75)); } )*'
    items = _items([("D", -0.0), ("D", 0.25)])
    assert [line["value"] for line in run_reference(src, Trace(items))] == ["-0.0 -0.0 -0.0", "0.0 1.0 -0.0"]
    assert run_tester(src, render(items, T0), lazy=False) == run_reference(src, Trace(items))


def test_the_remainder_of_an_infinite_dividend_is_nan() -> None:
    # Java (and IEEE 754): Infinity % x is NaN, x % Infinity is x; the reference's math.fmod raised.
    src = "in double D\nout double P\n( D(d) { !>P(d / 0.0 % 2.5); !>P(2.5 % (d / 0.0)); } )*"
    items = _items([("D", 1.0), ("D", -1.0)])
    assert [line["value"] for line in run_reference(src, Trace(items))] == ["NaN", 2.5, "NaN", 2.5]
    assert run_tester(src, render(items, T0), lazy=False) == run_reference(src, Trace(items))


@pytest.mark.parametrize(
    ("declared", "value"), [("boolean", 1), ("boolean", 0), ("long", 2**63), ("long", -(2**63) - 1)]
)
def test_a_trace_value_that_does_not_fit_is_error_6(declared: str, value: int) -> None:
    # docs/language.md 10.1: traces are read strictly; a long is a 64-bit integer, a boolean is
    # true or false (the reference took 1 for true and any integer for a long).
    src = f"in {declared} A\nout {declared} O\n( A(x) {{ !>O(x); }} )*"
    items = _items([("A", value)])
    assert [line["value"] for line in run_reference(src, Trace(items))] == [6]
    assert run_tester(src, render(items, T0), lazy=False) == run_reference(src, Trace(items))


def test_times_and_doubles_inside_structures_and_arrays_are_written_as_the_output_writes_them() -> None:
    # Conformance README, output format: a time as ISO-8601 text and a NaN as "NaN" wherever they
    # stand (the toll-booth case emits a structure with a time); the reference wrote them so only
    # at the top of a value.
    src = (
        "in double D\nout {time at; double[] ds;} S\n"
        "( D(d) { a = new double[3]; a[0] = d / 0.0; a[1] = 0.0 / 0.0; a[2] = d;\n"
        "         !>S({at: secondsAfter(1, now()), ds: a}); } )*"
    )
    items = _items([("D", 1.5)])
    assert _values(src, [("D", 1.5)]) == [{"at": "2026-01-01T00:00:01.000000Z", "ds": ["Infinity", "NaN", 1.5]}]
    assert run_tester(src, render(items, T0), lazy=False) == run_reference(src, Trace(items))


def test_a_time_key_component_is_written_as_iso_text() -> None:
    # docs/language.md 10.2: the key's components in the value encoding; the reference wrote a
    # time component as its count of microseconds (tests/cases/group-key-single-time differed).
    src = "in time A group(A, 1.5)\nout long O\n{ n = 0; }\n( A() { n = n + 1; !>O(n); } )*"
    items = _items([("A", "2026-01-01T09:00:00Z"), ("A", "2026-01-01T09:00:00Z")])
    want = [
        {"time": "2026-01-01T00:00:00.000000Z", "event": "O", "value": v, "key": ["2026-01-01T09:00:00.000000Z", 1.5]}
        for v in (1, 2)
    ]
    assert run_reference(src, Trace(items)) == want
    assert run_tester(src, render(items, T0), lazy=False) == want
