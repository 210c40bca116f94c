"""Properties of upgrade plans over random programs of the reference generator
(tests/reference/generate.py, without ``&`` and ``-``, whose positions are not mapped): a program
upgraded to itself, its marker match worked out by the diff rather than trusted from the
fingerprint, carries every state unchanged, and a run upgraded at a random cut goes on as if
nothing happened; comments and line ends do not change the fingerprint."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from upgrade_helpers import run_upgraded

from conftest import run_program
from eventscript.automata.compile import compile_source
from eventscript.automata.compiled import CompiledProgram
from eventscript.automata.machine import DFAMachine
from eventscript.language.source import SourceFile
from eventscript.tester.trace import parse_trace
from eventscript.upgrade.fingerprint import fingerprint
from eventscript.upgrade.plan import CARRIED, make_plan
from reference.generate import programs, traces

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


def eager(src: str) -> CompiledProgram:
    comp = compile_source(src, name="prop")
    assume(comp.ok and isinstance(comp.program.machine, DFAMachine))  # type: ignore[union-attr]
    assert comp.program is not None
    return comp.program


def codes(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Error events reduced to their code (messages name the program, which may differ)."""
    return [{**line, "value": line["value"]["code"]} if line["event"] == "$error" else line for line in lines]


@SETTINGS
@given(data=st.data())
def test_a_program_upgraded_to_itself_carries_every_state_unchanged(data: st.DataObject) -> None:
    src, _ = data.draw(programs(products=False))
    prog = eager(src)
    plan = make_plan(prog, prog, trust_fingerprint=False)
    assert plan.problems == []
    assert [(s.verdict, s.new_state) for s in plan.states if not s.already_ended] == [
        (CARRIED, s.old_state) for s in plan.states if not s.already_ended
    ], src
    assert all(r.how == "keep" for s in plan.states for rules in s.rearm.values() for r in rules), src
    assert [v.how for v in plan.variables] == ["carried"] * len(prog.program.variables)
    assert plan.exit_code == 0


@SETTINGS
@given(data=st.data())
def test_comments_and_line_ends_keep_the_fingerprint(data: st.DataObject) -> None:
    src, _ = data.draw(programs())
    comp = compile_source(src, name="prop")
    assume(comp.ok)
    edited = "// upgraded\n\n" + src.replace("\n", "   // a note\n")
    assert fingerprint(compile_source(edited, name="prop").require()) == fingerprint(comp.require()), src


@SETTINGS
@given(data=st.data())
def test_a_run_upgraded_to_the_same_program_goes_on_like_an_uninterrupted_run(data: st.DataObject) -> None:
    src, spec = data.draw(programs(products=False))
    prog = eager(src)
    plan = make_plan(prog, prog, trust_fingerprint=False)
    _, text = data.draw(traces(spec))
    n_items = len(parse_trace(SourceFile("<trace>", text)))
    cut = data.draw(st.integers(1, n_items - 1))
    out, _ = run_upgraded(plan, text, cut)
    assert codes(out) == codes(run_program(src, text)), f"{src}\n{text}\ncut before item {cut}"
