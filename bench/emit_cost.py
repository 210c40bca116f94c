"""What the realistic program's batch feed pays that the hand loop of bench/engine.py does not
(issue 26: ``feed_many`` at 0.83-0.89x the loop, the goal 0.9x): the generated loop
(``Engine.feed_many``, printed by ``--show``) is the loop's own statements, but for the event's
name check and each match's ``Emitted`` (an object of six slots with the emission time and type,
which the loop's bare tuple lacks). Measured here alone, in functions of local names, the
variants interleaved, thread CPU per operation (ns), least and median of ``--rounds``:

- ``emitted``: the generated code's emission (``object.__new__`` and six slot stores, the time
  provider's ``now()``, the consumer call);
- ``namedtuple``: the same fields as a ``typing.NamedTuple`` made with ``tuple.__new__`` (C), the
  cheapest way to keep named fields;
- ``tuple``: the loop's kind of output, a bare tuple;
- ``name ==`` / ``name is``: the check of an event's name, by equality (the generated code) and by
  identity first.

Usage: python bench/emit_cost.py [--ops N] [--rounds R] [--show]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))

from eventscript.engine.events import Emitted
from eventscript.engine.time_provider import SimulatedTimeProvider


class Fields(NamedTuple):
    program: str
    name: str
    value: Any
    ty: Any
    time: int
    key: Any


def variants(n: int, out: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """The timed functions, each doing its operation ``n`` times; the emissions go to ``out``
    (default: a consumer that keeps the last only, as bench/engine.py's)."""
    now = SimulatedTimeProvider(0).now
    if out is None:
        out = collections.deque(maxlen=1).append
    names = ["Trade"] * n

    def emitted(_new=object.__new__, _em=Emitted, _pn="p", _ty=None, _now=now, _c=out, gk="k", x=1.5) -> None:
        for _ in range(n):
            m = _new(_em)
            m.program = _pn
            m.name = "Match"
            m.value = [gk, 3, x]
            m.ty = _ty
            m.time = _now()
            m.key = (gk,)
            _c(m)

    def namedtuple(_tn=tuple.__new__, _cls=Fields, _pn="p", _ty=None, _now=now, _c=out, gk="k", x=1.5) -> None:
        for _ in range(n):
            _c(_tn(_cls, (_pn, "Match", [gk, 3, x], _ty, _now(), (gk,))))

    def bare_tuple(_pn="p", _ty=None, _now=now, _c=out, gk="k", x=1.5) -> None:
        for _ in range(n):
            _c((_pn, "Match", [gk, 3, x], _ty, _now(), (gk,)))

    def name_eq(names=names) -> None:
        for name in names:
            if name == "Trade":
                pass

    def name_is(names=names, _i="Trade") -> None:
        for name in names:
            if name is _i or name == _i:
                pass

    return {"emitted": emitted, "namedtuple": namedtuple, "tuple": bare_tuple, "name ==": name_eq, "name is": name_is}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--show", action="store_true", help="print the realistic program's generated feed_many")
    args = ap.parse_args()
    if args.show:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from engine import REALISTIC, T0
        from eventscript.automata.compile import compile_source
        from eventscript.engine.batch import feed_many_source
        from eventscript.engine.engine import Engine

        eng = Engine(compile_source(REALISTIC["full"], name="realistic").require(), print, SimulatedTimeProvider(T0))
        print(feed_many_source(eng._feed_source, eng._hoistable, not eng.time.moves_by_itself))
        return
    runs = variants(args.ops)
    cpu: dict[str, list[float]] = collections.defaultdict(list)
    for r in range(args.rounds):
        order = list(runs)
        for name in order[r % len(order) :] + order[: r % len(order)]:
            t = time.thread_time()
            runs[name]()
            cpu[name].append((time.thread_time() - t) / args.ops * 1e9)
    for name, ns in cpu.items():
        print(f"{name:12s} least {min(ns):6.1f} ns   median {statistics.median(ns):6.1f} ns")


if __name__ == "__main__":
    main()
