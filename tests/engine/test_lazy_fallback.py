"""The lazy DFA's three ways of stepping agree with the eager DFA (issue 11, item 1).

A lazy engine caches transitions (``automata.hybrid``) and, when the cache thrashes, simulates
every step over position sets (``automata.simulate``). Both are forced on here
(``lazy_mode="cache"`` / ``"simulate"``, or ``$EVENTSCRIPT_LAZY_MODE`` for engines the tester
creates) and compared with the eager DFA: on the conformance suite, on random programs and traces
(property tests, snapshots across modes included), and step by step against ``subset.transitions``.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_conformance_cases import CASE_DIRS, run_case
from test_properties import (
    SETTINGS,
    codes,
    compiled,
    outputs_per_transition,
    programs,
    run_engine,
    tagged_programs,
    traces,
)

from conftest import read_jsonl
from eventscript.automata.actions import merge
from eventscript.automata.compile import compile_source
from eventscript.automata.compiled import CompiledProgram
from eventscript.automata.hybrid import TransitionCache
from eventscript.automata.machine import LazyDFA
from eventscript.automata.simulate import PositionSets, bits, to_mask
from eventscript.automata.subset import transitions
from eventscript.engine.engine import LAZY_MODE_ENV, Engine
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.language.source import SourceFile
from eventscript.tester.expect import compare
from eventscript.tester.trace import parse_trace

MODES = ["simulate", "cache"]


def engine_in(mode: str, capacity: int = 50_000):  # type: ignore[no-untyped-def]
    return lambda p, s, c: Engine(p, s, c, lazy_mode=mode, lazy_cache_states=capacity)


def _blow_up(k: int) -> str:
    return f"in {{}} A, {{}} B\nout {{}} Z\n.* A() .{{{k}}} {{ !>Z({{}}); }}\n"


def _program(src: str, *, lazy: bool = False) -> CompiledProgram:
    return compile_source(src, name="blow-up", force_lazy=lazy).require()


# ---------------------------------------------------------------------------------------
# the conformance suite


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_conformance_case_on_the_lazy_dfa(case: Path, mode: str) -> None:
    with mock.patch.dict(os.environ, {LAZY_MODE_ENV: mode}):
        actual = run_case(case, lazy=True)
    problems = compare(read_jsonl(case / "expected.jsonl"), actual)
    assert not problems, f"{case.name} (lazy DFA, {mode}):\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------
# random programs


@SETTINGS
@given(data=st.data())
def test_simulation_cache_and_eager_dfa_agree(data: st.DataObject) -> None:
    src, spec = data.draw(programs())
    trace = data.draw(traces(spec))
    want = run_engine(compiled(src), trace)
    lazy = compiled(src, lazy=True)
    assert run_engine(lazy, trace, make=engine_in("simulate")) == want, src + "\n" + trace
    # A cache of two transitions turns over all the time (and never switches itself off).
    assert run_engine(lazy, trace, make=engine_in("cache", 2)) == want, src + "\n" + trace
    assert run_engine(lazy, trace, make=engine_in("auto", 1)) == want, src + "\n" + trace
    with mock.patch("eventscript.engine.lazy.step_expression", lambda *a: None):  # the general step
        assert run_engine(lazy, trace, make=engine_in("simulate")) == want, src + "\n" + trace


@SETTINGS
@given(data=st.data())
def test_snapshots_move_between_the_cache_and_the_simulation(data: st.DataObject) -> None:
    src, spec = data.draw(programs(grouped=data.draw(st.booleans())))
    prog = compiled(src, lazy=True)
    trace = data.draw(traces(spec))
    want = run_engine(compiled(src), trace)
    cut = data.draw(st.integers(1, len(parse_trace(SourceFile("<trace>", trace))) - 1))
    modes = iter(["cache", "simulate"] if data.draw(st.booleans()) else ["simulate", "cache"])
    got = run_engine(prog, trace, cut=cut, make=lambda p, s, c: Engine(p, s, c, lazy_mode=next(modes, "auto")))
    assert codes(got) == codes(want), f"{src}\n{trace}\ncut before item {cut}"


@SETTINGS
@given(data=st.data())
def test_simulation_merges_multiplied_actions_as_the_dfa(data: st.DataObject) -> None:
    src, _ = data.draw(tagged_programs())
    compiled(src)
    events = data.draw(st.lists(st.tuples(st.sampled_from(["A", "B"]), st.integers(0, 5)), max_size=12))
    want = outputs_per_transition(compiled(src), events)
    with mock.patch.dict(os.environ, {LAZY_MODE_ENV: "simulate"}):
        assert outputs_per_transition(compiled(src, lazy=True), events) == want, src


@SETTINGS
@given(data=st.data())
def test_position_set_steps_equal_the_subset_construction(data: st.DataObject) -> None:
    src, _ = data.draw(programs())
    prog = compiled(src, lazy=True)
    machine = prog.machine
    assert isinstance(machine, LazyDFA)
    ps = PositionSets(machine.efa, machine.occ, len(prog.program.symbols))
    start, units = machine.start()
    assert (ps.start, ps.initial_units) == (to_mask(start), units)
    seen, todo = {start}, [start]
    while todo and len(seen) < 200:
        key = todo.pop()
        m = to_mask(key)
        assert ps.accepting(m) == machine.accepting(key)
        row = transitions(machine.efa, key)
        assert ps.terminal(m) == (machine.accepting(key) and not row)
        for sym in range(ps.nsym):
            if sym not in row:
                assert ps.step(m, sym) == 0
                continue
            target, paths = row[sym]
            assert ps.step(m, sym) == to_mask(target)
            assert ps.units(m, sym) == machine.occ.units(merge(paths, machine.occ))
            if target not in seen:
                seen.add(target)
                todo.append(target)
    machine.clear_cache()


def test_position_set_tables_built_on_demand_step_alike() -> None:
    prog = _program(_blow_up(30), lazy=True)
    machine = prog.machine
    assert isinstance(machine, LazyDFA)
    eager = PositionSets(machine.efa, machine.occ, 2)
    with mock.patch("eventscript.automata.simulate.EAGER_TABLE_ENTRIES", 0):
        lazy = PositionSets(machine.efa, machine.occ, 2)
    assert eager.eager_tables and not lazy.eager_tables
    rnd = random.Random(5)
    m = eager.start
    for _ in range(500):
        sym = rnd.randrange(2)
        n = eager.step(m, sym)
        assert lazy.step(m, sym) == n and bits(n) == sorted(bits(n))
        m = n


# ---------------------------------------------------------------------------------------
# the cache


def test_cache_generations_keep_the_working_set() -> None:
    cache = TransitionCache(1, 4, adaptive=False)
    for m in range(4):
        cache.remember(m, 0, ("e", m))
    assert cache.generations == 1 and not cache.young[0]
    assert cache.recall(2, 0) == ("e", 2) and cache.young[0] == {2: ("e", 2)}
    for m in range(10, 13):
        cache.remember(m, 0, ("e", m))  # the young generation fills: the old one (0, 1, 3) goes
    assert cache.recall(0, 0) is None and cache.recall(2, 0) == ("e", 2)
    assert cache.enabled


def test_cache_switches_itself_off_when_it_thrashes() -> None:
    cache = TransitionCache(2, 10)
    for m in range(10 + 20 + 40):  # three generations, each twice as large as the one before
        cache.remember(m, m % 2, m)
    assert not cache.enabled and cache.entries == 0
    steady = TransitionCache(1, 10)
    for m in range(10):
        steady.remember(m, 0, m)
    for _ in range(5):
        for m in range(10):  # as the engine: the young generation, else moved back from the old one
            assert steady.young[0].get(m) == m or steady.recall(m, 0) == m
    assert steady.enabled and steady.generations == 1 and steady.capacity == 20  # fits now


def test_cache_grows_when_its_working_set_moves_between_generations() -> None:
    def access(cache: TransitionCache, m: int) -> bool:
        """As the engine steps: young generation, else old, else computed. True: computed."""
        if cache.young[0].get(m) is not None or cache.recall(m, 0) is not None:
            return False
        cache.remember(m, 0, m)
        return True

    cache = TransitionCache(1, 8)
    computed = [sum(access(cache, m) for m in range(12)) for _ in range(6)]
    assert cache.enabled and cache.capacity == 16
    assert computed[0] == 12 and computed[-1] == 0, computed  # the 12 now stay put


def test_a_thrashing_lazy_dfa_falls_back_and_a_small_one_stays_cached() -> None:
    rnd = random.Random(1)
    events = [("A" if rnd.random() < 0.5 else "B", {}) for _ in range(30_000)]
    counts = {}
    for k, lazy in ((20, False), (4, True)):
        out: list[Any] = []
        eng = Engine(_program(_blow_up(k), lazy=lazy), out.append, SimulatedTimeProvider(0), lazy_cache_states=1000)
        eng.start()
        for name, v in events:
            eng.feed(name, v)
        assert eng.lazy_cache is not None
        counts[k] = (eng.lazy_cache.enabled, len(out))
    assert counts[20][0] is False and counts[4][0] is True
    # Z is emitted whenever the event k back was an A.
    for k in (20, 4):
        assert counts[k][1] == sum(1 for i in range(k, len(events)) if events[i - k][0] == "A")


def test_lazy_dfa_steps_cost_about_as_much_as_dfa_steps() -> None:
    """Regression (issue 11): every new lazy-DFA state built its whole row and the cache was
    flushed every 10,000 states, ~85x slower than the DFA. CPU time, interleaved, generous bound."""
    rnd = random.Random(2)
    events = [("A" if rnd.random() < 0.5 else "B", {}) for _ in range(40_000)]

    def cpu(src: str) -> float:
        eng = Engine(_program(src), lambda e: None, SimulatedTimeProvider(0))
        eng.start()
        feed = eng.feed
        t = time.process_time()
        for name, v in events:
            feed(name, v)
        return time.process_time() - t

    dfa = min(cpu(_blow_up(8)) for _ in range(3))
    lazy = min(cpu(_blow_up(20)) for _ in range(3))
    assert lazy < 15 * dfa, (dfa, lazy)  # before: ~85x; now ~5x


def test_unknown_lazy_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="lazy_mode"):
        Engine(_program(_blow_up(2), lazy=True), lazy_mode="fast")


def test_a_lazy_machine_keeps_every_edge_through_json() -> None:
    # Regression: from_json dropped each edge's marker and origin (explain/ and upgrade/ read them).
    src = SourceFile("p.es", "in long A, long B\nout long O\n( A() B() { !>O(1); } | A() A() )*\n")
    comp = compile_source(src, force_lazy=True)
    program = comp.program
    assert program is not None and isinstance(program.machine, LazyDFA)
    again = LazyDFA.from_json(program.machine.to_json())
    assert again.efa.edges == program.machine.efa.edges
    assert any(e.marker >= 0 for row in again.efa.edges for es in row.values() for e in es)
