"""The compact feed's specialised steps under skewed keys and long batches (issue 26).

The realistic program's ``Down`` step tests its one acting state instead of reading two tables
(``SymbolPlan.acting``), and its feed reads the group key from the event where it needs it
rather than naming it first. Random programs of that shape -- a chain of classes with markers,
one action at its end, so that one state acts on the last class -- run over long traces whose
keys are skewed (one hot key, as Zipf-ordered keys are, so that a key comes back while its
last match is still in its record), fed by ``feed_many`` in large batches: they must give what
``feed`` gives per event, what the engine of contexts (no compact step) gives, and what the
reference interpreter gives.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from test_case_classes import CONDITIONS, REALISTIC, VALUES
from test_feed_many import MODES, _batches, _run

from eventscript.automata.compile import compile_source
from eventscript.engine.engine import Engine
from eventscript.language.source import SourceFile
from eventscript.tester.trace import parse_trace
from reference.compare import compiles, run_tester
from reference.generate import START, micros_of, render
from reference.interpreter import Trace, run_reference

CLASSES = ["K1", "K2", "K3"]
#: One action block, at the chain's end: ``a`` and ``b`` are the markers' variables.
ENDINGS = [
    "!>M({s: a.s, v: a.v, p: b.p});",
    "!>O(a.v);",
    '!>O(group[0] == "a" ? 1 : 2);',
    "n = n + 1; !>O(n);",
    "!>M({s: group[0], v: 12 / a.v, p: b.p});",
    "a.v > 3 ? !>M({s: b.s, v: 1, p: a.p});",
]


@st.composite
def chain_programs(draw: st.DrawFn) -> str:
    """``in T`` classified into 2 or 3 classes; a chain of 2 to 4 class markers (two of them
    binding ``a`` and ``b``, or none when the action reads no variable), one action at its end,
    in a form that restarts after a match."""
    classes = CLASSES[: draw(st.integers(2, 3))]
    conditions = draw(st.lists(st.sampled_from(CONDITIONS), min_size=len(classes) - 1, max_size=len(classes) - 1))
    clause = classes[-1]
    for cond, cls in zip(reversed(conditions), reversed(classes[:-1]), strict=True):
        clause = f"{cond} ? {cls} : {clause}"
    ending = draw(st.sampled_from(ENDINGS))
    atoms = [
        [draw(st.sampled_from(classes)), "", draw(st.sampled_from(["", "", "+", "?"]))]
        for _ in range(draw(st.integers(2, 4)))
    ]
    atoms[-1][2] = ""  # the action belongs to the last class's event
    if "a." in ending or "b." in ending:
        first, second = sorted(draw(st.lists(st.integers(0, len(atoms) - 1), min_size=2, max_size=2, unique=True)))
        atoms[first][1], atoms[second][1] = "a", "b"
    chain = " ".join(f"{name}({var}){q}" for name, var, q in atoms) + " { " + ending + " }"
    form = draw(st.sampled_from([".* - ( .* {} )", "( .* {} )*", ".* ( {} )*"]))
    init = "{ n = 0; }" if "n = " in ending else ""
    return (
        f"in {{string s; double p; long v;}} T group(T.s) case {{ {clause} }}\n"
        f"out {{string s; long v; double p;}} M, long O\n{init}\n{form.format(chain)}\n"
    )


@st.composite
def skewed_traces(draw: st.DrawFn) -> tuple[Trace, str]:
    """20 to 120 events of T whose key is ``a`` about two times in three (the hot key), now and
    then a value that does not conform or an undeclared event, at a few instants."""
    start = micros_of(START)
    ms = 0
    items: list[tuple[Any, ...]] = [("time", start)]
    hot = [v for v in VALUES if v["s"] == "a"]
    for _ in range(draw(st.integers(20, 120))):
        roll = draw(st.integers(0, 29))
        if roll == 0:
            ms += 1000
            items.append(("time", start + ms * 1000))
        elif roll == 1:
            items.append(("event", "Z", "a"))
        elif roll == 2:
            items.append(("event", "T", 5, False))
        else:
            value = draw(st.sampled_from(hot if roll % 3 else VALUES))
            items.append(("event", "T", value, draw(st.booleans())))
    items.append(("time", start + (ms + 1000) * 1000))
    return Trace(items), render(items, start)


SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def _compact(source: str) -> Engine:
    engine = Engine(compile_source(source, name="p").require(), lambda e: None)
    assert engine.compact  # the path under test
    return engine


@SETTINGS
@given(data=st.data())
def test_skewed_keys_in_long_batches_agree_with_per_event_and_contexts(data: st.DataObject) -> None:
    """The compact engine by ``feed_many`` in long batches and per event gives the outputs and
    keeps the keys the engine of contexts does (its step is generated apart: ``_planned_arm``),
    with and without ``track_dirty``."""
    source = data.draw(chain_programs())
    assume(compiles(source))
    _compact(source)
    _, text = data.draw(skewed_traces())
    sizes = data.draw(st.lists(st.integers(1, 150), min_size=1, max_size=3))
    prog = compile_source(source, name="p").require()
    plan = _batches(prog, parse_trace(SourceFile("<trace>", text)), sizes)
    note(f"program:\n{source}\ntrace:\n{text}\nbatches: {plan}")
    compact = _run(prog, plan, MODES["eager"][1], True)
    assert compact == _run(prog, plan, MODES["eager"][1], False), "feed_many and feed disagree"
    for mode in ("contexts", "dirty"):
        assert compact[0] == _run(prog, plan, MODES[mode][1], False)[0], f"the engine of {mode} disagrees"


@SETTINGS
@given(data=st.data())
def test_skewed_keys_agree_with_the_reference(data: st.DataObject) -> None:
    """The engine of contexts, which the test above holds the compact one to, against the
    reference interpreter (the tester runs the engine the worker's tasks hold)."""
    source = data.draw(chain_programs())
    assume(compiles(source))
    trace, text = data.draw(skewed_traces())
    note(f"program:\n{source}\ntrace:\n{text}")
    expected = run_reference(source, trace, error_keys=True)
    assert run_tester(source, text, lazy=False, error_keys=True) == expected, "the engine disagrees"


def test_the_chains_take_the_acting_step() -> None:
    """What the tests above are for: a chain's last class steps by its one acting state, in a
    table of records (markers) and in one of bare state numbers (no variables)."""
    for source in (
        REALISTIC,
        "in {string s; double p; long v;} T group(T.s) case { T.v > 5 ? K1 : K2 }\n"
        "out long O\n.* - ( .* K1() K2()+ K1() { !>O(1); } )\n",
    ):
        feed = _compact(source)._feed_source
        assert "== 2:" in feed and "_K" not in feed, feed


#: Actions that change the field the program is grouped by, on a marker holding the event
#: itself: the step must go on with the key the event came with (``CodeGen._key_in_place``).
KEY_CHANGED = [
    "in {string s; double p; long v;} T group(T.s) case { T.v > 5 ? K1 : K2 }\nout string O\n"
    '( K1(a) { a.s = "z"; !>O(group[0]); } K2() { !>O(a.s + group[0]); } )*\n',
    # the step that changes it ends the instance: it must forget the key it came with
    "in {string s; double p; long v;} T group(T.s) case { T.v > 5 ? K1 : K2 }\nout string O\n"
    'K1() K1(a) { a.s = "z"; !>O(group[0]); }\n',
]


def _outputs_and_keys(source: str, how: str) -> tuple[list[Any], list[str]]:
    out: list[Any] = []
    engine = Engine(
        compile_source(source, name="p").require(), lambda e: out.append((e.value, e.key)), compact=how != "contexts"
    )
    events = [("T", [k, 1.0, v]) for k, v in (("k", 9), ("k", 1), ("m", 9), ("k", 9), ("m", 2), ("m", 7))]
    if how == "batch":
        engine.feed_many(events)
    else:
        for name, value in events:
            engine.feed(name, value)
    return out, sorted(map(repr, engine.contexts))


def test_a_key_changed_in_place_by_an_action_is_still_the_key() -> None:
    for source in KEY_CHANGED:
        expected = _outputs_and_keys(source, "contexts")
        assert ("k", ("k",)) in expected[0], expected
        assert _outputs_and_keys(source, "feed") == expected, source
        assert _outputs_and_keys(source, "batch") == expected, source
