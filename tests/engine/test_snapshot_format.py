"""Snapshot format 3 (issue 22): each snapshot names the program version that wrote it, formats 1
and 2 still read, and a format this build does not know is refused saying what to do (the
rolling-upgrade protection: a worker never misreads a newer worker's state)."""

from __future__ import annotations

import msgpack
import pytest

from eventscript.automata.compile import compile_source
from eventscript.engine import context
from eventscript.engine.engine import Engine
from eventscript.engine.values import UNSET

COUNTER = """
in {string k;} Tick group(Tick.k)
out {long n;} Count
{ n = 0; } ( Tick() { n = n + 1; !>Count({n: n}); } )*
"""


def test_an_engine_writes_its_program_tag_and_restores_it() -> None:
    prog = compile_source(COUNTER, name="c").require()
    engine = Engine(prog, compact=False, program_tag=0xBE11CFC6)
    ctx = engine.feed("Tick", ["a"])
    assert ctx is not None
    data = engine.snapshot(ctx)
    assert msgpack.unpackb(data)[0] == 3
    assert context.snapshot_tag(data) == 0xBE11CFC6
    assert Engine(prog).restore(data).vars == [1]
    assert context.snapshot_tag(Engine(prog).snapshot(ctx)) is None  # a host that names no version


def test_formats_1_and_2_still_read_without_a_tag() -> None:
    v1 = msgpack.packb([1, 4, [7, "x"], ["k"], [10, 1, 2], False])
    v2 = msgpack.packb([2, 4, [7, "x"], ["k"], None, False, "origin", 3])
    assert context.decode(v1) == context.ContextSnapshot(4, [7, "x"], ("k",), (10, 1, 2), False, None, 0)
    assert context.decode(v2).origin == "origin"
    assert context.snapshot_tag(v1) is None and context.snapshot_tag(v2) is None


def test_a_newer_format_says_what_is_wrong_and_what_to_do() -> None:
    v4 = msgpack.packb([4, 4, [], ["k"], None, False, None, 0, 1, "more"])
    with pytest.raises(ValueError, match=r"format 4, written by a newer EventScript.*reads formats 1 to 3.*reset"):
        context.decode(v4)
    with pytest.raises(ValueError, match="known version"):
        context.decode(msgpack.packb(["not", "a", "snapshot"]))


def test_a_format_2_reader_refuses_format_3() -> None:
    """What a worker from before format 3 checks (its ``decode_payload``): (version, length)."""
    data = context.encode(1, [2], ("k",), None, tag=5)
    payload = msgpack.unpackb(data)
    assert (payload[0], len(payload)) not in ((1, 6), (2, 8))


def test_retag_keeps_the_variables_byte_for_byte() -> None:
    shared = [1, 2]
    data = context.encode(3, [shared, shared, UNSET, {"o": 1}], ("k",), (5, 0, 1), False, "o", 2)
    again = context.retag(data, 77)
    assert context.snapshot_tag(again) == 77
    before, after = context.decode(data), context.decode(again)
    assert after == before and after.origin == "o" and after.fires == 2
    assert after.variables[0] is after.variables[1]


QUIET = """
in {string k;} Tick group(Tick.k)
out {string k;} Quiet
( Tick()+ elapse[3 seconds]() { !>Quiet({k: group[0]}); } )*
"""


def test_what_set_a_timer_is_kept_with_it_in_the_snapshot() -> None:
    """``Engine.arm_of`` names what sets each timer; the snapshot keeps it as the pending timer's
    fourth item, and a restored instance has it again (its timer's outputs are ordered by it
    downstream: ``task/streams.py``). A timer without one keeps three items."""
    from eventscript.engine.time_provider import SimulatedTimeProvider, armed

    prog = compile_source(QUIET, name="q").require()
    engine = Engine(prog, SimulatedTimeProvider(0), compact=False)
    plain = engine.feed("Tick", ["a"])
    assert plain is not None and len(msgpack.unpackb(engine.snapshot(plain))[4]) == 3
    engine.arm_of = lambda: b"7000,1,42,ticks:0:9"
    ctx = engine.feed("Tick", ["b"])
    assert ctx is not None and armed(ctx.timer) == b"7000,1,42,ticks:0:9"
    data = engine.snapshot(ctx)
    assert msgpack.unpackb(data)[4][3] == b"7000,1,42,ticks:0:9"
    assert context.decode(data).armed == b"7000,1,42,ticks:0:9"
    again = Engine(prog, SimulatedTimeProvider(0), compact=False).restore(data)
    assert armed(again.timer) == b"7000,1,42,ticks:0:9"
    bad = msgpack.unpackb(data)
    bad[4][3] = ["x"]
    with pytest.raises(ValueError, match="malformed timer"):
        context.decode(msgpack.packb(bad))
