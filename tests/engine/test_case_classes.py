"""Grouped programs whose structure input has a case clause and whose markers bind variables
(issue 26, the realistic program's shape): a compact engine gives each class its own step in the
feed (``CodeGen._case_steps``), actions inlined. Random programs of that shape run over random
traces and must give what the reference interpreter gives (through the tester, which feeds by
``feed_many``), and the same per event as by ``feed_many``, as the engine of contexts (whose
feed takes no specialised step) and as the lazy DFA.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from test_feed_many import MODES, _batches, _check

from eventscript.automata.compile import compile_source
from eventscript.engine.engine import Engine
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.language.source import SourceFile
from eventscript.tester.trace import parse_trace
from reference import generate
from reference.compare import compiles, run_tester
from reference.generate import START, micros_of, render
from reference.interpreter import Trace, run_reference

CONDITIONS = ["T.v > 5", "T.p > 50.0", 'T.s == "a"', "12 / T.v > 2", "T.v % 2 == 0 && T.p < 20.0", "T.v < 0"]
CLASSES = ["K1", "K2", "K3", "K4"]
#: Statements of an action block; ``a`` and ``b`` are the markers' variables (reads of one not
#: yet set are $error 3), ``n`` a counter, ``M`` a structure output, ``O`` a long one.
STATEMENTS = [
    "!>M({s: a.s, v: a.v, p: b.p});",
    "!>O(a.v);",
    '!>O(group[0] == "a" ? 1 : 2);',
    "n = n + 1;",
    "!>O(n);",
    "a.v > 3 ? !>M({s: b.s, v: n, p: a.p});",
    "b = a;",
    "!>M({s: group[0], v: 12 / a.v, p: 0.5});",
]
#: The realistic program of bench/engine.py (issue 26).
REALISTIC = (
    "in {string sym; double price; long vol;} Trade group(Trade.sym)\n"
    "  case { Trade.vol > 900 ? Large : Trade.price > 50.0 ? Up : Down }\n"
    "out {string sym; long vol; double price;} Match\n"
    ".* - ( .* Large(a) Up()+ Down(d) { !>Match({sym: a.sym, vol: a.vol, price: d.price}); } )\n"
)
VALUES = [{"s": s, "p": p, "v": v} for s in ("a", "b", "c") for p, v in ((10.0, 0), (60.5, 7), (15.0, 4), (99.0, -3))]


@st.composite
def case_programs(draw: st.DrawFn) -> str:
    """A program of one structure input ``T`` grouped by its ``s`` and classified by a case
    clause of 2 to 4 classes, maybe a second input, a regular expression over the classes."""
    classes = CLASSES[: draw(st.integers(2, 4))]
    conditions = draw(st.lists(st.sampled_from(CONDITIONS), min_size=len(classes) - 1, max_size=len(classes) - 1))
    clause = classes[-1]
    for cond, cls in zip(reversed(conditions), reversed(classes[:-1]), strict=True):
        clause = f"{cond} ? {cls} : {clause}"
    second = draw(st.booleans())
    names = classes + (["U"] if second else [])
    decls = "in {string s; double p; long v;} T group(T.s) case { " + clause + " }"
    decls += ", string U group(U)" if second else ""

    def atom() -> str:
        kind = draw(st.sampled_from(["marker", "marker", "marker", "wild"]))
        if kind == "wild":
            return "."
        name = draw(st.sampled_from(names))
        var = "" if name == "U" else draw(st.sampled_from(["", "a", "b"]))
        text = f"{name}({var})"
        if draw(st.integers(0, 2)) == 0:
            text += " { " + " ".join(draw(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=3))) + " }"
        return text + draw(st.sampled_from(["", "", "", "+", "*", "?"]))

    def sequence() -> str:
        """Atoms with both variables bound (a variable no marker binds has no type) and an
        action at the end (so that most programs emit)."""
        atoms = [atom() for _ in range(draw(st.integers(0, 3)))]
        for var in ("a", "b"):
            atoms.insert(draw(st.integers(0, len(atoms))), f"{draw(st.sampled_from(classes))}({var})")
        block = " ".join(draw(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=3)))
        return " ".join(atoms) + " { " + block + " }"

    body = sequence() if draw(st.integers(0, 3)) else f"( {sequence()} | {sequence()} )"
    form = draw(st.sampled_from([".* - ( .* {} )", "( .* {} )*", "( {} )*", ". ( {} )*", "{}"]))
    init = draw(st.sampled_from(["", "{ n = 0; }", "{ n = 0; !>O(7); }"]))
    return f"{decls}\nout {{string s; long v; double p;}} M, long O\n{init}\n{form.format(body)}\n"


@st.composite
def case_traces(draw: st.DrawFn) -> tuple[Trace, str]:
    """Events of T (some not conforming: $error 6), U and an undeclared Z, at a few instants."""
    start = micros_of(START)
    ms = 0
    items: list[tuple[Any, ...]] = [("time", start)]
    for _ in range(draw(st.integers(1, 30))):
        if draw(st.integers(0, 5)) == 0:
            ms += draw(st.sampled_from([0, 500, 1000]))
            items.append(("time", start + ms * 1000))
            continue
        name = draw(st.sampled_from(["T"] * 6 + ["U", "Z"]))
        if name == "T":
            items.append(("event", "T", draw(st.sampled_from([*VALUES, 5])), draw(st.booleans())))
        else:
            items.append(("event", name, draw(st.sampled_from(["a", "b", 3]))))
    items.append(("time", start + (ms + 65_000) * 1000))
    return Trace(items), render(items, start)


SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


@SETTINGS
@given(data=st.data())
def test_case_classes_agree_with_the_reference(data: st.DataObject) -> None:
    source = data.draw(case_programs())
    assume(compiles(source))
    assert Engine(compile_source(source, name="p").require(), lambda e: None).compact  # the path under test
    trace, text = data.draw(case_traces())
    note(f"program:\n{source}\ntrace:\n{text}")
    expected = run_reference(source, trace, error_keys=True)
    assert run_tester(source, text, lazy=False, error_keys=True) == expected, "the compact engine disagrees"
    assert run_tester(source, text, lazy=True, error_keys=True) == expected, "the lazy DFA disagrees"


@SETTINGS
@given(data=st.data())
def test_case_classes_per_event_and_batched(data: st.DataObject) -> None:
    """Per event and by ``feed_many`` in batches of random sizes, on the compact engine (the
    specialised step) and on contexts (the generic one)."""
    source = data.draw(case_programs())
    assume(compiles(source))
    _, text = data.draw(case_traces())
    sizes = data.draw(st.lists(st.integers(1, 12), min_size=1, max_size=6))
    _check(source, text, sizes, data.draw(st.sampled_from(["eager", "contexts", "dirty"])))


def test_a_case_clause_gets_a_step_per_class() -> None:
    """The realistic program's feed: no generic two-dimensional step nor function call, and the
    ``Large(a)`` store inlined; the matches are those of its hand-written equivalent."""
    src = REALISTIC
    got: list[Any] = []
    engine = Engine(compile_source(src, name="p").require(), lambda e: got.append((e.value, e.key)))
    feed = engine._feed_source
    assert "_NS[" not in feed and "_FS[" not in feed and "fn(" not in feed, feed
    assert "= ev" in feed, feed
    events = [
        ["x", 60.0, 950],
        ["y", 60.0, 10],
        ["x", 70.0, 5],
        ["x", 80.0, 5],
        ["x", 10.0, 5],
        ["x", 10.0, 5],
        ["y", 10.0, 5],
        ["y", 60.0, 950],
        ["y", 55.0, 1],
        ["y", 1.5, 2],
    ]
    for value in events:
        engine.feed("Trade", value)
    assert got == [(["x", 950, 10.0], ("x",)), (["y", 950, 1.5], ("y",))]
    assert set(MODES) >= {"eager", "contexts", "dirty"}


def test_a_step_folds_its_single_use_locals() -> None:
    """The realistic program's steps name no local used once: ``Up`` reads and stores the state
    in one statement, ``Large`` stores its constant target; ``Down``, whose one acting state
    (after ``Large Up+``) emits and whose others all go to one state, tests that state and
    stores a constant target in each branch, with no table read (``SymbolPlan.acting``)."""
    src = REALISTIC
    feed = [
        line.strip()
        for line in Engine(compile_source(src, name="p").require(), lambda e: None)._feed_source.split("\n")
    ]
    assert "t = 1" not in feed and "v[2] = 1" in feed, feed
    assert "v[2] = _N1[v[2]]" in feed, feed
    down = feed.index("if v[2] == 2:")
    assert feed[down + 1 : down + 4] == ["v[2] = 3", "gk = ev[0]", "v[1] = ev"], feed
    assert feed[down + 5 : down + 7] == ["else:", "v[2] = 0"], feed
    assert not any(line.startswith(("t = ", "st = ")) or "_N2" in line or "_K2" in line for line in feed), feed


def test_the_key_is_read_where_it_is_needed() -> None:
    """The realistic program's feed names the group key only in the body that emits it (before
    its actions), not for every event: the lookup reads it from the event in place."""
    feed = [
        line.strip()
        for line in Engine(compile_source(REALISTIC, name="p").require(), lambda e: None)._feed_source.split("\n")
    ]
    assert feed[2:5] == ["v = _cget(ev[0])", "if v is None:", "v = _tab[ev[0]] = [UNSET, UNSET, _S]"], feed
    assert feed.count("gk = ev[0]") == 1, feed


def test_an_engine_of_contexts_gets_a_step_per_class_too() -> None:
    """An engine of contexts (a host that persists instances: ``track_dirty``, as the Kafka
    worker's) steps per class as well: no transition looked up by a computed symbol, no function
    called for the ``Large(a)`` store; its matches and changed instances are those of its rules."""
    src = REALISTIC
    got: list[Any] = []
    engine = Engine(compile_source(src, name="p").require(), lambda e: got.append((e.value, e.key)), track_dirty=True)
    assert not engine.compact
    feed = engine._feed_source
    assert "row[sym]" not in feed and "sym = " not in feed and "fn(ctx, ev)" not in feed, feed
    for value in (["x", 60.0, 950], ["y", 60.0, 10], ["x", 70.0, 5], ["x", 10.0, 5], ["y", 1.5, 2]):
        engine.feed("Trade", value)
    assert got == [(["x", 950, 10.0], ("x",))]
    assert {ctx.gk for ctx in engine.drain_dirty()} == {"x", "y"}  # y: made at start, retired by Down


def test_creating_late_makes_no_instance_a_first_event_leaves_fresh() -> None:
    """``creates_late``: a key whose first events leave a fresh instance as it was (``Up``,
    ``Down`` from the start) gets no instance, no change and no release, and ``feed`` returns
    None for them; a ``Large`` creates it as before."""
    ended: list[Any] = []
    engine = Engine(compile_source(REALISTIC, name="p").require(), lambda e: None, track_dirty=True)
    engine.on_terminate = ended.append
    engine.creates_late = True
    assert engine.feed("Trade", ["y", 60.0, 10]) is None
    assert engine.feed("Trade", ["y", 1.5, 2]) is None
    assert engine.drain_dirty() == [] and ended == [] and engine.instance_count == 0
    ctx = engine.feed("Trade", ["y", 60.0, 950])
    assert ctx is not None and engine.contexts.get(("y",)) is ctx and engine.drain_dirty() == [ctx]
    engine.creates_late = False
    released = engine.feed("Trade", ["z", 60.0, 10])
    assert released is not None and released.terminated and ended == [released]


@st.composite
def restarting_programs(draw: st.DrawFn) -> tuple[str, generate.Spec]:
    """Grouped name-only programs ``( alternatives )*`` some of whose alternatives are one marker,
    with an action or without: its transition from the start state comes back to it, where a
    fresh instance retires (or, with an action, must not be skipped); initial actions sometimes."""
    names = ["A", "B", "C"]
    statements = ["!>O(1);", "!>O(group[0]);", "v = 2;", "!>O(v);"]
    one = st.sampled_from(names).map(lambda n: f"{n}()")
    acting = st.tuples(st.sampled_from(names), st.lists(st.sampled_from(statements), min_size=1, max_size=2)).map(
        lambda t: f"{t[0]}() {{ {' '.join(t[1])} }}"
    )
    storing = st.tuples(st.sampled_from(names), st.sampled_from(names)).map(
        lambda t: f"{t[0]}() {t[1]}(v) {{ !>O(v); }}"
    )
    alternatives = draw(st.lists(st.one_of(one, acting, storing), min_size=1, max_size=3))
    init = draw(st.sampled_from(["", "", "{ !>O(0); }"]))
    decls = ", ".join(f"long {name} group({name} % 2)" for name in names)
    form = draw(st.sampled_from(["( {} )*", "( {} )*", "{}", "( {} )* C()"]))  # without *: instances terminate
    source = f"in {decls}\nout long O\n{init}\n{form.format(' | '.join(alternatives))}\n"
    return source, generate.Spec(names, list(names), True)


def _run_late(prog: Any, plan: list[Any], late: bool, how: str) -> tuple[Any, ...]:
    """Outputs, the live instances (snapshots) after each step and the keys whose instance
    terminated (the host keeps a tombstone saying so), of an engine as the worker holds it
    (``track_dirty``), creating late or not."""
    clock = SimulatedTimeProvider()
    out: list[Any] = []
    engine = Engine(prog, out.append, clock, track_dirty=True)
    terminated: list[Any] = []
    engine.on_terminate = lambda ctx: terminated.append(ctx.gk) if engine.executor.terminal(ctx.state) else None
    engine.creates_late = late
    seen: list[Any] = []
    started = False
    for step in plan:
        if isinstance(step, int):
            if started:
                clock.advance_to(step)
            else:
                clock.set_now(step)
                started = True
        elif how == "feed_many":
            engine.feed_many(iter(step))
        elif how == "feed_keyed":  # as the worker feeds, the key computed to route the event
            for name, value in step:
                engine.feed_keyed(name, value, engine.group_key(name, value))  # (None: an undeclared name)
        else:
            for name, value in step:
                engine.feed(name, value)
        clock.run_due()
        seen.append(sorted(engine.snapshot(ctx) for ctx in engine.contexts.values()))
    return repr([(e.name, e.value, e.time, e.key) for e in out]), seen, terminated


@SETTINGS
@given(data=st.data())
def test_creating_late_changes_no_output_nor_instance(data: st.DataObject) -> None:
    """Random programs fed with and without ``creates_late``, per event (``feed``, and
    ``feed_keyed`` as the worker feeds) and by ``feed_many``:
    the same outputs and, after every batch, the same live instances. Case-clause programs, and
    name-only ones whose start state is often entered again, with and without actions on the
    way (``restarting_programs``). (Initial actions keep instances from retiring, so the check
    of them in ``EagerExecutor._start_retires`` is a second guard no trace can tell from none.)"""
    if data.draw(st.booleans()):
        source = data.draw(case_programs())
        assume(compiles(source))
        _, text = data.draw(case_traces())
    else:
        source, spec = data.draw(restarting_programs())
        assume(compiles(source))
        _, text = data.draw(generate.traces(spec))
    prog = compile_source(source, name="p").require()
    sizes = data.draw(st.lists(st.integers(1, 12), min_size=1, max_size=6))
    plan = _batches(prog, parse_trace(SourceFile("<trace>", text)), sizes)
    note(f"program:\n{source}\ntrace:\n{text}\nbatches: {plan}")
    for how in ("feed", "feed_many", "feed_keyed"):
        assert _run_late(prog, plan, True, how) == _run_late(prog, plan, False, how), how
