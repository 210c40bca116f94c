"""Run-time semantics of the engine: values, operators, built-in functions, errors, instances.

Every test runs a small program over a timed trace through the tester (``run_program``) and
compares the emitted events exactly. References: the conformance README (error codes, output
encoding, the 12 semantic choices) and the language document, sections 2, 3 and 6.1.
"""

from __future__ import annotations

import json
import math
from typing import Any, ClassVar

import pytest

from conftest import check_source, run_program
from eventscript.automata.compile import compile_source
from eventscript.automata.compiled import CompiledProgram
from eventscript.engine.engine import Engine
from eventscript.engine.events import Emitted
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.engine.timeutil import format_time, parse_time
from eventscript.language.source import SourceFile
from eventscript.tester.pipeline import run_trace
from eventscript.tester.trace import parse_trace

T0 = "2026-01-01T00:00:00.000000Z"
GO = "[2026-01-01 00:00:00] Go()"


def simple(lines: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """(event, value) pairs; an ``$error`` becomes ("$error", code)."""
    out = []
    for line in lines:
        if line["event"] == "$error":
            out.append(("$error", line["value"]["code"]))
        else:
            out.append((line["event"], line["value"]))
    return out


def values(lines: list[dict[str, Any]]) -> list[Any]:
    """The values only, with an ``$error`` shown as the string "$error <code>"."""
    return [v if e != "$error" else f"$error {v}" for e, v in simple(lines)]


def go(body: str, outs: str, *, decls: str = "", trace: str = GO) -> list[Any]:
    """Run ``Go() { body }`` once and return the emitted values (errors as "$error N")."""
    src = f"{decls}\nin {{}} Go\nout {outs}\nGo() {{ {body} }}\n"
    return values(run_program(src, trace))


def assert_same_double(got: Any, want: float) -> None:
    assert isinstance(got, float), got
    assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want), (got, want)


# ---------------------------------------------------------------------------------------
# long arithmetic (choice 7)


class TestLongArithmetic:
    def test_addition_and_subtraction_wrap_at_64_bits(self) -> None:
        assert go(
            "a = 9223372036854775807; !>L(a + 1); b = -9223372036854775807 - 1; !>L(b - 1); !>L(a + a); !>L(b + b);",
            "long L",
        ) == [-9223372036854775808, 9223372036854775807, -2, 0]

    def test_a_constant_operand_wraps_either_way(self) -> None:
        """The generated code checks one side when an operand is a constant (codegen._overflow_side)."""
        assert go(
            "a = 9223372036854775807; b = -9223372036854775807 - 1; !>L(1 + a); !>L(a - -1); "
            "!>L(b + -1); !>L(-1 + b); !>L(0 - b); !>L(-1 - a); !>L(a + 0); !>L(b - 0);",
            "long L",
        ) == [
            -9223372036854775808,
            -9223372036854775808,
            9223372036854775807,
            9223372036854775807,
            -9223372036854775808,
            -9223372036854775808,
            9223372036854775807,
            -9223372036854775808,
        ]

    def test_multiplication_wraps(self) -> None:
        assert go(
            "a = 9223372036854775807; !>L(a * 2); !>L(a * a); c = 4294967296; !>L(c * c); !>L(c * c * 3 + 5);", "long L"
        ) == [-2, 1, 0, 5]

    def test_unary_minus_of_the_minimum_is_the_minimum(self) -> None:
        assert go("m = -9223372036854775807 - 1; !>L(-m); !>L(m * -1); !>L(-(m + 1)); !>L(abs(m));", "long L") == [
            -9223372036854775808,
            -9223372036854775808,
            9223372036854775807,
            -9223372036854775808,
        ]

    def test_division_truncates_toward_zero(self) -> None:
        assert go("!>L(7 / 2); !>L(-7 / 2); !>L(7 / -2); !>L(-7 / -2); !>L(1 / 3); !>L(-1 / 3);", "long L") == [
            3,
            -3,
            -3,
            3,
            0,
            0,
        ]

    def test_remainder_takes_the_sign_of_the_dividend(self) -> None:
        assert go("!>L(7 % 3); !>L(-7 % 3); !>L(7 % -3); !>L(-7 % -3); !>L(-6 % 3); !>L(5 % 7);", "long L") == [
            1,
            -1,
            1,
            -1,
            0,
            5,
        ]

    def test_minimum_divided_by_minus_one_wraps(self) -> None:
        assert go("m = -9223372036854775807 - 1; !>L(m / -1); !>L(m % -1);", "long L") == [-9223372036854775808, 0]

    def test_division_by_zero_is_error_4_and_yields_zero(self) -> None:
        assert go("z = 0; !>L(5 / z); !>L(5 % z);", "long L") == ["$error 4", 0, "$error 4", 0]

    def test_evaluation_goes_on_after_division_by_zero(self) -> None:
        # x / 0 + 1 is 1: the failing operation yields 0 and the enclosing expression goes on.
        assert go("z = 0; x = 10; !>L(x / z + 1); !>L(2 * (x % z) - 3);", "long L") == ["$error 4", 1, "$error 4", -3]

    def test_two_errors_in_one_expression_come_in_evaluation_order(self) -> None:
        lines = run_program("in {} Go\nout long L\nGo() { z = 0; !>L(1 / z + v[3]); v = new long[1]; }", GO)
        assert values(lines) == ["$error 4", "$error 3", "$error 5", 0]


# ---------------------------------------------------------------------------------------
# doubles


class TestDoubles:
    def test_division_by_zero_gives_infinities_and_nan_as_strings(self) -> None:
        assert go(
            "z = 0.0; !>D(1.0 / z); !>D(-1.0 / z); !>D(0.0 / z); !>D(1.0 / -z); !>D(5.0 % z); !>D(-5.5 % 2.0);",
            "double D",
        ) == ["Infinity", "-Infinity", "NaN", "-Infinity", "NaN", -1.5]

    def test_no_error_event_for_double_division_by_zero(self) -> None:
        lines = run_program("in {} Go\nout double D\nGo() { z = 0.0; !>D(3.0 / z); }", GO)
        assert simple(lines) == [("D", "Infinity")]

    def test_doubles_are_written_with_a_fraction(self) -> None:
        lines = run_program("in {} Go\nout double D\nGo() { !>D(2.0); !>D(6 / 2.0); !>D(-0.5); }", GO)
        assert [line["value"] for line in lines] == [2.0, 3.0, -0.5]
        assert all(isinstance(line["value"], float) for line in lines)

    def test_long_is_promoted_to_double_in_mixed_operators(self) -> None:
        got = go(
            "n = 7; x = 2.0; !>D(n / x); !>D(n + 0.5); !>D(n * 1.5); !>D(n - 0.25); !>D(n % 2.5); "
            "!>B(n < 7.5); !>B(n == 7.0); !>L(n / 2);",
            "double D, boolean B, long L",
        )
        assert got == [3.5, 7.5, 10.5, 6.75, 2.0, True, True, 3]

    def test_long_is_promoted_in_a_conditional_expression(self) -> None:
        assert go("k = 2; !>D(k > 1 ? 1 : 2.5); !>D(k > 5 ? 1 : 2.5);", "double D") == [1.0, 2.5]


# ---------------------------------------------------------------------------------------
# strings, comparisons, conditional expressions


class TestStringsAndComparisons:
    def test_concatenation_with_numbers_booleans_and_times(self) -> None:
        got = go(
            't = time("2026-03-04T05:06:07Z"); !>S("n=" + 42 + ", d=" + 2.5 + ", b=" + true + ", t=" + t); '
            '!>S(1 + 2 + "x" + 1 + 2); !>S("" + -3 + false); !>S("d" + 100.0);',
            "string S",
        )
        assert got == ["n=42, d=2.5, b=true, t=2026-03-04T05:06:07.000000Z", "3x12", "-3false", "d100.0"]

    def test_string_comparisons(self) -> None:
        got = go(
            '!>B("abc" < "abd"); !>B("B" < "a"); !>B("ab" < "abc"); !>B("x" == "x"); !>B("x" != "x"); '
            '!>B("b" >= "ab"); !>B("" <= "");',
            "boolean B",
        )
        assert got == [True, True, True, True, False, True, True]

    def test_time_comparisons(self) -> None:
        got = go(
            'a = time("2026-01-01T00:00:00Z"); b = secondsAfter(1, a); !>B(a < b); !>B(b <= a); '
            "!>B(a == microsecondsAfter(0, a)); !>B(a != b); !>B(b > a); !>B(now() == a);",
            "boolean B",
        )
        assert got == [True, False, True, True, True, True]

    def test_conditional_expression_and_nesting(self) -> None:
        got = go(
            'n = 5; !>S(n > 3 ? "big" : "small"); !>S(n > 9 ? "huge" : n > 3 ? "mid" : "low"); '
            "!>L((n < 3 ? 10 : 20) + 1);",
            "string S, long L",
        )
        assert got == ["big", "mid", 21]

    def test_boolean_operators_short_circuit(self) -> None:
        # The right operand is not evaluated (no $error 4) when the left decides.
        got = go("z = 0; !>B(false && 1 / z == 0); !>B(true || 1 / z == 0); !>B(true && 1 / z == 0);", "boolean B")
        assert got == [False, True, "$error 4", True]


# ---------------------------------------------------------------------------------------
# structures and arrays


POINT = "type P = {long x; string s;}"


class TestStructuresAndArrays:
    def test_structure_builder_in_any_field_order_is_emitted_in_declared_order(self) -> None:
        lines = run_program(
            f'{POINT}\nin {{}} Go\nout P O\nGo() {{ !>O({{s: "a", x: 1}}); '
            f'!>O({{x: 2, s: "b"}}); p = {{x: 3, s: "c"}}; !>O(p); }}',
            GO,
        )
        assert [line["value"] for line in lines] == [{"x": 1, "s": "a"}, {"x": 2, "s": "b"}, {"x": 3, "s": "c"}]
        assert [list(line["value"]) for line in lines] == [["x", "s"]] * 3

    def test_builder_fields_are_evaluated_in_the_order_written(self) -> None:
        # Document 2.5, "Java-like" expressions: left to right as written, so y's division by
        # zero (4) comes before x's unset variable (3); also after a round trip through the
        # compiled JSON form, which keeps the written order.
        src = f"{POINT}\nin long Go\nout P O\n( Go(z) {{ !>O({{s: string(10 / z), x: u}}); }} )*"
        trace = "[2026-01-01 00:00:00] Go(0)"
        want = ["$error 4", "$error 3", {"x": 0, "s": "0"}]
        assert values(run_program(src, trace)) == want
        compiled = CompiledProgram.from_json(json.loads(json.dumps(compile_source(src, name="p").require().to_json())))
        lines: list[dict[str, Any]] = []
        run_trace([compiled], parse_trace(SourceFile("<trace>", trace)), lambda line: lines.append(line.to_json()))
        assert values(lines) == want

    def test_variable_holding_a_builder_in_another_field_order(self) -> None:
        comp = check_source(f'{POINT}\nin {{}} Go\nout P O\nGo() {{ p = {{s: "a", x: 1}}; !>O(p); }}')
        assert comp.ok, [str(d) for d in comp.diagnostics]

    def test_field_read_and_assignment(self) -> None:
        got = go('p = {x: 1, s: "a"}; p.x = p.x + 41; p.s = p.s + "b"; !>O(p); !>L(p.x);', "P O, long L", decls=POINT)
        assert got == [{"x": 42, "s": "ab"}, 42]

    def test_arrays_are_shared_by_reference(self) -> None:
        # Footnote 4: after w = v, v[0] = 3 changes w[0].
        got = go("v = new long[2]; w = v; v[0] = 3; !>L(w[0]); w[1] = 4; !>L(v[1]);", "long L")
        assert got == [3, 4]

    def test_structures_are_shared_by_reference(self) -> None:
        got = go('p = {x: 1, s: "a"}; q = p; p.x = 3; !>L(q.x);', "long L", decls=POINT)
        assert got == [3]

    def test_emitted_values_are_snapshots(self) -> None:
        # Choice 9, checked on the run-time values themselves: keep the Emitted objects and look
        # at them after later events changed the array and the structure they came from.
        src = (
            "type N = {long[] a; {long x;} p;}\nin long Set\nout long[] A, N O\n"
            "{ v = new long[2]; n = {a: v, p: {x: 0}}; }\n"
            "( Set(k) { v[0] = k; n.p.x = k; !>A(v); !>O(n); } )*"
        )
        prog = check_source(src).require()
        got: list[Emitted] = []
        clock = SimulatedTimeProvider(parse_time("2026-01-01T00:00:00Z"))
        engine = Engine(prog, got.append, clock)
        engine.start()
        for k in (1, 2, 3):
            engine.feed("Set", k)
        assert [e.value for e in got] == [[1, 0], [[1, 0], [1]], [2, 0], [[2, 0], [2]], [3, 0], [[3, 0], [3]]]

    def test_emitted_snapshot_seen_by_a_later_pipeline_stage(self) -> None:
        stage1 = (
            "in long Set, {} Show\nout long[] A\n{ v = new long[2]; }\n"
            "( Set(k) { v[0] = k; !>A(v); v[1] = k * 10; } | Show() { !>A(v); } )*"
        )
        stage2 = "in long[] A\nout long[] Kept\nA(first) ( A(x) { !>Kept(first); } )*"
        lines = run_program([stage1, stage2], "[2026-01-01 00:00:00] Set(1) Set(2) Show() Set(7)")
        assert values(lines) == [[1, 0], [1, 0], [1, 0]]

    def test_new_array_defaults(self) -> None:
        got = go(
            "!>L(new long[2]); !>D(new double[2]); !>S(new string[1]); !>B(new boolean[1]); "
            "!>T(new time[1]); !>PA(new P[2]); !>L(new long[0]);",
            "long[] L, double[] D, string[] S, boolean[] B, time[] T, P[] PA",
            decls=POINT,
        )
        assert got == [
            [0, 0],
            [0.0, 0.0],
            [""],
            [False],
            ["1970-01-01T00:00:00.000000Z"],
            [{"x": 0, "s": ""}, {"x": 0, "s": ""}],
            [],
        ]

    def test_new_array_of_structures_gives_distinct_elements(self) -> None:
        got = go("a = new P[2]; a[0].x = 5; !>PA(a);", "P[] PA", decls=POINT)
        assert got == [[{"x": 5, "s": ""}, {"x": 0, "s": ""}]]

    def test_negative_array_size_is_error_8_and_an_empty_array(self) -> None:
        got = go("n = -1; a = new long[n]; !>L(length(a)); !>A(a);", "long L, long[] A")
        assert got == ["$error 8", 0, []]

    def test_subscript_out_of_bounds_on_read(self) -> None:
        got = go("v = new long[3]; v[2] = 9; !>L(v[3]); !>L(v[-1] + 1); !>L(v[2]);", "long L")
        assert got == ["$error 5", 0, "$error 5", 1, 9]

    def test_subscript_out_of_bounds_on_write_assigns_nothing(self) -> None:
        got = go("v = new long[2]; v[2] = 5; v[-1] = 6; !>A(v);", "long[] A")
        assert got == ["$error 5", "$error 5", [0, 0]]

    def test_out_of_bounds_read_of_a_structure_array_yields_a_default_structure(self) -> None:
        got = go("a = new P[1]; !>O(a[4]);", "P O", decls=POINT)
        assert got == ["$error 5", {"x": 0, "s": ""}]


# ---------------------------------------------------------------------------------------
# unset variables, actions


class TestVariablesAndActions:
    SRC = """
    in long Go, {} Set
    out long L, string S, double D, boolean B, time T, long[] A
    Go(k) { !>L(x + 1); !>S(s + "!"); !>D(d * 2.0); !>B(b || false); !>T(t); !>A(a); }
    (Set() { x = 5; s = "a"; d = 1.5; b = true; t = now(); a = new long[1]; } Go(k2))*
    """

    def test_unset_variables_are_error_3_with_defaults(self) -> None:
        assert values(run_program(self.SRC, "[2026-01-01 00:00:00] Go(1)")) == [
            "$error 3",
            1,
            "$error 3",
            "!",
            "$error 3",
            0.0,
            "$error 3",
            False,
            "$error 3",
            "1970-01-01T00:00:00.000000Z",
            "$error 3",
            [],
        ]

    def test_unset_error_comes_at_the_time_of_the_event(self) -> None:
        lines = run_program(self.SRC, "[2026-01-01 00:00:00] [00:00:05] Go(1)")
        assert lines[0]["time"] == "2026-01-01T00:00:05.000000Z"
        assert lines[0]["event"] == "$error"

    def test_variable_set_on_one_path_only(self) -> None:
        src = """
        in {} A, {} B
        out long L
        ( A() { x = 1; } )* B() { !>L(x); }
        """
        assert values(run_program(src, "[2026-01-01 00:00:00] B()")) == ["$error 3", 0]
        assert values(run_program(src, "[2026-01-01 00:00:00] A() B()")) == [1]

    def test_for_loops_are_inclusive_and_empty_when_b_below_a(self) -> None:
        got = go(
            "for (i: 1, 3) !>L(i); for (i: 3, 1) !>L(100 + i); for (i: -1, -1) !>L(i * 10); "
            "n = 0; for (i: 1, 4) { n = n + i; } !>L(n);",
            "long L",
        )
        assert got == [1, 2, 3, -10, 10]

    def test_for_bounds_are_evaluated_once(self) -> None:
        got = go("n = 3; for (i: 1, n) { n = n + 1; !>L(i); } !>L(n);", "long L")
        assert got == [1, 2, 3, 6]

    def test_nested_conditional_actions(self) -> None:
        src = """
        in long Go
        out string S
        ( Go(k) { k > 2 ? { !>S("big"); k > 4 ? !>S("huge"); : !>S("medium"); } : !>S("small"); } )*
        """
        assert values(run_program(src, "[2026-01-01 00:00:00] Go(1) Go(3) Go(5)")) == [
            "small",
            "big",
            "medium",
            "big",
            "huge",
        ]

    def test_sliding_window_example_from_the_document(self) -> None:
        src = """
        in long SetWindowSize, double Raw
        out double Average
        SetWindowSize(N)
        { history = new double[N];
          for (i: 0, N-1) history[i] = 0.0;
          sum = 0.0; readingCount = 0; circularBufferCursor = 0; }
        ( Raw(newValue)
          { sum = sum - history[circularBufferCursor] + newValue;
            readingCount = readingCount + 1;
            readingCount >= N ? !>Average(sum/N);
            history[circularBufferCursor] = newValue;
            circularBufferCursor = (circularBufferCursor+1) % N; } )*
        """
        lines = run_program(src, "[2026-01-01 00:00:00] SetWindowSize(2) Raw(1.0) Raw(3.0) Raw(5.0) Raw(-1.0)")
        assert values(lines) == [2.0, 4.0, 2.0]

    def test_errors_come_before_the_emit_of_their_action(self) -> None:
        src = """
        in long Go
        out long L
        ( Go(k) { !>L(1); y = 10 / k; !>L(y); } )*
        """
        lines = run_program(src, "[2026-01-01 00:00:00] Go(0) Go(5)")
        assert simple(lines) == [("L", 1), ("$error", 4), ("L", 0), ("L", 1), ("L", 2)]
        assert [line["time"] for line in lines] == [T0] * 5

    def test_error_inside_the_emitted_expression_precedes_the_emit(self) -> None:
        lines = run_program("in {} Go\nout long L\nGo() { v = new long[1]; !>L(v[5] + 2); }", GO)
        assert simple(lines) == [("$error", 5), ("L", 2)]


# ---------------------------------------------------------------------------------------
# built-in functions


TIME_A = 'a = time("2024-02-29T13:45:30.123456Z");'


class TestBuiltins:
    def test_time_arithmetic(self) -> None:
        got = go(
            TIME_A + "!>T(secondsAfter(90, a)); !>T(daysAfter(1, a)); !>T(hoursAfter(-2, a)); "
            "!>T(minutesAfter(15, a)); !>T(millisecondsAfter(1, a)); !>T(microsecondsAfter(-1, a)); "
            "!>T(daysAfter(366, a));",
            "time T",
        )
        assert got == [
            "2024-02-29T13:47:00.123456Z",
            "2024-03-01T13:45:30.123456Z",
            "2024-02-29T11:45:30.123456Z",
            "2024-02-29T14:00:30.123456Z",
            "2024-02-29T13:45:30.124456Z",
            "2024-02-29T13:45:30.123455Z",
            "2025-03-01T13:45:30.123456Z",
        ]

    def test_between_functions_truncate_toward_zero(self) -> None:
        got = go(
            TIME_A + 'b = time("2024-03-01T00:00:00Z"); !>L(secondsBetween(a, b)); '
            "!>L(secondsBetween(b, a)); !>L(daysBetween(a, b)); !>L(hoursBetween(a, b)); "
            "!>L(minutesBetween(b, a)); !>L(millisecondsBetween(a, b)); !>L(microsecondsBetween(a, b)); "
            "!>L(daysBetween(a, daysAfter(3, a)));",
            "long L",
        )
        assert got == [36869, -36869, 0, 10, -614, 36869876, 36869876544, 3]

    def test_time_fields(self) -> None:
        got = go(
            TIME_A + "!>L(year(a)); !>L(month(a)); !>L(day(a)); !>L(hour(a)); !>L(minute(a)); "
            "!>L(second(a)); !>L(millisecond(a)); !>L(microsecond(a)); !>L(dayOfWeek(a)); "
            '!>L(dayOfYear(a)); !>L(dayOfWeek(time("2026-01-04T23:59:59Z")));',
            "long L",
        )
        # 2024-02-29 was a Thursday (ISO 4); 2026-01-04 is a Sunday (ISO 7).
        assert got == [2024, 2, 29, 13, 45, 30, 123, 123456, 4, 60, 7]

    def test_time_arithmetic_out_of_range_is_error_8_and_the_epoch(self) -> None:
        got = go("t = daysAfter(3000000, now()); !>T(t); !>L(year(t)); !>T(secondsAfter(-1, t));", "time T, long L")
        assert got == ["$error 8", "1970-01-01T00:00:00.000000Z", 1970, "1969-12-31T23:59:59.000000Z"]

    def test_a_time_made_out_of_range_is_error_8_and_the_epoch(self) -> None:
        # docs/language.md 4.1, 7.7: a time is of years 1 to 9999, so the time is never made
        got = go(
            "t = timeOfEpochMicros(253402300800000000); !>L(year(t)); !>L(month(t) + 1); "
            "u = timeOfEpochMillis(-62135596800001); !>L(year(u));",
            "long L",
        )
        assert got == ["$error 8", 1970, 2, "$error 8", 1970]

    def test_fields_at_the_ends_of_the_time_range(self) -> None:
        got = go(
            "t = timeOfEpochMicros(253402300799999999); !>L(year(t)); !>L(microsecond(t)); !>T(t); "
            "u = timeOfEpochMicros(-62135596800000000); !>L(year(u)); !>T(u);",
            "long L, time T",
        )
        assert got == [9999, 999999, "9999-12-31T23:59:59.999999Z", 1, "0001-01-01T00:00:00.000000Z"]

    def test_epoch_conversions(self) -> None:
        got = go(
            TIME_A + "!>L(epochMillis(a)); !>L(epochMicros(a)); !>T(timeOfEpochMillis(1000)); "
            "!>T(timeOfEpochMicros(-1)); !>L(epochMillis(timeOfEpochMicros(-1)));",
            "long L, time T",
        )
        assert got == [
            1709214330123,
            1709214330123456,
            "1970-01-01T00:00:01.000000Z",
            "1969-12-31T23:59:59.999999Z",
            -1,
        ]

    def test_long_of_double_truncates_saturates_and_maps_nan_to_zero(self) -> None:
        got = go(
            "z = 0.0; !>L(long(3.99)); !>L(long(-3.99)); !>L(long(0.0 / z)); !>L(long(1.0e30)); "
            "!>L(long(-1.0e30)); !>L(long(1.0 / z)); !>L(long(-0.5));",
            "long L",
        )
        assert got == [3, -3, 0, 9223372036854775807, -9223372036854775808, 9223372036854775807, 0]

    def test_long_of_string(self) -> None:
        got = go(
            '!>L(long("12")); !>L(long("-7")); !>L(long("+5")); !>L(long("x") + 1); !>L(long("1.5")); '
            '!>L(long("")); !>L(long("9223372036854775808")); !>L(long("1_000"));',
            "long L",
        )
        assert got == [12, -7, 5, "$error 8", 1, "$error 8", 0, "$error 8", 0, "$error 8", 0, "$error 8", 0]

    def test_double_conversions(self) -> None:
        got = go(
            '!>D(double(3)); !>D(double("2.5")); !>D(double("-1e3")); !>D(double("abc")); !>D(double("1_0.5"));',
            "double D",
        )
        assert got == [3.0, 2.5, -1000.0, "$error 8", 0.0, "$error 8", 0.0]

    def test_time_of_string(self) -> None:
        got = go(
            '!>T(time("2026-05-06T07:08:09+02:00")); !>T(time("2026-05-06")); !>T(time("garbage")); '
            '!>T(time("2026-13-01T00:00:00Z"));',
            "time T",
        )
        assert got == [
            "2026-05-06T05:08:09.000000Z",
            "2026-05-06T00:00:00.000000Z",
            "$error 8",
            "1970-01-01T00:00:00.000000Z",
            "$error 8",
            "1970-01-01T00:00:00.000000Z",
        ]

    def test_string_of_values(self) -> None:
        got = go(
            TIME_A + "!>S(string(42)); !>S(string(-9223372036854775807 - 1)); !>S(string(-1.5)); "
            "!>S(string(100.0)); !>S(string(1.0e-5)); !>S(string(1.0e20)); z = 0.0; !>S(string(0.0 / z)); "
            '!>S(string(-1.0 / z)); !>S(string(true)); !>S(string(false)); !>S(string(a)); !>S(string("s"));',
            "string S",
        )
        assert got == [
            "42",
            "-9223372036854775808",
            "-1.5",
            "100.0",
            "1.0E-5",
            "1.0E20",
            "NaN",
            "-Infinity",
            "true",
            "false",
            "2024-02-29T13:45:30.123456Z",
            "s",
        ]

    def test_substring(self) -> None:
        got = go(
            '!>S(substring("hello", 1, 3)); !>S(substring("hello", 0, 5)); !>S(substring("hello", 5, 5)); '
            '!>S(substring("hello", 3, 2)); !>S(substring("hello", 0, 6)); !>S(substring("hello", -1, 2) + "!");',
            "string S",
        )
        assert got == ["el", "hello", "", "$error 5", "", "$error 5", "", "$error 5", "!"]

    def test_string_functions(self) -> None:
        got = go(
            '!>L(indexOf("hello", "l")); !>L(indexOf("hello", "z")); !>B(contains("abc", "bc")); '
            '!>B(startsWith("abc", "ab")); !>B(endsWith("abc", "b")); !>S(toUpperCase("abc")); '
            '!>S(toLowerCase("AbC")); !>S(trim("  a b "));',
            "long L, boolean B, string S",
        )
        assert got == [2, -1, True, True, False, "ABC", "abc", "a b"]

    def test_length_of_strings_and_arrays(self) -> None:
        got = go(
            '!>L(length("héllo")); !>L(length("")); !>L(length(new long[4])); v = new string[0]; !>L(length(v));',
            "long L",
        )
        assert got == [5, 0, 4, 0]

    def test_min_max_abs(self) -> None:
        z = "z = 0.0; "
        got = go(
            z + "!>L(min(3, -4)); !>L(max(3, 9)); !>D(min(1.5, 2)); !>D(max(2, 1.5)); !>D(max(0.0 / z, 1.0)); "
            "!>D(min(1.0, 0.0 / z)); !>L(abs(-5)); !>D(abs(-2.5));",
            "long L, double D",
        )
        assert got == [-4, 9, 1.5, 2.0, "NaN", "NaN", 5, 2.5]

    def test_sqrt_floor_ceil(self) -> None:
        got = go(
            "!>D(sqrt(16.0)); !>D(sqrt(2)); !>D(sqrt(-1.0)); !>D(floor(-2.5)); !>D(floor(2.5)); "
            "!>D(ceil(-2.5)); !>D(ceil(2.1)); !>D(floor(3));",
            "double D",
        )
        assert got == [4.0, math.sqrt(2), "NaN", -3.0, 2.0, -2.0, 3.0, 3.0]

    def test_floor_and_ceil_keep_the_sign_of_zero(self) -> None:
        got = go("!>S(string(ceil(-0.5))); !>S(string(floor(-0.0))); !>S(string(floor(0.5)));", "string S")
        assert got == ["-0.0", "-0.0", "0.0"]

    def test_round_is_half_up(self) -> None:
        got = go(
            "!>L(round(2.5)); !>L(round(-2.5)); !>L(round(-2.6)); !>L(round(0.49999999999999994)); "
            "!>L(round(-0.5)); !>L(round(1.0e30)); !>L(round(4503599627370497.0));",
            "long L",
        )
        assert got == [3, -2, -3, 0, 0, 9223372036854775807, 4503599627370497]

    def test_round_of_non_finite_values(self) -> None:
        # Java's Math.round: NaN gives 0, the infinities saturate (the engine used to crash here).
        got = go("z = 0.0; !>L(round(0.0 / z)); !>L(round(1.0 / z)); !>L(round(-1.0 / z));", "long L")
        assert got == [0, 9223372036854775807, -9223372036854775808]

    def test_pow_exp_log(self) -> None:
        got = go(
            "!>D(pow(2.0, 10)); !>D(pow(0.0, -1.0)); !>D(pow(-0.0, -1.0)); !>D(pow(-10.0, 401.0)); "
            "!>D(pow(10.0, 401.0)); !>D(pow(-8.0, 0.5)); !>D(exp(1000.0)); !>D(log(0.0)); !>D(log(-1.0)); "
            "!>B(isNaN(log(-1.0)));",
            "double D, boolean B",
        )
        assert got == [
            1024.0,
            "Infinity",
            "-Infinity",
            "-Infinity",
            "Infinity",
            "NaN",
            "Infinity",
            "-Infinity",
            "NaN",
            True,
        ]

    def test_now_is_the_time_of_the_event(self) -> None:
        src = "in {} Go\nout time T\n( Go() { !>T(now()); } )*"
        lines = run_program(src, "[2026-01-01 00:00:00] Go() [2026-01-02 03:04:05.678] Go()")
        assert values(lines) == [T0, "2026-01-02T03:04:05.678000Z"]


# ---------------------------------------------------------------------------------------
# external functions


class TestExternals:
    def test_external_function_result_conversion(self) -> None:
        src = """
        function double fact(long): "math:factorial"
        function long lfact(long): "math:factorial"
        in {} Go
        out double D, long L
        Go() { !>D(fact(5)); !>L(lfact(5)); !>L(lfact(30) + 1); !>D(fact(200) + 1.0); !>L(lfact(-1)); }
        """
        # 30! does not fit a long, 200! not a double, (-1)! raises: each is $error 7 and the default.
        assert values(run_program(src, GO)) == [120.0, 120, "$error 7", 1, "$error 7", 1.0, "$error 7", 0]


# ---------------------------------------------------------------------------------------
# events: undeclared, discarded, termination, instances


class TestEventsAndInstances:
    TERMINATING = """
    in {} A, {} B
    out long L
    { n = 0; }
    A() { n = n + 1; !>L(n); } B() { !>L(100); }
    """

    def test_undeclared_event_is_error_1(self) -> None:
        lines = run_program(self.TERMINATING, "[2026-01-01 00:00:00] X() A() [00:00:01] Y(3)")
        assert simple(lines) == [("$error", 1), ("L", 1), ("$error", 1)]
        assert lines[2]["time"] == "2026-01-01T00:00:01.000000Z"

    def test_unexpected_event_is_error_2_and_discarded(self) -> None:
        lines = run_program(self.TERMINATING, "[2026-01-01 00:00:00] B() A() A() B()")
        assert simple(lines) == [("$error", 2), ("L", 1), ("$error", 2), ("L", 100)]

    def test_terminated_ungrouped_program_reports_every_later_event(self) -> None:
        lines = run_program(self.TERMINATING, "[2026-01-01 00:00:00] A() B() A() B() X() [00:00:03] A()")
        assert simple(lines) == [("L", 1), ("L", 100), ("$error", 2), ("$error", 2), ("$error", 1), ("$error", 2)]
        assert lines[-1]["time"] == "2026-01-01T00:00:03.000000Z"

    def test_program_terminating_at_start(self) -> None:
        src = "in {} A\nout long L\n{ !>L(1); }"
        lines = run_program(src, "[2026-01-01 00:00:00] A() X()")
        assert simple(lines) == [("L", 1), ("$error", 2), ("$error", 1)]

    def test_discarded_event_changes_nothing(self) -> None:
        # Choice 12: the state, the variables and the pending elapse timer stay as they were.
        src = """
        in {} A, {} B, {} C
        out long L
        { n = 0; }
        ( A() { n = n + 1; !>L(n); } | B() { !>L(n); } | elapse[10 seconds]() { !>L(-1); } )*
        """
        lines = run_program(src, "[2026-01-01 00:00:00] A() [00:00:05] C() Q() [00:00:12] B() [00:00:30]")
        assert [(line["time"][11:19], *s) for line, s in zip(lines, simple(lines))] == [
            ("00:00:00", "L", 1),
            ("00:00:05", "$error", 2),
            ("00:00:05", "$error", 1),
            ("00:00:10", "L", -1),
            ("00:00:12", "L", 1),
            ("00:00:22", "L", -1),
        ]

    def test_discarded_event_keeps_the_state(self) -> None:
        src = """
        in {} A, {} B
        out string S
        ( A() B() { !>S("ab"); } )*
        """
        lines = run_program(src, "[2026-01-01 00:00:00] A() A() B() B() A() B()")
        assert simple(lines) == [("$error", 2), ("S", "ab"), ("$error", 2), ("S", "ab")]

    GROUPED = """
    in {string k; long v;} E group(E.k)
    out string S
    { n = 0; st = now(); }
    E(a) { n = n + a.v; } E(b) { n = n + b.v; !>S(group[0] + ":" + n + "@" + string(st)); }
    """

    def test_grouped_instances_are_independent_and_restart_after_terminating(self) -> None:
        lines = run_program(
            self.GROUPED,
            '[2026-01-01 00:00:00] E("x", 1) [00:00:01] E("y", 10) '
            '[00:00:02] E("x", 2) [00:00:03] E("x", 5) [00:00:04] E("y", 20) '
            'E("x", 7)',
        )
        assert [(line["time"], line["value"], line["key"]) for line in lines] == [
            ("2026-01-01T00:00:02.000000Z", "x:3@2026-01-01T00:00:00.000000Z", ["x"]),
            ("2026-01-01T00:00:04.000000Z", "y:30@2026-01-01T00:00:01.000000Z", ["y"]),
            # A fresh instance for x: initial actions ran again, at its first event's time.
            ("2026-01-01T00:00:04.000000Z", "x:12@2026-01-01T00:00:03.000000Z", ["x"]),
        ]

    def test_rejected_first_event_of_a_key_still_creates_its_instance(self) -> None:
        # The README: a grouped program creates an instance (and runs the initial actions in it)
        # when the first event for that key arrives; the event is then discarded as any
        # instance's (choice 12), and the instance keeps what its initial actions did.
        src = """
        in {string k;} A group(A.k), {string k;} B group(B.k)
        out string S
        { st = now(); !>S("init " + group[0]); }
        A() B() { !>S(group[0] + " started " + string(st)); }
        """
        lines = run_program(src, '[2026-01-01 00:00:00] B({k: "x"}) [00:00:05] A({k: "x"}) B({k: "x"})')
        assert [
            (line["time"][11:19], line["event"], line["value"] if line["event"] != "$error" else line["value"]["code"])
            for line in lines
        ] == [
            ("00:00:00", "S", "init x"),
            ("00:00:00", "$error", 2),
            ("00:00:05", "S", "x started 2026-01-01T00:00:00.000000Z"),
        ]

    def test_group_components_and_key_encoding(self) -> None:
        src = """
        in {string name; long n; double d; boolean b; time t;} E group(E.name, E.n * 2, E.d, E.b, E.t)
        out string S
        ( E() { !>S(group[0] + "/" + group[1] + "/" + group[2] + "/" + group[3] + "/" + group[4]); } )*
        """
        lines = run_program(src, '[2026-01-01 00:00:00] E("a", 4, 1.5, true, "2026-02-03T04:05:06Z")')
        assert lines == [
            {
                "time": T0,
                "event": "S",
                "value": "a/8/1.5/true/2026-02-03T04:05:06.000000Z",
                "key": ["a", 8, 1.5, True, "2026-02-03T04:05:06.000000Z"],
            }
        ]

    def test_errors_of_a_grouped_instance_carry_its_key(self) -> None:
        src = """
        in {string k; long v;} E group(E.k)
        out long L
        ( E(e) { !>L(10 / e.v); } )*
        """
        lines = run_program(src, '[2026-01-01 00:00:00] E("a", 0)')
        assert lines[0]["event"] == "$error" and lines[0]["key"] == ["a"]
        assert lines[1] == {"time": T0, "event": "L", "value": 0, "key": ["a"]}

    def test_case_clause_classification(self) -> None:
        src = """
        in long Key case { Key == 0 ? K0 : Key < 0 ? Neg : Key > 100 ? Big : Other }
        out string S
        ( K0() { !>S("zero"); } | Neg(n) { !>S("neg " + n); } | Other(o) { !>S("other " + o); }
        | Big() { !>S("big"); } )*
        """
        lines = run_program(src, "[2026-01-01 00:00:00] Key(0) Key(-3) Key(5) Key(500) Key(100)")
        assert values(lines) == ["zero", "neg -3", "other 5", "big", "other 100"]

    def test_original_name_matches_every_class(self) -> None:
        src = """
        in long Key case { Key == 0 ? K0 : Key < 0 ? Neg : Other }
        out string S
        ( K0() { !>S("zero"); } | Key(k) { !>S("any " + k); } )*
        """
        lines = run_program(src, "[2026-01-01 00:00:00] Key(0) Key(-3) Key(5)")
        assert values(lines) == ["zero", "any 0", "any -3", "any 5"]

    def test_class_without_a_transition_is_error_2(self) -> None:
        src = """
        in double Temperature case { Temperature >= 100.0 ? High : Low }
        out double F
        ( High(x) { !>F(x); } Low() )*
        """
        lines = run_program(
            src, "[2026-01-01 00:00:00] Temperature(20.0) Temperature(120) Temperature(130.0) Temperature(1.0)"
        )
        assert simple(lines) == [("$error", 2), ("F", 120.0), ("$error", 2)]

    def test_classification_with_a_structure_and_a_group(self) -> None:
        src = """
        in {string c; double price; long volume;} Trade group(Trade.c)
          case { Trade.price * Trade.volume >= 10000.0 ? Big : Small }
        out string S
        ( Small()* Big(b) { !>S(b.c); } )*
        """
        lines = run_program(
            src,
            '[2026-01-01 00:00:00] Trade("I", 1.0, 5) Trade("I", 100.0, 100) '
            'Trade("J", 100.0, 99) Trade("J", 100.0, 101)',
        )
        assert [(line["value"], line["key"]) for line in lines] == [("I", ["I"]), ("J", ["J"])]


# ---------------------------------------------------------------------------------------
# input values: feed_json and the trace


class TestInputValues:
    SRC = """
    type R = {string id; double x; long n; time t; boolean b; long[] a;}
    in R E, double D
    out R O, double OD
    ( E(r) { !>O(r); } | D(d) { !>OD(d); } )*
    """

    def run_json(self, *events: tuple[str, Any]) -> list[Emitted]:
        prog = check_source(self.SRC).require()
        got: list[Emitted] = []
        clock = SimulatedTimeProvider(parse_time("2026-01-01T00:00:00Z"))
        engine = Engine(prog, got.append, clock)
        engine.start()
        for name, value in events:
            engine.feed_json(name, value)
        return got

    GOOD: ClassVar[dict[str, Any]] = {"id": "a", "x": 1.5, "n": 2, "t": "2026-01-01T10:00:00Z", "b": True, "a": [1, 2]}

    def test_conversions(self) -> None:
        got = self.run_json(
            ("E", {**self.GOOD, "x": 1, "t": "2026-01-01T10:00:00+02:00"}),
            ("E", {**self.GOOD, "n": 3.0, "t": 1000, "a": []}),
            ("E", ["p", 2.5, 7, "2026-01-01", False, [5]]),
            ("D", "NaN"),
            ("D", "-Infinity"),
            ("D", 4),
        )
        assert [(e.name, e.value) for e in got] == [
            ("O", ["a", 1.0, 2, parse_time("2026-01-01T08:00:00Z"), True, [1, 2]]),
            ("O", ["a", 1.5, 3, 1_000_000, True, []]),
            ("O", ["p", 2.5, 7, parse_time("2026-01-01T00:00:00Z"), False, [5]]),
            ("OD", got[3].value),
            ("OD", -math.inf),
            ("OD", 4.0),
        ]
        assert math.isnan(got[3].value)
        assert type(got[0].value[1]) is float and type(got[5].value) is float

    @pytest.mark.parametrize(
        "bad",
        [
            {**GOOD, "n": 2.5},
            {**GOOD, "n": True},
            {**GOOD, "n": 2**63},
            {**GOOD, "x": True},
            {**GOOD, "x": "1.5"},
            {**GOOD, "id": 3},
            {**GOOD, "b": 1},
            {**GOOD, "t": "2026-13-01T10:00:00Z"},
            {**GOOD, "t": "yesterday"},
            {**GOOD, "t": True},
            {**GOOD, "a": [1, "2"]},
            {**GOOD, "a": None},
            {k: v for k, v in GOOD.items() if k != "t"},
            ["p", 2.5, 7],
            "nope",
            None,
        ],
    )
    def test_ill_typed_values_are_error_6_and_change_nothing(self, bad: Any) -> None:
        got = self.run_json(("E", bad), ("E", self.GOOD))
        assert [(e.name, e.error_code) for e in got] == [("$error", 6), ("O", None)]
        assert got[0].key is None

    def test_too_large_integer_for_a_double_is_error_6(self) -> None:
        got = self.run_json(("D", 10**400), ("D", 1))
        assert [(e.name, e.error_code) for e in got] == [("$error", 6), ("OD", None)]

    def test_time_out_of_range_is_error_6(self) -> None:
        got = self.run_json(("E", {**self.GOOD, "t": "9999-12-31T23:59:59-01:00"}), ("E", {**self.GOOD, "t": 10**15}))
        assert [(e.name, e.error_code) for e in got] == [("$error", 6), ("$error", 6)]

    def test_undeclared_name_through_feed_json_is_error_1(self) -> None:
        got = self.run_json(("Nope", {"x": 1}))
        assert [(e.name, e.error_code) for e in got] == [("$error", 1)]

    def test_trace_values(self) -> None:
        lines = run_program(
            self.SRC,
            '[2026-01-01 00:00:00] E("a", 1, 2, "2026-01-01T10:00:00Z", true, [1, 2]) '
            'E({a: [], b: false, t: "2026-01-02", n: -4, x: -2.5, id: "z"}) '
            "D(1e3) D(-7) D(1" + "0" * 400 + ")",
        )
        assert simple(lines) == [
            ("O", {"id": "a", "x": 1.0, "n": 2, "t": "2026-01-01T10:00:00.000000Z", "b": True, "a": [1, 2]}),
            ("O", {"id": "z", "x": -2.5, "n": -4, "t": "2026-01-02T00:00:00.000000Z", "b": False, "a": []}),
            ("OD", 1000.0),
            ("OD", -7.0),
            ("$error", 6),
        ]

    def test_trace_value_of_the_wrong_type_is_error_6(self) -> None:
        lines = run_program(self.SRC, '[2026-01-01 00:00:00] D("x") D(true) E(1) D(2.0)')
        assert simple(lines) == [("$error", 6), ("$error", 6), ("$error", 6), ("OD", 2.0)]

    def test_trace_positional_structure_with_one_field(self) -> None:
        lines = run_program("in {string k;} A\nout string S\n( A(a) { !>S(a.k); } )*", '[2026-01-01 00:00:00] A("b")')
        assert simple(lines) == [("S", "b")]

    def test_empty_structure_signals(self) -> None:
        lines = run_program("in {} A\nout {} Z\n( A() { !>Z({}); } )*", "[2026-01-01 00:00:00] A() A({})")
        assert lines == [{"time": T0, "event": "Z", "value": {}}] * 2


def test_format_of_emitted_times_uses_six_digits() -> None:
    assert format_time(parse_time("2026-01-01T00:00:00.5Z")) == "2026-01-01T00:00:00.500000Z"


def test_min_and_max_of_signed_zeros_are_java_s_whichever_comes_first() -> None:
    """Java's ``Math.min``/``max``: -0.0 is below 0.0, so the answer does not depend on the order
    of the arguments (it did: ``min(0.0, -0.0)`` was 0.0 and ``min(-0.0, 0.0)`` -0.0)."""
    src = (
        "in double A\nout string O\n"
        '( A(x) { z = x * 0.0; n = -z; !>O(string(min(z, n)) + " " + string(min(n, z)) + " " '
        '+ string(max(n, z)) + " " + string(max(z, n)) + " " + string(min(n, n)) + " " + string(max(z, z))); } )*'
    )
    out = run_program(src, "[2026-01-01 00:00:00] A(1.0)")
    assert [o["value"] for o in out] == ["-0.0 -0.0 0.0 0.0 -0.0 0.0"]
