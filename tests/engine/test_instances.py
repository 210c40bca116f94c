"""Instances kept small and snapshots kept cheap (issue 11 item 2, issue 10 item 4).

- snapshot → restore → snapshot gives the same bytes, for random programs (eager and lazy DFA,
  grouped and not) after random traces, timers included;
- random variable values (UNSET, 64-bit longs, doubles, strings, nested lists shared by
  reference, object values) survive the encoding, sharing included;
- snapshots of format 1 and 2 written by earlier versions still restore;
- the inlined actions of the feed behave as the called ones;
- hosts see group-key tuples (``engine.contexts``, ``ctx.key``) whatever the table stores;
- an instance of a program without variables holds no list of its own.
"""

from __future__ import annotations

import math
import tracemalloc
from typing import Any
from unittest import mock

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_properties import SETTINGS, codes, compiled, programs, run_engine, traces

from eventscript.automata.compile import compile_source
from eventscript.engine import context
from eventscript.engine import engine as engine_module
from eventscript.engine.context import NO_VARIABLES
from eventscript.engine.engine import Engine
from eventscript.engine.events import Emitted
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.engine.values import UNSET
from eventscript.language.source import SourceFile
from eventscript.tester.trace import Timestamp, event_argument, parse_trace


def run_to_end(prog: Any, trace: str) -> tuple[Engine, SimulatedTimeProvider]:
    """Run a trace like the tester, but keep the engine (and its instances) at the end."""
    clock = SimulatedTimeProvider()
    engine = Engine(prog, lambda e: None, clock)
    started = False
    for item in parse_trace(SourceFile("<trace>", trace)):
        if isinstance(item, Timestamp):
            if not started:
                clock.set_now(item.time)
                engine.start()
                started = True
            clock.advance_to(item.time)
        else:
            engine.feed_json(item.name, event_argument(item))
    return engine, clock


def instances(engine: Engine) -> list[Any]:
    if engine.grouped:
        return list(engine.contexts.values())
    return [] if engine.single is None else [engine.single]


@SETTINGS
@given(data=st.data())
def test_snapshot_restore_snapshot_gives_the_same_bytes(data: st.DataObject) -> None:
    src, spec = data.draw(programs())
    prog = compiled(src, lazy=data.draw(st.booleans()))
    engine, clock = run_to_end(prog, data.draw(traces(spec)))
    snaps = [engine.snapshot(ctx) for ctx in instances(engine)]
    fresh = Engine(prog, lambda e: None, SimulatedTimeProvider(clock.now()))
    restored = [fresh.restore(s) for s in snaps]
    assert [fresh.snapshot(ctx) for ctx in restored] == snaps, src
    for old, new in zip(instances(engine), restored):
        assert (new.key, new.vars, new.terminated, new.tsym if new.timer else None) == (
            old.key,
            old.vars,
            old.terminated,
            old.tsym if old.timer else None,
        )
    assert fresh.instance_count == engine.instance_count


def values(depth: int = 2) -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.just(UNSET),
        st.integers(-(1 << 63), (1 << 63) - 1),
        st.booleans(),
        st.floats(allow_nan=False),
        st.text(max_size=8),
    )
    if depth == 0:
        return scalars
    return st.one_of(scalars, st.lists(values(depth - 1), max_size=4))


@SETTINGS
@given(variables=st.lists(values(), max_size=6), share=st.booleans(), obj=st.booleans())
def test_random_values_survive_the_encoding(variables: list[Any], share: bool, obj: bool) -> None:
    if share:  # one list reachable from two variables (and from inside a third)
        shared: list[Any] = [1, "x"]
        variables += [shared, shared, [shared, 2]]
    if obj:
        variables.append({"opaque": [1, 2.5, "three"]})
    data = context.encode([3, 5], variables, ("k", 7), (123, 2, 9), False, "origin", 4)
    snap = context.decode(data)
    assert snap.variables == variables
    assert (snap.state, snap.key, snap.timer, snap.terminated, snap.origin, snap.fires) == (
        [3, 5],
        ("k", 7),
        (123, 2, 9),
        False,
        "origin",
        4,
    )
    if share:
        a, b, c = snap.variables[-3 - obj : len(snap.variables) - obj]
        assert a is b and c[0] is a


def test_the_plain_packer_writes_what_the_general_encoder_writes() -> None:
    variables = [UNSET, 1, -(1 << 63), 2.5, math.inf, "s", True]
    payload = [context.FORMAT_VERSION, 3, variables, ["k"], [10, 1, 2], False, None, 0, None]
    assert context.pack_plain(payload) == context.encode(3, variables, ["k"], [10, 1, 2])  # type: ignore[arg-type]


def counter_engine(out: list[Emitted] | None = None) -> Engine:
    prog = compile_source(
        "in string Hit group(Hit)\nout long Count\n{ n = 0; }\n( Hit() { n = n + 1; !>Count(n); } )*\n", name="c"
    ).require()
    return Engine(prog, (out.append if out is not None else (lambda e: None)), SimulatedTimeProvider())


@pytest.mark.parametrize("version", [1, 2])
def test_snapshots_of_earlier_formats_restore(version: int) -> None:
    engine = counter_engine()
    engine.feed("Hit", "a")
    state = engine.contexts[("a",)].state.key
    payload = [version, state, [5], ["a"], None, False]
    if version == 2:
        payload += ["topic/0/17", 3]
    ctx = counter_engine().restore(msgpack.packb(payload))
    assert (ctx.key, ctx.vars, ctx.origin, ctx.fires) == (
        ("a",),
        [5],
        "topic/0/17" if version == 2 else None,
        3 if version == 2 else 0,
    )


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x93\x01\x02\x03",
        msgpack.packb([2, 0, 5, ["a"], None, False, None, 0]),
        msgpack.packb([2, 0, [0], ["a"], [1, 2], False, None, 0]),
        msgpack.packb([2, 0, [0], None, None, False, None, 0]),
        msgpack.packb([2, 0, [0], ["a", "b"], None, False, None, 0]),
    ],
)
def test_bad_snapshots_are_refused_with_a_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        counter_engine().restore(data)


def test_hosts_see_group_key_tuples() -> None:
    out: list[Emitted] = []
    engine = counter_engine(out)
    engine.feed("Hit", "a")
    engine.feed_keyed("Hit", "b", ("b",))
    ctx = engine.contexts[("a",)]
    assert ctx.key == ("a",) and out[0].key == ("a",) and out[1].key == ("b",)
    assert ("a",) in engine.contexts and "a" not in engine.contexts and ("zz",) not in engine.contexts
    assert sorted(engine.contexts) == [("a",), ("b",)] and len(engine.contexts) == 2
    assert engine.contexts.get(("b",)) is not None and engine.contexts.get("b") is None
    b = engine.contexts[("b",)]
    assert engine.holds(b) and engine.holds(ctx)
    del engine.contexts[("b",)]
    assert list(engine.contexts.keys()) == [("a",)] and engine.instance_count == 1
    assert not engine.holds(b) and engine.holds(ctx)
    with pytest.raises(ValueError):
        engine.contexts[("c",)] = ctx


def test_a_two_value_key_stays_a_tuple() -> None:
    prog = compile_source(
        "in {string a; long b;} E group(E.a, E.b)\nout string O\n( E(e) { !>O(group[0] + string(group[1])); } )*\n",
        name="t",
    ).require()
    out: list[Emitted] = []
    engine = Engine(prog, out.append, SimulatedTimeProvider(), retire=False)  # keep the instance to look at
    engine.feed("E", ["x", 1])
    engine.feed_keyed("E", ["x", 1], ("x", 1))
    assert [(e.value, e.key) for e in out] == [("x1", ("x", 1))] * 2
    assert list(engine.contexts) == [("x", 1)]
    snap = engine.snapshot(engine.contexts[("x", 1)])
    assert Engine(prog).restore(snap).key == ("x", 1)


def test_inlined_actions_behave_as_called_ones() -> None:
    """The same random programs and traces with the feed's inlining switched off."""

    @SETTINGS
    @given(data=st.data())
    def agree(data: st.DataObject) -> None:
        src, spec = data.draw(programs())
        prog = compiled(src)
        trace = data.draw(traces(spec))
        inlined = run_engine(prog, trace)
        with mock.patch.object(engine_module, "INLINE_BODIES", 0):
            called = run_engine(prog, trace)
        assert codes(inlined) == codes(called), f"{src}\n{trace}"

    agree()


def test_an_instance_without_variables_is_small() -> None:
    prog = compile_source("in string A group(A)\nout string Z\n( A() { !>Z(group[0]); } )*\n", name="s").require()
    engine = Engine(prog, retire=False)  # else every instance is released after its event
    keys = [f"key-{i}" for i in range(20_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in keys:
            engine.feed("A", k)
        per_key = (tracemalloc.get_traced_memory()[0] - before) / len(keys)
    finally:
        tracemalloc.stop()
    assert all(ctx.vars is NO_VARIABLES for ctx in engine.contexts.values())
    # the instance (88 bytes with its GC header) and its share of the table; was ~270
    assert per_key < 160, per_key
