"""The explanation of instances and steps (``eventscript.explain``), shared by ``eventscript test
--explain`` and the playground: what it says, and that it reads the state the tester has."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventscript.automata.compile import compile_file, compile_source
from eventscript.cli.main import main
from eventscript.explain import ProgramTerms, explain_instance, view_of_snapshot
from eventscript.language.source import SourceFile
from eventscript.tester.pipeline import run_trace
from eventscript.tester.recording import record_pipeline
from eventscript.tester.trace import TraceEvent, parse_trace, read_trace

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = ROOT / "topologies"

DOORS = """\
in {string door;} Opened group(Opened.door), {string door;} Closed group(Closed.door)
out {string door;} LeftOpen
( Opened() { n = 1; }
  ( Closed()
  | elapse[5 minutes]() { !>LeftOpen({door: group[0]}); } Closed()
  )
)*
"""
DOORS_TRACE = """[2026-01-01 08:00:00] Opened("front") Opened("back") [08:01:00] Closed("back")
[08:10:00] Closed("front")"""


def _record(source: str, trace: str):  # type: ignore[no-untyped-def]
    program = compile_source(source, name="doors").require()
    return record_pipeline([program], parse_trace(SourceFile("<trace>", trace)))


def test_an_event_step_says_key_states_actions_and_timer() -> None:
    rec = _record(DOORS, DOORS_TRACE)
    terms = rec.recorder.terms[0]
    first = rec.steps[0]
    assert (first.kind, first.name, first.key, first.before) == ("event", "Opened", ["front"], None)
    assert [a["text"] for a in first.actions] == ["{ n = 1; }"]
    waiting = [(m.text, m.line, m.col) for m in terms.waiting(first.after.state)]
    assert ("elapse[5 minutes]", 5, 5) in waiting and ("Closed()", 4, 5) in waiting
    assert first.timers == [{"change": "set", "marker": "elapse[5 minutes]@5:5", "deadline": 1767254700000000}]
    closed_back = rec.steps[2]
    assert closed_back.key == ["back"] and closed_back.timers[0]["change"] == "stopped"
    assert [(m.text, m.line) for m in terms.waiting(closed_back.after.state)] == [("Opened()", 3)]


def test_a_timer_step_runs_its_actions_and_owns_its_output() -> None:
    rec = _record(DOORS, DOORS_TRACE)
    timer = next(s for s in rec.steps if s.kind == "timer")
    assert (timer.key, timer.name, timer.time) == (["front"], "elapse[5 minutes]@5:5", timer.before.timer[0])
    assert [a["line"] for a in timer.actions] == [5]
    assert [rec.outputs[i]["event"] for i in timer.outputs] == ["LeftOpen"]
    assert rec.outputs[timer.outputs[0]]["step"] == timer.index


def test_an_instance_explained_names_variables_and_timer() -> None:
    rec = _record(DOORS, '[2026-01-01 08:00:00] Opened("front")')
    terms = rec.recorder.terms[0]
    (view,) = rec.recorder.live(0)
    told = explain_instance(terms, view)
    assert told["key"] == ["front"] and told["variables"] == [{"name": "n", "type": "long", "value": 1}]
    assert told["timer"]["deadline"] == "2026-01-01T08:05:00.000000Z"
    assert told["timer"]["marker"]["text"] == "elapse[5 minutes]" and "entered" in told["timer"]["how"]


def _programs_and_traces() -> list[tuple[list[Path], Path]]:
    out = []
    for d in sorted(TOPOLOGIES.iterdir()):
        trace = d / "sample.trace"
        programs = sorted(d.glob("*.es"))
        if trace.exists() and programs:
            out.extend(([p], trace) for p in programs)
    return out


def _snapshots(engines, terms):  # type: ignore[no-untyped-def]
    views = []
    for engine in engines:
        ctxs = list(engine.contexts.values()) if engine.grouped else [engine.single] if engine.single else []
        views.append(sorted((view_of_snapshot(terms, engine.snapshot(c)).to_json() for c in ctxs), key=repr))
    return views


@pytest.mark.parametrize(
    ("programs", "trace"),
    _programs_and_traces(),
    ids=lambda x: x.stem if isinstance(x, Path) else "+".join(p.stem for p in x),
)
def test_the_state_after_event_n_is_the_testers(programs: list[Path], trace: Path) -> None:
    """For every prefix of the trace ending after an event, the recorded run's instances equal
    those of the tester's own run (``run_trace``, a ``feed_many``) over that prefix, and the
    steps' after-states, folded per key, give the same instances (what the playground shows)."""
    compiled = [compile_file(p).require() for p in programs]
    terms = ProgramTerms(compiled[0])
    items = read_trace(str(trace))
    ends = [i + 1 for i, item in enumerate(items) if isinstance(item, TraceEvent)]
    for end in ends[:: max(1, len(ends) // 12)] + ends[-1:]:
        prefix = items[:end]
        rec = record_pipeline(compiled, prefix)
        tester = run_trace(compiled, prefix, lambda line: None)
        live = [sorted((v.to_json() for v in rec.recorder.live(s)), key=repr) for s in range(len(compiled))]
        assert live == _snapshots(tester.engines, terms)
        folded: dict[tuple[int, str], dict] = {}  # type: ignore[type-arg]
        for step in rec.steps:
            if step.after is not None:
                folded[step.stage, repr(step.after.key)] = step.after.to_json()
        kept = sorted((v for v in folded.values() if not v["ended"]), key=repr)
        if compiled[0].grouped:
            assert kept == [v for v in live[0] if not v["ended"]]


def test_cli_explain_prints_steps_and_checks_expectations(capsys: pytest.CaptureFixture[str]) -> None:
    d = TOPOLOGIES / "doors"
    status = main(
        [
            "test",
            "--explain",
            "--trace",
            str(d / "sample.trace"),
            str(d / "left_open.es"),
            "--expect",
            str(d / "expected.jsonl"),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "#0 " in out and "before: no instance (the event creates it)" in out
    assert "timer set: elapse[5 minutes]@" in out and "emits {" in out and out.rstrip().endswith("as expected")


def test_a_lazy_dfa_is_explained_by_its_nfa_states() -> None:
    """A program past the state limit runs on the lazy DFA: states are sets of NFA states, and
    the explanation and the tester still agree."""
    program = compile_source(DOORS, name="doors", force_lazy=True).require()
    items = parse_trace(SourceFile("<trace>", DOORS_TRACE))
    rec = record_pipeline([program], items)
    tester = run_trace([program], items, lambda line: None)
    terms = rec.recorder.terms[0]
    assert sorted((v.to_json() for v in rec.recorder.live(0)), key=repr) == _snapshots(tester.engines, terms)[0]
    first = rec.steps[0]
    assert isinstance(first.after.state, list)
    assert {m.text for m in terms.waiting(first.after.state)} == {"Closed()", "elapse[5 minutes]"}
    assert [rec.outputs[i]["event"] for s in rec.steps for i in s.outputs] == ["LeftOpen"]


def test_cli_explain_of_a_topology_nests_the_second_stage(capsys: pytest.CaptureFixture[str]) -> None:
    d = TOPOLOGIES / "big-trades"
    status = main(
        [
            "test",
            "--explain",
            "--trace",
            str(d / "sample.trace"),
            str(d / "topology.yaml"),
            "--expect",
            str(d / "expected.jsonl"),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "\n  #" in out and "[three-big-trades] FilteredTrade(" in out and "[filter] Trade(" in out
