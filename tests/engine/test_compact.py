"""Compact engines: a grouped program without timers keeps each key's state number in its
table (issue 11 item 2: memory and time per key), the bare number, or with variables or initial
actions a record [variables..., state number], and contexts only when someone asks for one.

- outputs equal a normal engine's (``compact=False`` / ``$EVENTSCRIPT_COMPACT=off``) on random
  programs without timers, with and without variables, initial actions and failing case clauses
  (and on the conformance suite: test_retire);
- the public interface is the same: ``contexts``, ``holds``, ``instance_count``, snapshots and
  restores (across compact and normal engines), ``feed_keyed``, errors carrying the key;
- setting a host hook (``loader``, ``on_terminate``, ``origin_of``) turns the engine into a
  normal one, instances kept.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from test_retire import RETIRING_STATEMENTS, keyed_programs, on_and_off

from eventscript.automata.compile import compile_source
from eventscript.engine.engine import COMPACT_ENV, Engine
from eventscript.engine.events import Emitted
from eventscript.engine.time_provider import SimulatedTimeProvider
from reference import generate
from reference.compare import compiles, run_tester

ABC = (
    "in string A group(A), string B group(B), string C group(C)\n"
    "out string Z\n( .* A() B()+ C() { !>Z(group[0]); } )*\n"
)
PAIR = 'in {string a; long b;} E group(E.a, E.b), long F group("f", F)\nout long O\nE() F() { !>O(group[1]); } E()\n'


def _both(run: Any) -> tuple[Any, Any]:
    return on_and_off(COMPACT_ENV, run)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_random_programs_compact_and_not(data: st.DataObject) -> None:
    source, spec = data.draw(
        keyed_programs(["!>O(group[0]);", "!>T(1);", "!>O(100 / group[0]);"], markers=("",), timers=False)
    )
    assume(compiles(source))
    _, text = data.draw(generate.traces(spec))
    note(f"program:\n{source}\ntrace:\n{text}")
    on, off = _both(lambda: run_tester(source, text, lazy=False, error_keys=True))
    assert on == off


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_random_programs_with_variables_compact_and_not(data: st.DataObject) -> None:
    """Records: variables stored by markers, counted, read before set ($error 3), initial actions."""
    source, spec = data.draw(
        keyed_programs(
            [*RETIRING_STATEMENTS, "!>O(100 / v);", "!>O(group[0]);"],
            timers=False,
            inits=("", '{ n = 0; d = 0.0; s = ""; t = now(); }', "{ !>T(0); }"),
        )
    )
    assume(compiles(source))
    _, text = data.draw(generate.traces(spec))
    note(f"program:\n{source}\ntrace:\n{text}")
    on, off = _both(lambda: run_tester(source, text, lazy=False, error_keys=True))
    assert on == off


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_grouped_programs_compact_and_not(data: st.DataObject) -> None:
    """The differential generator's grouped programs (arrays, structures, case clauses, keys
    that fail; those with timers run normal engines both times)."""
    source, spec = data.draw(generate.programs())
    assume(spec.grouped and compiles(source))
    _, text = data.draw(generate.traces(spec))
    note(f"program:\n{source}\ntrace:\n{text}")
    on, off = _both(lambda: run_tester(source, text, lazy=False, error_keys=True))
    assert on == off


def _engines(src: str) -> tuple[Engine, Engine, list[Emitted], list[Emitted]]:
    prog = compile_source(src, name="c").require()
    a: list[Emitted] = []
    b: list[Emitted] = []
    compact = Engine(prog, a.append, SimulatedTimeProvider())  # retires (a compact engine's default)
    normal = Engine(prog, b.append, SimulatedTimeProvider(), compact=False, retire=True)
    assert compact.compact and not normal.compact
    return compact, normal, a, b


def test_a_compact_engine_looks_like_a_normal_one() -> None:
    compact, normal, a, b = _engines(ABC)
    for name, key in [("A", "x"), ("B", "x"), ("A", "y"), ("C", "z"), ("B", "y"), ("C", "x")]:
        compact.feed(name, key)
        normal.feed(name, key)
    assert [(e.name, e.value, e.key) for e in a] == [(e.name, e.value, e.key) for e in b]
    assert compact.instance_count == normal.instance_count == 2  # y, z (x retired after its match)
    assert sorted(compact.contexts) == sorted(normal.contexts) == [("y",), ("z",)]
    for key in [("y",), ("z",)]:
        mine, theirs = compact.contexts[key], normal.contexts[key]
        assert mine.key == theirs.key and mine.state.key == theirs.state.key
        assert compact.snapshot(mine) == normal.snapshot(theirs)
        assert compact.holds(mine) and compact.contexts.get(key) is not None
    assert compact.contexts.get(("x",)) is None and ("y",) in compact.contexts
    stale = compact.contexts[("y",)]
    compact.feed("C", "y")
    assert not compact.holds(stale) and ("y",) not in compact.contexts
    # snapshots move between compact and normal engines
    fresh = Engine(compact.compiled)
    for ctx in normal.contexts.values():
        fresh.restore(normal.snapshot(ctx))
    assert fresh.compact and sorted(fresh.contexts) == [("y",), ("z",)]
    del fresh.contexts[("z",)]
    assert fresh.instance_count == 1
    fresh.clear()
    assert fresh.instance_count == 0


def test_errors_and_two_value_keys() -> None:
    compact, normal, a, b = _engines(PAIR)
    for eng in (compact, normal):
        eng.feed("F", 3)  # the new instance cannot take it: $error 2 with its key
        eng.feed("E", ["k", 3])
        eng.feed_keyed("E", ["k", 3], ("k", 3))  # unexpected in the instance: $error 2 with the key
        eng.feed("F", 3)
        eng.feed("E", ["f", 3])  # ends the instance
        eng.feed("Z", 1)
    assert [(e.name, e.key, e.value if e.name != "$error" else e.value[0]) for e in a] == [
        (e.name, e.key, e.value if e.name != "$error" else e.value[0]) for e in b
    ]
    assert compact.instance_count == normal.instance_count


def test_a_host_hook_turns_a_compact_engine_into_a_normal_one() -> None:
    compact = _engines(ABC)[0]
    compact.feed("A", "x")
    ended: list[object] = []
    compact.on_terminate = ended.append
    assert not compact.compact
    ctx = compact.contexts[("x",)]
    assert compact.holds(ctx) and compact.contexts[("x",)] is ctx
    compact.feed("B", "x")
    assert compact.feed("C", "x") is ctx and ended == [ctx] and compact.instance_count == 0


def test_an_output_handler_turns_a_compact_engine_into_a_normal_one() -> None:
    """A compact feed emits by key (no context per match); a handler takes a context."""
    compact, _, a, _ = _engines(ABC)
    compact.feed("A", "x")
    seen: list[tuple[Any, Any]] = []
    compact.set_output_handler("Z", lambda ctx, value: seen.append((ctx.key, value)))
    assert not compact.compact and compact.instance_count == 1
    compact.feed("B", "x")
    compact.feed("C", "x")
    assert seen == [(("x",), "x")] and a == []


COUNT = (
    "in string A group(A), string B group(B), string C group(C)\nout {string key; long n;} Z\n"
    "{ total = 0; }\n( .* A() { n = 0; } ( B() { n = n + 1; total = total + 1; } )+ C() "
    "{ !>Z({key: group[0], n: n}); } )*\n"
)


def test_records_hold_variables_and_look_like_contexts() -> None:
    """A program with variables keeps a record per key: views carry the variables, snapshots
    equal a normal engine's and restore into either kind, a view changes nothing in the engine."""
    compact, normal, a, b = _engines(COUNT)
    events = [("A", "x"), ("B", "x"), ("A", "y"), ("B", "x"), ("C", "z"), ("B", "y"), ("C", "x"), ("B", "x")]
    for name, key in events:
        compact.feed(name, key)
        normal.feed(name, key)
    assert [(e.name, e.value, e.key) for e in a] == [(e.name, e.value, e.key) for e in b] == [("Z", ["x", 2], ("x",))]
    assert compact.instance_count == normal.instance_count == 3
    for key in [("x",), ("y",), ("z",)]:
        mine, theirs = compact.contexts[key], normal.contexts[key]
        assert mine.vars == theirs.vars and mine.state.key == theirs.state.key
        assert compact.snapshot(mine) == normal.snapshot(theirs) and compact.holds(mine)
    view = compact.contexts[("x",)]
    assert view.vars == [2, 2]  # n, total
    view.vars[1] = 99  # a copy: the engine's total stays
    assert compact.contexts[("x",)].vars == [2, 2] and not compact.holds(view)
    fresh = Engine(compact.compiled)
    for ctx in normal.contexts.values():
        fresh.restore(normal.snapshot(ctx))
    assert fresh.compact and sorted(fresh.contexts) == [("x",), ("y",), ("z",)]
    fresh.contexts[("q",)] = fresh.contexts[("y",)].__class__("q", fresh.contexts[("y",)].state, [5, 7])
    assert fresh.contexts[("q",)].vars == [5, 7]
    for ctx in fresh.contexts.values():
        if ctx.key != ("q",):
            assert fresh.snapshot(ctx) == normal.snapshot(normal.contexts[ctx.key])
    fresh.on_terminate = lambda ctx: None  # a host hook: contexts again, variables kept
    assert not fresh.compact and fresh.contexts[("q",)].vars == [5, 7] and fresh.contexts[("x",)].vars == [2, 2]


def test_initial_actions_run_once_per_record() -> None:
    src = "in long A group(A % 2)\nout long O\n{ !>O(7); n = 1; }\n( A(x) { n = n + x; !>O(n); } )*\n"
    compact, normal, a, b = _engines(src)
    for x in [1, 2, 3, 5]:
        compact.feed("A", x)
        normal.feed("A", x)
    assert (
        [(e.value, e.key) for e in a]
        == [(e.value, e.key) for e in b]
        == [(7, (1,)), (2, (1,)), (7, (0,)), (3, (0,)), (5, (1,)), (10, (1,))]
    )
    later: list[Emitted] = []
    compact.consumer = later.append  # the inline emissions follow the consumer
    compact.feed("A", 4)
    assert [(e.program, e.name, e.value, e.time, e.key) for e in later] == [("c", "O", 7, 0, (0,))]
