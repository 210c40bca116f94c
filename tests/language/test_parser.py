"""The parser: every construct of the language parses into the tree it should, and means what
it should when run.

Structure is checked on the syntax tree (``language.parser.parse``); meaning (precedence,
time units, arrive patterns, action order) by running small programs through the tester.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import check_source, run_program
from eventscript.automata.compile import compile_file, compile_source
from eventscript.language import ast
from eventscript.language.diagnostics import Diagnostics
from eventscript.language.parser import MAX_NESTING, parse
from eventscript.language.source import SourceFile
from eventscript.language.types import (
    BOOLEAN,
    DOUBLE,
    EMPTY,
    LONG,
    OBJECT,
    STRING,
    TIME,
    ArrayType,
    StructType,
)

T0 = "[2026-01-01 00:00:00]"


def tree(text: str) -> ast.Program:
    """Parse; fail on any syntax error."""
    d = Diagnostics()
    program = parse(SourceFile("t.es", text), d)
    assert not d.errors, [str(e) for e in d.errors]
    return program


def regex(body: str, decls: str = "in {} A, {} B, {} C, {} D, {} E, long N\nout long O, {} Z\n") -> ast.Regex:
    r = tree(decls + body).regex
    assert r is not None
    return r


def clean(text: str):
    comp = check_source(text)
    assert not comp.diagnostics.errors, [str(e) for e in comp.diagnostics.errors]
    return comp


def values(text: str, trace: str) -> list:
    return [line["value"] for line in run_program(text, trace)]


def syntax_errors(text: str) -> list[tuple[int, int, str]]:
    d = Diagnostics()
    parse(SourceFile("t.es", text), d)
    return [(e.pos.line, e.pos.col, e.message) for e in d.errors]


# ---------------------------------------------------------------------------------------
# Declarations


class TestDeclarations:
    def test_several_names_per_input_and_output_declaration(self) -> None:
        comp = clean(
            "in double S1, long S2, {} S3, string S4\n"
            "out long O1, {} O2, {double x; double y;} O3\n"
            "( S1(a) { !>O3({x: a, y: a}); } | S2(n) { !>O1(n); } | S3() { !>O2({}); } | S4() )*"
        )
        assert comp.checked is not None
        assert {n: e.ty for n, e in comp.checked.inputs.items()} == {
            "S1": DOUBLE,
            "S2": LONG,
            "S3": EMPTY,
            "S4": STRING,
        }
        assert [e.index for e in comp.checked.inputs.values()] == [0, 1, 2, 3]
        assert {n: e.ty for n, e in comp.checked.outputs.items()} == {
            "O1": LONG,
            "O2": EMPTY,
            "O3": StructType((("x", DOUBLE), ("y", DOUBLE))),
        }

    def test_several_declarations_of_each_kind_in_any_order(self) -> None:
        program = tree('out long O\nin long A\ntype T = long\nin T B\nout T P\nfunction long f(long): "m:f"\nA() B()')
        kinds = [type(d).__name__ for d in program.decls]
        assert kinds == ["OutputDecl", "InputDecl", "TypeDecl", "InputDecl", "OutputDecl", "FunctionDecl"]

    def test_declarations_span_lines(self) -> None:
        comp = clean(
            'in\n  { string id;\n    double v; }\n  Reading\n  group(Reading.id),\n  long Other group("x")\n'
            "out\n  double V\n( Reading(r) { !>V(r.v); } | Other() )*"
        )
        assert comp.checked is not None and comp.checked.key_types == [STRING]

    def test_case_clause_with_nested_conditional_arms(self) -> None:
        src = (
            "in double T case { T < 10.0 ? Cold : T < 20.0 ? Cool : T < 30.0 ? Warm : Hot }\n"
            "out long O\n"
            "( Cold() { !>O(1); } | Cool() { !>O(2); } | Warm() { !>O(3); } | Hot() { !>O(4); } )*"
        )
        comp = clean(src)
        assert comp.checked is not None
        assert comp.checked.inputs["T"].classes == ["Cold", "Cool", "Warm", "Hot"]
        entry = comp.checked.inputs["T"].entry
        assert isinstance(entry.case, ast.CaseArm)
        assert isinstance(entry.case.then, ast.CaseName) and entry.case.then.name == "Cold"
        assert isinstance(entry.case.otherwise, ast.CaseArm)
        assert values(src, f"{T0} T(5.0) T(19.9) T(20) T(29.0) T(30.0) T(100.0)") == [1, 2, 3, 3, 4, 4]

    def test_case_arm_nested_in_the_then_position(self) -> None:
        src = (
            "in long K case { K >= 0 ? (K >= 10 ? Big : Small) : Negative }\nout long O\n"
            "( Big() { !>O(1); } | Small() { !>O(2); } | Negative() { !>O(3); } )*"
        )
        clean(src)
        assert values(src, f"{T0} K(15) K(3) K(-1) K(10) K(0)") == [1, 2, 3, 1, 2]

    def test_unclassified_name_still_matches_after_case_clause(self) -> None:
        src = "in long K case { K > 0 ? Pos : NonPos }\nout long O\n( K(k) { !>O(k); } )*"
        assert values(src, f"{T0} K(3) K(-3)") == [3, -3]

    def test_group_clause_with_several_components(self) -> None:
        src = (
            "in {string who; long n; boolean b;} E group(E.who, E.n * 2, E.b),\n"
            "   string F group(F, 7, true)\n"
            "out string O\n"
            '( E() { !>O(group[0] + "/" + group[1] + "/" + group[2]); } | F() { !>O("f"); } )*'
        )
        comp = clean(src)
        assert comp.checked is not None
        assert comp.checked.key_types == [STRING, LONG, BOOLEAN]
        entry = comp.checked.inputs["E"].entry
        assert entry.group is not None and len(entry.group) == 3
        out = run_program(src, f'{T0} E({{who: "ann", n: 2, b: false}}) F("bob")')
        assert [(o["value"], o["key"]) for o in out] == [("ann/4/false", ["ann", 4, False]), ("f", ["bob", 7, True])]

    def test_group_and_case_clauses_in_either_order(self) -> None:
        for clauses in ("group(E.k) case { E.v > 0 ? P : N }", "case { E.v > 0 ? P : N } group(E.k)"):
            comp = clean(f"in {{string k; long v;}} E {clauses}\nout long O\n( P(e) {{ !>O(e.v); }} | N() )*")
            assert comp.checked is not None
            assert comp.checked.key_types == [STRING]
            assert comp.checked.inputs["E"].classes == ["P", "N"]

    def test_type_definitions_and_their_use_in_later_ones(self) -> None:
        comp = clean(
            "type Pt = {double lat; double lon;}\ntype Path = Pt[]\ntype Route = {string id; Path b;}\n"
            "in Route SetRoute, {string id; {double lat; double lon;}[] b;} Same\n"
            "out Path Legs\n( SetRoute(z) { !>Legs(z.b); } | Same(s) { !>Legs(s.b); } )*"
        )
        assert comp.checked is not None
        point = StructType((("lat", DOUBLE), ("lon", DOUBLE)))
        route = StructType((("id", STRING), ("b", ArrayType(point))))
        assert comp.checked.inputs["SetRoute"].ty == route
        assert comp.checked.inputs["Same"].ty == route  # type names are synonyms
        assert comp.checked.outputs["Legs"].ty == ArrayType(point)

    def test_type_definition_of_primitive_and_array(self) -> None:
        comp = clean(
            "type Id = string\ntype Ids = Id[]\ntype Grid = double[][]\nin Ids A, Grid G\nout Id O\n"
            "( A(a) { !>O(a[0]); } | G(g) { !>O(string(g[0][1])); } )*"
        )
        assert comp.checked is not None
        assert comp.checked.inputs["A"].ty == ArrayType(STRING)
        assert comp.checked.inputs["G"].ty == ArrayType(ArrayType(DOUBLE))

    def test_function_declarations(self) -> None:
        program = tree(
            'function string getenv(string): "os:getenv"\n'
            'function double dist(double x1, double y1, double, double): "geo:dist"\n'
            'function {double x; double y;} origin(): "geo:origin"\n'
            'function long[] ids(string[] names): "m:ids"\n'
            "in {} A\nout {} Z\nA()"
        )
        decls = [d for d in program.decls if isinstance(d, ast.FunctionDecl)]
        assert [(d.name, len(d.params), d.impl) for d in decls] == [
            ("getenv", 1, "os:getenv"),
            ("dist", 4, "geo:dist"),
            ("origin", 0, "geo:origin"),
            ("ids", 1, "m:ids"),
        ]
        comp = compile_source(program.pos.source.text, resolve_externals=False)
        assert not comp.diagnostics.errors
        assert comp.checked is not None
        ext = comp.checked.externals
        assert ext["dist"].params == (DOUBLE,) * 4 and ext["dist"].result == DOUBLE
        assert ext["origin"].params == () and ext["origin"].result == StructType((("x", DOUBLE), ("y", DOUBLE)))
        assert ext["ids"].params == (ArrayType(STRING),) and ext["ids"].result == ArrayType(LONG)

    def test_structure_and_array_types(self) -> None:
        comp = clean(
            "in {long[] a; {string s; time t;}[] b; {} e; object o;}[] X, {} Y\nout long O\n"
            "( X(x) { !>O(length(x[0].a) + length(x[0].b)); } | Y() )*"
        )
        assert comp.checked is not None
        inner = StructType((("s", STRING), ("t", TIME)))
        assert comp.checked.inputs["X"].ty == ArrayType(
            StructType((("a", ArrayType(LONG)), ("b", ArrayType(inner)), ("e", EMPTY), ("o", OBJECT)))
        )

    def test_structure_type_fields_may_end_without_semicolon(self) -> None:
        comp = clean("in {long a; double b} X\nout double O\n( X(x) { !>O(x.b); } )*")
        assert comp.checked is not None
        assert comp.checked.inputs["X"].ty == StructType((("a", LONG), ("b", DOUBLE)))


# ---------------------------------------------------------------------------------------
# Regular expressions


class TestRegularExpressions:
    def test_sequence_alternative_intersection_difference_precedence(self) -> None:
        # Loosest to tightest: |, then & and - (left to right), then sequence, then multipliers.
        r = regex("A() B() | C() & D() E() - A() | B()*")
        assert isinstance(r, ast.RAlt) and len(r.items) == 3
        assert isinstance(r.items[0], ast.RSeq) and [m.name for m in r.items[0].items] == ["A", "B"]  # type: ignore[attr-defined]
        diff = r.items[1]
        assert isinstance(diff, ast.RDiff)
        assert isinstance(diff.left, ast.RInter)
        assert isinstance(diff.left.left, ast.RMarker) and diff.left.left.name == "C"
        assert isinstance(diff.left.right, ast.RSeq)
        assert isinstance(diff.right, ast.RMarker) and diff.right.name == "A"
        assert isinstance(r.items[2], ast.RRepeat) and r.items[2].low == 0 and r.items[2].high is None

    def test_difference_right_operand_extends_over_the_sequence(self) -> None:
        # The document's footnote 11: even without parentheses the action belongs to the right
        # operand of '-'.
        r = regex(".* - .* A() A() { !>Z({}); }")
        assert isinstance(r, ast.RDiff)
        assert isinstance(r.left, ast.RRepeat) and isinstance(r.left.item, ast.RWildcard)
        assert isinstance(r.right, ast.RSeq)
        assert isinstance(r.right.items[-1], ast.RActions)

    def test_intersection_and_difference_are_left_associative(self) -> None:
        r = regex("A() & B() - C() & D()")
        assert isinstance(r, ast.RInter)
        assert isinstance(r.left, ast.RDiff) and isinstance(r.left.left, ast.RInter)

    @pytest.mark.parametrize(
        ("suffix", "low", "high"),
        [
            ("*", 0, None),
            ("+", 1, None),
            ("?", 0, 1),
            ("{3}", 3, 3),
            ("{2,5}", 2, 5),
            ("{2,}", 2, None),
            ("{0}", 0, 0),
            ("{0,}", 0, None),
            ("{ 4 }", 4, 4),
            ("{4 ,6}", 4, 6),
        ],
    )
    def test_multipliers(self, suffix: str, low: int, high: int | None) -> None:
        r = regex(f"A(){suffix}")
        assert isinstance(r, ast.RRepeat)
        assert (r.low, r.high) == (low, high)
        assert isinstance(r.item, ast.RMarker)

    def test_multipliers_stack(self) -> None:
        r = regex("(A() B()){2}*?")
        assert isinstance(r, ast.RRepeat) and (r.low, r.high) == (0, 1)
        assert isinstance(r.item, ast.RRepeat) and (r.item.low, r.item.high) == (0, None)
        assert isinstance(r.item.item, ast.RRepeat) and (r.item.item.low, r.item.item.high) == (2, 2)
        assert isinstance(r.item.item.item, ast.RSeq)

    def test_parentheses_group(self) -> None:
        r = regex("A() (B() | C())* D()")
        assert isinstance(r, ast.RSeq) and len(r.items) == 3
        assert isinstance(r.items[1], ast.RRepeat) and isinstance(r.items[1].item, ast.RAlt)

    def test_markers_with_and_without_variable_and_wildcard(self) -> None:
        r = regex("A() N(n) . { !>O(n); }")
        assert isinstance(r, ast.RSeq)
        a, n, w, act = r.items
        assert isinstance(a, ast.RMarker) and (a.name, a.target) == ("A", None)
        assert isinstance(n, ast.RMarker) and (n.name, n.target) == ("N", "n")
        assert n.target_pos is not None and (n.target_pos.line, n.target_pos.col) == (3, 7)
        assert isinstance(w, ast.RWildcard)
        assert isinstance(act, ast.RActions)

    def test_operator_semantics(self) -> None:
        # {i,j}: every completed group of 2 to 3 As followed by B counts.
        src = "in {} A, {} B\nout long O\n( { n = 0; } ( A() { n = n + 1; } ){2,3} B() { !>O(n); } )*"
        assert values(src, f"{T0} A() A() B() A() A() A() B()") == [2, 3]
        out = run_program(src, f"{T0} A() B()")
        assert out[0]["event"] == "$error"  # B after a single A does not match
        # ?: optional
        src = "in {} A, {} B\nout long O\n( A()? B() { !>O(1); } )*"
        assert values(src, f"{T0} B() A() B()") == [1, 1]
        # +: at least one
        src = "in {} A, {} B\nout long O\n( A()+ B() { !>O(1); } )*"
        assert [o["event"] for o in run_program(src, f"{T0} B()")] == ["$error"]
        # {i,}: at least i
        src = "in {} A, {} B\nout long O\n{ n = 0; } ( A() { n = n + 1; } ){2,} B() { !>O(n); }"
        assert values(src, f"{T0} A() A() A() A() B()") == [4]

    def test_intersection_and_difference_semantics(self) -> None:
        # Version-1-free inspection check via difference (the document's section 4.1 idea).
        src = "in {} Open, {} Close\nout {} Twice\n.* - .* Open() Open() { !>Twice({}); }"
        out = run_program(src, f"{T0} Open() Close() Open() Open() Close() Open()")
        assert [o["event"] for o in out] == ["Twice"]
        # Intersection: both operands must be feasible.
        src = "in {} A, {} B\nout long O\n( (A() | B()) (A() | B()) & A() . ) { !>O(1); }"
        assert values(src, f"{T0} A() B()") == [1]
        out = run_program(src, f"{T0} B()")
        assert [o["event"] for o in out] == ["$error"]

    @pytest.mark.parametrize(
        ("unit", "micros"),
        [
            ("day", 86_400_000_000),
            ("days", 86_400_000_000),
            ("hour", 3_600_000_000),
            ("hours", 3_600_000_000),
            ("minute", 60_000_000),
            ("minutes", 60_000_000),
            ("second", 1_000_000),
            ("seconds", 1_000_000),
            ("sec", 1_000_000),
            ("millisecond", 1_000),
            ("milliseconds", 1_000),
            ("msec", 1_000),
            ("microsecond", 1),
            ("microseconds", 1),
            ("usec", 1),
        ],
    )
    @pytest.mark.parametrize("keyword", ["elapse", "elapsed"])
    def test_elapse_units(self, keyword: str, unit: str, micros: int) -> None:
        r = regex(f"A() {keyword}[3 {unit}](t) {{ !>O(epochMicros(t)); }}")
        assert isinstance(r, ast.RSeq)
        el = r.items[1]
        assert isinstance(el, ast.RElapse) and el.target == "t"
        src = f"in {{}} A\nout long O\nA() {keyword}[3 {unit}](t) {{ !>O(epochMicros(t)); }}"
        start = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
        out = run_program(src, f"{T0} A() [2026-01-20 00:00:00]")
        assert [o["value"] for o in out] == [start + 3 * micros]

    def test_elapse_amount_is_an_expression(self) -> None:
        src = (
            "in long N\nout long O\n"
            "N(n) elapse[n * 2 + 1 sec]() { !>O(1); } N(m) elapse[(m) msec]() { !>O(2); } "
            "elapse[1.5 sec]() { !>O(3); }"
        )
        out = run_program(src, f"{T0} N(2) [00:00:10] N(250) [00:00:20]")
        assert [(o["time"][11:23], o["value"]) for o in out] == [
            ("00:00:05.000", 1),
            ("00:00:10.250", 2),
            ("00:00:11.750", 3),
        ]

    @pytest.mark.parametrize(
        ("pattern", "fires"),
        [
            ("2026-01-02 03:04:05", "2026-01-02T03:04:05"),
            ("2026-01-03", "2026-01-03T00:00:00"),
            ("2026-1-2 3:04", "2026-01-02T03:04:00"),
            ("9:30", "2026-01-01T09:30:00"),
            ("09:30:15", "2026-01-01T09:30:15"),
            ("0:00:01.5", "2026-01-01T00:00:01.500"),
            (".:15", "2026-01-01T00:15:00"),
            (".:.:30", "2026-01-01T00:00:30"),
            (".:00:00", "2026-01-01T01:00:00"),
            ("2026-.-02 .:.:07", "2026-01-02T00:00:07"),
            ("(h):(m)", "2026-01-01T02:30:00"),
            ("(h + 1):(m - 30):(5)", "2026-01-01T03:00:05"),
            ("(2026)-(1)-(2) 0:00", "2026-01-02T00:00:00"),
            ("(deadline)", "2026-01-01T00:00:42"),
            ("deadline", "2026-01-01T00:00:42"),
            ("(secondsAfter(7, deadline))", "2026-01-01T00:00:49"),
        ],
    )
    def test_arrive_patterns(self, pattern: str, fires: str) -> None:
        src = (
            "in {} A\nout time O\n"
            f"{{ h = 2; m = 30; deadline = secondsAfter(42, now()); }} A() arrive[{pattern}](t) {{ !>O(t); }}"
        )
        comp = check_source(src)
        assert not comp.diagnostics.errors, [str(e) for e in comp.diagnostics.errors]
        out = run_program(src, f"{T0} A() [2026-01-05 00:00:00]")
        assert len(out) == 1 and out[0]["event"] == "O"
        assert out[0]["value"].startswith(fires)
        assert out[0]["time"] == out[0]["value"]

    def test_arrive_pattern_trees(self) -> None:
        decls = "in {} A\nout {} Z\n"

        def pattern(text: str) -> ast.ArrivePattern:
            r = regex(f"arrive[{text}]()", decls)
            assert isinstance(r, ast.RArrive)
            return r.pattern

        p = pattern("2038-01-19 03:14:08")
        assert p.time_expr is None and p.date is not None and p.time is not None
        assert [c.value for c in p.date] == [2038, 1, 19]  # type: ignore[union-attr]
        assert [c.value for c in p.time] == [3, 14, 8]  # type: ignore[union-attr]
        p = pattern(".:.:00")
        assert p.date is None and p.time is not None
        assert [type(c).__name__ for c in p.time] == ["Wild", "Wild", "IntLit"]
        p = pattern("(a/60):(a%60):00")
        assert p.time is not None and isinstance(p.time[0], ast.Binary) and isinstance(p.time[1], ast.Binary)
        p = pattern("(deadline)")
        assert isinstance(p.time_expr, ast.Name) and p.date is None and p.time is None
        p = pattern("deadline")
        assert isinstance(p.time_expr, ast.Name)
        p = pattern("(hoursAfter(1, t))")
        assert isinstance(p.time_expr, ast.Call)

    def test_action_blocks_anywhere_in_a_sequence(self) -> None:
        src = (
            "in {} A, {} B\nout long O\n{ !>O(0); } { !>O(1); } A() { !>O(2); } { !>O(3); } B() { !>O(4); } { !>O(5); }"
        )
        r = regex("{ !>O(0); } { !>O(1); } A() { !>O(2); } { !>O(3); } B() { !>O(4); } { !>O(5); }")
        assert isinstance(r, ast.RSeq)
        assert [type(i).__name__ for i in r.items] == [
            "RActions",
            "RActions",
            "RMarker",
            "RActions",
            "RActions",
            "RMarker",
            "RActions",
            "RActions",
        ]
        out = run_program(src, T0)
        assert [o["value"] for o in out] == [0, 1]  # initial actions run at the start
        assert values(src, f"{T0} A() B()") == [0, 1, 2, 3, 4, 5]

    def test_action_block_inside_repetition_before_its_marker(self) -> None:
        src = "in {} A, {} B\nout long O\n{ n = 0; } A() ( { n = n + 1; } B() { !>O(n); } )*"
        assert values(src, f"{T0} A() B() B()") == [1, 2]

    def test_regex_may_be_just_an_action_block(self) -> None:
        r = regex("{ !>O(1); }")
        assert isinstance(r, ast.RActions)


# ---------------------------------------------------------------------------------------
# The multiplier-vs-action-block rule


class TestMultiplierOrActionBlock:
    """After a regular-expression element, '{' starts a multiplier when an integer and then '}'
    or ',' follow; otherwise it starts an action block."""

    @pytest.mark.parametrize("text", ["A(){3}", "A() {3}", "A() { 3 }", "A() {3,}", "A() {3, 5}", "(A()){2}"])
    def test_integer_then_brace_or_comma_is_a_multiplier(self, text: str) -> None:
        r = regex(text)
        assert isinstance(r, ast.RRepeat)

    @pytest.mark.parametrize("text", ["A() {}", "A() { n = 3; }", "A() {!>O(3);}", "A() { {} }"])
    def test_anything_else_is_an_action_block(self, text: str) -> None:
        r = regex(text)
        assert isinstance(r, ast.RSeq) and isinstance(r.items[1], ast.RActions)

    @pytest.mark.parametrize(
        ("text", "col", "found"),
        [
            ("A() {3;}", 7, "';'"),  # an integer then ';': an action block whose action is not one
            ("A() {n}", 7, "'}'"),  # a name is not an integer: an action block
            ("A() {k}", 7, "'}'"),
            ("A() {-1}", 8, "'}'"),  # a negative count is not a multiplier
            ("A() {3 4}", 8, "'4'"),
        ],
    )
    def test_near_misses_are_action_blocks_with_a_syntax_error(self, text: str, col: int, found: str) -> None:
        errs = syntax_errors("in {} A\nout long O\n" + text)
        assert errs and errs[0][:2] == (3, col)
        assert errs[0][2].startswith("expected '=' or '?' after the expression") and errs[0][2].endswith(found)

    @pytest.mark.parametrize("text", ["Reading(x){n}", "A() {n, 3}", "A(){-1}", "A(){1.5}", "(A()) {N}", "A(){2,n}"])
    def test_a_multiplier_with_a_computed_count_gets_the_documents_rule_as_its_hint(self, text: str) -> None:
        # Language document 4.2: "the number n in an EventScript regular expression of the form
        # R{n} must be a constant"; the hint says so and how to count instead.
        d = Diagnostics()
        parse(SourceFile("t.es", "in {} A, long Reading\nout long O\n" + text), d)
        assert len(d.errors) == 1
        hint = d.errors[0].hint or ""
        assert hint.startswith("a multiplier's bounds are integer constants, 0 or more: {3}, {2,5} or {2,}")
        assert "count in a variable: ( R { k = k + 1; k == n ? ... } )*" in hint

    def test_bounds_in_the_wrong_order_get_them_the_right_way_round(self) -> None:
        d = Diagnostics()
        parse(SourceFile("t.es", "in {} A\nout long O\nA(){3,1}"), d)
        assert [(e.message, e.hint) for e in d.errors] == [
            ("in {3,1} the upper bound is below the lower bound", "write the smaller bound first: {1,3}")
        ]

    def test_a_multiplier_without_its_lower_bound_is_told_to_write_zero(self) -> None:
        d = Diagnostics()
        parse(SourceFile("t.es", "in {} A\nout long O\nA(){,3}"), d)
        assert [(e.pos.col, e.message, e.hint) for e in d.errors] == [
            (5, "a multiplier needs its lower bound before ','", "write {0,3} for at most 3 repetitions")
        ]

    def test_a_block_not_after_an_element_keeps_the_action_hint(self) -> None:
        d = Diagnostics()
        parse(SourceFile("t.es", "in {} A\nout long O\n{ x } A()"), d)
        assert [e.hint for e in d.errors] == [
            "an action is an assignment x = e;, an emit !>Name(e);, a conditional c ? action or a for loop"
        ]

    def test_multiplier_and_action_block_together(self) -> None:
        src = "in {} A\nout long O\n{ n = 0; } ( A(){2} { n = n + 1; !>O(n); } )*"
        r = regex("( A(){2} { !>O(1); } )*")
        assert isinstance(r, ast.RRepeat) and isinstance(r.item, ast.RSeq)
        assert isinstance(r.item.items[0], ast.RRepeat) and isinstance(r.item.items[1], ast.RActions)
        assert values(src, f"{T0} A() A() A() A() A()") == [1, 2]

    def test_block_at_the_start_is_never_a_multiplier(self) -> None:
        errs = syntax_errors("in {} A\nout long O\n{3} A()")
        assert errs and errs[0][:2] == (3, 3)


# ---------------------------------------------------------------------------------------
# Actions


class TestActions:
    def test_emit_and_assignments_to_identifiers_subscripts_and_fields(self) -> None:
        src = (
            "in long N\nout long O, {long a; long[] b;} S\n"
            "( N(n) { x = n; arr = new long[3]; arr[0] = x; arr[n - 1] = 2 * x;\n"
            "  s = {a: 0, b: arr}; s.a = arr[0] + arr[n - 1]; s.b[1] = 7; !>O(s.a); !>S(s); } )*"
        )
        assert values(src, f"{T0} N(3)") == [9, {"a": 9, "b": [3, 7, 6]}]

    def test_nested_field_and_subscript_targets(self) -> None:
        src = (
            "in long N\nout long O\n"
            "( N(n) { g = new {long[] v;}[2]; g[1] = {v: new long[2]}; g[1].v[1] = n; !>O(g[1].v[1]); } )*"
        )
        assert values(src, f"{T0} N(5)") == [5]

    def test_conditional_actions_with_blocks_and_else(self) -> None:
        src = "in long N\nout long O\n( N(n) { n > 0 ? { !>O(1); n > 10 ? { !>O(2); } : { !>O(3); } } : !>O(4); } )*"
        assert values(src, f"{T0} N(20) N(5) N(-1)") == [1, 2, 1, 3, 4]

    def test_else_if_chains(self) -> None:
        # The document's style: c1 ? a1; : c2 ? a2; : a3;
        src = (
            "in string S\nout long O\n"
            '( S(a) { a=="on" ? !>O(1); : a=="idle" ? !>O(2); : a=="off" ? !>O(3); : !>O(0); } )*'
        )
        assert values(src, f'{T0} S("idle") S("off") S("on") S("?")') == [2, 3, 1, 0]

    def test_dangling_else_binds_to_the_nearest_condition(self) -> None:
        src = "in long N\nout long O\n( N(n) { n > 0 ? n > 10 ? !>O(1); : !>O(2); } )*"
        assert values(src, f"{T0} N(20) N(5) N(-5)") == [1, 2]

    def test_conditional_without_else_and_empty_actions(self) -> None:
        src = "in long N\nout long O\n( N(n) { ; n > 0 ? !>O(n); ;; {} } )*"
        assert values(src, f"{T0} N(1) N(0) N(2)") == [1, 2]

    def test_for_loops_run_from_low_to_high_inclusive(self) -> None:
        src = (
            "in long N\nout long O\n"
            "( N(n) { s = 0; for (i: 0, n - 1) s = s + i; !>O(s);\n"
            "         for (i: 1, n) { for (j: i, n) !>O(10 * i + j); }\n"
            "         for (i: 5, 4) !>O(-1); } )*"
        )
        assert values(src, f"{T0} N(3)") == [3, 11, 12, 13, 22, 23, 33]

    def test_for_loop_index_is_local_and_shadows(self) -> None:
        src = "in long N\nout long O\n( N(i) { for (i: 1, 2) !>O(i); !>O(i); } )*"
        assert values(src, f"{T0} N(9)") == [1, 2, 9]

    def test_nested_blocks(self) -> None:
        src = "in long N\nout long O\n( N(n) { { { !>O(1); } { } !>O(2); } { n > 0 ? { { !>O(3); } } } } )*"
        assert values(src, f"{T0} N(1)") == [1, 2, 3]
        program = tree("in long N\nout long O\nN(n) { { { !>O(1); } } }")
        r = program.regex
        assert isinstance(r, ast.RSeq) and isinstance(r.items[1], ast.RActions)
        outer = r.items[1].block
        assert isinstance(outer.actions[0], ast.Block) and isinstance(outer.actions[0].actions[0], ast.Block)

    def test_emit_without_value_for_an_empty_structure(self) -> None:
        src = "in {} A\nout {} Z\n( A() { !>Z(); !>Z({}); } )*"
        assert values(src, f"{T0} A()") == [{}, {}]

    def test_action_trees(self) -> None:
        program = tree(
            "in long N\nout long O\nN(n) { x = 1; a[0] = 2; s.f = 3; !>O(x); c ? !>O(1); : x = 2; for (i: 0, 3) { } }"
        )
        assert isinstance(program.regex, ast.RSeq)
        block = program.regex.items[1]
        assert isinstance(block, ast.RActions)
        acts = block.block.actions
        assert [type(a).__name__ for a in acts] == ["Assign", "Assign", "Assign", "Emit", "IfAction", "ForAction"]
        assert isinstance(acts[0].target, ast.Name)  # type: ignore[attr-defined]
        assert isinstance(acts[1].target, ast.Index)  # type: ignore[attr-defined]
        assert isinstance(acts[2].target, ast.FieldAccess)  # type: ignore[attr-defined]
        cond = acts[4]
        assert isinstance(cond, ast.IfAction) and isinstance(cond.otherwise, ast.Assign)


# ---------------------------------------------------------------------------------------
# Expressions


EXPRESSIONS = [
    # (type, expression, value) with x = 3, a = [0, 1, 2], s = {f: 4}
    ("long", "1 + 2 * 3", 7),
    ("long", "(1 + 2) * 3", 9),
    ("long", "10 - 4 - 3", 3),
    ("long", "100 / 10 / 5", 2),
    ("long", "7 % 4 * 2", 6),
    ("long", "2 * 7 % 4", 2),
    ("long", "-2 * 3", -6),
    ("long", "- x * 3", -9),
    ("long", "-x - -x", 0),
    ("long", "- -x", 3),
    ("long", "5 / 2", 2),
    ("long", "-7 / 2", -3),
    ("long", "-7 % 2", -1),
    ("long", "true ? 1 : 0 + 5", 1),
    ("long", "false ? 1 : true ? 2 : 3", 2),
    ("long", "x > 2 ? x > 5 ? 1 : 2 : 3", 2),
    ("long", "2 * -x", -6),
    ("long", "x - 1 - 1", 1),
    ("long", 'length("abc") * 2', 6),
    ("long", "a[1] + a[2] * 10", 21),
    ("long", "a[a[2]]", 2),
    ("long", "s.f * 2", 8),
    ("long", "{f: 3, g: {h: 5}}.g.h", 5),
    ("long", "max(x, 4)", 4),
    ("long", "long(2.9)", 2),
    ("long", "new long[x + 1][0] + length(new double[x])", 3),
    ("long", "-9223372036854775808 / -1 + 0", -9223372036854775808),
    ("boolean", "!false && false", False),
    ("boolean", "true || false && false", True),
    ("boolean", "false && true || true", True),
    ("boolean", "1 < 2 == true", True),
    ("boolean", "1 + 2 < 4", True),
    ("boolean", "!(1 > 2)", True),
    ("boolean", "!!true", True),
    ("boolean", "x == 3 && !(x != 3)", True),
    ("boolean", "1 < 2 != 2 < 1", True),
    ("boolean", '"a" < "b"', True),
    ("boolean", "1 == 1.0", True),
    ("boolean", "now() == now()", True),
    ("double", "5 / 2.0", 2.5),
    ("double", "1 + 0.5", 1.5),
    ("double", "x / 2.0", 1.5),
    ("double", "-0.5 * 2", -1.0),
    ("double", "double(x) / 2", 1.5),
    ("double", "1e3 + 2.5E-1", 1000.25),
    ("string", '"a" + 1 + 2', "a12"),
    ("string", '1 + 2 + "a"', "3a"),
    ("string", '"x" + true', "xtrue"),
    ("string", r'"q\"\\\t\u0041"', 'q"\\\tA'),
]


@pytest.mark.parametrize(("ty", "expr", "value"), EXPRESSIONS)
def test_expression_precedence_and_values(ty: str, expr: str, value: object) -> None:
    src = f"in long A\nout {ty} B\n( A(x) {{ a = new long[3]; a[1] = 1; a[2] = 2; s = {{f: 4}}; !>B({expr}); }} )*"
    assert values(src, f"{T0} A(3)") == [value]


def test_expression_trees() -> None:
    program = tree("in long N\nout long O\nN(n) { !>O(-n + f(1, 2)[3].g * group[0] - {a: 1}.a); }")
    assert isinstance(program.regex, ast.RSeq)
    emit = program.regex.items[1].block.actions[0]  # type: ignore[attr-defined]
    e = emit.value
    assert isinstance(e, ast.Binary) and e.op == "-"
    assert isinstance(e.right, ast.FieldAccess) and isinstance(e.right.obj, ast.StructBuild)
    plus = e.left
    assert isinstance(plus, ast.Binary) and plus.op == "+"
    assert isinstance(plus.left, ast.Unary) and plus.left.op == "-"
    mul = plus.right
    assert isinstance(mul, ast.Binary) and mul.op == "*"
    assert isinstance(mul.right, ast.GroupRef) and isinstance(mul.right.index, ast.IntLit)
    field = mul.left
    assert isinstance(field, ast.FieldAccess) and field.name == "g"
    assert isinstance(field.obj, ast.Index) and isinstance(field.obj.obj, ast.Call)
    assert field.obj.obj.name == "f" and len(field.obj.obj.args) == 2


def test_negative_literals_fold_and_long_range() -> None:
    program = tree("in {} A\nout long O\nA() { !>O(-5); !>O(- 7); !>O(-(3)); }")
    acts = program.regex.items[1].block.actions  # type: ignore[union-attr]
    assert isinstance(acts[0].value, ast.IntLit) and acts[0].value.value == -5
    assert isinstance(acts[1].value, ast.IntLit) and acts[1].value.value == -7
    clean("in {} A\nout long O\nA() { !>O(-9223372036854775808); !>O(9223372036854775807); }")
    errs = check_source("in {} A\nout long O\nA() { !>O(9223372036854775808); }").diagnostics.errors
    assert [(e.pos.line, e.pos.col, e.message) for e in errs] == [
        (3, 11, "integer literal 9223372036854775808 does not fit in a 64-bit long")
    ]


def test_structure_builders_new_arrays_and_calls() -> None:
    src = (
        "type P = {double x; double y;}\nin P A\nout P O, double[] D, string S\n"
        "( A(p) { q = {y: p.y * 2.0, x: p.x}; !>O(q); d = new double[2]; d[0] = sqrt(p.x); !>D(d);\n"
        '         !>S(toUpperCase(substring("abcdef", 1, 3)) + string(hoursAfter(1, now()))); } )*'
    )
    assert values(src, f"{T0} A({{x: 4.0, y: 1.5}})") == [
        {"x": 4.0, "y": 3.0},
        [2.0, 0.0],
        "BC2026-01-01T01:00:00.000000Z",
    ]


def test_keywords_are_field_names() -> None:
    # The language document reserves no words; a field called type, in or new is natural, and a
    # field name's place (after its type, before a builder's ':', after '.') leaves no doubt.
    src = (
        "type Msg = {string type; long in;}\nin Msg R group(R.type) case { R.in > 0 ? Pos : Neg }\n"
        "out {string type; long new;} O\n"
        "( Pos(p) { !>O({type: p.type, new: p.in}); } | Neg(n) { n.in = 0; !>O({new: n.in, type: n.type}); } )*"
    )
    assert values(src, f'{T0} R("a", 1) R({{type: "b", in: -4}})') == [{"type": "a", "new": 1}, {"type": "b", "new": 0}]
    errs = check_source("in {string in; long out} R\nout long O\n( R(r) { !>O(r.out); } )*").diagnostics.errors
    assert errs == []


def test_empty_structure_builder_and_empty_argument_list() -> None:
    src = "in {} A\nout {} Z, time T\n( A() { !>Z({}); !>T(now()); } )*"
    assert values(src, f"{T0} A()") == [{}, "2026-01-01T00:00:00.000000Z"]


# ---------------------------------------------------------------------------------------
# Comments and white space


def test_comments_anywhere() -> None:
    src = (
        "// leading comment\n/* block\n   comment { ( */ in /* here */ long // there\n N\n"
        "out long /* { */ O // } )\n"
        "( N(n) /* between */ { /* in a block */ !>O( n /* in an expression */ + 1 ); // end\n"
        "} // after\n)* /* trailing */ // no newline at the end"
    )
    assert values(src, f"{T0} N(1) N(2)") == [2, 3]


def test_comment_markers_inside_strings_are_text() -> None:
    src = 'in {} A\nout string O\n( A() { !>O("// not a comment /* nor this */"); } )*'
    assert values(src, f"{T0} A()") == ["// not a comment /* nor this */"]


def test_tabs_carriage_returns_and_form_feeds_are_white_space() -> None:
    src = "in\tlong N\r\nout long O\r\n\f( N(n)\t{ !>O(n); } )*\r\n"
    assert values(src, f"{T0} N(4)") == [4]


# ---------------------------------------------------------------------------------------
# #include


class TestInclude:
    def test_include_relative_to_the_including_file(self, tmp_path: Path) -> None:
        lib = tmp_path / "lib"
        lib.mkdir()
        (lib / "types.es").write_text('#include "more/points.es"\ntype Poly = Pt[]\n')
        (lib / "more").mkdir()
        (lib / "more" / "points.es").write_text("type Pt = {double x; double y;}\n")
        (tmp_path / "events.es").write_text('#include "lib/types.es"\nin Poly Zone\n')
        main = tmp_path / "main.es"
        main.write_text('#include "events.es"\nout long Count\n( Zone(z) { !>Count(length(z)); } )*\n')
        comp = compile_file(main)
        assert not comp.diagnostics.errors, [str(e) for e in comp.diagnostics.errors]
        assert comp.checked is not None
        assert comp.checked.inputs["Zone"].ty == ArrayType(StructType((("x", DOUBLE), ("y", DOUBLE))))

    def test_include_may_stand_where_a_declaration_can(self, tmp_path: Path) -> None:
        (tmp_path / "outs.es").write_text("out long O\n")
        main = tmp_path / "main.es"
        main.write_text('in long N\n#include "outs.es"\n( N(n) { !>O(n); } )*\n')
        assert compile_file(main).ok

    def test_the_same_file_may_be_included_twice_in_sequence(self, tmp_path: Path) -> None:
        (tmp_path / "a.es").write_text("// nothing but a comment\n")
        main = tmp_path / "main.es"
        main.write_text('#include "a.es"\n#include "a.es"\nin {} A\nout {} Z\nA()\n')
        assert compile_file(main).ok

    def test_diagnostics_in_an_included_file_point_into_it(self, tmp_path: Path) -> None:
        (tmp_path / "bad.es").write_text("type T = {long a;}\n\ntype U = Nope[]\n")
        main = tmp_path / "main.es"
        main.write_text('#include "bad.es"\nin T A\nout long O\n( A(a) { !>O(a.a); } )*\n')
        errs = compile_file(main).diagnostics.errors
        assert len(errs) == 1
        assert Path(errs[0].pos.source.name).name == "bad.es"
        assert (errs[0].pos.line, errs[0].pos.col, errs[0].message) == (3, 10, "unknown type 'Nope'")
        assert "type U = Nope[]" in errs[0].render()

    def test_missing_file(self, tmp_path: Path) -> None:
        main = tmp_path / "main.es"
        main.write_text('in {} A\n  #include "nowhere.es"\nout {} Z\nA()\n')
        errs = compile_file(main).diagnostics.errors
        assert [(e.pos.line, e.pos.col) for e in errs] == [(2, 3)]
        assert errs[0].message.startswith("cannot read included file 'nowhere.es'")
        assert errs[0].hint == "the path is relative to the including file"

    def test_include_of_a_directory_is_an_error(self, tmp_path: Path) -> None:
        (tmp_path / "dir.es").mkdir()
        main = tmp_path / "main.es"
        main.write_text('#include "dir.es"\nin {} A\nout {} Z\nA()\n')
        errs = compile_file(main).diagnostics.errors
        assert len(errs) == 1 and errs[0].message.startswith("cannot read included file 'dir.es'")

    def test_self_include_is_a_cycle(self, tmp_path: Path) -> None:
        main = tmp_path / "main.es"
        main.write_text('#include "main.es"\nin {} A\nout {} Z\nA()\n')
        errs = compile_file(main).diagnostics.errors
        assert [(e.pos.line, e.pos.col, e.message) for e in errs] == [
            (1, 1, "#include cycle: 'main.es' is already being included")
        ]

    def test_two_file_cycle_is_reported_where_it_closes(self, tmp_path: Path) -> None:
        # main.es -> types.es -> main.es: the cycle closes in types.es, and main.es is not
        # spliced in a second time (which would also declare its events twice).
        (tmp_path / "types.es").write_text('type T = long\n#include "main.es"\n')
        main = tmp_path / "main.es"
        main.write_text('#include "types.es"\nin T A\nout T Z\n( A(a) { !>Z(a); } )*\n')
        errs = compile_file(main).diagnostics.errors
        assert len(errs) == 1, [str(e) for e in errs]
        assert Path(errs[0].pos.source.name).name == "types.es"
        assert (errs[0].pos.line, errs[0].pos.col) == (2, 1)
        assert errs[0].message == "#include cycle: 'main.es' is already being included"

    def test_three_file_cycle(self, tmp_path: Path) -> None:
        (tmp_path / "a.es").write_text('#include "b.es"\n')
        (tmp_path / "b.es").write_text('#include "a.es"\n')
        main = tmp_path / "main.es"
        main.write_text('#include "a.es"\nin {} A\nout {} Z\nA()\n')
        errs = compile_file(main).diagnostics.errors
        assert len(errs) == 1
        assert Path(errs[0].pos.source.name).name == "b.es"
        assert errs[0].message == "#include cycle: 'a.es' is already being included"

    def test_include_needs_a_quoted_name(self, tmp_path: Path) -> None:
        main = tmp_path / "main.es"
        main.write_text("#include types.es\nin {} A\nout {} Z\nA()\n")
        errs = compile_file(main).diagnostics.errors
        assert [(e.pos.line, e.pos.col, e.message) for e in errs] == [(1, 1, "#include needs a quoted file name")]

    def test_only_include_is_a_directive(self) -> None:
        errs = check_source("#define X 1\nin {} A\nout {} Z\nA()").diagnostics.errors
        assert [(e.pos.line, e.pos.col, e.message) for e in errs] == [(1, 1, "unknown directive '#define X 1'")]

    def test_include_from_text_is_relative_to_the_working_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "decls.es").write_text("in long N\nout long O\n")
        monkeypatch.chdir(tmp_path)
        assert values('#include "decls.es"\n( N(n) { !>O(n); } )*', f"{T0} N(8)") == [8]

    def test_nul_in_include_name_is_a_diagnostic(self) -> None:
        # Regression: Path.resolve raised ValueError (embedded null byte) out of the compiler.
        errs = check_source('#include "a\x00b"\nin {} A\nout {} Z\nA()').diagnostics.errors
        assert [(e.pos.line, e.pos.col) for e in errs] == [(1, 1)]
        assert errs[0].message.startswith("cannot read included file")

    def test_included_file_that_is_not_utf8(self, tmp_path: Path) -> None:
        (tmp_path / "latin.es").write_bytes(b"// caf\xe9\n")
        main = tmp_path / "main.es"
        main.write_text('#include "latin.es"\nin {} A\nout {} Z\nA()\n')
        errs = compile_file(main).diagnostics.errors
        assert [e.message for e in errs] == ["included file 'latin.es' is not UTF-8 text"]


# ---------------------------------------------------------------------------------------
# Nesting limits


class TestNesting:
    def test_moderate_nesting_is_fine(self) -> None:
        depth = 30
        src = (
            "in long A\nout long B\n"
            + "(" * depth
            + "A(x) { !>B("
            + "(" * depth
            + "x"
            + " + 1)" * depth
            + "); }"
            + ")*" * depth
        )
        assert values(src, f"{T0} A(1)") == [1 + depth]

    @pytest.mark.parametrize(
        "body",
        [
            "A() { !>B(" + "(" * 500 + "1" + ")" * 500 + "); }",
            "(" * 500 + "A()" + ")" * 500,
            "A() { !>B(" + "-" * 500 + "1); }",
            "A() { !>B(x" + ".f" * 2000 + "); }",
            "A() { !>B(x" + "[0]" * 2000 + "); }",
            "A()" + "*" * 2000,
            "A() " + "{" * 500 + "}" * 500,
            "A(x) { " + "x > 1 ? " * 500 + "!>B(x); }",
        ],
    )
    def test_deep_nesting_is_a_diagnostic(self, body: str) -> None:
        # Regression: deep expressions, regular expressions, operator chains and postfix chains
        # raised RecursionError out of the parser or the checker.
        comp = check_source("in long A\nout long B\n" + body)
        errs = comp.diagnostics.errors
        assert errs and errs[0].message == "nesting is too deep"
        assert errs[0].pos.line == 3 and errs[0].pos.col > 1

    def test_deep_type_nesting_is_a_diagnostic(self) -> None:
        for decl in ("in " + "{" * 300 + "long x;" + "} y;" * 299 + "} A", "in long" + "[]" * 1000 + " A"):
            errs = check_source(decl + "\nout long B\nA()").diagnostics.errors
            assert errs and errs[0].message == "nesting is too deep" and errs[0].pos.line == 1

    def test_the_limit_is_documented_in_the_hint(self) -> None:
        errs = check_source("in long A\nout long B\nA()" + "*" * (MAX_NESTING + 1)).diagnostics.errors
        assert errs[0].hint == f"at most {MAX_NESTING} levels of nesting are allowed"


class TestStructureFieldOrder:
    """Structure types are ordered, but a builder may list the fields in any order."""

    POINT = "type P = {long x; string s;}\nin {} Go, P A\nout P O, {string s; long x;} Q\n"

    def test_builder_in_an_emit_takes_the_declared_order(self) -> None:
        assert values(self.POINT + '( Go() { !>O({s: "a", x: 1}); } )*', f"{T0} Go()") == [{"x": 1, "s": "a"}]

    def test_variable_holding_a_builder_takes_the_order_it_is_used_with(self) -> None:
        # Regression: p took the builder's order {string s; long x;} and !>O(p) was rejected.
        src = self.POINT + '( Go() { p = {s: "a", x: 1}; p.x = p.x + 1; !>O(p); } )*'
        out = run_program(src, f"{T0} Go()")
        assert [list(o["value"].items()) for o in out] == [[("x", 2), ("s", "a")]]

    def test_variable_holding_a_builder_then_an_event_value(self) -> None:
        src = self.POINT + '{ p = {s: "-", x: 0}; } ( A(p) { !>O(p); } | Go() { !>O(p); } )*'
        assert values(src, f'{T0} Go() A({{x: 5, s: "b"}}) Go()') == [
            {"x": 0, "s": "-"},
            {"x": 5, "s": "b"},
            {"x": 5, "s": "b"},
        ]

    @pytest.mark.parametrize(
        "body",
        [
            'p = {s: "a", x: 1}; q = p; r = q; !>O(r);',
            '!>O(r); r = q; q = p; p = {s: "a", x: 1};',
            'q = p; !>O(q); p = {s: "a", x: 1};',
        ],
    )
    def test_the_order_travels_through_copies_whatever_the_text_order(self, body: str) -> None:
        # docs/language.md 4.4 and 4.6: the emit's order reaches p through q and r.
        src = self.POINT + "( Go() { " + body + " } )*"
        assert check_source(src).diagnostics.errors == []
        if body.startswith("p ="):
            assert values(src, f"{T0} Go()") == [{"x": 1, "s": "a"}]

    def test_one_variable_cannot_have_two_orders(self) -> None:
        errs = check_source(self.POINT + 'Go() { p = {s: "a", x: 1}; !>O(p); !>Q(p); }').diagnostics.errors
        assert [(e.pos.line, e.pos.col) for e in errs] == [(4, 40)]
        assert errs[0].message == "Q carries '{string s; long x;}' but this value is '{long x; string s;}'"
        assert errs[0].hint == "the fields are the same but in a different order"

    def test_a_field_of_the_wrong_type_is_named_not_called_an_order(self) -> None:
        # Regression: a double where the output declares a long got "the fields are the same but in
        # a different order".
        errs = check_source(self.POINT + 'Go() { p = {x: 1.5, s: "a"}; !>O(p); }').diagnostics.errors
        assert len(errs) == 1
        assert errs[0].hint == "field 'x' is 'double' here but 'long' is wanted"
        errs = check_source(self.POINT + 'Go() { p = {x: 1.5, s: "a"}; !>Q(p); }').diagnostics.errors
        assert errs[0].hint == (
            "field 'x' is 'double' here but 'long' is wanted (and the fields are in a different order)"
        )
