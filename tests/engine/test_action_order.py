"""The order of actions on one transition of an ambiguous program (conformance README choice 8;
language document §3.3.1): every action reached on any feasible path runs once, each path's
own order is kept (also around loops), and otherwise program text decides. Every case runs on
the eager DFA and on the lazy DFA, which must agree."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import run_program

T = "[2026-01-01 00:00:00] "


@pytest.fixture(params=[False, True], ids=["eager", "lazy"])
def lazy(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def vals(src: str | list[str], trace: str, lazy: bool) -> list[Any]:
    lines = run_program(src, T + trace, force_lazy=lazy)
    return [line["value"] if line["event"] != "$error" else f"$error {line['value']['code']}" for line in lines]


def test_figure_3_assignments_in_program_text_order(lazy: bool) -> None:
    src = """
    in {} A
    out long B
    ( A() {x=1;} | A() {x=2;} ) {!>B(x);}
    """
    assert vals(src, "A()", lazy) == [2]


def test_figure_3_reversed(lazy: bool) -> None:
    src = """
    in {} A
    out long B
    ( A() {x=2;} | A() {x=1;} ) {!>B(x);}
    """
    assert vals(src, "A()", lazy) == [1]


def test_figure_4_emits_in_program_text_order(lazy: bool) -> None:
    src = """
    in {} A
    out long B
    ( A() {!>B(1);} | A() {!>B(2);} )
    """
    assert vals(src, "A() A()", lazy) == [1, 2, "$error 2"]


def test_each_action_runs_once_per_transition(lazy: bool) -> None:
    src = """
    in {} A, {} B
    out string S
    ( A() { !>S("a1"); } | A() | A() B()? ) { !>S("y"); } B()
    """
    # On A, three paths reach y: it runs once. On B, the path through B()? reaches it again.
    assert vals(src, "A() B()", lazy) == ["a1", "y", "y"]


def test_path_order_is_kept_around_a_loop(lazy: bool) -> None:
    # The second V: update, emit, then the loop head's reset (which is first in program text).
    src = """
    in long V
    out long S
    ( { s = 0; } ( V(x) { s = s + x; } ){2} { !>S(s); } )*
    """
    assert vals(src, "V(1) V(2) V(3) V(4) V(10)", lazy) == [3, 7]


def test_update_emit_reset_with_a_counter(lazy: bool) -> None:
    src = """
    in long V, {} E
    out string S
    ( { !>S("reset"); n = 0; } ( V(x) { n = n + x; !>S("upd " + n); } )* E() { !>S("emit " + n); } )*
    """
    assert vals(src, "V(1) E() V(2) V(3) E()", lazy) == [
        "reset",
        "upd 1",
        "emit 1",
        "reset",
        "upd 2",
        "upd 5",
        "emit 5",
        "reset",
    ]


def test_merge_of_a_looping_path_with_a_parallel_path_written_after(lazy: bool) -> None:
    src = """
    in long V
    out string S
    ( { !>S("reset"); } ( V(x) { !>S("upd " + x); } ){2} { !>S("emit"); } )*
    |
    ( V(y) { !>S("other " + y); } )*
    """
    assert vals(src, "V(1) V(2) V(3)", lazy) == [
        "reset",
        "upd 1",
        "other 1",
        "upd 2",
        "emit",
        "reset",
        "other 2",
        "upd 3",
        "other 3",
    ]


def test_merge_of_a_looping_path_with_a_parallel_path_written_before(lazy: bool) -> None:
    src = """
    in long V
    out string S
    ( V(y) { !>S("other " + y); } )*
    |
    ( { !>S("reset"); } ( V(x) { !>S("upd " + x); } ){2} { !>S("emit"); } )*
    """
    assert vals(src, "V(1) V(2) V(3)", lazy) == [
        "reset",
        "other 1",
        "upd 1",
        "other 2",
        "upd 2",
        "emit",
        "reset",
        "other 3",
        "upd 3",
    ]


def test_paths_sharing_a_variable_follow_program_text(lazy: bool) -> None:
    src = """
    in long V
    out long S
    { n = 0; }
    ( V(a) { n = n * 10 + a; } )* | ( V(b) { n = n + 1; !>S(n); } )*
    """
    # n = n*10 + v first (program text), then n = n + 1 and the emit.
    assert vals(src, "V(1) V(2)", lazy) == [2, 23]


def test_coupon_and_software_example(lazy: bool) -> None:
    src = """
    in {string customerID; boolean isComputerRelated;} Purchase
      group(Purchase.customerID)
      case { Purchase.isComputerRelated ? CompPurchase : OtherPurchase }
    out string GiveCoupon, string GiveSoftware
    ( Purchase(p){3} { !>GiveCoupon(p.customerID); } ) *
    |
    ( CompPurchase(cp) { !>GiveSoftware(cp.customerID); } | OtherPurchase() )*
    """
    lines = run_program(
        src,
        T + 'Purchase("c1", false) Purchase("c1", true) Purchase("c2", true) '
        'Purchase("c1", true) Purchase("c1", false) Purchase("c1", false) '
        'Purchase("c1", false)',
        force_lazy=lazy,
    )
    assert [(line["event"], line["value"]) for line in lines] == [
        ("GiveSoftware", "c1"),
        ("GiveSoftware", "c2"),
        ("GiveCoupon", "c1"),
        ("GiveSoftware", "c1"),
        ("GiveCoupon", "c1"),
    ]


def test_copies_made_by_a_multiplier_are_one_action(lazy: bool) -> None:
    src = """
    in {} B, {} C
    out string S
    ( { !>S("x"); } B()? ){3} C()
    """
    # The copies are one textual action: it runs at most once per transition (issue 9). At
    # start, after the first B and after the second, some copy is reached; after the third, none.
    assert vals(src, "B() C()", lazy) == ["x", "x"]
    assert vals(src, "B() B() B() B()", lazy) == ["x"] * 3 + ["$error 2"]


def test_copies_with_a_counter(lazy: bool) -> None:
    src = """
    in {} A, {} B
    out long L
    { n = 0; } ( A()? { n = n + 1; } ){2} B() { !>L(n); }
    """
    assert vals(src, "B()", lazy) == [1]
    assert vals(src, "A() B()", lazy) == [2]
    assert vals(src, "A() A() B()", lazy) == [3]


def test_fixed_repetition_copies(lazy: bool) -> None:
    src = """
    in long V
    out long S
    { i = 0; }
    ( V(x) { i = i + 1; !>S(i * 100 + x); } ){3} { !>S(-1); }
    """
    assert vals(src, "V(1) V(2) V(3) V(4)", lazy) == [101, 202, 303, -1, "$error 2"]


def test_bounded_repetition(lazy: bool) -> None:
    src = """
    in {} A, {} B
    out string S
    ( A() { !>S("a"); } ){1,2} B() { !>S("b"); }
    """
    assert vals(src, "A() B()", lazy) == ["a", "b"]
    assert vals(src, "A() A() B()", lazy) == ["a", "a", "b"]
    assert vals(src, "A() A() A()", lazy) == ["a", "a", "$error 2"]
    assert vals(src, "B()", lazy) == ["$error 2"]


def test_greedy_actions_in_alternatives(lazy: bool) -> None:
    src = """
    in {} A, {} B, {} C
    out {} Z
    ( A() B() | A() {!>Z({});} C() )
    """
    # Z is emitted as soon as A arrives, although B then shows that path was not taken.
    assert vals(src, "A() B()", lazy) == [{}]


def test_greedy_actions_in_repetitions(lazy: bool) -> None:
    src = """
    in {} A, {} B, {} C
    out string Y
    A() ( { !>Y("y"); } B() )* { !>Y("z"); } C()
    """
    assert vals(src, "A() B() B() C() A()", lazy) == ["y", "z", "y", "z", "y", "z", "$error 2"]


def test_guarded_actions_are_not_greedy(lazy: bool) -> None:
    src = """
    in {} A, {} B, {} C
    out string Y
    A() ( B() { !>Y("y"); } )* C() { !>Y("z"); }
    """
    assert vals(src, "A() B() B() C()", lazy) == ["y", "y", "z"]


def test_greedy_actions_at_program_start(lazy: bool) -> None:
    src = """
    in {} A, {} B
    out string S
    ( { !>S("1"); } A() | { !>S("2"); } B() ) { !>S("3"); }
    """
    assert vals(src, "B()", lazy) == ["1", "2", "3"]


def test_even_odd_program(lazy: bool) -> None:
    src = """
    in {} A, {} Even, {} Odd
    out {} EvenSeen, {} OddSeen
    ( A() A() ) * ( Even() { !>EvenSeen({}); } | A() Odd() { !>OddSeen({}); } )
    """
    lines = run_program(src, T + "A() A() A() Odd()", force_lazy=lazy)
    assert [line["event"] for line in lines] == ["OddSeen"]
    lines = run_program(src, T + "A() A() Even() A()", force_lazy=lazy)
    assert [line["event"] for line in lines] == ["EvenSeen", "$error"]


def test_keypad_program(lazy: bool) -> None:
    src = """
    in long Key case { Key==0 ? K0 : Key==7 ? K7 : Other }
    out long Unlock
    { n = 0; }
    ( .* K0() K0() K7() { n = n + 1; !>Unlock(n); } ) *
    """
    assert vals(src, "Key(1) Key(0) Key(0) Key(7) Key(0) Key(0) Key(0) Key(7) Key(7) Key(0) Key(7)", lazy) == [1, 2]


def test_intersection_runs_both_operands_actions(lazy: bool) -> None:
    src = """
    in {} A, {} B
    out string S
    ( ( A() { !>S("L1"); } B() { !>S("L2"); } ) & ( A() { !>S("R1"); } . { !>S("R2"); } ) ) { !>S("done"); }
    """
    assert vals(src, "A() B()", lazy) == ["L1", "R1", "L2", "R2", "done"]


def test_intersection_rejects_what_one_operand_rejects(lazy: bool) -> None:
    src = """
    in {} A, {} B
    out string S
    ( ( . { !>S("l"); } )* & ( A() B() )* ) { !>S("end"); }
    """
    # After A B the whole matched: "end" is reached greedily; a second B matches no operand pair.
    assert vals(src, "A() B() B()", lazy) == ["end", "l", "l", "end", "$error 2"]


def test_difference_runs_the_right_operands_actions_when_it_matches(lazy: bool) -> None:
    # L - R {a}: a runs exactly when R has been matched, i.e. for a sequence the whole
    # difference does not match.
    src = """
    in {} A, {} B, {} C
    out string S
    ( . { !>S("l"); } )* - ( A() B() { !>S("r"); } )
    """
    assert vals(src, "A() B() C()", lazy) == ["l", "l", "r", "l"]
    assert vals(src, "A() C() B()", lazy) == ["l", "l", "l"]


def test_difference_with_a_sliding_right_operand(lazy: bool) -> None:
    src = """
    in {} A, {} B, {} C
    out string S
    ( . { !>S("l"); } )* - ( .* A() B() { !>S("r"); } )
    """
    assert vals(src, "C() A() B() C() A() A() B()", lazy) == ["l", "l", "l", "r", "l", "l", "l", "l", "r"]


def test_difference_excludes_the_right_operands_sequences(lazy: bool) -> None:
    src = """
    in {} A, {} B
    out string S
    ( ( ( A() | B() ) { !>S("x"); } ){2} - ( A() A() ) ) { !>S("ok"); }
    """
    assert vals(src, "A() B()", lazy) == ["x", "x", "ok"]
    assert vals(src, "A() A()", lazy) == ["x", "$error 2"]


def test_right_operand_action_does_not_run_for_a_discarded_event(lazy: bool) -> None:
    # After A A the right operand matches and nothing can follow: the second A cannot continue
    # any match, so it is discarded ($error 2) and changes nothing, "r" included.
    src = """
    in {} A, {} B
    out string S
    ( ( A() | B() ) { !>S("x"); } ){2} - ( A() A() { !>S("r"); } )
    """
    assert vals(src, "A() A() B()", lazy) == ["x", "$error 2", "x"]


def test_wildcard_minus_a_name(lazy: bool) -> None:
    src = """
    in {} A, {} B, {} C
    out string S
    ( ( . - B() ) { !>S("not b"); } | B() { !>S("b"); } )*
    """
    assert vals(src, "A() B() C()", lazy) == ["not b", "b", "not b"]


def test_pipeline_of_ambiguous_stages(lazy: bool) -> None:
    stage1 = """
    in {} A
    out long B
    ( A() {!>B(1);} | A() {!>B(2);} )*
    """
    stage2 = """
    in long B
    out long C
    ( B(x) { !>C(x * 10); } | B(y) { !>C(y * 100); } )*
    """
    assert vals([stage1, stage2], "A()", lazy) == [10, 100, 20, 200]
