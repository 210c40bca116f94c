"""``Engine.feed_many``: a batch of events gives exactly what ``feed`` per event gives (issue 11
item 2: hosts that hold batches save the call per event).

Random programs (the differential generator's, with timers, case clauses, structures, keys that
fail, ungrouped ones; and grouped programs with variables and initial actions, whose engines are
compact records) run over random traces twice per engine mode: each event fed on its own, and the
same events cut into batches of random sizes, due timers fired between batches in both runs.
The modes cover every kind of generated feed: compact state numbers and records, contexts
(``compact=False``), contexts tracked for a host (``track_dirty``), the lazy DFA's cache, its
simulation, and a cache so small that it switches itself off in the middle of a batch.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from test_retire import RETIRING_STATEMENTS, keyed_programs

from eventscript.automata.compile import compile_source
from eventscript.automata.compiled import CompiledProgram
from eventscript.engine import engine as engine_module
from eventscript.engine.encoding import DecodeError, decode
from eventscript.engine.engine import Engine
from eventscript.engine.events import Emitted
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.language.source import SourceFile
from eventscript.tester.pipeline import run_trace
from eventscript.tester.trace import Timestamp, TraceItem, event_argument, parse_trace, typed_argument
from reference import generate
from reference.compare import compiles

#: Engine mode: (compile the program to a lazy DFA, Engine keyword arguments).
MODES: dict[str, tuple[bool, dict[str, Any]]] = {
    "eager": (False, {}),  # compact when grouped without timers
    "contexts": (False, {"compact": False}),
    "dirty": (False, {"track_dirty": True}),
    "cache": (True, {"lazy_mode": "cache"}),
    "simulate": (True, {"lazy_mode": "simulate"}),
    "thrash": (True, {"lazy_mode": "auto", "lazy_cache_states": 1}),
}

Batch = list[tuple[str, Any]]


def _batches(prog: CompiledProgram, items: list[TraceItem], sizes: list[int]) -> list[int | Batch]:
    """The trace as timestamps and batches of decoded events, cut at every timestamp and by
    ``sizes`` (cycled) between them; events whose value does not decode are left out."""
    inputs = {i.name: i for i in prog.program.inputs}
    out: list[int | Batch] = []
    run: Batch = []
    k = 0

    def cut() -> None:
        nonlocal run, k
        if run:
            out.append(run)
            run, k = [], k + 1

    for item in items:
        if isinstance(item, Timestamp):
            cut()
            out.append(item.time)
            continue
        raw, declared = event_argument(item), inputs.get(item.name)
        try:
            run.append((item.name, raw if declared is None else decode(typed_argument(raw, declared.ty), declared.ty)))
        except DecodeError:
            continue
        if len(run) >= sizes[k % len(sizes)]:
            cut()
    cut()
    return out


def _run(prog: CompiledProgram, plan: list[int | Batch], kwargs: dict[str, Any], batched: bool) -> tuple[Any, ...]:
    """Outputs and instances after running ``plan``, each batch by ``feed_many`` or ``feed`` per
    event; due timers fire after each batch (they cannot fire within one: time does not move)."""
    clock = SimulatedTimeProvider()
    out: list[Emitted] = []
    engine = Engine(prog, out.append, clock, **kwargs)
    started = False
    for step in plan:
        if isinstance(step, int):
            if started:
                clock.advance_to(step)
            else:
                clock.set_now(step)
                engine.start()
                started = True
        elif batched:
            engine.feed_many(iter(step))  # read lazily, as a host's generator would be
        else:
            for name, value in step:
                engine.feed(name, value)
        clock.run_due()
    keys = sorted(map(repr, engine.contexts)) if engine.grouped else []
    return repr([(e.program, e.name, e.value, e.time, e.key) for e in out]), engine.instance_count, keys  # (repr: nan)


def _check(source: str, text: str, sizes: list[int], mode: str) -> None:
    lazy, kwargs = MODES[mode]
    prog = compile_source(source, name="p", force_lazy=lazy).require()
    plan = _batches(prog, parse_trace(SourceFile("<trace>", text)), sizes)
    note(f"program:\n{source}\ntrace:\n{text}\nbatches: {plan}")
    assert _run(prog, plan, kwargs, True) == _run(prog, plan, kwargs, False)


SIZES = st.lists(st.integers(1, 12), min_size=1, max_size=6)
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


@SETTINGS
@given(data=st.data())
def test_random_programs_batched_and_not(data: st.DataObject) -> None:
    source, spec = data.draw(generate.programs())
    assume(compiles(source))
    _, text = data.draw(generate.traces(spec))
    _check(source, text, data.draw(SIZES), data.draw(st.sampled_from(list(MODES))))


@SETTINGS
@given(data=st.data())
def test_random_programs_with_variables_batched_and_not(data: st.DataObject) -> None:
    """Grouped programs that count, store and end often (records in a compact engine)."""
    source, spec = data.draw(
        keyed_programs(
            [*RETIRING_STATEMENTS, "!>O(100 / v);", "!>O(group[0]);"],
            inits=("", '{ n = 0; d = 0.0; s = ""; t = now(); }', "{ !>T(0); }"),
        )
    )
    assume(compiles(source))
    _, text = data.draw(generate.traces(spec))
    _check(source, text, data.draw(SIZES), data.draw(st.sampled_from(list(MODES))))


@pytest.mark.parametrize("compact", [True, False])
def test_a_batch_is_read_lazily_and_reports_errors_in_order(compact: bool) -> None:
    """Each pair is taken when its event runs: what a generator does between two (a host fires
    timers there) comes between the two events' outputs; undeclared names are $error 1."""
    src = "in long A group(A % 2)\nout long O\n( A(x) { !>O(x); } )*\n"
    out: list[Any] = []
    engine = Engine(compile_source(src, name="p").require(), lambda e: out.append((e.name, e.value)), compact=compact)

    def events() -> Any:
        yield "A", 1
        out.append("between")
        yield "Nope", 0
        yield "A", 2

    engine.feed_many(events())
    assert out[0] == ("O", 1) and out[1] == "between" and out[2][0] == "$error" and out[2][1][0] == 1
    assert out[3] == ("O", 2) and engine.instance_count == 2


def test_the_lazy_cache_switching_itself_off_within_a_batch() -> None:
    """A lazy DFA whose cache thrashes falls back to simulating every step (``_SIM``) while a
    batch runs: the rest of the batch simulates, as feed per event would."""
    src = "in long A group(A % 3), long B group(B % 3)\nout long Z\n.* A(x) .{12} { !>Z(x); }\n"
    prog = compile_source(src, name="p", state_limit=64).require()
    events = [("A" if (i * 7919) % 5 < 2 else "B", (i * 104729) % 1000) for i in range(3000)]
    outs: list[list[Any]] = [[], []]
    engines = [
        Engine(prog, lambda e, k=k: outs[k].append((e.value, e.key)), lazy_mode="auto", lazy_cache_states=8)
        for k in range(2)
    ]
    engines[0].feed_many(events)
    for name, value in events:
        engines[1].feed(name, value)
    assert all(e.lazy_cache is not None and not e.lazy_cache.enabled for e in engines)  # switched off
    assert outs[0] == outs[1] and len(outs[0]) > 100


def test_the_tester_fires_a_timer_due_now_between_two_events_of_one_instant() -> None:
    """A timer that an event makes due at once fires before the next event of the same
    timestamp (the tester fires what is due after each trace event: ``SimulatedHost.run``)."""
    src = "in long A, long B\nout long Z\n( A() elapse[0 msec]() { !>Z(1); } | B() { !>Z(2); } )*\n"
    lines: list[dict[str, Any]] = []
    run_trace(
        [compile_source(src, name="p").require()],
        parse_trace(
            SourceFile("<trace>", "[2026-01-01 00:00:00.000]\nA(1)\nB(2)\nA(3)\n[2026-01-01 00:00:01.000]\nB(4)\n")
        ),
        lambda line: lines.append(line.to_json()),
    )
    assert [(line["event"], line["value"]) for line in lines] == [("Z", 1), ("Z", 2), ("Z", 1), ("Z", 2)]


def test_a_batch_after_a_compact_engine_turns_normal_uses_the_new_feed() -> None:
    """``feed_many`` is made from the current feed: after an output handler turned the compact
    engine into one of contexts, batches run the contexts' feed."""
    src = "in string A group(A), string B group(B)\nout string Z\n( .* A() B() { !>Z(group[0]); } )*\n"
    prog = compile_source(src, name="p").require()
    seen: list[list[Any]] = [[], []]
    engines = [Engine(prog, lambda e, k=k: seen[k].append(e.value)) for k in range(2)]
    assert all(e.compact for e in engines)
    first, then = [("A", "x"), ("A", "y"), ("B", "x")], [("B", "y"), ("A", "x"), ("B", "x")]
    engines[0].feed_many(first)
    for name, value in first:
        engines[1].feed(name, value)
    for k, engine in enumerate(engines):
        engine.set_output_handler("Z", lambda ctx, value, k=k: seen[k].append((ctx.key, value)))
        assert not engine.compact
    engines[0].feed_many(then)
    for name, value in then:
        engines[1].feed(name, value)
    assert seen[0] == seen[1] == ["x", (("y",), "y"), (("x",), "x")]


def test_the_batch_feed_is_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Made on the first call, also through the method a host bound before it (benchmarks do)."""
    made: list[str] = []
    real = engine_module.feed_many_source
    monkeypatch.setattr(engine_module, "feed_many_source", lambda *args: made.append("") or real(*args))
    engine = Engine(compile_source("in long A group(A)\nout long O\nA() { !>O(1); }\n", name="p").require())
    bound = engine.feed_many
    for k in range(3):
        bound([("A", k)])
        engine.feed_many([("A", k + 10)])
    assert len(made) == 1 and engine.instance_count == 0


class _CountingClock(SimulatedTimeProvider):
    """Simulated time that counts its readings; ``ticks``: a clock that moves by itself, one µs a
    reading (``moves_by_itself``), as a provider reading a real clock on each call would."""

    def __init__(self, ticks: bool = False) -> None:
        super().__init__(1_000)
        self.moves_by_itself = ticks
        self.readings = 0

    def now(self) -> int:
        self.readings += 1
        if self.moves_by_itself:
            self._now += 1
        return self._now


#: A grouped program whose compact feed emits inline (``CodeGen.emit_by_key``), one output a
#: ``B`` after an ``A``, with a string constant that reads like the clock's call.
_EMITS = 'in long A group(A % 2), long B group(B % 2)\nout string O\n( .* A() B() { !>O("_now()"); } )*\n'


def test_a_batch_reads_a_clock_that_holds_still_once() -> None:
    """On a clock only its host moves, a batch reads it once, not once per emission (issue 26:
    a Python call fewer per match); every output carries that time, as feed per event gives it,
    and the program's constant "_now()" is emitted as written."""
    clock = _CountingClock()
    out: list[Emitted] = []
    engine = Engine(compile_source(_EMITS, name="p").require(), out.append, clock)
    assert engine.compact
    engine.feed_many([("A", 1), ("B", 3), ("A", 2), ("B", 4), ("A", 5), ("B", 7)])
    assert clock.readings == 1
    assert [(e.value, e.time, e.key) for e in out] == [("_now()", 1_000, (k,)) for k in (1, 0, 1)]


def test_a_batch_reads_a_clock_that_moves_by_itself_per_emission() -> None:
    """A provider whose time moves with no call of its host (``moves_by_itself``) is read at each
    emission, as by ``feed`` per event: the outputs carry the times they were made at."""
    clock = _CountingClock(ticks=True)
    out: list[Emitted] = []
    engine = Engine(compile_source(_EMITS, name="p").require(), out.append, clock)
    engine.feed_many([("A", 1), ("B", 3), ("A", 2), ("B", 4)])
    assert [e.time for e in out] == [1_001, 1_002] and clock.readings == 2
