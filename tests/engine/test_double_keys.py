"""A ``double`` group key has one form (docs/language.md 3.3): ``-0.0`` is the key ``0.0`` and
every NaN is one key, on every executor and feed, in the bytes a worker routes and stores a key
by, in the key a person asks the state about, and in the reference interpreter."""

from __future__ import annotations

import math
from typing import Any

import pytest

from conftest import run_program
from eventscript.automata.compile import compile_source
from eventscript.engine.encoding import decode
from eventscript.engine.engine import Engine
from eventscript.engine.events import Emitted
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.state.query import parse_key, store_key
from eventscript.task.partitioner import key_bytes, partition_of

SUM = """
in {double k; long n;} R group(R.k)
out long N
{ c = 0; }
( R(r) { c = c + r.n; !>N(c); } )*
"""
#: The same, grouped by the event value itself (a bare double) and by two components.
BARE = "in double R group(R)\nout long N\n{ c = 0; }\n( R(r) { c = c + 1; !>N(c); } )*"
TWO = "in {string s; double k;} R group(R.s, R.k)\nout long N\n{ c = 0; }\n( R(r) { c = c + 1; !>N(c); } )*"

NAN = float("nan")
ZEROS = [0.0, -0.0, 0.0]
NANS = [float("nan"), -float("nan"), NAN]  # (three objects, two signs: none equals another)


def _engine(source: str, force_lazy: bool, compact: bool) -> tuple[Engine, list[Emitted]]:
    out: list[Emitted] = []
    prog = compile_source(source, name="p", force_lazy=force_lazy).require()
    return Engine(prog, out.append, SimulatedTimeProvider(), compact=compact), out


@pytest.mark.parametrize("feed", ["feed", "feed_many", "feed_keyed"])
@pytest.mark.parametrize(("force_lazy", "compact"), [(False, True), (False, False), (True, False)])
@pytest.mark.parametrize("keys", [ZEROS, NANS], ids=["zeros", "nans"])
def test_equal_double_keys_are_one_instance_on_every_executor_and_feed(
    feed: str, force_lazy: bool, compact: bool, keys: list[float]
) -> None:
    engine, out = _engine(SUM, force_lazy, compact)
    ty = engine.input_type("R")
    events = [("R", decode({"k": k, "n": 10**i}, ty)) for i, k in enumerate(keys)]
    if feed == "feed":
        for name, ev in events:
            engine.feed(name, ev)
    elif feed == "feed_many":
        engine.feed_many(events)
    else:
        for name, ev in events:
            engine.feed_keyed(name, ev, engine.group_key(name, ev))
    assert [e.value for e in out] == [1, 11, 111]
    assert len({repr(e.key) for e in out}) == 1
    (k,) = out[0].key  # type: ignore[misc]
    assert math.isnan(k) if math.isnan(keys[0]) else math.copysign(1.0, k) == 1.0 and k == 0.0


@pytest.mark.parametrize(
    ("source", "trace"),
    [
        (SUM, "R({k: -0.0, n: 1}) R({k: 0.0, n: 10}) R({k: 0.5, n: 100}) R({k: -0.0, n: 1000})"),
        (SUM, 'R({k: "NaN", n: 1}) R({k: "NaN", n: 10})'),
        (BARE, "R(-0.0) R(0.0) R(0)"),
        (TWO, 'R({s: "a", k: -0.0}) R({s: "a", k: 0.0}) R({s: "b", k: 0.0})'),
    ],
    ids=["zeros", "nans", "bare", "two-components"],
)
def test_the_tester_prints_one_form_of_each_key(source: str, trace: str) -> None:
    lines = run_program(source, f"[2026-01-01 00:00:00] {trace}")
    assert all(line["event"] != "$error" for line in lines), lines
    keys = [line["key"] for line in lines]
    assert "-0.0" not in repr(keys)
    # as many instances as the keys' one forms: each instance's count goes up by one per event
    if source is not SUM:
        firsts = [line["value"] for line in lines].count(1)
        assert firsts == len({repr(k) for k in keys})


def test_the_bytes_a_worker_routes_and_stores_a_key_by_are_one() -> None:
    engine, _ = _engine(SUM, False, True)
    types = engine.program.key_types
    ty = engine.input_type("R")
    routed = {key_bytes(engine.group_key("R", decode({"k": k, "n": 1}, ty)), types) for k in ZEROS}
    assert routed == {b"[0.0]"}
    routed_nan = {key_bytes(engine.group_key("R", decode({"k": k, "n": 1}, ty)), types) for k in NANS}
    assert routed_nan == {b'["NaN"]'}
    assert len({partition_of(b, 12) for b in routed}) == 1


@pytest.mark.parametrize("typed", ["-0.0", "[-0.0]", "0.0", "0"])
def test_a_key_asked_about_is_the_key_the_engine_keeps(typed: str) -> None:
    prog = compile_source(SUM, name="p").require()
    assert store_key(prog, parse_key(prog, typed)) == b"[0.0]"


def test_the_reference_interpreter_keeps_one_form_too() -> None:
    from reference.generate import START
    from reference.interpreter import Trace, micros_of, run_reference

    t0 = micros_of(START)
    items: list[tuple[Any, ...]] = [
        ("time", t0),
        ("event", "R", {"k": -0.0, "n": 1}),
        ("event", "R", {"k": 0.0, "n": 10}),
        ("event", "R", {"k": NAN, "n": 100}),
        ("event", "R", {"k": float("nan"), "n": 1000}),
    ]
    assert [line["value"] for line in run_reference(SUM, Trace(items))] == [1, 11, 100, 1100]
