"""An ``$error`` about an event of a grouped program carries the event's group key once it is
computed, whether or not the key has an instance yet (docs/language.md 7.7).

The two errors that could miss it were those of a key's first event: the start state does not
accept it (``$error`` 2; the instance it created stays, see test_first_event.py), and its case
clause fails while classifying it. Both are checked for one- and two-value keys, on eager and lazy
DFAs (every lazy mode), compact engines on and off, through ``feed`` and ``feed_keyed``. An
error while computing the key itself has no key to carry.
"""

from __future__ import annotations

from typing import Any

import pytest

from eventscript.automata.compile import compile_source
from eventscript.engine.engine import Engine
from eventscript.engine.events import Emitted
from eventscript.engine.time_provider import SimulatedTimeProvider

#: Programs (one value, two values): A's case clause fails for A == 0 ($error 4); B is not
#: accepted at the start ($error 2).
ONE = "in long A group(A % 5) case { 12 / A >= 3 ? Hi : Lo }, long B group(B % 5)\nout long O\n( Hi() B() | Lo() )*\n"
TWO = (
    'in long A group(A % 5, "k") case { 12 / A >= 3 ? Hi : Lo }, long B group(B % 5, "k")\n'
    "out long O\n( Hi() B() | Lo() )*\n"
)

ENGINES: dict[str, dict[str, Any]] = {
    "eager": {"compact": False},
    "eager-compact": {"compact": True},
    "lazy-cache": {"lazy_mode": "cache"},
    "lazy-simulate": {"lazy_mode": "simulate"},
}


def _engine(src: str, kind: str) -> tuple[Engine, list[Emitted]]:
    lazy = kind.startswith("lazy")
    out: list[Emitted] = []
    engine = Engine(
        compile_source(src, name="k", force_lazy=lazy).require(), out.append, SimulatedTimeProvider(), **ENGINES[kind]
    )
    assert (engine.positions is not None) == lazy
    assert engine.compact == (kind == "eager-compact")
    return engine, out


def _errors(out: list[Emitted]) -> list[tuple[int, tuple[Any, ...] | None]]:
    return [(e.value[0], e.key) for e in out if e.is_error]


@pytest.mark.parametrize("keyed", [False, True], ids=["feed", "feed_keyed"])
@pytest.mark.parametrize("kind", list(ENGINES))
@pytest.mark.parametrize(("src", "key"), [(ONE, lambda k: (k,)), (TWO, lambda k: (k, "k"))], ids=["one", "two"])
def test_errors_about_a_new_key_carry_it(src: str, key: Any, kind: str, keyed: bool) -> None:
    engine, out = _engine(src, kind)

    def feed(name: str, value: int) -> None:
        if keyed:
            engine.feed_keyed(name, value, key(value % 5))
        else:
            engine.feed(name, value)

    feed("B", 2)  # not accepted at the start, but it made the key's instance (a compact table keeps none)
    assert _errors(out) == [(2, key(2))] and engine.instance_count == (0 if kind == "eager-compact" else 1)
    feed("A", 0)  # 12 / 0 fails while classifying the key's first event (then Lo: 0 >= 3 is false)
    assert _errors(out) == [(2, key(2)), (4, key(0))]
    feed("A", 0)  # again: key 0 has an instance now (unless it retired), the error its key
    feed("A", 1)  # Hi, key 1
    feed("A", 6)  # key 1 at B: Hi is unexpected there
    assert _errors(out)[2:] == [(4, key(0)), (2, key(1))]


def test_an_error_computing_the_key_has_none() -> None:
    engine, out = _engine("in long A group(10 / A)\nout long O\n( A() )*\n", "eager")
    engine.feed("A", 0)
    assert _errors(out) == [(4, None)]
