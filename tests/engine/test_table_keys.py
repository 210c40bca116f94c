"""The key an input's events are looked up by (``CodeGen.table_key``, worked out once per input):
the event itself for a program grouped by its value, a component of it, or a tuple of several;
the feed of contexts and the compact feed name it as they did when each computed it apart."""

from __future__ import annotations

import pytest

from eventscript.automata.compile import compile_source
from eventscript.engine.engine import Engine

BARE = "in string A group(A)\nout string O\n( A() { !>O(group[0]); } )*\n"
FIELD = "in {string s; long n;} A group(A.s)\nout string O\n( A() { !>O(group[0]); } )*\n"
TWO = "in {string s; long n;} A group(A.s, A.n)\nout string O\n( A() { !>O(group[0]); } )*\n"


def _lines(source: str, compact: bool, keyed: bool = False) -> list[str]:
    engine = Engine(compile_source(source, name="p").require(), lambda e: None, compact=compact)
    gen = engine._code.gen
    text = gen.feed(True, keyed=True) if keyed else engine._feed_source
    return [line.strip() for line in text.split("\n")]


def test_the_contexts_feed_looks_the_event_itself_up() -> None:
    bare = _lines(BARE, compact=False)
    assert "ctx = _cget(ev)" in bare and not any(line.startswith("gk =") for line in bare)  # no copy
    assert "gk = ev[0]" in _lines(FIELD, compact=False) and "ctx = _cget(gk)" in _lines(FIELD, compact=False)


@pytest.mark.parametrize("compact", [False, True])
def test_a_key_of_two_values_is_their_tuple(compact: bool) -> None:
    assert "gk = (ev[0], ev[1],)" in _lines(TWO, compact)


def test_a_keyed_feed_takes_the_hosts_key() -> None:
    assert _lines(BARE, compact=False, keyed=True)[2:4] == ["gk = key[0]", "ctx = _cget(gk)"]
    assert _lines(TWO, compact=False, keyed=True)[2:4] == ["gk = key", "ctx = _cget(gk)"]
