"""A beginner's typical slips in a program get one error that says what to do, not a misleading
message or follow-on errors: a ';' after a declaration or between its events, '=' written for
'==' before a conditional action or inside parentheses, an assignment as a branch of a
conditional expression, ',' between structure fields, a misspelt event bound to a variable.

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
    assert err.hint == (
        "declarations are not terminated: in long A, long B on one line, out double C on the next, "
        "then the regular expression"
    )


def test_a_semicolon_after_each_declaration_is_reported_each_time() -> None:
    errs = errors("in long A;\nout long L;\nA(x) { !>L(x); }")
    assert [(e.pos.line, e.pos.col) for e in errs] == [(1, 10), (2, 11)]


@pytest.mark.parametrize(
    ("declarations", "line", "col", "written"),
    [
        ("in long A; long B\nout long L", 1, 10, "in long A, long B"),
        ("in long A;\n  {string s;} B\nout long L", 1, 10, "in long A, {string s;} B"),
        ("in long A\nout long L; double D", 2, 11, "out long L, double D"),
        ("in long A, long B; long C\nout long L", 1, 18, "in long A, long B, long C"),
    ],
)
def test_a_semicolon_between_the_events_of_a_declaration_asks_for_a_comma(
    declarations: str, line: int, col: int, written: str
) -> None:
    """C separates declarations with ';': the event after it is read as the declaration's next
    one, not as a marker missing its '(' (the follow-on error this used to give), also when a
    '(' starting the regular expression follows it."""
    err = only_error(f"{declarations}\n(A(x) {{ !>L(x); }})*")
    assert (err.pos.line, err.pos.col) == (line, col)
    assert err.message == "a declaration ends without ';': write ',' between its events"
    assert err.hint == f"write {written}"


def test_a_semicolon_before_an_empty_action_block_is_not_read_as_a_comma() -> None:
    """``{} A(x)`` after the ';' reads as a type and a name, but the '(' makes it the regular
    expression: an empty action block, then a marker."""
    err = only_error("out long L\nin long A;\n{} A(x) { !>L(x); }")
    assert (err.pos.line, err.pos.col, err.message) == (2, 10, "a declaration ends without ';': remove it")


@pytest.mark.parametrize(
    ("action", "col", "hint"),
    [
        (
            "n = 3 ? m = 1 : m = 2;",
            13,
            "a conditional expression chooses a value: write m = n == 3 ? 1 : 2; (a condition compares with '==')",
        ),
        (
            "n = 3 ? m[0] = 1 + 2 : m[0] = n;",
            16,
            "a conditional expression chooses a value: write m[0] = n == 3 ? 1 + 2 : n; "
            "(a condition compares with '==')",
        ),
        (
            "n = 3 ? m = 1 : k = 2;",
            13,
            "to choose between assignments, use a conditional action (its actions end with ';'): "
            "n == 3 ? m = 1; : k = 2; (a condition compares with '==')",
        ),
        (
            "x = n > 3 ? m = 1 : m = 2;",
            17,
            "a conditional expression chooses a value: write m = n > 3 ? 1 : 2;",
        ),
        (
            "!>L(n > 3 ? m = 1 : 2);",
            17,
            "a conditional expression chooses between values, not actions: assign the value chosen, "
            "m = n > 3 ? 1 : 2;, or write a conditional action, n > 3 ? m = 1; : k = 2;",
        ),
        (
            "x = n > 3 ? 1 : m = 2;",
            21,
            "a conditional expression chooses between values, not actions: assign the value chosen, "
            "m = n > 3 ? 1 : 2;, or write a conditional action, n > 3 ? m = 1; : k = 2;",
        ),
    ],
)
def test_an_assignment_in_a_branch_of_a_conditional_expression_says_what_to_write(
    action: str, col: int, hint: str
) -> None:
    """The branches of ``c ? a : b`` are values; the error is on the branch's '=' (no longer
    "expected ':'"), its hint the assignment or conditional action meant; the block's other
    actions are still read, with no error."""
    err = only_error(f"in long N\nout long L\n( N(n) {{ m = new long[1]; k = 0;\n  {action} !>L(n); }} )*")
    assert (err.pos.line, err.pos.col) == (4, col)
    assert err.message == "an assignment cannot be a branch of a conditional expression"
    assert err.hint == hint


@pytest.mark.parametrize(
    ("action", "col", "written"),
    [
        ("(n = 3) ? !>L(n);", 6, "(n == 3)"),
        ("((n = 3) && n > 1) ? !>L(n);", 7, "(n == 3)"),
        ("(n > 1 && (n = 3)) ? { !>L(n); }", 16, "(n == 3)"),
        ("(n = 3 || n = 4) ? !>L(n);", 6, "(n == 3 || n == 4)"),
        ("m = (n = 3) ? 1 : 2;", 10, "(n == 3)"),
        ("!>L((n = 3) ? 1 : 2);", 10, "(n == 3)"),
    ],
)
def test_equals_for_equals_equals_inside_parentheses_asks_for_equals_equals(
    action: str, col: int, written: str
) -> None:
    """Inside parentheses '=' can assign nothing: one error on the (first) '=', with the
    parentheses as they should be written, and the rest of the block read as meant."""
    err = only_error(f"in long N\nout long L\n( N(n) {{ m = 0;\n  {action} !>L(m); }} )*")
    assert (err.pos.line, err.pos.col) == (4, col)
    assert err.message == "'=' assigns a value, but this is inside an expression's parentheses: did you mean '=='?"
    assert err.hint == f"a condition compares with '==': write {written}"


def test_parsing_goes_on_after_the_parenthesised_slip() -> None:
    errs = errors("in long N\nout long L\n( N(n) { (n = 3) ? !>L(n); x = ; } )*")
    assert [(e.pos.col, e.message) for e in errs] == [
        (13, "'=' assigns a value, but this is inside an expression's parentheses: did you mean '=='?"),
        (32, "expected an expression, found ';'"),
    ]


def test_a_parenthesis_that_does_not_read_with_equals_equals_keeps_its_error() -> None:
    err = only_error("in long N\nout long L\n( N(n) { (n = 3 ? !>L(n); } )*")
    assert (err.pos.col, err.message) == (13, "expected ')', found '='")


def test_slips_are_looked_for_only_after_a_parse_has_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A valid program with every construct near the slips never calls their readers."""
    from eventscript.language.parser import Parser

    def must_not_run(*args: object) -> None:
        raise AssertionError("a slip was looked for in a valid program")

    readers = ("_entry_after_semicolon", "_comparison_in_parentheses", "_no_assignment_after", "_trial")
    for reader in readers:
        monkeypatch.setattr(Parser, reader, must_not_run)
    text = (
        "in long N, long K\nout long L, {long v;} S\n"
        "( N(n) { m = (n == 3) ? 1 : 2; n == 3 ? m = 1; : m = 2; (n > 1 && (n == 3)) ? !>L(m);"
        " !>S({v: (n == 3) ? m : 0}); } | K() )*"
    )
    assert not check_source(text).diagnostics.errors


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
        ("m = (n == 3) ? 1 : 2; !>L(m);", "N(3) N(4)", [1, 2]),  # near the slips: all valid
        ("n == 3 ? m = 1; : m = 2; !>L(m);", "N(3) N(4)", [1, 2]),
        ("((n == 3) || (n > 4)) ? !>L(n);", "N(3) N(4) N(5)", [3, 5]),
        ("s = {v: (n == 3) ? 1 : 2}; !>L(s.v);", "N(3) N(4)", [1, 2]),
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


TEMP_CASE = "case { Temp < 0.0 ? Freezing : Warm }"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            f"in double Temp\nout long L\n( Temp(t) {{ {TEMP_CASE}; !>L(1); }} )*",
            "a case clause cannot stand in an action or an expression",
        ),
        (
            "in double Temp\nout long L\n( Temp(t) { !>L(case { Temp < 0.0 ? 1 : 2 }); } )*",
            "a case clause cannot stand in an action or an expression",
        ),
        (
            f"in double Temp\nout long L\n( Temp(t) {TEMP_CASE} {{ !>L(1); }} )*",
            "cannot stand in the regular expression",
        ),
        (
            f"in double Temp\nout long L\n( Temp(t) {{ !>L(1); }} )* {TEMP_CASE}",
            "cannot stand in the regular expression",
        ),
        (
            f"in double Temp\nout long L\n( Temp(t) {{ !>L(1); }} | {TEMP_CASE} )*",
            "cannot stand in the regular expression",
        ),
        (f"in double Temp\nout long L\n{TEMP_CASE}\n( Temp(t) )*", "cannot stand on its own, after the declarations"),
        (f"in double Temp\nout long L {TEMP_CASE}\n( Temp(t) )*", "an output event has no case clause"),
        (f"in double {TEMP_CASE} Temp\nout long L\n( Temp(t) )*", "comes after the input's name, not before it"),
        (f"in {TEMP_CASE} double Temp\nout long L\n( Temp(t) )*", "comes after the input's type and name"),
        (f"in double Temp, {TEMP_CASE}\nout long L\n( Temp(t) )*", "follows its input's name without a ','"),
    ],
)
def test_a_case_clause_in_the_wrong_place_says_where_it_belongs(text: str, message: str) -> None:
    """A case clause written in an action, after a marker or an output, or in the wrong place of an
    input's declaration was 'expected an expression', "expected ')'", 'expected a type' (with the
    list of types) or 'expected an event marker': none said that it belongs after an input's name."""
    err = only_error(text)
    assert message in err.message
    assert err.pos.source.text.startswith("case", err.pos.offset)  # the caret is on 'case'
    assert err.hint is not None and "in double Temp case { Temp < 0.0 ? Freezing : Warm }" in err.hint


@pytest.mark.parametrize(
    ("expression", "col", "written"),
    [
        ("x * .5", 16, "0.5"),
        (".25 + x", 12, "0.25"),
        ("-.5 * x", 13, "0.5"),
        ("(.5)", 13, "0.5"),
        ("x * 1.", 16, "1.0"),
        ("2. + x", 12, "2.0"),
    ],
)
def test_a_number_with_a_bare_point_asks_for_digits_on_both_sides(expression: str, col: int, written: str) -> None:
    """``.5`` and ``1.`` (Java and Python take them; the language's literals want digits on both
    sides of the point, docs/language.md 2) say so, with the caret on the number, not "expected an
    expression" or "expected ')'" at the point."""
    err = only_error(f"in double A\nout double B\nA(x) {{ !>B({expression}); }}")
    assert (err.pos.line, err.pos.col) == (3, col)
    assert err.message == "a double literal needs digits on both sides of the point"
    assert err.hint == f"write {written}"


@pytest.mark.parametrize("action", ["!>B(x.5);", "!>B((x).5);", "!>B(1 . 5);"])
def test_a_point_after_a_value_or_apart_from_its_number_is_not_taken_for_a_bare_point(action: str) -> None:
    errs = errors(f"in double A\nout double B\nA(x) {{ {action} }}")
    assert errs and all("digits on both sides" not in e.message for e in errs)


def test_a_case_condition_with_a_bare_point_says_so_too() -> None:
    err = only_error("in double A case { A > .5 ? Hi : Lo }\nout double B\n( Hi(x) { !>B(x); } | Lo() )*")
    assert (err.pos.line, err.pos.col, err.hint) == (1, 24, "write 0.5")


SLIPS_HEAD = "in long A\nout long B\n"


@pytest.mark.parametrize(
    ("action", "col", "word", "symbol"),
    [
        ("x > 1 and x < 5 ? !>B(x);", 16, "and", "&&"),
        ("x < 1 or x > 5 ? !>B(x);", 16, "or", "||"),
        ("y = x > 1 and x < 3;", 20, "and", "&&"),
        ("d = false; not d ? !>B(x);", 21, "not", "!"),
    ],
)
def test_a_word_written_for_a_logical_operator_names_the_operator(
    action: str, col: int, word: str, symbol: str
) -> None:
    """``and``, ``or`` and ``not`` read as names, and failed at the next token with "expected '='
    or '?'": the caret is now on the word, and the message names the operator to write."""
    err = only_error(f"{SLIPS_HEAD}( A(x) {{ {action} }} )*")
    assert (err.pos.line, err.pos.col) == (3, col)
    assert err.message == f"'{word}' is not an operator: write {symbol}"
    assert err.hint == "conditions are combined with && (and), || (or) and ! (not): x > 1 && !done"


@pytest.mark.parametrize(
    ("action", "hint"),
    [
        ("if (x > 1) !>B(x);", "write x > 1 ? !>B(x);"),
        ("if (x > 1 && x < 5) { !>B(x); }", "write x > 1 && x < 5 ? { !>B(x); }"),
        ("if x > 1 ? !>B(x);", "write the condition, then '?' and the action: x > 1 ? !>B(x);"),
    ],
)
def test_an_if_statement_says_how_a_conditional_action_is_written(action: str, hint: str) -> None:
    """``if (c) action`` read as a call of ``if``, and failed at the action with "expected '='
    or '?'": the caret is now on the 'if', and the hint is the user's condition and action so
    written."""
    err = only_error(f"{SLIPS_HEAD}( A(x) {{ {action} }} )*")
    assert (err.pos.line, err.pos.col) == (3, 10)
    assert err.message == "there is no 'if' statement: a conditional action is written `condition ? action`"
    assert err.hint == hint


def test_the_hint_for_an_if_statement_compiles() -> None:
    assert errors(f"{SLIPS_HEAD}( A(x) {{ x > 1 ? !>B(x); }} )*") == []


@pytest.mark.parametrize(("action", "hint"), [("B(x);", "write !>B(x);"), ("B(x + 1);", "write !>B(x + 1);")])
def test_an_output_called_as_a_function_says_to_emit_it(action: str, hint: str) -> None:
    """``B(x);`` for a declared output B failed at the ';' with "expected '=' or '?'": it is an
    emit without its '!>'; the caret is on the output's name."""
    err = only_error(f"{SLIPS_HEAD}( A(x) {{ {action} }} )*")
    assert (err.pos.line, err.pos.col) == (3, 10)
    assert err.message == "B is an output event: emit it with !>"
    assert err.hint == hint


def test_a_call_of_what_is_not_an_output_keeps_the_general_message() -> None:
    err = only_error(f"{SLIPS_HEAD}( A(x) {{ f(x); }} )*")
    assert err.message == "expected '=' or '?' after the expression, found ';'"


@pytest.mark.parametrize(
    ("declaration", "value", "hint"),
    [
        ("long[] A", "x.length", "the number of elements is length(x)"),
        ("long[] A", "x.size", "the number of elements is length(x)"),
        ("{long[] v;} A", "x.v.count", "the number of elements is length(x.v)"),
        ("string[] A", "x[0].length", "the number of characters is length(x[0])"),
    ],
)
def test_the_length_field_of_an_array_or_a_string_points_to_the_length_function(
    declaration: str, value: str, hint: str
) -> None:
    """Arrays and strings have no fields; ``a.length`` had no hint. The one suggested compiles."""
    err = only_error(f"in {declaration}\nout long B\n( A(x) {{ !>B({value}); }} )*")
    assert err.message.startswith(f"field '{value.rsplit('.', 1)[1]}' of ")
    assert err.hint == hint
    meant = hint.rsplit(" ", 1)[1]
    assert errors(f"in {declaration}\nout long B\n( A(x) {{ !>B({meant}); }} )*") == []


@pytest.mark.parametrize(
    ("declaration", "action", "col", "method", "value"),
    [
        ("long[] A", "!>B(x.length());", 16, "length", "x"),
        ("{long[] v;} A", "n = x.v.size(); !>B(n);", 18, "size", "x.v"),
    ],
)
def test_a_length_method_call_points_to_the_length_function(
    declaration: str, action: str, col: int, method: str, value: str
) -> None:
    """``a.length()`` failed at its '(' with "expected ')'" and no hint; the caret is now on the
    method's name."""
    err = only_error(f"in {declaration}\nout long B\n( A(x) {{ {action} }} )*")
    assert (err.pos.line, err.pos.col) == (3, col)
    assert err.message == f"'.{method}()' calls a method, and EventScript has none"
    assert err.hint == f"the number of elements (of a string, characters) is length({value})"


@pytest.mark.parametrize(
    ("marker", "hint"),
    [
        ("after[5 minutes]()", "write elapse[5 minutes]()"),
        ("timeout[10 sec](t)", "write elapse[10 sec](t)"),
        ("at[9:00]()", "write elapse[5 minutes]() or arrive[9:00]()"),
    ],
)
def test_a_name_with_brackets_says_which_the_time_markers_are(marker: str, hint: str) -> None:
    """``after[5 minutes]()`` was "expected '(' after event name after", with a hint about
    matching an event; the elapse marker the hint shows compiles."""
    err = only_error(f"{SLIPS_HEAD}( A(x) {marker} {{ !>B(x); }} )*")
    assert (err.pos.line, err.pos.col) == (3, 8)
    name = marker.split("[")[0]
    assert err.message == f"'{name}' is not a time marker: the time markers are elapse[...] and arrive[...]"
    assert err.hint == hint
    meant = hint.split(" or ")[0].removeprefix("write ")
    assert errors(f"{SLIPS_HEAD}( A(x) {meant} {{ !>B(x); }} )*") == []


ERROR_EVENTS_HINT = (
    "to react to another program's errors, declare an input of your own, in {long code; string message;} "
    "Failure, and read that program's error topic as it (event: Failure in the worker's inputs: docs/worker.md)"
)


def test_an_error_marker_says_error_events_cannot_be_matched_nor_declared() -> None:
    """``$error(e)`` was "undeclared input event" with the hint to declare it, which is refused:
    names starting with '$' are reserved."""
    err = only_error(f"{SLIPS_HEAD}( A(x) {{ !>B(x); }} | $error(e) )*")
    assert (err.pos.line, err.pos.col) == (3, 22)
    assert err.message.startswith("'$error' cannot be matched: names starting with '$' are the engine's")
    assert err.hint == ERROR_EVENTS_HINT


def test_a_declared_error_input_is_reported_once_with_what_to_do() -> None:
    """``in long $error`` then ``$error(x)``: the declaration's error, no follow-on error at the
    marker; the hint's input can be declared and matched."""
    err = only_error("in long $error\nout long B\n( $error(x) { !>B(x); } )*")
    assert (err.pos.line, err.message) == (1, "'$error': names starting with '$' are reserved")
    assert err.hint == ERROR_EVENTS_HINT
    assert errors("in {long code; string message;} Failure\nout long B\n( Failure(f) { !>B(f.code); } )*") == []


@pytest.mark.parametrize(
    ("marker", "col", "message", "hint"),
    [
        ("elapse[minutes 5]()", 15, "an elapse marker gives the amount before the unit", "write elapse[5 minutes]()"),
        (
            "arrive[06:00 UTC]()",
            21,
            "an arrive pattern names no time zone: remove 'UTC'",
            "patterns are matched in UTC (a host may configure another zone): write arrive[06:00]()",
        ),
        (
            "arrive[2026-01-02 6:00:30 Z]()",
            34,
            "an arrive pattern names no time zone: remove 'Z'",
            "patterns are matched in UTC (a host may configure another zone): write arrive[2026-01-02 6:00:30]()",
        ),
    ],
)
def test_a_time_marker_written_in_another_order_or_with_a_zone_says_the_right_form(
    marker: str, col: int, message: str, hint: str
) -> None:
    """``elapse[minutes 5]`` was "expected a time unit, found '5'" and ``arrive[06:00 UTC]``
    "unexpected 'UTC' in the arrive pattern", neither with a hint; the form shown compiles."""
    err = only_error(f"{SLIPS_HEAD}( A(x) {marker} {{ !>B(x); }} )*")
    assert (err.pos.line, err.pos.col, err.message, err.hint) == (3, col, message, hint)
    meant = hint.rsplit("write ", 1)[1]
    assert errors(f"{SLIPS_HEAD}( A(x) {meant} {{ !>B(x); }} )*") == []
