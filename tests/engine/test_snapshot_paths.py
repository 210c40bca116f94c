"""Snapshots taken on the direct path (one msgpack call, ``Engine._snapshotter``) are the bytes
of the generic encoding (``context.encode``), which the changelog format and the backfill's
hand-over are defined by: for plain variables, one flat structure or array (a list met once),
several of them (distinct lists), and the generic path's own cases (one list in two variables,
arrays of arrays), with unset variables and fields, and they restore to the same values."""

from __future__ import annotations

from typing import Any

import pytest

from eventscript.automata.compile import compile_source
from eventscript.engine import context
from eventscript.engine.engine import Engine
from eventscript.engine.time_provider import SimulatedTimeProvider

HEAD = "in {string k; double v; long sent;} R group(R.k)\nout long O\n"


def _generic(engine: Engine, ctx: Any) -> bytes:
    return context.encode(ctx.state.key, ctx.vars, ctx.key, None, ctx.terminated, None, 0)


@pytest.mark.parametrize(
    "body",
    [
        "{ n = 0; } ( R(r) { n = n + 1; } )*",  # a counter and the event's structure
        "( R(r) { a = new long[2]; a[1] = r.sent; s = r; } )*",  # a flat array and two distinct structures
        "( R(r) { s = r; } )*",  # one structure in two variables: the generic path numbers it
        "( R(r) { a = new long[2][]; a[0] = new long[1]; } )*",  # an array of arrays
        "( R(r) { d = r.v; } R(q) { !>O(q.sent); } )*",  # r set, q unset for a while
    ],
)
def test_direct_snapshots_are_the_generic_bytes(body: str) -> None:
    prog = compile_source(HEAD + body + "\n", name="s").require()
    for compact in (True, False):
        engine = Engine(prog, None, SimulatedTimeProvider(), compact=compact, retire=False)
        for i in range(6):
            engine.feed("R", [f"k{i % 3}", i * 0.5, i])
        contexts = list(engine.contexts.values())
        assert len(contexts) == 3
        for ctx in contexts:
            data = engine.snapshot(ctx)
            assert data == _generic(engine, ctx)
            again = Engine(prog).restore(data)
            assert again.vars == ctx.vars and again.key == ctx.key
