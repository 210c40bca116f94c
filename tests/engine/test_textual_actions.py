"""One textual action is one action (issue 9).

The language document numbers actions in program text before it expands the expression (§6.3)
and runs every action reached on a transition once (§3.3.1; conformance README choice 8). So a
multiplier's copies of an action block are the same action: it runs at most once per
transition, however many copies the feasible paths reach. The same holds for a time marker,
whose symbol is its textual occurrence (document footnote 17): its copies set one timer.

Order: each path counts a unit where it first meets one of its copies; paths are merged keeping
each path's order, otherwise program text. Every case runs on the eager and on the lazy DFA.
"""

from __future__ import annotations

import gc
import time
from typing import Any

import pytest

from conftest import run_program
from eventscript.automata.compile import compile_source
from eventscript.automata.machine import LazyDFA

T = "[2026-01-01 00:00:00] "


@pytest.fixture(params=[False, True], ids=["eager", "lazy"])
def lazy(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def vals(src: str, trace: str, lazy: bool) -> list[Any]:
    lines = run_program(src, T + trace, force_lazy=lazy)
    return [line["value"] if line["event"] != "$error" else f"$error {line['value']['code']}" for line in lines]


def timeline(src: str, trace: str, lazy: bool) -> list[tuple[str, Any]]:
    return [(line["time"][11:19], line["value"]) for line in run_program(src, T + trace, force_lazy=lazy)]


COUNT = "in {} Up\nout long Count\n{ n = 0; }\n"
ACTION = "( Up() { n = n + 1; !>Count(n); } )"


def test_the_issue_example_plus_inside_star(lazy: bool) -> None:
    # Up at 00:00 and 00:01: Count 1, then Count 2 (not 2 and 3: the second Up reaches the
    # action in two copies of the +, but it is one action).
    src = COUNT + f"( {ACTION}+ )*"
    assert timeline(src, "Up() [00:00:01] Up()", lazy) == [("00:00:00", 1), ("00:00:01", 2)]


@pytest.mark.parametrize("multiplier", ["+", "{1,}", "{1,2}", "{1,3}", "{2,}"])
def test_each_multiplier_inside_a_star(lazy: bool, multiplier: str) -> None:
    src = COUNT + f"( {ACTION}{multiplier} )*"
    assert vals(src, "Up() Up() Up() Up()", lazy) == [1, 2, 3, 4]


def test_fixed_repetition_of_an_optional_marker(lazy: bool) -> None:
    # ( Up()? {...} ){2}: the initial path meets both copies of the action; it runs once.
    src = "in {} Up, {} B\nout long L\n{ n = 0; } ( Up()? { n = n + 1; } ){2} B() { !>L(n); }"
    assert vals(src, "B()", lazy) == [1]
    assert vals(src, "Up() B()", lazy) == [2]
    assert vals(src, "Up() Up() B()", lazy) == [3]


def test_optional_copies(lazy: bool) -> None:
    # The first Up can be matched by either copy of ( Up() {...} )?: one action, one run.
    src = COUNT + f"( {ACTION}? ){{2}}"
    assert vals(src, "Up() Up() Up()", lazy) == [1, 2, "$error 2"]


def test_optional_inside_plus(lazy: bool) -> None:
    src = COUNT + f"( {ACTION}? )+"
    assert vals(src, "Up() Up() Up()", lazy) == [1, 2, 3]


def test_initial_actions_reached_through_several_copies(lazy: bool) -> None:
    src = 'in {} B, {} C\nout string S\n( { !>S("x"); } B()? ){3} C()'
    # At start the path meets all three copies: x once. After the first B two later copies can
    # still be reached: x once again. After the second B only the third copy remains (x once);
    # after the third B the copy's action is behind it.
    assert vals(src, "B() C()", lazy) == ["x", "x"]
    assert vals(src, "B() B() B() B()", lazy) == ["x", "x", "x", "$error 2"]


def test_a_path_runs_a_unit_where_it_first_meets_a_copy(lazy: bool) -> None:
    # At start the path meets a b a b: it runs a, b. After the B of the first copy it meets
    # b (end of copy 1), a (start of copy 2), b again: it runs b, then a.
    src = 'in {} B, {} C\nout string S\n( { !>S("a"); } B()? { !>S("b"); } ){2} C()'
    assert vals(src, "B() C()", lazy) == ["a", "b", "b", "a"]
    assert vals(src, "C()", lazy) == ["a", "b"]


def test_copies_of_a_time_marker_are_one_timer(lazy: bool) -> None:
    # Every second the timer fires once and the action runs once (not 1, 2+3, 4+5+6, ...).
    src = "in {} Up\nout long Count\n{ n = 0; }\n( ( elapse[1 second]() { n = n + 1; !>Count(n); } )+ )*"
    assert timeline(src, "[00:00:03.500]", lazy) == [("00:00:01", 1), ("00:00:02", 2), ("00:00:03", 3)]


def test_copies_of_a_time_marker_in_a_fixed_repetition(lazy: bool) -> None:
    src = (
        "in {} Up\nout long Count\n{ n = 0; }\n"
        "( ( elapse[1 second]() { n = n + 1; !>Count(n); } )? ){3} Up() { !>Count(-1); }"
    )
    assert timeline(src, "[00:00:05] Up()", lazy) == [
        ("00:00:01", 1),
        ("00:00:02", 2),
        ("00:00:03", 3),
        ("00:00:05", -1),
    ]


def test_paths_through_a_reentered_product_follow_program_text(lazy: bool) -> None:
    # On each B one path goes through the intersection (L 1), another through B() (L 3); no
    # path meets both, so program text decides: 1 before 3. The left operand's path that
    # matches nothing cannot match the intersection, so entering it runs nothing.
    src = "in {} B  out long L  ( .* {!>L(1);} & . )* B() {!>L(3);}"
    assert vals(src, "B()", lazy) == [1, 3]
    assert vals(src, "B() B() B()", lazy) == [1, 3, 1, 3, 1, 3]


def test_intersection_runs_only_actions_on_jointly_feasible_paths(lazy: bool) -> None:
    # The left operand's path A() {x} matches "A", which the right operand never matches: that
    # path is not feasible in the intersection, so x does not run.
    src = 'in {} A, {} B\nout string S\n( A() { !>S("a"); } B() | A() { !>S("x"); } ) & A() B()'
    assert vals(src, "A() B()", lazy) == ["a"]


SHAPES = ["markers", "with-actions", "intersection"]


def _alternatives(n: int, shape: str) -> str:
    decls = ", ".join(f"{{}} A{i}, {{}} B{i}" for i in range(n))
    if shape == "with-actions":
        alts = " | ".join(f"A{i}() {{ x = {i}; }} B{i}() {{ !>O(x); }}" for i in range(n))
    else:
        alts = " | ".join(f"A{i}() B{i}()" for i in range(n))
    if shape == "intersection":
        return f"in {decls}\nout long O\n( ( {alts} ) * & ( . . )* )\n"
    return f"in {decls}\nout long O\n( {alts} ) *\n"


def _compile_seconds(n: int, shape: str) -> float:
    src = _alternatives(n, shape)
    gc.disable()  # measure the algorithm, not when the collector happens to run
    try:
        start = time.perf_counter()
        comp = compile_source(src, name="wide")
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    assert comp.ok and comp.dfa_states == n + 1
    return elapsed


def _nfa_size(n: int, shape: str) -> int:
    """Edges plus follow-set entries of the epsilon-free NFA (what elimination builds)."""
    machine = compile_source(_alternatives(n, shape), name="wide", force_lazy=True).require().machine
    assert isinstance(machine, LazyDFA)
    efa = machine.efa
    return sum(len(f.targets) for f in efa.follows) + sum(len(es) for row in efa.edges for es in row.values())


@pytest.mark.parametrize("shape", SHAPES)
def test_epsilon_free_nfa_grows_linearly_with_alternatives(shape: str) -> None:
    # Each B leads back to the n starts of the alternatives: copying that follow set into every
    # B edge gave n^2 edges (3,000 alternatives took ~50 s to compile); so did pairing every
    # B's targets with the other operand's inside an intersection.
    assert _nfa_size(800, shape) <= 4.2 * _nfa_size(200, shape)


@pytest.mark.parametrize("shape", SHAPES)
def test_compile_time_grows_about_linearly_with_alternatives(shape: str) -> None:
    n = 600 if shape == "markers" else 400
    small = min(_compile_seconds(n, shape) for _ in range(2))
    large = _compile_seconds(4 * n, shape)
    assert large < 9 * small + 0.5, (small, large)  # 4x the input: linear ~4x, quadratic ~16x
    assert large < 10.0


def test_copies_of_one_marker_are_reported_as_such() -> None:
    # The ambiguity warning names the marker's copies, not "this marker and the marker at" itself.
    comp = compile_source(COUNT + f"( {ACTION}+ )*", name="t")
    (w,) = comp.diagnostics.warnings
    assert w.message == (
        "ambiguous regular expression: an event can match two copies of this marker made by a multiplier"
    )
    assert w.hint is not None and "run once per transition" in w.hint


def test_paths_that_disagree_about_two_actions_leave_the_others_in_text_order(lazy: bool) -> None:
    # At start one path meets 1 then 2 (copy one, copy two), another 2 then 1; a third meets 3.
    # Text decides 1 before 2, and 3, written last and unordered by any path, runs last (it ran
    # first when a contradiction was only broken after every unconstrained action had run).
    src = "in long A\nout long T\nA(v) | ( A(v) | { !>T(1); } | { !>T(2); } ){0,2} | { !>T(3); }"
    assert vals(src, "", lazy) == [1, 2, 3]


def test_operand_paths_of_a_product_stay_apart_in_the_merge(lazy: bool) -> None:
    # On A, one path goes through the difference: its right operand's path meets 2, then the
    # loop re-enters the difference and its left operand meets 1: 2 before 1. Another path takes
    # `| A()` and re-enters the difference, where its left path meets 1 and its right path 2:
    # two paths, which order nothing. So 2 runs before 1. (The product used to merge the two
    # operand paths into one sequence, 1 then 2 by text; that fake order contradicted the real
    # one and text then decided: 1, 2.)
    src = "in {} A, {} B\nout long L\n( ( { !>L(1); } A() - ( { !>L(2); } A() )* B() ) | A() )*"
    assert vals(src, "A()", lazy) == [1, 2, 2, 1]
