"""Grouped instances equal to a fresh one are released ("retired", ``engine.liveness``).

- the analysis on small programs: which start states retire, and every reason one must not
  (a live variable, a timer at the start, initial actions that emit, a classifier reading a
  variable);
- a retiring instance is released like a terminated one (table, ``on_terminate``, dirty);
- outputs with retirement equal outputs with it forced off (``retire=False`` /
  ``$EVENTSCRIPT_RETIRE=off``): on the conformance suite and on random programs and traces, also
  ones whose statements make retiring likely. These fail if the analysis calls a live variable dead.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st
from test_conformance_cases import CASE_DIRS, run_case

from eventscript.automata.compile import compile_source
from eventscript.automata.compiled import CompiledProgram
from eventscript.engine.engine import COMPACT_ENV, RETIRE_ENV, Engine
from eventscript.engine.events import Emitted
from eventscript.engine.liveness import live_variables, retiring_states, use_def
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.language import ir
from eventscript.language.types import BOOLEAN, LONG
from reference import generate
from reference.compare import compiles, run_tester

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

ECHO = "in double Reading group(Reading)\nout double Echo\n( Reading(r) { !>Echo(r); } )*\n"


def _prog(body: str, decls: str | None = None) -> CompiledProgram:
    """``body`` under inputs A (and B when it names B) grouped by value % 2, and an output O."""
    if decls is None:
        decls = "in long A group(A % 2)" + (", long B group(B % 2)" if "B(" in body else "") + "\nout long O\n"
    return compile_source(decls + body + "\n", name="t").require()


def _retires(p: CompiledProgram) -> bool:
    assert p.machine.kind == "dfa"
    return bool(retiring_states(p.program, p.machine))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# the analysis


@pytest.mark.parametrize(
    ("body", "retires"),
    [
        ("( A(x) { !>O(x); } )*", True),  # the echo: x is stored before every read
        ("( A(x) B() { !>O(x); } | B() )*", True),  # x is live after A, not at the start
        ("( A(x) B() { !>O(x); } )*", True),  # B is discarded at the start: its $error carries the key all the same
        ("( A(x) { y = x; !>O(y); } )*", True),  # written, then read
        ("{ n = 0; } ( A() { n = n + 1; } )*", False),  # the counter
        ("( A(x) { !>O(y); y = x; } )*", False),  # read what the previous match wrote
        ("( A(x) { x > 1 ? y = x; !>O(y); } )*", False),  # a write inside a conditional defines nothing
        ("( A(x) { for (i: 1, x) y = i; !>O(y); } )*", False),  # nor one inside a loop
        ("( A() B(x) { !>O(x); } | B() { !>O(x); } )*", False),  # x read before any store on one path
        ("{ n = 0; } ( A() elapse[(n % 3 + 1) seconds]() )*", False),  # a timer expression reads n
        ("( A(x) elapse[(x % 3 + 1) seconds]() )*", True),  # ... x, stored just before
        ("( elapse[1 seconds]() { !>O(1); } | A() )*", False),  # a timer is pending at the start
        ("{ !>O(0); } ( A(x) { !>O(x); } )*", False),  # the initial actions emit
        ("{ n = 10 / 0; } ( A(x) { !>O(x); } )*", False),  # ... or may report an $error
        ("{ n = 0; t = now(); a = new long[2]; b = a; } ( A(x) { !>O(x); } )*", True),  # ... only assign
    ],
)
def test_which_start_states_retire(body: str, retires: bool) -> None:
    assert _retires(_prog(body)) is retires


def test_an_ungrouped_program_keeps_its_instance() -> None:
    assert not _retires(_prog("( A(x) { !>O(x); } )*", "in long A\nout long O\n"))


def test_a_case_clause_that_may_fail_retires() -> None:
    # Its $error carries the event's key with or without an instance (test_error_keys).
    assert _retires(_prog("( A(v) )*", "in long A group(A % 2) case { 12 / A >= 3 ? Hi : Lo }\nout long O\n"))


def test_a_classifier_reading_a_variable_stops_retiring() -> None:
    # The language keeps variables out of case clauses (conformance choice 11); the analysis
    # must still not rely on it.
    p = _prog("( A(x) { !>O(x); } )*", "in long A group(A % 2) case { A > 4 ? Hi : Lo }\nout long O\n")
    assert _retires(p)
    inp = p.program.inputs[0]
    assert isinstance(inp.classify, ir.CaseArm)
    reading = dataclasses.replace(
        inp.classify, cond=ir.Binary(BOOLEAN, ">", LONG, ir.Var(LONG, 0, "x"), ir.Const(LONG, 4))
    )
    program = dataclasses.replace(p.program, inputs=[dataclasses.replace(inp, classify=reading)])
    assert not retiring_states(program, p.machine)  # type: ignore[arg-type]


def test_use_and_def_of_an_action_sequence() -> None:
    x, y = ir.Var(LONG, 0, "x"), ir.Var(LONG, 1, "y")
    seq = [ir.Emit(0, x), ir.SetVar(1, "y", ir.Const(LONG, 1)), ir.Emit(0, y), ir.If(y, [ir.SetVar(0, "x", y)], [])]
    assert use_def(seq) == ({0}, {1})
    assert use_def([ir.Store(0, "x"), ir.Emit(0, x)]) == (set(), {0})


def test_liveness_follows_paths_through_states() -> None:
    p = _prog("( A(x) B() { !>O(x); } )*")
    live = live_variables(p.program, p.machine)  # type: ignore[arg-type]
    start = p.machine.start()[0]
    assert live[start] == set() and {0} in live


# ---------------------------------------------------------------------------------------
# the engine


def test_a_retiring_instance_is_released_like_a_terminated_one() -> None:
    prog = compile_source(ECHO, name="echo").require()
    out: list[Emitted] = []
    ended: list[Any] = []
    engine = Engine(prog, out.append, SimulatedTimeProvider(), track_dirty=True)
    engine.on_terminate = ended.append
    ctx = engine.feed("Reading", 1.5)
    assert ctx is not None and ctx.terminated and not engine.holds(ctx)
    assert engine.instance_count == 0 and ended == [ctx] and engine.drain_dirty() == [ctx]
    again = engine.feed("Reading", 1.5)
    assert again is not ctx and [e.value for e in out] == [1.5, 1.5] and [e.key for e in out] == [(1.5,)] * 2

    kept = Engine(prog, out.append, SimulatedTimeProvider(), retire=False, compact=False)
    ctx = kept.feed("Reading", 1.5)
    assert ctx is not None and not ctx.terminated and kept.instance_count == 1


@pytest.mark.parametrize(
    ("env", "track_dirty", "compact", "kept"),
    [
        ("off", True, True, 1),
        ("on", False, False, 0),
        ("auto", True, True, 0),
        ("auto", False, False, 1),
        ("", False, False, 1),
        ("auto", False, True, 1),
        ("on", False, True, 0),
    ],
)
def test_the_environment_variable(env: str, track_dirty: bool, compact: bool, kept: int) -> None:
    """ "auto" (the default) retires for hosts that persist instances, who pay per instance, and
    in compact engines of bare state numbers (test_compact), not of records (the echo's: a new
    record per event would cost more than keeping one)."""
    prog = compile_source(ECHO, name="echo").require()
    with mock.patch.dict(os.environ, {RETIRE_ENV: env}):
        engine = Engine(prog, track_dirty=track_dirty, compact=compact)
    engine.feed("Reading", 1.0)
    assert engine.instance_count == kept


def test_a_wrong_mode_says_which_are_right() -> None:
    with mock.patch.dict(os.environ, {RETIRE_ENV: "yes"}), pytest.raises(ValueError, match="auto, on, off"):
        Engine(compile_source(ECHO, name="echo").require())


def test_a_timer_output_of_a_recreated_instance() -> None:
    """The instance leaves its timed state back to the start (the timer stops), is released,
    and a later event starts a fresh one whose timer fires as the first one's did."""
    prog = _prog("( A(x) elapse[1 seconds]() { !>O(x); } )*")
    assert _retires(prog)
    for retire in (True, False):
        clock = SimulatedTimeProvider()
        out: list[Emitted] = []
        engine = Engine(prog, out.append, clock, retire=retire, track_dirty=True)
        engine.feed("A", 3)
        clock.advance_to(2_000_000)
        engine.feed("A", 5)
        clock.advance_to(4_000_000)
        assert [(e.value, e.time) for e in out] == [(3, 1_000_000), (5, 3_000_000)]
        assert engine.instance_count == (0 if retire else 1)


# ---------------------------------------------------------------------------------------
# retiring on and off give the same outputs


def on_and_off(env: str, run: Any) -> tuple[Any, Any]:
    """run() with the environment variable env "on", then "off" (engines read it when made)."""
    with mock.patch.dict(os.environ, {env: "on"}):
        on = run()
    with mock.patch.dict(os.environ, {env: "off"}):
        off = run()
    return on, off


def _both(run: Any) -> tuple[Any, Any]:
    return on_and_off(RETIRE_ENV, run)


@pytest.mark.parametrize("env", [RETIRE_ENV, COMPACT_ENV])
@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_conformance_case_with_and_without(case: Path, env: str) -> None:
    """Retiring, and compact engines (test_compact), on and off."""
    on, off = on_and_off(env, lambda: run_case(case, lazy=False))
    assert on == off


#: Statements that write variables before reading them more often than the reference's do, so
#: that many generated programs retire; and some that count, which must keep them.
RETIRING_STATEMENTS = [
    "n = v;",
    "!>O(n);",
    "v = 2;",
    "!>O(v);",
    "d = 0.5;",
    "!>P(d);",
    "n = 3; !>S(s + n);",
    "n > 1 ? v = 1;",
    "!>O(n * 10 + v);",
    "t = now();",
    "!>O(millisecondsBetween(t, now()));",
    "n = n + 1;",
    "d = d + v;",
    's = s + "a";',
]


@st.composite
def keyed_programs(
    draw: st.DrawFn,
    statements: list[str],
    markers: tuple[str, ...] = ("v", "", "n"),
    timers: bool = True,
    inits: tuple[str, ...] = ("",),
) -> tuple[str, generate.Spec]:
    """Grouped programs ``( alternatives of short sequences )*`` whose action blocks take
    ``statements`` and whose markers store into ``markers``: the start state is often entered again."""
    names = ["A", "B", "C"][: draw(st.integers(2, 3))]
    plain = (
        [f"{name}({var})" for name in names for var in markers] + ["."] + (["elapse[1 seconds](t)"] if timers else [])
    )
    items = st.one_of(
        st.sampled_from(plain),
        st.lists(st.sampled_from(statements), min_size=1, max_size=3).map(lambda s: "{ " + " ".join(s) + " }"),
    )
    sequences = st.lists(items, min_size=1, max_size=3).map(" ".join)
    alternatives = draw(st.lists(sequences, min_size=1, max_size=3))
    body = " | ".join(f"{names[k % len(names)]}({markers[0]}) {alt}" for k, alt in enumerate(alternatives))
    decls = ", ".join(f"long {name} group({name} % 2)" for name in names)
    source = f"in {decls}\nout long O, double P, string S, long T\n{draw(st.sampled_from(inits))}\n( {body} )*\n"
    return source, generate.Spec(names, list(names), True)


def retiring_programs() -> st.SearchStrategy[tuple[str, generate.Spec]]:
    return keyed_programs(
        RETIRING_STATEMENTS, inits=("", '{ n = 0; d = 0.0; s = ""; t = now(); }', "{ v = 1; }", "{ !>T(0); }")
    )


def _reenters(source: str) -> bool:
    """Does some transition enter a retiring state?"""
    prog = compile_source(source, name="ref").require()
    if prog.machine.kind != "dfa" or not _retires(prog):
        return False
    m = prog.machine
    start = m.start()[0]
    return any(t == start for k in range(m.size) for t, _ in m.transitions(k).values())  # type: ignore[attr-defined]


def _agree(source: str, text: str) -> None:
    note(f"program:\n{source}\ntrace:\n{text}")
    on, off = _both(lambda: run_tester(source, text, lazy=False, error_keys=True))
    assert on == off


@SETTINGS
@given(data=st.data())
def test_random_programs_with_and_without_retiring(data: st.DataObject) -> None:
    source, spec = data.draw(generate.programs())
    assume(spec.grouped and compiles(source))
    _, text = data.draw(generate.traces(spec))
    _agree(source, text)


@settings(SETTINGS, max_examples=150)  # ~5% of them tell a wrong "dead" from a right one
@given(data=st.data())
def test_random_retiring_programs_with_and_without_retiring(data: st.DataObject) -> None:
    source, spec = data.draw(retiring_programs())
    assume(compiles(source))
    event("retires" if _reenters(source) else "keeps")
    _, text = data.draw(generate.traces(spec))
    _agree(source, text)


def test_the_retiring_generator_makes_programs_that_retire() -> None:
    """Else the test above would compare nothing of interest."""
    seen = {True: 0, False: 0}

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(data=st.data())
    def count(data: st.DataObject) -> None:
        source, _ = data.draw(retiring_programs())
        assume(compiles(source))
        seen[_reenters(source)] += 1

    count()
    assert seen[True] >= 10 and seen[False] >= 5, seen
