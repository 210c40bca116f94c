"""Runs of records that each carry their event name (issue 26: the worker's fast path refused an
input whose records name their event in a header or a field, ``event_from``).

Such a run feeds each record by ``feed_keyed(name, value, key)``, its key from the record's own
input's key function (``Engine.key_functions``, one lookup per record; a name not there is
undeclared and goes to ``feed``, which reports it). Random programs of several inputs run over
traces mixing their names and an undeclared one, on the compact engine, on contexts and on the
worker's engine (``track_dirty``): the run must give the outputs and instances ``feed`` gives
per event.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from test_case_classes import VALUES, case_programs
from test_feed_many import MODES, _batches

from eventscript.automata.compile import compile_source
from eventscript.automata.compiled import CompiledProgram
from eventscript.engine.engine import Engine
from eventscript.engine.events import Emitted
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.language.source import SourceFile
from eventscript.tester.trace import parse_trace
from reference.compare import compiles
from reference.generate import START, micros_of, render


def _run(prog: CompiledProgram, plan: list[Any], mode: str, named: bool) -> tuple[Any, ...]:
    """Outputs and live instances after ``plan``: each event by ``feed``, or (``named``) as a
    host's run of named records feeds it."""
    clock = SimulatedTimeProvider()
    out: list[Emitted] = []
    engine = Engine(prog, out.append, clock, **MODES[mode][1])
    keys = engine.key_functions
    started = False
    for step in plan:
        if isinstance(step, int):
            if started:
                clock.advance_to(step)
            else:
                clock.set_now(step)
                started = True
            continue
        for name, value in step:
            key_fn = keys.get(name) if named else None
            if key_fn is None:
                engine.feed(name, value)
            else:
                engine.feed_keyed(name, value, key_fn(None, value))
        clock.run_due()
    live = sorted(repr((ctx.gk, engine.snapshot(ctx))) for ctx in engine.contexts.values())
    return repr([(e.name, e.value, e.time, e.key) for e in out]), live


@st.composite
def named_traces(draw: st.DrawFn) -> str:
    """Events of T, U (values of several characters, whose key is not T's ``ev[0]``) and an
    undeclared Z, in any order, at a few instants."""
    start = micros_of(START)
    ms = 0
    items: list[tuple[Any, ...]] = [("time", start)]
    for _ in range(draw(st.integers(1, 40))):
        if draw(st.integers(0, 7)) == 0:
            ms += 1000
            items.append(("time", start + ms * 1000))
            continue
        name = draw(st.sampled_from(["T", "T", "T", "U", "U", "Z"]))
        if name == "T":
            items.append(("event", "T", draw(st.sampled_from(VALUES)), draw(st.booleans())))
        else:
            items.append(("event", name, draw(st.sampled_from(["ab", "ba", "a", "cab"]))))
    items.append(("time", start + (ms + 65_000) * 1000))
    return render(items, start)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_a_run_of_named_records_feeds_as_feed_does(data: st.DataObject) -> None:
    source = data.draw(case_programs())
    assume(compiles(source))
    text = data.draw(named_traces())
    prog = compile_source(source, name="p").require()
    plan = _batches(prog, parse_trace(SourceFile("<trace>", text)), [1000])
    note(f"program:\n{source}\ntrace:\n{text}")
    for mode in ("eager", "contexts", "dirty"):
        assert _run(prog, plan, mode, True) == _run(prog, plan, mode, False), mode


def test_key_functions_name_every_grouped_input() -> None:
    grouped = Engine(
        compile_source(
            "in {string s; long v;} T group(T.s), string U group(U)\nout long O\n( T() U() { !>O(1); } )*\n",
            name="p",
        ).require(),
        lambda e: None,
    )
    keys = grouped.key_functions
    assert set(keys) == {"T", "U"} and isinstance(keys, MappingProxyType)
    assert keys["T"](None, ["x", 3]) == grouped.group_key("T", ["x", 3]) and keys["U"](None, "y") == ("y",)
    with pytest.raises(TypeError):
        keys["V"] = keys["T"]  # type: ignore[index]  # read-only: the engine's own
    ungrouped = Engine(compile_source("in long T\nout long O\n( T() { !>O(1); } )*\n", name="q").require(), print)
    assert dict(ungrouped.key_functions) == {}
