"""Every diagnostic of the front end, one negative test each: the message, the severity, the
position (line and column) and, where there is one, the hint. Then the ``eventscript check``
command's output format and exit status.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import check_source, run_program
from eventscript.automata.compile import compile_file, compile_source
from eventscript.cli.main import main as cli_main
from eventscript.language.diagnostics import Diagnostic, Severity
from eventscript.language.source import SourceFile
from eventscript.tester.pipeline import run_trace
from eventscript.tester.trace import parse_trace

T0 = "[2026-01-01 00:00:00]"


def diags(text: str, severity: Severity | None = None) -> list[Diagnostic]:
    ds = check_source(text).diagnostics.sorted()
    return [d for d in ds if severity is None or d.severity is severity]


def errors(text: str) -> list[tuple[int, int, str]]:
    return [(d.pos.line, d.pos.col, d.message) for d in diags(text, Severity.ERROR)]


def warnings(text: str) -> list[tuple[int, int, str]]:
    return [(d.pos.line, d.pos.col, d.message) for d in diags(text, Severity.WARNING)]


def only_error(text: str) -> Diagnostic:
    errs = diags(text, Severity.ERROR)
    assert len(errs) == 1, [str(e) for e in errs]
    return errs[0]


def at(d: Diagnostic) -> tuple[int, int]:
    return d.pos.line, d.pos.col


# ---------------------------------------------------------------------------------------
# Syntax errors


class TestSyntaxErrors:
    @pytest.mark.parametrize(
        ("text", "line", "col", "message", "hint"),
        [
            (  # the playground walk: the error is where '|' was found, the hint says which '(' is open
                "in {} A, {} B\n( A()\n  ( B(\n  | A() )\n)*",
                4,
                3,
                "expected ')' or a variable name, found '|'",
                "the '(' of B at 3:6 is not closed: write B() or B(x)",
            ),
            (
                "in long A\nout long B\n( A(x) { !>B(x) } )*",
                3,
                17,
                "expected ';', found '}'",
                "every emit action ends with ';'",
            ),
            (
                "in long A\nout long B\n( A(x) { y = x } )*",
                3,
                16,
                "expected ';', found '}'",
                "every assignment ends with ';'",
            ),
            (
                "in long A\nout long B\n( A(x) { !>B(x); } ",
                3,
                20,
                "expected ')', found the end of the file",
                "the '(' at 3:1 is not closed",
            ),
            (
                "in long A\nout long B\nA(x) { !>B(((x + 1); }",
                3,
                20,
                "expected ')', found ';'",
                "the '(' at 3:12 is not closed",
            ),
            (
                "in {} A\nout {} B\nA B()",
                3,
                3,
                "expected '(' after event name A",
                "write A() to match the event, or A(x) to keep its value in x",
            ),
            (
                "in {} A\nout {} B\nA(x y)",
                3,
                5,
                "expected ')', found 'y'",
                "an event marker holds one variable: x, a[i] or s.f",
            ),
            (
                "in {} A\nout {} B\n.() A()",
                3,
                1,
                "the wildcard '.' takes no parentheses",
                "write '.' alone: its value has no single type",
            ),
            (
                "in {} A\nout {} B\nA() () ",
                3,
                6,
                "empty parentheses in the regular expression",
                "an event marker needs its name: Name()",
            ),
            ("in {} A\nout {} B\nA()\nin {} C", 4, 1, "declarations must come before the regular expression", None),
            (
                "in {} A\nout {} B\nA() )",
                3,
                5,
                "unexpected ')' in the regular expression",
                "this parenthesis has no matching '('",
            ),
            (
                "in {} A\nout {} B\nA() }",
                3,
                5,
                "unexpected '}' in the regular expression",
                "this brace has no matching '{'",
            ),
            ("in {} A\nout {} B\nA() {3,2}", 3, 5, "in {3,2} the upper bound is below the lower bound", None),
            (
                "in {} A\nout {} B\nA() elapse[3 weeks]()",
                3,
                14,
                "unknown time unit 'weeks'",
                "use day(s), hour(s), minute(s), second(s)/sec, millisecond(s)/msec or microsecond(s)/usec",
            ),
            (
                "in {} A\nout {} B\nA() elapse[3]()",
                3,
                13,
                "expected a time unit (days, hours, minutes, seconds, msec, usec), found ']'",
                None,
            ),
            (
                "in {} A\nout {} B\nA() arrive[9]()",
                3,
                12,
                "a time pattern has two (H:MM) or three (H:MM:SS) components",
                "write arrive[9:00](), arrive[.:00:00]() or arrive[(someTime)]()",
            ),
            (
                "in {} A\nout {} B\nA() arrive[1:2:3:4]()",
                3,
                12,
                "a time pattern has two (H:MM) or three (H:MM:SS) components",
                None,
            ),
            (
                "in {} A\nout {} B\nA() arrive[t:00]()",
                3,
                12,
                "expected a number, '.' or a parenthesized expression in the arrive pattern, found 't'",
                None,
            ),
            ("in {} A group(A) group(A)\nout {} B\nA()", 1, 18, "A has two group clauses", None),
            ("in {} A case { A } case { A }\nout {} B\nA()", 1, 20, "A has two case clauses", None),
            (
                "in long A case { A > 1 ? 3 : Lo }\nout {} B\nA()",
                1,
                26,
                "an event-case arm must be an event name or another 'condition ? Name : ...'",
                "write: case { X > 0 ? Positive : Other }",
            ),
            (
                "in long A\nout {} B\nA(x) { x + 1 = 2; }",
                3,
                10,
                "cannot assign to this expression",
                "the left side of '=' must be a variable, a[i] or s.f",
            ),
            ("in long A\nout {} B\nA(x) { f(x) = 2; }", 3, 8, "cannot assign to this expression", None),
            (
                "in long A\nout {} B\nA(x) { x; }",
                3,
                9,
                "expected '=' or '?' after the expression, found ';'",
                "an action is an assignment x = e;, an emit !>Name(e);, a conditional c ? action or a for loop",
            ),
            ("in long A\nout {} B\nA(x) { y = !>B(); }", 3, 12, "an emit action cannot be used as a value", None),
            ("in long A\nout {} B\nA(x) { y = x +; }", 3, 15, "expected an expression, found ';'", None),
            (
                "in long A\nout {} B\nA(x) { y = x ? 1; }",
                3,
                17,
                "expected ':', found ';'",
                "a conditional expression is written c ? a : b",
            ),
            (
                "in long A\nout {} B\nA(x) { y = {a 1}; }",
                3,
                15,
                "expected ':', found '1'",
                "a structure is written {name: value, ...}",
            ),
            (
                "in long A\nout {} B\nA(x) { for i: 0, 1) y = i; }",
                3,
                12,
                "expected '(', found 'i'",
                "write for (i: 0, n-1) action",
            ),
            (
                "in long A\nout {} B\nA(x) { y = group 0; }",
                3,
                18,
                "expected '[', found '0'",
                "the group key is read as group[0], group[1], ...",
            ),
            (
                "in long A\nout {} B\nA(x) { y = new double(3); }",
                3,
                22,
                "expected '[', found '('",
                "write new double[n]",
            ),
            (
                'in long A\nout {} B\nA(x) { s = "abc; }',
                3,
                12,
                "unterminated string literal",
                'close it with " on the same line',
            ),
            ('in long A\nout {} B\nA(x) { s = "a\\qb"; }', 3, 14, "unknown escape sequence \\q", None),
            (
                'in long A\nout {} B\nA(x) { s = "\\u12"; }',
                3,
                13,
                "bad \\u escape: four hexadecimal digits must follow",
                None,
            ),
            ("in long A\nout {} B\nA(x) /* never closed", 3, 6, "unterminated comment", "close it with */"),
            ("in long A\nout {} B\nA(x) @", 3, 6, "unexpected character '@'", None),
            (
                "in long A\nout {} B\n",
                3,
                1,
                "the program has no regular expression",
                "after the declarations, write the regular expression of events to match",
            ),
            ("", 1, 1, "the program has no regular expression", None),
            (
                "in {long a double b} A\nout {} B\nA()",
                1,
                12,
                "expected ';' after field a",
                "structure fields are separated by ';': { string name; double value; }",
            ),
            ("in A\nout {} B\nA()", 2, 1, "expected an input event name, found 'out'", None),
            ("in long\nout {} B\nA()", 2, 1, "expected an input event name, found 'out'", None),
            (
                "out 5 B\nA()",
                1,
                5,
                "expected a type, found '5'",
                "types are boolean, double, long, string, time, object, T[], { T name; ... } or a name defined with "
                "'type'",
            ),
            ("type = long\nin {} A\nout {} B\nA()", 1, 6, "expected a type name, found '='", None),
            ("type T long\nin {} A\nout {} B\nA()", 1, 8, "expected '=', found 'long'", "write: type Name = { ... }"),
            (
                'function long f(long) "m:f"\nin {} A\nout {} B\nA()',
                1,
                23,
                "expected ':', found '\"m:f\"'",
                'write: function string f(string): "package.module:attribute"',
            ),
            (
                "function long f(long): m\nin {} A\nout {} B\nA()",
                1,
                24,
                "expected a string naming the implementation, found 'm'",
                'write the Python callable as "package.module:attribute"',
            ),
        ],
    )
    def test_syntax_error(self, text: str, line: int, col: int, message: str, hint: str | None) -> None:
        errs = diags(text, Severity.ERROR)
        found = [e for e in errs if e.message == message]
        assert found, [str(e) for e in errs]
        assert at(found[0]) == (line, col)
        if hint is not None:
            assert found[0].hint == hint

    def test_a_declaration_error_does_not_swallow_the_next_declaration(self) -> None:
        # Regression: recovery skipped the keyword of the following declaration, so 'out {} B'
        # was lost and a spurious "no regular expression" followed.
        assert errors("in long A case { A > 1 ? 3 : Lo }\nout {} B\nA() { !>B({}); }") == [
            (1, 26, "an event-case arm must be an event name or another 'condition ? Name : ...'")
        ]
        assert errors("in long\nout {} B\nin {} A\nA() { !>B({}); }") == [
            (2, 1, "expected an input event name, found 'out'")
        ]

    def test_errors_in_several_actions_are_all_reported(self) -> None:
        errs = errors("in long A\nout long B\n( A(x) { y = ; !>B(x) z = 1; !>B(x); } )*")
        assert [(line, col) for line, col, _ in errs] == [(3, 14), (3, 23)]

    def test_superscript_digits_are_not_numbers(self) -> None:
        # Regression: str.isdigit() accepted '²' and int('²') raised ValueError out of the lexer.
        assert errors("in long A\nout long B\n( A(x) { !>B(²); } )*")[0] == (3, 14, "unexpected character '²'")
        assert errors("in long A\nout long B\n( A(x) { !>B(1٣); } )*")[0] == (3, 15, "unexpected character '٣'")

    def test_unicode_letters_make_names(self) -> None:
        comp = check_source("in long Größe\nout long Ausgabe\n( Größe(wert) { !>Ausgabe(wert); } )*")
        assert comp.ok


# ---------------------------------------------------------------------------------------
# Declarations


class TestDeclarationErrors:
    def test_unknown_type(self) -> None:
        e = only_error("in long A, Number B\nout long O\n( A(x) { !>O(x); } | B() )*")
        assert (at(e), e.message) == ((1, 12), "unknown type 'Number'")
        assert e.hint is not None and "names defined earlier with 'type Name = ...'" in e.hint

    @pytest.mark.parametrize(
        ("name", "says"),
        [
            ("number", "numbers are long (64-bit integers) and double"),
            ("int", "integer type is long"),
            ("bool", "truth values are boolean"),
        ],
    )
    def test_another_languages_type_name_is_told_eventscripts(self, name: str, says: str) -> None:
        # The language document's own 2.5 declares {string employeeID; number exposure;}.
        e = only_error(f"in {{string employeeID; {name} exposure;}} E\nout long O\n( E() )*")
        assert e.message == f"unknown type '{name}'"
        assert e.hint is not None and e.hint.startswith(f"EventScript's {says}")

    def test_a_type_defined_with_such_a_name_is_a_type(self) -> None:
        assert not errors("type number = double\nin number A\nout double O\n( A(x) { !>O(x); } )*")

    def test_type_used_before_its_definition(self) -> None:
        e = diags("type B = A[]\ntype A = long\nin B X\nout long O\n( X(x) { !>O(x[0]); } )*", Severity.ERROR)[0]
        assert (at(e), e.message) == ((1, 10), "unknown type 'A'")

    @pytest.mark.parametrize(
        ("text", "pos", "message"),
        [
            ("in long A, long A\nout long B\n( A(x) { !>B(x); } )*", (1, 17), "input event 'A' is declared twice"),
            ("in long A\nin double A\nout long B\n( A(x) { !>B(x); } )*", (2, 11), "input event 'A' is declared twice"),
            ("in long A\nout long B, long B\n( A(x) { !>B(x); } )*", (2, 18), "output event 'B' is declared twice"),
            (
                "type T = long\ntype T = long\nin T A\nout long B\n( A(x) { !>B(x); } )*",
                (2, 6),
                "type 'T' is defined twice",
            ),
            (
                'in long A\nout long B\nfunction long f(long): "math:floor"\nfunction long f(double): "math:floor"\n'
                "( A(x) { !>B(f(x)); } )*",
                (4, 15),
                "function 'f' is declared twice",
            ),
            ("in {long a; double a;} A\nout {} B\n( A() )*", (1, 20), "field 'a' appears twice in this structure type"),
            ("in long A\nout {long a;} B\n( A(x) { !>B({a: x, a: x}); } )*", (3, 21), "field 'a' is given twice"),
            (
                "type long = double\nin long A\nout {} B\nA()",
                (1, 6),
                "'long' is a built-in type and cannot be redefined",
            ),
            (
                'in long A\nout {} B\nfunction time now(): "m:f"\nA()',
                (3, 15),
                "function 'now' would hide the built-in function of that name",
            ),
            ("in {} $A\nout {} B\nA()", (1, 7), "'$A': names starting with '$' are reserved"),
            ("in {} A\nout {} $error\nA()", (2, 8), "'$error': names starting with '$' are reserved"),
        ],
    )
    def test_duplicate_and_reserved_declarations(self, text: str, pos: tuple[int, int], message: str) -> None:
        assert (*pos, message) in errors(text)

    def test_a_broken_declaration_is_reported_once(self) -> None:
        # Regression: an input or output whose type had errors was then reported as undeclared at
        # every marker and emit, and its marker variables as never set.
        assert errors("in {long a; double a;} A, Nope C\nout Nope B\n( A(x) { !>B(x.a); } | C(y) { !>B(y); } )*") == [
            (1, 20, "field 'a' appears twice in this structure type"),
            (1, 27, "unknown type 'Nope'"),
            (2, 5, "unknown type 'Nope'"),
        ]

    def test_same_name_for_an_input_and_an_output_is_allowed(self) -> None:
        assert check_source("in double R\nout double R\n( R(x) { !>R(x); } )*").ok


# ---------------------------------------------------------------------------------------
# Types


class TestTypeErrors:
    def test_variable_used_as_long_and_boolean(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) { y = x; y = true; !>B(y); } )*")
        assert (at(e), e.message) == ((3, 21), "cannot assign 'boolean' to 'y', which is 'long' (from test:3:10)")

    def test_long_variable_used_as_a_condition(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) { x ? !>B(1); } )*")
        assert (at(e), e.message) == ((3, 10), "a condition must be 'boolean', not 'long'")

    def test_marker_variable_receiving_two_types(self) -> None:
        e = only_error("in long A, double C\nout long B\n( A(x) | C(x) { !>B(x); } )*")
        assert (at(e), e.message) == ((3, 12), "'x' receives 'double' here but is 'long' (from test:3:5)")
        assert e.hint == "use a different variable for each type"

    def test_double_assigned_to_long_variable_needs_a_conversion(self) -> None:
        e = only_error("in double A\nout long B\n( A(x) { y = 0; y = x; !>B(y); } )*")
        assert (at(e), e.message) == ((3, 21), "cannot assign 'double' to 'y', which is 'long' (from test:3:10)")
        assert e.hint == "EventScript never converts on assignment: write long(...) to truncate"

    def test_long_literal_assigned_to_double_variable_hints_at_the_double_literal(self) -> None:
        e = only_error("in double A\nout double B\n( A(x) { y = 0.0; y = 5; !>B(y + x); } )*")
        assert (at(e), e.message) == ((3, 23), "cannot assign 'long' to 'y', which is 'double' (from test:3:10)")
        assert e.hint == "write 5.0 for a double constant"

    def test_long_expression_assigned_to_double_variable(self) -> None:
        e = only_error("in long A\nout double B\n( A(x) { y = 0.0; y = x * 2; !>B(y); } )*")
        assert e.hint == "EventScript never converts on assignment: write double(...)"

    def test_long_literal_stored_in_double_array(self) -> None:
        e = only_error("in long A\nout double B\n( A(n) { h = new double[n]; h[0] = 0; !>B(h[0]); } )*")
        assert (at(e), e.message) == ((3, 36), "cannot assign 'long' to this target, which is 'double'")
        assert e.hint == "write 0.0 for a double constant"

    def test_explicit_conversions_are_accepted(self) -> None:
        assert check_source(
            "in double A\nout long B\n( A(x) { y = 0; y = long(x); z = 0.0; z = double(y); !>B(long(z)); } )*"
        ).ok

    @pytest.mark.parametrize(
        ("expr", "col", "message"),
        [
            ('"a" - 1', 18, "'-' needs long or double operands, not 'string' and 'long'"),
            ('true ? 1 : "a"', 14, "the branches of '?:' have different types: 'long' and 'string'"),
            ('-"a"', 14, "unary '-' needs a long or double operand, not 'string'"),
            ("!x", 14, "'!' needs a boolean operand, not 'long'"),
            ("x && true ? 1 : 0", 14, "'&&' needs boolean operands, not 'long'"),
            ('x == "a" ? 1 : 0', 16, "cannot compare 'long' with 'string'"),
            ("true < false ? 1 : 0", 19, "'<' compares numbers, strings or times, not 'boolean' and 'boolean'"),
            ("x ? 1 : 0", 14, "the condition of '?:' must be boolean, not 'long'"),
            ("x.f", 16, "field 'f' of 'long', which is not a structure"),
            ("x[0]", 15, "only arrays can be subscripted; this is 'long'"),
            ("new long[1][true]", 26, "a subscript must be long, not 'boolean'"),
            ("length(new long[1.5])", 30, "an array size must be long, not 'double'"),
            ("secondsAfter(x)", 14, "no version of secondsAfter takes (long)"),
            ("{a: 1}.b", 21, "'{long a;}' has no field 'b'"),
            ("9223372036854775808", 14, "integer literal 9223372036854775808 does not fit in a 64-bit long"),
        ],
    )
    def test_expression_type_errors(self, expr: str, col: int, message: str) -> None:
        assert (3, col, message) in errors(f"in long A\nout long B\n( A(x) {{ !>B({expr}); }} )*")

    def test_overload_error_lists_the_versions(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) { !>B(secondsAfter(x)); } )*")
        assert e.hint == "available: time secondsAfter(long, time)"

    def test_field_error_lists_the_fields(self) -> None:
        e = only_error("in {long f; string g;} A\nout long B\n( A(x) { !>B(x.h); } )*")
        assert (at(e), e.message, e.hint) == ((3, 16), "'{long f; string g;}' has no field 'h'", "its fields: f, g")

    def test_cannot_assign_to_a_loop_index(self) -> None:
        assert (3, 24, "cannot assign to the loop index 'i'") in errors(
            "in long A\nout long B\n( A(x) { for (i: 0, 3) i = 2; !>B(x); } )*"
        )

    @pytest.mark.parametrize(
        ("marker", "col", "message"),
        [
            ('elapse["a" sec]()', 13, "an elapse amount must be long or double, not 'string'"),
            ("arrive[x]()", 13, "an arrive time must be 'time', not 'long'"),
            ("arrive[(x > 1)]()", 16, "an arrive time must be 'time', not 'boolean'"),
            ("arrive[(1.5):00]()", 14, "an arrive pattern component must be 'long', not 'double'"),
            ("arrive[25:00]()", 13, "hour 25 is out of range 0..23"),
            ("arrive[10:60]()", 16, "minute 60 is out of range 0..59"),
            ("arrive[10:00:61]()", 19, "second 61 is out of range 0..59"),
            ("arrive[10:00:60.5]()", 19, "second 60.5 is out of range: seconds are from 0 to less than 60"),
            ("arrive[2026-13-01 0:00]()", 18, "month 13 is out of range 1..12"),
            ("arrive[2026-02-29 0:00]()", 21, "day 29 never comes: 2026-02 has 28 days"),
            ("arrive[.-04-31]()", 18, "day 31 never comes: month 4 has 30 days"),
            ("arrive[0-01-01]()", 13, "year 0 is out of range 1..9999"),
        ],
    )
    def test_time_marker_errors(self, marker: str, col: int, message: str) -> None:
        assert (3, col, message) in errors(f"in long A\nout long B\nA(x) {marker} {{ !>B(x); }}")

    @pytest.mark.parametrize(
        ("marker", "col", "problem", "at_run_time"),
        [
            ("arrive[(25):00]()", 28, "hour 25 is out of range 0..23", "hour 25 is out of range 0..23"),
            ("arrive[(-1):00]()", 28, "hour -1 is out of range 0..23", "hour -1 is out of range 0..23"),
            ("arrive[10:(60)]()", 31, "minute 60 is out of range 0..59", "minute 60 is out of range 0..59"),
            ("arrive[2026-(13)-01 0:00]()", 33, "month 13 is out of range 1..12", "month 13 is out of range 1..12"),
        ],
    )
    def test_a_constant_in_parentheses_is_an_expression_evaluated_when_the_timer_is_set(
        self, marker: str, col: int, problem: str, at_run_time: str
    ) -> None:
        # A parenthesized component is an expression (conformance README choice 1), evaluated when
        # its timer is set, as arrive[(20+5):00] and 10 / 0 are: $error 8 then, only warned of here.
        text = f"in long A\nout long B\n( A(x) {{ !>B(x); }} {marker} {{ !>B(0); }} )*"
        assert errors(text) == []
        (w,) = diags(text, Severity.WARNING)
        assert (at(w), w.code) == ((3, col), "out-of-range")
        assert w.message == f"{problem}; each time this timer is set it gives $error 8 and does not fire"
        out = run_program(text, "[2026-01-01 00:00:00] A(1)\n[2026-01-03 00:00:00]")
        assert [(o["event"], o["value"]) for o in out] == [
            ("B", 1),
            ("$error", {"code": 8, "message": f"arrive pattern: {at_run_time}"}),
        ]

    def test_a_date_of_constants_in_parentheses_that_never_comes_is_warned_of(self) -> None:
        text = "in long A\nout long B\n( A(x) { !>B(x); } arrive[2026-02-(30) 10:00]() { !>B(0); } )*"
        assert errors(text) == []
        (w,) = diags(text, Severity.WARNING)
        assert (at(w), w.code, w.message) == (
            (3, 36),
            "out-of-range",
            "day 30 never comes: 2026-02 has 28 days; this timer never fires",
        )
        assert run_program(text, "[2026-01-01 00:00:00] A(1)\n[2027-01-01 00:00:00]") == [
            {"time": "2026-01-01T00:00:00.000000Z", "event": "B", "value": 1}
        ]

    def test_constant_dates_that_exist_are_accepted(self) -> None:
        for pattern in ("2028-02-29 0:00", ".-02-29 12:00", "2038-01-19 03:14:08", ".:.:59.999", "23:59"):
            assert check_source(f"out {{}} B\n( arrive[{pattern}]() {{ !>B({{}}); }} )*").ok, pattern


# ---------------------------------------------------------------------------------------
# Names


class TestGroupKeyOfUnknownType:
    def test_a_misspelt_group_field_is_one_error_not_one_more_at_each_use(self) -> None:
        e = only_error(
            "in {string sensor; double t;} Temp group(Temp.sensr)\nout {string s; double t;} Hot\n"
            '( Temp(x) { x.t > 30.0 ? !>Hot({s: group[0], t: x.t}); !>Hot({s: group[0] + "!", t: 0.0}); } )*'
        )
        assert (at(e), e.message, e.hint) == (
            (1, 47),
            "'{string sensor; double t;}' has no field 'sensr'",
            "its fields: sensor, t",
        )

    def test_a_group_key_of_the_wrong_type_is_one_error_too(self) -> None:
        e = only_error("in long[] A group(A)\nout long B\n( A(x) { !>B(group[0]); } )*")
        assert (at(e), e.message) == (
            (1, 19),
            "a group key component must be boolean, long, double, string or time, not 'long[]'",
        )


class TestUndeclaredNames:
    def test_variable_that_is_never_set_is_a_warning(self) -> None:
        """Document 2.5: a variable read without having been set is warned about; at run time
        each read is $error 3 and gives the default value (conformance README, code 3)."""
        text = "in long A\nout long B\n( A(x) { !>B(x + y); } )*"
        assert errors(text) == []
        (d,) = diags(text, Severity.WARNING)
        assert (at(d), d.message) == (
            (3, 18),
            "'y' is never given a value: each read is $error 3 and gives the default value",
        )
        assert d.hint == "set it in an action (x = ...;) or with an event marker (Event(x))"

    def test_variable_never_set_and_untyped_is_an_error(self) -> None:
        e = only_error("in long A\nout long B\n( A() { !>B(y == y ? 1 : 2); } )*")
        assert (at(e), e.message) == ((3, 13), "'y' is never given a value, and nothing gives it a type")

    def test_event_name_used_as_a_variable(self) -> None:
        text = "in long A\nout long B\n( A() { !>B(A); } )*"
        (d,) = diags(text, Severity.WARNING)
        assert at(d) == (3, 13) and d.message.startswith("'A' is never given a value")
        assert d.hint == "in actions an event's value is reached through its marker's variable, e.g. A(x) then x"

    def test_a_variable_never_set_runs_with_error_3_and_the_default(self) -> None:
        comp = check_source("in {} Get\nout long V\n( Get() { !>V(x); !>V(x + 1); } )*")
        out: list[dict] = []
        run_trace(
            [comp.require()],
            parse_trace(SourceFile("<trace>", "[2026-01-01 00:00:00] Get()")),
            lambda line: out.append(line.to_json()),
        )
        assert [(o["event"], o["value"].get("code") if o["event"] == "$error" else o["value"]) for o in out] == [
            ("$error", 3),
            ("V", 0),
            ("$error", 3),
            ("V", 1),
        ]

    def test_unknown_function(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) { !>B(foo(x)); } )*")
        assert (at(e), e.message) == ((3, 14), "unknown function 'foo'")
        assert e.hint is not None and e.hint.startswith("declare an external function")

    def test_undeclared_input_event_in_a_marker(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) C() { !>B(x); } )*")
        assert (at(e), e.message) == ((3, 8), "undeclared input event 'C'")
        assert e.hint == "declare it with 'in <type> C' (declared: A)"

    def test_undeclared_input_event_lists_case_classes(self) -> None:
        e = only_error("in long A case { A > 0 ? P : N }\nout long B\n( P(x) { !>B(x); } | Q() )*")
        assert e.hint == "declare it with 'in <type> Q' (declared: A, N, P)"

    def test_output_name_used_as_a_marker(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) B() { !>B(x); } )*")
        assert (at(e), e.message) == ((3, 8), "'B' is an output event; event markers match input events")
        assert e.hint == "declare it with 'in' to receive it: in <type> B"

    def test_emit_of_an_undeclared_event(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) { !>Q(x); } )*")
        assert (at(e), e.message) == ((3, 12), "undeclared output event 'Q'")
        assert e.hint == "declare it with 'out <type> Q' (declared: B)"

    def test_emit_of_an_input_event_name(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) { !>A(x); } )*")
        assert e.message == "undeclared output event 'A'"

    def test_emit_of_the_error_event(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) { !>$error(x); } )*")
        assert (at(e), e.message) == ((3, 12), "$error events are emitted by the engine, not by programs")

    @pytest.mark.parametrize(
        ("value", "col", "message", "hint"),
        [
            (
                "1.5",
                13,
                "B carries 'long' but this value is 'double'",
                "EventScript never converts on assignment: write long(...) to truncate",
            ),
            (
                '"7"',
                13,
                "B carries 'long' but this value is 'string'",
                "emit 'long', or declare the event as 'out string B' if it is to carry this",
            ),
            (
                '"n=" + 7',  # (the caret where the value begins, not on its operator)
                13,
                "B carries 'long' but this value is 'string'",
                "emit 'long', or declare the event as 'out string B' if it is to carry this",
            ),
            (
                "{}",
                13,
                "B carries 'long' but this value is '{}'",
                "emit 'long', or declare the event as 'out {} B' if it is to carry this",
            ),
            ("", 9, "!>B() has no value but B carries 'long'", None),
        ],
    )
    def test_emit_of_a_wrongly_typed_value(self, value: str, col: int, message: str, hint: str | None) -> None:
        e = only_error(f"in long A\nout long B\n( A() {{ !>B({value}); }} )*")
        assert (at(e), e.message, e.hint) == ((3, col), message, hint)

    def test_not_written_as_a_function(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) { not (x > 1) ? !>B(x); } )*")
        assert (at(e), e.message, e.hint) == (
            (3, 10),
            "'not' is not an operator of EventScript",
            "negation is written '!': !(...)",
        )

    def test_emit_of_a_long_literal_as_double_hints(self) -> None:
        e = only_error("in long A\nout double B\n( A() { !>B(5); } )*")
        assert (e.message, e.hint) == ("B carries 'double' but this value is 'long'", "write 5.0 for a double constant")

    def test_emit_of_a_structure_with_other_fields(self) -> None:
        e = only_error("in long A\nout {long a; long b;} B\n( A(x) { !>B({a: x, c: x}); } )*")
        assert e.message == "B carries '{long a; long b;}' but this value is '{long a; long c;}'"

    def test_cannot_infer_a_type(self) -> None:
        assert errors("in long A\nout long B\n( A(x) { a = new long[1]; y = z; z = y; !>B(x + a[0]); } )*") == [
            (3, 27, "cannot infer the type of 'y'"),
            (3, 31, "cannot infer the type of 'z'"),
        ]


# ---------------------------------------------------------------------------------------
# Grouping and classification


class TestGroupingAndClassification:
    def test_group_clause_missing_on_some_inputs(self) -> None:
        e = only_error("in long A group(A)\nin long C\nout long B\n( A(x) { !>B(x); } | C() )*")
        assert (at(e), e.message) == ((2, 9), "input event C has no group clause, but other input events do")
        assert (
            e.hint
            == "in a grouped program every input event needs group(...) with 1 component(s), as A's has; e.g. group(C)"
        )

    def test_a_missing_group_clause_is_shown_with_the_inputs_own_fields(self) -> None:
        # Document 2.7: the key is computed from the arriving event's value, e.g. its fields.
        src = "in {string t; string c; double p;} T group(T.t, T.c)\nin {string id;} U\nout long B\n( T() | U() )*"
        assert only_error(src).hint == (
            "in a grouped program every input event needs group(...) with 2 component(s), as T's has; "
            "e.g. group(U.id, ...)"
        )

    def test_group_clauses_of_different_arity(self) -> None:
        e = only_error("in long A group(A)\nin long C group(C, C)\nout long B\n( A(x) { !>B(x); } | C() )*")
        assert (at(e), e.message) == ((2, 11), "the group clause of C has 2 component(s) but the one of A has 1")
        assert e.hint == "every group clause must have the same number of key components"

    def test_group_clauses_with_different_component_types(self) -> None:
        assert errors('in long A group(A, "k")\nin string C group(C, 1)\nout long B\n( A(x) { !>B(x); } | C() )*') == [
            (2, 19, "key component 0 is 'string' here but 'long' in the group clause of A"),
            (2, 22, "key component 1 is 'long' here but 'string' in the group clause of A"),
        ]

    def test_group_key_component_must_be_primitive(self) -> None:
        e = only_error("in {long a;} A group(A)\nout long B\n( A(x) { !>B(x.a); } )*")
        assert (at(e), e.message) == (
            (1, 22),
            "a group key component must be boolean, long, double, string or time, not '{long a;}'",
        )

    @pytest.mark.parametrize(
        ("ref", "col", "message"),
        [
            ("group[1]", 27, "group[1] is out of range: the group key has 1 component(s), group[0] to group[0]"),
            ("group[-1]", 27, "group[-1] is out of range: the group key has 1 component(s), group[0] to group[0]"),
            ("group[n]", 27, "the index of group[...] must be an integer constant"),
            ("group[0 + 0]", 29, "the index of group[...] must be an integer constant"),
        ],
    )
    def test_group_reference_errors(self, ref: str, col: int, message: str) -> None:
        assert (3, col, message) in errors(
            f"in long A group(A)\nout long B\n( A(x) {{ n = 0; !>B({ref} + n + x); }} )*"
        )

    def test_group_reference_without_grouping(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) { !>B(group[0] + x); } )*")
        assert (at(e), e.message) == ((3, 14), "group[...] used in a program without group clauses")

    def test_group_reference_in_a_clause(self) -> None:
        assert (1, 27, "group[...] cannot be used in a case clause") in errors(
            "in long A group(A) case { group[0] > 1 ? P : N }\nout long B\n( A(x) { !>B(x); } )*"
        )

    def test_case_condition_using_a_variable(self) -> None:
        errs = diags(
            "in long A case { A > limit ? Hi : Lo }\nout long B\n{ limit = 3; } ( Hi(x) { !>B(x); } | Lo() )*",
            Severity.ERROR,
        )
        assert [(at(e), e.message) for e in errs] == [((1, 22), "'limit' cannot be used in a case clause")]
        assert errs[0].hint is not None and "not the program's variables" in errs[0].hint

    def test_group_clause_using_another_event(self) -> None:
        assert (1, 17, "'C' cannot be used in a group clause") in errors(
            "in long A group(C), long C group(C)\nout long B\n( A(x) { !>B(x); } | C() )*"
        )

    @pytest.mark.parametrize(
        ("decl", "col"),
        [
            ("in long A case { nosuch(A) ? P : N }", 18),
            ("in long A group(nosuch(A))", 17),
            ("in long A case { f() ? P : N }", 18),
        ],
    )
    def test_unknown_function_in_a_clause(self, decl: str, col: int) -> None:
        # Regression: not reported, and the unresolved call crashed the lowering (AttributeError).
        name = "f" if "f()" in decl else "nosuch"
        e = only_error(f"{decl}\nout long B\n( A(x) {{ !>B(x); }} )*")
        assert (at(e), e.message) == ((1, col), f"unknown function {name!r}")

    def test_functions_in_clauses(self) -> None:
        comp = check_source(
            'function long f(long): "math:floor"\nin long A group(f(A) % 2) case { abs(A) > 2 ? P : N }\n'
            "out long B\n( P(x) { !>B(group[0]); } | N() )*"
        )
        assert comp.ok, [str(e) for e in comp.diagnostics.errors]

    def test_case_condition_must_be_boolean(self) -> None:
        assert (1, 20, "a case condition must be boolean, not 'long'") in errors(
            "in long A case { A + 1 ? P : N }\nout long B\n( P(x) { !>B(x); } | N() )*"
        )

    def test_class_name_clashing_with_an_input_name(self) -> None:
        e = only_error("in long A case { A > 3 ? A : Lo }\nout long B\n( A(x) { !>B(x); } | Lo() )*")
        assert (at(e), e.message) == ((1, 26), "event class 'A' has the name of an input event")
        e = only_error("in long C, long A case { A > 3 ? C : Lo }\nout long B\n( A(x) { !>B(x); } | Lo() | C() )*")
        assert (at(e), e.message) == ((1, 34), "event class 'C' has the name of an input event")

    def test_input_declared_after_a_class_of_its_name(self) -> None:
        e = only_error("in long A case { A > 3 ? Hi : Lo }, long Hi\nout long B\n( Hi(x) { !>B(x); } | Lo() )*")
        assert (at(e), e.message) == ((1, 42), "'Hi' is already an event class of a case clause")

    def test_class_of_two_inputs_with_different_types(self) -> None:
        errs = errors(
            "in long A case { A > 3 ? Hi : Lo }, double C case { C > 3.0 ? Hi : Lo }\nout long B\n( Hi() | Lo() )*"
        )
        assert errs[0][:2] == (1, 63) and errs[0][2].startswith("event class 'Hi' would carry 'double' here but 'long'")


# ---------------------------------------------------------------------------------------
# Analyses over the automata


class TestAutomatonDiagnostics:
    def test_cyclic_path_with_actions_but_no_event_marker(self) -> None:
        e = only_error("in {} E\nout {} Y\n(E()* { !>Y({}); })*")
        assert e.severity is Severity.ERROR
        assert (at(e), e.message) == (
            (3, 7),
            "this action is on a cyclic path with no event marker, so it would run forever",
        )
        assert e.hint is not None and "(A() {...})*" in e.hint

    @pytest.mark.parametrize(
        "body",
        [
            "( { !>Z({}); } )*",
            "( A()? { !>Z({}); } )+",
            "( (A() | { !>Z({}); }) B()? )*",
            "( A(){0,3} { !>Z({}); } ){2,}",
        ],
    )
    def test_other_cyclic_paths(self, body: str) -> None:
        errs = errors("in {} A, {} B\nout {} Z\n" + body)
        assert errs and errs[0][2].startswith("this action is on a cyclic path with no event marker")

    @pytest.mark.parametrize("body", ["A() ( {} )* B()", "( {} A()* )* B()", "( A() | {} )+"])
    def test_an_empty_action_block_on_a_loop_is_no_action(self, body: str) -> None:
        # Footnote 8 forbids a cyclic path that has actions; `{}` has none.
        assert check_source("in {} A, {} B\nout {} Z\n" + body).ok

    def test_guarded_loop_is_fine(self) -> None:
        assert check_source("in {} A\nout {} Z\n(A()+ { !>Z({}); })*").ok
        assert check_source("in {} A\nout {} Z\n(A() { !>Z({}); })*").ok

    def test_ambiguous_regular_expression_is_a_warning(self) -> None:
        comp = check_source("in {} E\nout long O\n( E() {v=1;} | E() {v=2;} ) {!>O(v);}")
        assert comp.ok  # a warning, not an error
        (w,) = comp.diagnostics.warnings
        assert at(w) == (3, 16)
        assert w.message.startswith(
            "ambiguous regular expression: an event can match this marker and the marker at 3:3 ("
        )
        assert w.hint is not None and "program-text order" in w.hint

    def test_repetition_ambiguity(self) -> None:
        # A P may start another round of the repetition or what follows it.
        ws = warnings("in {} P, {} Q, {} R\nout {} Z\n(P() Q())* P() R() { !>Z({}); }")
        assert [(line, col) for line, col, _ in ws] == [(3, 12)]
        assert ws[0][2].startswith("ambiguous regular expression: an event can match this marker and the marker at 3:2")

    def test_unambiguous_expressions_get_no_warning(self) -> None:
        for body in (
            "(A() B() | B() A() { !>Z({}); })*",
            "A() (B() { !>Z({}); })* C() { !>Z({}); }",
            "(A() | B())* C() { !>Z({}); }",
        ):
            assert warnings("in {} A, {} B, {} C\nout {} Z\n" + body) == [], body

    def test_possibly_read_before_set(self) -> None:
        comp = check_source("in {} A, {} B\nout long O\n( A() { x = 1; } | B() { !>O(x); } )*")
        assert comp.ok
        (w,) = comp.diagnostics.warnings
        assert (at(w), w.message) == ((3, 30), "'x' may be read before it is set")

    def test_possibly_read_before_set_in_a_time_marker(self) -> None:
        ws = warnings("in {} A, {} B\nout {} Z\n( A() { t = now(); } | arrive[(t)]() { !>Z({}); } )*")
        assert (3, 32, "'t' may be read before it is set") in ws

    def test_read_after_set_on_every_path_gets_no_warning(self) -> None:
        assert warnings("in {} A, {} B\nout long O\n{ x = 0; } ( A() { x = 1; } | B() { !>O(x); } )*") == []

    def test_set_but_never_read(self) -> None:
        comp = check_source("in long A\nout long B\n( A(x) { y = x; !>B(x); } )*")
        assert comp.ok
        (w,) = comp.diagnostics.warnings
        assert (at(w), w.message) == ((3, 10), "variable 'y' is set but never read")

    def test_marker_variable_never_read(self) -> None:
        assert warnings("in long A\nout long B\n( A(x) { !>B(1); } )*") == [
            (3, 5, "variable 'x' is set but never read")
        ]

    def test_potentially_nonterminating_grouped_program(self) -> None:
        comp = check_source("in long A group(A)\nout long B\n( A(x) { !>B(x); } )*")
        assert comp.ok
        (w,) = comp.diagnostics.warnings
        assert at(w) == (3, 3)  # where the regular expression starts
        assert w.message.startswith(
            "this grouped program never ends an instance: a key's instance stays in memory unless it comes back to "
            "its start with nothing to remember"
        )

    def test_grouped_program_that_may_not_end_some_instances(self) -> None:
        ws = warnings(
            "in long A group(A), long B group(B), long C group(C)\nout long O\nA() | B() ( C(x) { !>O(x); } )*"
        )
        assert len(ws) == 1 and ws[0][2].startswith("this grouped program may never end some instances")

    def test_terminating_grouped_programs_get_no_warning(self) -> None:
        assert warnings("in long A group(A)\nout long B\nA(x) { !>B(x); } A()* elapse[5 minutes]()") == []
        assert warnings("in long A group(A)\nout long B\n( A(x) { !>B(x); } )*") != []
        assert warnings("in long A\nout long B\n( A(x) { !>B(x); } )*") == []  # not grouped: no warning

    def test_time_markers_that_may_fire_simultaneously(self) -> None:
        comp = check_source("out {} S, {} T\n( arrive[.:00:00]() {!>S({});} | arrive[.:.:00]() {!>T({});} )*")
        assert comp.ok
        (w,) = comp.diagnostics.warnings
        assert at(w) == (2, 34)
        assert w.message.startswith("this time marker and the one at 2:3 (") and w.message.endswith(
            "may fire at the same instant"
        )
        assert w.hint == "when they do, only the one written first fires"

    def test_elapse_markers_that_may_fire_simultaneously(self) -> None:
        ws = warnings(
            "in {} A\nout {} Z\n( A() | elapse[1 sec]() { !>Z({}); } | elapse[n sec]() )*".replace("n sec", "2 sec")
        )
        assert [(line, col) for line, col, _ in ws] == [(3, 40)]

    def test_one_time_marker_at_a_time_gets_no_warning(self) -> None:
        assert warnings("in {} A\nout {} Z\n( A() elapse[1 sec]() { !>Z({}); } arrive[9:00]() )*") == []

    def test_an_output_never_emitted(self) -> None:
        ws = warnings("in {} A\nout long O, long P\nA() { !>O(1); }")
        assert ws == [(2, 18, "output event 'P' is declared but never emitted")]
        # Every declared output emitted somewhere: no warning.
        assert warnings("in {} A\nout long O\n( A() { !>O(1); } )*") == []

    def test_expression_that_matches_nothing(self) -> None:
        comp = check_source("in {} A\nout {} Z\nA() & A() A() { !>Z({}); }")
        (w,) = comp.diagnostics.warnings
        assert (at(w), w.message) == ((3, 5), "the regular expression matches no sequence of events")

    def test_automaton_too_large(self) -> None:
        e = only_error("in {} A\nout {} Z\nA(){99999999999}")
        assert (at(e), e.message) == (
            (3, 1),
            "the automaton would need more than 400000 NFA states; reduce the multipliers",
        )

    def test_state_limit_falls_back_to_the_lazy_dfa_without_error(self) -> None:
        comp = compile_source("in {} A, {} B\nout {} Z\n( .* A() .{12} { !>Z({}); } )", state_limit=100)
        assert comp.ok and comp.dfa_states is None
        assert comp.notes and "lazy DFA" in comp.notes[0]


# ---------------------------------------------------------------------------------------
# External functions


def _module(tmp_path: Path, body: str) -> str:
    name = f"ext_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text(body)
    return name


class TestExternalFunctions:
    def test_resolved_beside_the_program_and_called(self, tmp_path: Path) -> None:
        mod = _module(
            tmp_path,
            "import math\n\ndef dist(x1, y1, x2, y2):\n    return math.hypot(x2 - x1, y2 - y1)\n\n"
            "def label(n, when):\n    return f'{n}@{when.hour}'\n\n"
            "class Geo:\n    @staticmethod\n    def mid(p):\n        return {'x': p['x'] / 2, 'y': p['y'] / 2}\n",
        )
        program = tmp_path / "prog.es"
        program.write_text(
            f'function double dist(double, double, double, double): "{mod}:dist"\n'
            f'function string label(long n, time t): "{mod}:label"\n'
            f'function {{double x; double y;}} mid({{double x; double y;}}): "{mod}:Geo.mid"\n'
            "in {double x; double y;} P\nout double D, string L, {double x; double y;} M\n"
            "( P(p) { !>D(dist(0, 0, p.x, p.y)); !>L(label(7, now())); !>M(mid(p)); } )*\n"
        )
        comp = compile_file(program)
        assert comp.ok, [str(d) for d in comp.diagnostics]
        assert comp.checked is not None and comp.checked.externals["dist"].function is not None
        out: list[dict] = []
        run_trace(
            [comp.require()],
            parse_trace(SourceFile("<trace>", "[2026-01-01 09:00:00] P({x: 3.0, y: 4.0})")),
            lambda line: out.append(line.to_json()),
        )
        assert [(o["event"], o["value"]) for o in out] == [("D", 5.0), ("L", "7@9"), ("M", {"x": 1.5, "y": 2.0})]

    def test_wrong_argument_count_and_type(self, tmp_path: Path) -> None:
        mod = _module(tmp_path, "def f(a):\n    return a\n")
        program = tmp_path / "prog.es"
        program.write_text(
            f'function long f(long): "{mod}:f"\nin long A\nout long B\n'
            '( A(x) { !>B(f(x, x)); !>B(f("s")); !>B(f(1.5)); } )*\n'
        )
        errs = [(d.pos.line, d.pos.col, d.message) for d in compile_file(program).diagnostics.errors]
        assert errs == [
            (4, 14, "f takes 1 argument(s), not 2"),
            (4, 30, "argument of f must be 'long', not 'string'"),
            (4, 43, "argument of f must be 'long', not 'double'"),
        ]

    def test_a_dotted_implementation_is_read_as_the_document_writes_it(self) -> None:
        # Section 2.2's form, a Java class name there: a module and its attribute, the longest
        # module first; what cannot be imported is reported as for the colon's form.
        e = only_error(
            'function string lookup(string): "org.example.Lookup"\nin string A\nout string B\n'
            "( A(x) { !>B(lookup(x)); } )*"
        )
        assert (at(e), e.message) == (
            (1, 33),
            "cannot resolve external function lookup: cannot import module 'org.example': No module named 'org'",
        )

    @pytest.mark.parametrize("impl", ["Lookup", "org example.Lookup", "org..Lookup", "9org.Lookup"])
    def test_an_implementation_of_neither_form(self, impl: str) -> None:
        e = only_error(
            f'function string lookup(string): "{impl}"\nin string A\nout string B\n( A(x) {{ !>B(lookup(x)); }} )*'
        )
        assert (at(e), e.message) == ((1, 33), f"{impl!r} does not name a Python callable")
        assert e.hint is not None and '"package.module:attribute"' in e.hint and '"package.module.attribute"' in e.hint

    def test_a_dotted_implementation_beside_the_program(self, tmp_path: Path) -> None:
        pkg = _module(tmp_path, "")  # (a name of its own; the package is a folder of that name)
        (tmp_path / f"{pkg}.py").unlink()
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
        (tmp_path / pkg / "geo.py").write_text(
            "class Shapes:\n    @staticmethod\n    def twice(x):\n        return 2 * x\n"
        )
        program = tmp_path / "prog.es"
        program.write_text(
            f'function long twice(long): "{pkg}.geo.Shapes.twice"\nin long A\nout long B\n'
            "( A(x) { !>B(twice(x)); } )*\n"
        )
        comp = compile_file(program)
        assert comp.ok, [str(d) for d in comp.diagnostics]
        out: list[dict] = []
        run_trace(
            [comp.require()],
            parse_trace(SourceFile("<trace>", "[2026-01-01 09:00:00] A(21)")),
            lambda line: out.append(line.to_json()),
        )
        assert [(o["event"], o["value"]) for o in out] == [("B", 42)]

    def test_a_users_own_eslib_comes_before_the_bundled_one(self, tmp_path: Path) -> None:
        (tmp_path / "eslib").mkdir()
        (tmp_path / "eslib" / "__init__.py").write_text("")
        (tmp_path / "eslib" / "systemFuncs.py").write_text("def EnvVar(name):\n    return 'mine:' + name\n")
        program = tmp_path / "prog.es"
        program.write_text(
            'function string envVar(string): "eslib.systemFuncs.EnvVar"\nin string A\nout string B\n'
            "( A(x) { !>B(envVar(x)); } )*\n"
        )
        for name in [m for m in sys.modules if m == "eslib" or m.startswith("eslib.")]:
            del sys.modules[name]
        try:
            comp = compile_file(program)
            assert comp.ok, [str(d) for d in comp.diagnostics]
            assert comp.checked is not None
            assert comp.checked.externals["envVar"].function("PATH") == "mine:PATH"
        finally:
            for name in [m for m in sys.modules if m == "eslib" or m.startswith("eslib.")]:
                del sys.modules[name]

    def test_missing_module(self, tmp_path: Path) -> None:
        program = tmp_path / "prog.es"
        program.write_text(
            'in long A\nout long B\nfunction long f(long):\n    "no_such_module_xyz.sub:f"\n( A(x) { !>B(f(x)); } )*\n'
        )
        (e,) = compile_file(program).diagnostics.errors
        assert (at(e), e.message) == (
            (4, 5),
            "cannot resolve external function f: cannot import module "
            "'no_such_module_xyz.sub': No module named 'no_such_module_xyz'",
        )
        assert e.hint == "the module is searched on the Python path and beside the program file"

    def test_module_that_fails_to_import(self, tmp_path: Path) -> None:
        mod = _module(tmp_path, "raise RuntimeError('broken on purpose')\n")
        program = tmp_path / "prog.es"
        program.write_text(f'function long f(long): "{mod}:f"\nin long A\nout long B\n( A(x) {{ !>B(f(x)); }} )*\n')
        (e,) = compile_file(program).diagnostics.errors
        assert at(e) == (1, 24)
        assert e.message == f"cannot resolve external function f: cannot import module '{mod}': broken on purpose"

    def test_missing_attribute(self, tmp_path: Path) -> None:
        mod = _module(tmp_path, "def g(x):\n    return x\n")
        program = tmp_path / "prog.es"
        program.write_text(
            f'function long f(long): "{mod}:nothere"\nin long A\nout long B\n( A(x) {{ !>B(f(x)); }} )*\n'
        )
        (e,) = compile_file(program).diagnostics.errors
        assert (at(e), e.message) == (
            (1, 24),
            f"cannot resolve external function f: module '{mod}' has no attribute 'nothere'",
        )

    def test_not_callable(self, tmp_path: Path) -> None:
        mod = _module(tmp_path, "LIMIT = 3\n")
        program = tmp_path / "prog.es"
        program.write_text(f'function long f(long): "{mod}:LIMIT"\nin long A\nout long B\n( A(x) {{ !>B(f(x)); }} )*\n')
        (e,) = compile_file(program).diagnostics.errors
        assert (at(e), e.message) == ((1, 24), f"cannot resolve external function f: '{mod}:LIMIT' is not callable")

    @pytest.mark.parametrize("impl", ["mod:", ":f"])
    def test_empty_module_or_attribute(self, impl: str) -> None:
        e = only_error(f'function long f(long): "{impl}"\nin long A\nout long B\n( A(x) {{ !>B(f(x)); }} )*')
        assert e.message == f"{impl!r} does not name a Python callable"

    def test_resolution_can_be_skipped(self) -> None:
        comp = compile_source(
            'function long f(long): "nowhere_xyz:f"\nin long A\nout long B\n( A(x) { !>B(f(x)); } )*',
            resolve_externals=False,
        )
        assert comp.ok

    def test_search_path_is_restored(self, tmp_path: Path) -> None:
        mod = _module(tmp_path, "def f(x):\n    return x\n")
        program = tmp_path / "prog.es"
        program.write_text(f'function long f(long): "{mod}:f"\nin long A\nout long B\n( A(x) {{ !>B(f(x)); }} )*\n')
        before = list(sys.path)
        assert compile_file(program).ok
        assert sys.path == before


# ---------------------------------------------------------------------------------------
# Rendering and the command line


class TestRendering:
    def test_render_shows_the_line_and_a_caret_under_the_column(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) {\tz = 1; !>B(x + q()); } )*")
        assert e.render().split("\n") == [
            "test:3:25: error: unknown function 'q'",
            "    ( A(x) { z = 1; !>B(x + q()); } )*",  # the tab is shown as one space, as it is counted
            "    " + " " * 24 + "^",
            '    hint: declare an external function with: function <type> name(<types>): "module:attr"',
        ]

    def test_position_at_the_end_of_the_file(self) -> None:
        e = only_error("in long A\nout long B\n( A(x) { !>B(x); }")
        lines = e.render().split("\n")
        assert lines[0] == "test:3:19: error: expected ')', found the end of the file"
        assert lines[2] == "    " + " " * 18 + "^"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


class TestCheckCommand:
    def test_errors_are_printed_with_position_line_and_caret(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        bad = _write(tmp_path, "bad.es", "in long A\nout long B\n( A(x) { !>B(x) } )*\n")
        status = cli_main(["check", str(bad)])
        out = capsys.readouterr().out.split("\n")
        assert status == 1
        assert out[0] == f"{bad}:3:17: error: expected ';', found '}}'"
        assert out[1] == "    ( A(x) { !>B(x) } )*"
        assert out[2] == "    " + " " * 16 + "^"
        assert out[3] == "    hint: every emit action ends with ';'"

    def test_warnings_only_exit_zero(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        ok = _write(tmp_path, "warn.es", "in {} E\nout long O\n( E() {v=1;} | E() {v=2;} ) {!>O(v);}\n")
        assert cli_main(["check", str(ok)]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"{ok}:3:16: warning: ambiguous regular expression")
        assert cli_main(["check", "-q", str(ok)]) == 0
        assert capsys.readouterr().out == ""

    def test_several_files_and_diagnostics_in_position_order(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        good = _write(tmp_path, "good.es", "in long A\nout long B\n( A(x) { !>B(x); } )*\n")
        bad = _write(tmp_path, "bad.es", "in long A\nout long B\n( A(x) { !>B(q()); y = 1; !>C(x); } )*\n")
        assert cli_main(["check", str(good), str(bad)]) == 1
        lines = [line for line in capsys.readouterr().out.split("\n") if ": error: " in line or ": warning: " in line]
        assert lines == [
            f"{bad}:3:14: error: unknown function 'q'",
            f"{bad}:3:20: warning: variable 'y' is set but never read [never-read]",
            f"{bad}:3:29: error: undeclared output event 'C'",
        ]

    def test_missing_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert cli_main(["check", str(tmp_path / "none.es")]) == 1
        assert capsys.readouterr().out.startswith(f"{tmp_path / 'none.es'}: error: cannot read the program")

    def test_subprocess(self, tmp_path: Path) -> None:
        bad = _write(tmp_path, "bad.es", "in long A\nout long B\n( A() { !>B(y == y ? 1 : 2); } )*\n")
        warn = _write(tmp_path, "warn.es", "in long A\nout long B\n( A(x) { y = x; !>B(x); } )*\n")
        exe = Path(sys.executable).parent / "eventscript"
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "eventscript.cli.main"]
        r = subprocess.run([*cmd, "check", str(bad)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1
        assert r.stdout.split("\n")[:3] == [
            f"{bad}:3:13: error: 'y' is never given a value, and nothing gives it a type",
            "    ( A() { !>B(y == y ? 1 : 2); } )*",
            "                ^",
        ]
        r = subprocess.run([*cmd, "check", str(warn)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0
        assert r.stdout.startswith(f"{warn}:3:10: warning: variable 'y' is set but never read")


def test_a_product_whose_operands_pair_too_many_action_paths_is_a_compile_error() -> None:
    """Nested optional repetitions of action blocks give each operand of ``&`` thousands of action
    paths per step; pairing them all took minutes (a random program of the property tests seemed
    to hang the compiler). Past automata.product.MAX_PATH_PAIRS it is an error at the ``&``."""
    side = (
        "{ !>O(100 / v); n > 1 ? { !>O(n); n = 0; } : n = n + 2; } ( elapse[2 seconds]() | "
        "( ( Lo(v)? { !>O(100 / v); n > 1 ? { !>O(n); n = 0; } : n = n + 2; } ){0,2} ){0,2}{0,2} ){0,2}"
    )
    src = f"in long A case {{ A > 4 ? Hi : Lo }}, long B\nout long O\n{{ n = 0; }}\n{side} & {side}\n"
    comp = compile_source(src, name="paths")
    errors = [d for d in comp.diagnostics if d.severity is Severity.ERROR]
    assert not comp.ok and len(errors) == 1
    assert "pairs more than" in errors[0].message and "action paths" in errors[0].message
    assert (errors[0].pos.line, errors[0].pos.col) == (4, len(side) + 2), errors[0]
