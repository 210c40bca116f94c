"""A beginner's typical slips in a program get one error that says what to do, not a misleading
message or follow-on errors: a ';' after a declaration, '=' written for '==' before a
conditional action, ',' between structure fields, a misspelt event bound to a variable.

Each test here failed before its fix.
"""

from __future__ import annotations

import pytest
from test_issue_diagnostics import errors, only_error

from conftest import check_source, run_program

HEAD = (
    "in {string user; string ip;} Failed, {string user;} Login\nout {string user; string lastIp; long count;} Locked\n"
)


@pytest.mark.parametrize("declaration", ["in long A;", "out long L;", "type P = {long x;};"])
def test_a_semicolon_after_a_declaration_says_to_remove_it(declaration: str) -> None:
    text = f"in long A\nout long L\n{declaration}\nA(x) {{ !>L(x); }}"
    text = text.replace("in long A\n", "", 1) if declaration.startswith("in") else text
    text = text.replace("out long L\n", "", 1) if declaration.startswith("out") else text
    err = only_error(text)
    assert err.message == "a declaration ends without ';': remove it"
    assert err.pos.source.text[err.pos.offset] == ";"  # the caret is on the ';'
    assert err.hint is not None and "in long A, out double B" in err.hint


def test_a_semicolon_after_each_declaration_is_reported_each_time() -> None:
    errs = errors("in long A;\nout long L;\nA(x) { !>L(x); }")
    assert [(e.pos.line, e.pos.col) for e in errs] == [(1, 10), (2, 11)]


@pytest.mark.parametrize(
    ("action", "written"),
    [
        ("n = 3 ? { !>Locked({user: f.user, lastIp: f.ip, count: n}); }", "n == 3"),
        ("n = 3 ? !>Locked({user: f.user, lastIp: f.ip, count: n});", "n == 3"),
        ("n = 1 + 2 ? m = 0; : m = 1;", "n == 1 + 2"),
    ],
)
def test_an_assignment_before_a_conditional_action_asks_for_equals_equals(action: str, written: str) -> None:
    err = only_error(HEAD + f"( Failed(f) {{ n = 1; m = 0;\n  {action}\n  }}\n| Login() {{ n = 0; }} )*")
    assert (err.pos.line, err.pos.col) == (4, 5)  # the '='
    assert "did you mean '=='?" in err.message
    assert err.hint == f"a condition compares with '==': write {written} ? ..."


def test_parsing_goes_on_after_the_slip_as_after_the_action_meant() -> None:
    errs = errors(HEAD + "( Failed(f) { n = 3 ? !>Locked({user: f.user, lastIp: f.ip, count: n}); x = ; } )*")
    assert [e.message for e in errs] == [
        "'=' assigns a value, but a conditional action follows: did you mean '=='?",
        "expected an expression, found ';'",
    ]
    assert errs[1].pos.col == 77  # the ";" after "x ="


@pytest.mark.parametrize(
    ("action", "trace", "values"),
    [
        ("m = n == 3 ? 1 : 2; !>L(m);", "N(3) N(4)", [1, 2]),  # a conditional expression assigned
        ("m = n > 3 ? n : 0; !>L(m);", "N(3) N(5)", [0, 5]),
        ("m = 0; n == 3 ? m = 1; !>L(m);", "N(3) N(4)", [1, 0]),
    ],
)
def test_valid_assignments_of_conditional_expressions_still_run(action: str, trace: str, values: list[int]) -> None:
    text = f"in long N\nout long L\n( N(n) {{ {action} }} )*"
    assert [o["value"] for o in run_program(text, f"[2026-01-01 00:00:00] {trace}")] == values


def test_commas_between_structure_fields_are_one_error() -> None:
    text = HEAD.replace("string user; string lastIp; long count;", "string user, string lastIp, long count")
    err = only_error(text + "( Failed(f) { !>Locked({user: f.user, lastIp: f.ip, count: 1}); } | Login() )*")
    assert (err.pos.line, err.pos.col, err.message) == (2, 17, "expected ';' after field user")
    assert err.hint == "structure fields are separated by ';', not ',': { string name; double value; }"


def test_a_failed_declaration_is_not_followed_by_no_regular_expression() -> None:
    err = only_error("in {long a long b} A\nout long L\nA(x) { !>L(x.a); }")
    assert err.message == "expected ';' after field a"
    assert err.hint == "structure fields are separated by ';': { string name; double value; }"


def test_declarations_only_still_say_there_is_no_regular_expression() -> None:
    assert only_error("in long A\nout long L\n").message == "the program has no regular expression"


@pytest.mark.parametrize("marker", ["Faild(f)", "Locked(f)"])
def test_the_variable_of_a_marker_already_reported_is_not_reported_again(marker: str) -> None:
    err = only_error(HEAD + f"( {marker} {{ !>Locked({{user: f.user, lastIp: f.ip, count: 1}}); }} | Login() )*")
    assert err.pos.col == 3 and ("'Faild'" in err.message or "'Locked' is an output event" in err.message)


def test_a_variable_never_set_is_still_reported() -> None:
    err = only_error(HEAD + "( Failed() { !>Locked({user: g.user, lastIp: g.ip, count: 1}); } | Login() )*")
    assert err.message == "'g' is never given a value, and nothing gives it a type"


def test_a_variable_never_set_is_offered_the_close_name_of_one_that_is() -> None:
    """A misspelt variable ('ipp' read where 'ip' is set) is only a warning (a read of a variable
    never set is $error 3 at run time); its hint names the variable meant."""
    text = (
        "in {string user; string ip;} Failed group(Failed.user)\nout {string user; string lastIp;} Locked\n"
        "( Failed(f) { ip = f.ip; } Failed() { !>Locked({user: group[0], lastIp: ipp}); } )*"
    )
    (w,) = [w for w in check_source(text).diagnostics.warnings if "'ipp' is never given a value" in w.message]
    assert w.hint is not None and w.hint.startswith("did you mean 'ip'?")
    (w,) = [
        w for w in check_source(text.replace("ip = f.ip", "zz = f.ip")).diagnostics.warnings if "'ipp'" in w.message
    ]
    assert w.hint == "set it in an action (x = ...;) or with an event marker (Event(x))"  # nothing close: as before
