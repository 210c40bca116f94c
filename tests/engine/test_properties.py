"""Property tests over random small programs and random traces.

- the eager DFA and the lazy DFA (``force_lazy=True``) emit the same events;
- snapshotting every instance after k trace items and restoring them into a fresh engine on a
  fresh clock continues exactly like an uninterrupted run (grouped programs and pending timers
  included);
- a compiled program round-tripped through JSON behaves identically;
- a lazy DFA whose state cache is flushed all the time behaves identically;
- with multipliers stacked over action blocks (``( A() {...} )+ )*``, ``( B()? {...} ){2}``), the
  eager and lazy DFA still agree, and each textual action block runs at most once per transition
  however many of its copies the feasible paths reach (issue 9).

Programs: 2-3 ``long`` inputs (sometimes classified by a case clause, sometimes grouped by a key
computed from the value), markers with variables, ``|``, sequence, ``*``, ``+``, ``?``,
``{i,j}``, now and then ``&`` and ``-``, action blocks that count and emit, elapse and arrive
timers. Loops are only put on items that cannot match the empty sequence, so (almost) every
generated program compiles.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from conftest import CASES, run_program
from eventscript.automata.compile import compile_file, compile_source
from eventscript.automata.compiled import CompiledProgram
from eventscript.engine.engine import Engine
from eventscript.engine.events import Emitted
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.language.source import SourceFile
from eventscript.tester.host import output_json
from eventscript.tester.trace import Timestamp, TraceItem, event_argument, parse_trace

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)

# ---------------------------------------------------------------------------------------
# program generation


@dataclass
class Spec:
    names: list[str]
    markers: list[str]
    grouped: bool
    #: Action blocks are "{ @ }" placeholders, numbered afterwards; no time markers.
    tagged: bool = False


@st.composite
def actions(draw: st.DrawFn, spec: Spec) -> str:
    if spec.tagged:
        return "{ @ }"
    choices = [
        "n = n + 1;",
        "n = n + v;",
        "!>O(n);",
        "!>O(n * 10 + v);",
        "n > 3 ? !>O(-n);",
        "n = n % 7;",
        "!>O(100 / v);",
        "n > 1 ? { !>O(n); n = 0; } : n = n + 2;",
        "arr[n % 3] = n;",
        "!>O(alias[0] * 10 + alias[1]);",
        "!>O(millisecondsBetween(t, now()));",
        "t = now();",
        "for (i: 1, n % 3) !>O(i);",
    ]
    if spec.grouped:
        choices.append("!>O(group[0] * 1000 + n);")
    items = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=3))
    return "{ " + " ".join(items) + " }"


@st.composite
def atom(draw: st.DrawFn, spec: Spec, depth: int) -> tuple[str, bool]:
    """(text, nullable)"""
    kinds = (
        ["marker"] * 6
        + ["wild", "elapse", "elapse", "elapse", "action", "action"]
        + (["group"] * 3 if depth > 0 else [])
    )
    kinds += ["arrive", "stacked", "stacked"]
    if spec.tagged:
        kinds = [k for k in kinds if k not in ("elapse", "arrive")]
    kind = draw(st.sampled_from(kinds))
    if kind == "stacked":
        return draw(stacked(spec))
    if kind == "marker":
        name = draw(st.sampled_from(spec.markers))
        target = draw(st.sampled_from(["v", "v", ""]))
        return f"{name}({target})", False
    if kind == "wild":
        return ".", False
    if kind == "elapse":
        amount = draw(st.sampled_from(["1", "2", "3", "1.5", "(n % 3 + 3)"]))
        target = draw(st.sampled_from(["", "", "t"]))
        return f"elapse[{amount} seconds]({target})", False
    if kind == "arrive":
        return draw(st.sampled_from(["arrive[.:.:30]()", "arrive[.:.:(n % 4 * 15)]()"])), False
    if kind == "action":
        return draw(actions(spec)), True
    text, nullable = draw(regex(spec, depth - 1))
    return f"( {text} )", nullable


@st.composite
def stacked(draw: st.DrawFn, spec: Spec) -> tuple[str, bool]:
    """A multiplier over a multiplier over an action: copies of one action block that the
    feasible paths reach together, e.g. ``( ( A(v) {...} )+ )*`` or ``( ( B()? {...} ){2} )?``."""
    marker = draw(st.sampled_from([*spec.markers, "."]))
    if marker != ".":
        marker += "(" + draw(st.sampled_from(["v", ""])) + ")"
    inner_op = draw(st.sampled_from(["+", "{1,2}", "{2}", "?", "{0,2}", ""]))
    opt = draw(st.sampled_from(["", "?"]))
    body = f"{marker}{opt} {draw(actions(spec))}" if opt else f"{marker} {draw(actions(spec))}"
    nullable = bool(opt) or inner_op in ("?", "{0,2}")
    outer_op = draw(st.sampled_from(["*", "+", "{2}", "{1,3}", "?"]))
    if outer_op in ("*", "+") and nullable:
        outer_op = "{0,2}"
    nullable = nullable or outer_op in ("*", "?")
    return f"( ( {body} ){inner_op} ){outer_op}", nullable


@st.composite
def postfix(draw: st.DrawFn, spec: Spec, depth: int) -> tuple[str, bool]:
    text, nullable = draw(atom(spec, depth))
    op = draw(st.sampled_from(["", "", "", "*", "+", "?", "{0,2}", "{1,2}", "{2}", "{1,}"]))
    if op in ("*", "+", "{1,}") and nullable:
        op = "?"  # a loop around an item that can match nothing would be an action cycle
    if op in ("", "+", "{1,2}", "{2}", "{1,}"):
        return text + op, nullable
    return text + op, True


@st.composite
def sequence(draw: st.DrawFn, spec: Spec, depth: int) -> tuple[str, bool]:
    items = draw(st.lists(postfix(spec, depth), min_size=1, max_size=3))
    return " ".join(t for t, _ in items), all(n for _, n in items)


@st.composite
def regex(draw: st.DrawFn, spec: Spec, depth: int) -> tuple[str, bool]:
    first, nullable = draw(sequence(spec, depth))
    if depth > 0 and draw(st.integers(0, 9)) == 0:
        op = draw(st.sampled_from(["&", "-"]))
        second, n2 = draw(sequence(spec, depth))
        first = f"{first} {op} {second}"
        nullable = nullable and n2 if op == "&" else nullable
    alts = [first]
    for _ in range(draw(st.integers(0, 2))):
        t, n = draw(sequence(spec, depth))
        alts.append(t)
        nullable = nullable or n
    return " | ".join(alts), nullable


@st.composite
def programs(draw: st.DrawFn, grouped: bool | None = None) -> tuple[str, Spec]:
    names = ["A", "B", "C"][: draw(st.integers(2, 3))]
    if grouped is None:
        grouped = draw(st.integers(0, 2)) == 0
    classify = draw(st.booleans())
    markers = list(names) + (["Hi", "Lo"] if classify else [])
    spec = Spec(names, markers, grouped)
    decls = []
    for name in names:
        d = f"long {name}"
        if grouped:
            d += f" group({name} % 2)"
        if classify and name == "A":
            d += " case { A > 4 ? Hi : Lo }"
        decls.append(d)
    body, nullable = draw(regex(spec, 2))
    if grouped:
        # A key's instance only starts with an event its start state accepts: let any event do.
        forms = [". {}"] if nullable else [". ( {} )*", "( . | {} )*", "( . | {} )*", ". {}", "( {} )*"]
    else:
        forms = ["{}"] if nullable else ["( {} )*", "( {} )*", "( {} )*", "{}", "( {} )+"]
    repeat = draw(st.sampled_from(forms))
    init = "{ n = 0; arr = new long[2]; alias = arr; t = now(); " + ("v = 1; }" if draw(st.booleans()) else "}")
    src = f"in {', '.join(decls)}\nout long O\n{init}\n{repeat.format(body)}\n"
    return src, spec


@st.composite
def traces(draw: st.DrawFn, spec: Spec) -> str:
    ms = 0
    parts = ["[2026-01-01 00:00:00.000]"]
    for _ in range(draw(st.integers(1, 20))):
        if draw(st.integers(0, 2)) == 0:
            ms += draw(st.sampled_from([0, 400, 1000, 1000, 1500, 2000, 3000, 5000, 30_000]))
            parts.append(_stamp(ms))
        else:
            name = draw(st.sampled_from([*spec.names, *spec.names, "Z"]))
            value = draw(st.sampled_from(["0", "1", "2", "3", "5", "6", "7", "9", "-4", '"x"']))
            parts.append(f"{name}({value})")
    parts.append(_stamp(ms + 65_000))
    return " ".join(parts)


def _stamp(ms: int) -> str:
    s, milli = divmod(ms, 1000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return f"[{h:02d}:{m:02d}:{s:02d}.{milli:03d}]"


def compiled(src: str, *, lazy: bool = False) -> CompiledProgram:
    comp = compile_source(src, name="prop", force_lazy=lazy)
    assume(comp.ok)
    assert comp.program is not None
    return comp.program


# ---------------------------------------------------------------------------------------
# a single-engine runner with a snapshot/restore point


def run_engine(
    prog: CompiledProgram,
    trace: str,
    *,
    cut: int | None = None,
    make: Callable[[CompiledProgram, Any, SimulatedTimeProvider], Engine] | None = None,
) -> list[dict[str, Any]]:
    """Run ``trace`` like the tester does; before item ``cut``, snapshot every instance and go on
    in a fresh engine (same compiled program) on a fresh clock set to the same time."""
    items: list[TraceItem] = parse_trace(SourceFile("<trace>", trace))
    out: list[dict[str, Any]] = []
    key_types = prog.program.key_types

    def sink(e: Emitted) -> None:
        out.append(output_json(e, key_types))

    make = make or (lambda p, s, c: Engine(p, s, c))
    clock = SimulatedTimeProvider()
    engine = make(prog, sink, clock)
    started = False
    for i, item in enumerate(items):
        if i == cut and started:
            contexts = list(engine.contexts.values()) if engine.grouped else [engine.single]
            snaps = [engine.snapshot(ctx) for ctx in contexts if ctx is not None]
            if currently_in_test_context():  # statistics for --hypothesis-show-statistics
                event(f"instances at the cut: {min(len(snaps), 3)}")
                event(f"timers pending at the cut: {any(c is not None and c.timer is not None for c in contexts)}")
            clock = SimulatedTimeProvider(clock.now())
            engine = make(prog, sink, clock)
            for data in snaps:
                engine.restore(data)
        if isinstance(item, Timestamp):
            if not started:
                clock.set_now(item.time)
                engine.start()
                clock.run_due()
                started = True
            else:
                clock.advance_to(item.time)
        else:
            engine.feed_json(item.name, event_argument(item))
            clock.run_due()
    return out


def codes(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Error events reduced to their code (messages may differ, e.g. after a restore)."""
    return [{**line, "value": line["value"]["code"]} if line["event"] == "$error" else line for line in lines]


# ---------------------------------------------------------------------------------------
# properties


@SETTINGS
@given(data=st.data())
def test_eager_and_lazy_dfa_agree(data: st.DataObject) -> None:
    src, spec = data.draw(programs())
    compiled(src)
    trace = data.draw(traces(spec))
    eager = run_program(src, trace)
    lazy = run_program(src, trace, force_lazy=True)
    assert eager == lazy, src + "\n" + trace


@SETTINGS
@given(data=st.data())
def test_snapshot_and_restore_continue_like_an_uninterrupted_run(data: st.DataObject) -> None:
    src, spec = data.draw(programs())
    prog = compiled(src, lazy=data.draw(st.booleans()))
    trace = data.draw(traces(spec))
    whole = run_engine(prog, trace)
    n_items = len(parse_trace(SourceFile("<trace>", trace)))
    cut = data.draw(st.integers(1, n_items - 1))
    resumed = run_engine(prog, trace, cut=cut)
    assert codes(resumed) == codes(whole), f"{src}\n{trace}\ncut before item {cut}"


@SETTINGS
@given(data=st.data())
def test_snapshot_and_restore_of_grouped_programs(data: st.DataObject) -> None:
    src, spec = data.draw(programs(grouped=True))
    prog = compiled(src, lazy=data.draw(st.booleans()))
    trace = data.draw(traces(spec))
    whole = run_engine(prog, trace)
    n_items = len(parse_trace(SourceFile("<trace>", trace)))
    for cut in sorted(set(data.draw(st.lists(st.integers(1, n_items - 1), min_size=1, max_size=3)))):
        assert codes(run_engine(prog, trace, cut=cut)) == codes(whole), f"{src}\n{trace}\ncut before {cut}"


@SETTINGS
@given(data=st.data())
def test_the_runner_agrees_with_the_tester(data: st.DataObject) -> None:
    src, spec = data.draw(programs())
    compiled(src)
    trace = data.draw(traces(spec))
    assert codes(run_engine(compiled(src), trace)) == codes(run_program(src, trace))


@SETTINGS
@given(data=st.data())
def test_compiled_program_json_round_trip(data: st.DataObject) -> None:
    src, spec = data.draw(programs())
    lazy = data.draw(st.booleans())
    prog = compiled(src, lazy=lazy)
    trace = data.draw(traces(spec))
    via_json = CompiledProgram.from_json(json.loads(json.dumps(prog.to_json())))
    via_text = CompiledProgram.loads(prog.dumps())
    assert via_json.machine.kind == prog.machine.kind == ("lazy" if lazy else "dfa")
    assert via_text.to_json() == prog.to_json()
    want = run_engine(prog, trace)
    assert run_engine(via_json, trace) == want
    assert run_engine(via_text, trace) == want


@SETTINGS
@given(data=st.data())
def test_lazy_dfa_with_a_tiny_state_cache(data: st.DataObject) -> None:
    src, spec = data.draw(programs())
    prog = compiled(src, lazy=True)
    trace = data.draw(traces(spec))
    want = run_engine(compiled(src), trace)
    got = run_engine(prog, trace, make=lambda p, s, c: Engine(p, s, c, lazy_cache_states=1))
    assert got == want


@st.composite
def tagged_programs(draw: st.DrawFn) -> tuple[str, Spec]:
    """Programs whose action blocks each emit their own number, without time markers."""
    spec = Spec(["A", "B"], ["A", "B"], False, tagged=True)
    body, nullable = draw(regex(spec, 2))
    form = "{}" if nullable else draw(st.sampled_from(["( {} )*", "( {} )+", "{}"]))
    text = form.format(body)
    parts = text.split("@")
    text = "".join(p + (f"!>O({k});" if k < len(parts) else "") for k, p in enumerate(parts, 1))
    return f"in long A, long B\nout long O\n{text}\n", spec


def outputs_per_transition(prog: CompiledProgram, events: list[tuple[str, int]]) -> list[list[Any]]:
    """What the initial actions emit, then what each event emits (errors included)."""
    out: list[Any] = []

    def sink(e: Emitted) -> None:
        out.append(output_json(e, None)["value"])

    clock = SimulatedTimeProvider()
    clock.set_now(parse_trace(SourceFile("<t>", "[2026-01-01 00:00:00]"))[0].time)  # type: ignore[union-attr]
    engine = Engine(prog, sink, clock)
    engine.start()
    groups = [list(out)]
    for name, value in events:
        out.clear()
        engine.feed_json(name, value)
        groups.append(list(out))
    return groups


@SETTINGS
@given(data=st.data())
def test_each_textual_action_runs_at_most_once_per_transition(data: st.DataObject) -> None:
    src, _ = data.draw(tagged_programs())
    events = data.draw(st.lists(st.tuples(st.sampled_from(["A", "B"]), st.integers(0, 5)), max_size=12))
    lazy = data.draw(st.booleans())
    groups = outputs_per_transition(compiled(src, lazy=lazy), events)
    for i, emitted in enumerate(groups):
        ids = [v for v in emitted if isinstance(v, int)]
        assert len(ids) == len(set(ids)), f"{src}\ntransition {i} ({events[i - 1] if i else 'start'}): {emitted}"


@SETTINGS
@given(data=st.data())
def test_eager_and_lazy_dfa_agree_with_multiplied_actions(data: st.DataObject) -> None:
    src, _ = data.draw(tagged_programs())
    compiled(src)
    events = data.draw(st.lists(st.tuples(st.sampled_from(["A", "B"]), st.integers(0, 5)), max_size=12))
    assert outputs_per_transition(compiled(src), events) == outputs_per_transition(compiled(src, lazy=True), events), (
        src
    )


def test_generated_programs_mostly_compile() -> None:
    """Guard for the generators above: most drawn programs must be valid."""
    ok = total = 0

    # derandomized: a guard on the generator's share of valid programs, the same draw on every
    # run (random draws put it at 78-92%, so a fixed threshold flickered)
    @settings(max_examples=100, deadline=None, database=None, derandomize=True)
    @given(programs())
    def count(p: tuple[str, Spec]) -> None:
        nonlocal ok, total
        total += 1
        ok += compile_source(p[0], name="prop").ok

    count()
    assert total >= 50 and ok >= 0.8 * total, (ok, total)


# ---------------------------------------------------------------------------------------
# snapshot/restore at every point of the conformance cases (realistic programs, timers, groups)

SINGLE_CASES = sorted(p for p in CASES.iterdir() if (p / "program.es").exists()) if CASES.exists() else []


@pytest.mark.parametrize("case", SINGLE_CASES, ids=[p.name for p in SINGLE_CASES])
def test_snapshot_and_restore_at_every_point_of_a_conformance_case(case: Path) -> None:
    prog = compile_file(case / "program.es").require()
    trace = (case / "input.trace").read_text()
    whole = run_engine(prog, trace)
    n_items = len(parse_trace(SourceFile("<trace>", trace)))
    step = max(1, n_items // 40)
    for cut in range(1, n_items, step):
        assert codes(run_engine(prog, trace, cut=cut)) == codes(whole), f"{case.name}: cut before item {cut}"
