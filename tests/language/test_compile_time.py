"""Compile time (issue 11, item 3) and the equivalence of the faster constructions.

The subset constructions run on bit masks of NFA states (``automata.simulate.Positions``), the
definite-assignment analysis on gen sets. Each is checked here against the straightforward
construction it replaced (frozensets through ``subset.transitions``, the lazy DFA's rows), on
the generated programs that the compile benchmark (``bench/check.py``) times, so a faster
construction that changed a state, a transition or an action order fails here.
"""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest
from generated_programs import blowup_program, difference_program, intersection_program, nested_program

from conftest import run_program
from eventscript.automata import compile as compile_module
from eventscript.automata.actions import OccurrenceTable, merge
from eventscript.automata.compile import compile_source
from eventscript.automata.epsilon import EFA, eliminate
from eventscript.automata.machine import LazyDFA
from eventscript.automata.simulate import bits
from eventscript.automata.subset import DFA, determinize, transitions
from eventscript.automata.thompson import Builder
from eventscript.language.checker import check
from eventscript.language.diagnostics import Diagnostics
from eventscript.language.lower import lower
from eventscript.language.parser import parse
from eventscript.language.source import SourceFile

AUTOMATA = Path(__file__).resolve().parents[2] / "service" / "eventscript" / "automata"

#: Compile time itself is measured by bench/check.py (the guide: speed targets are benchmarks,
#: not timed unit tests); these tests check that the faster constructions build the same machines.

SMALL_PROGRAMS = {
    "difference": difference_program(120, 10),
    "difference-wild": difference_program(80, 6, wildcards=0.5, seed=7),
    "intersection": intersection_program(120, 10),
    "nested": nested_program(120, depth=5),
    **{f"blowup-{k}": blowup_program(k) for k in (1, 3, 6)},
}


def automaton(text: str) -> tuple[EFA, OccurrenceTable]:
    """The epsilon-free NFA of a program, as the compiler builds it."""
    d = Diagnostics()
    checked = check(parse(SourceFile("t.es", text), d), d)
    assert not d.has_errors, d.render()
    program, _ = lower(checked, "t")
    occ = OccurrenceTable()
    return eliminate(Builder(program, occ, 40_000).build(program.regex)), occ


def reference_dfa(
    efa: EFA, occ: OccurrenceTable
) -> list[tuple[frozenset[int], bool, dict[int, tuple[int, tuple[int, ...]]]]]:
    """The subset construction on frozensets, one whole row at a time (what ``determinize`` did)."""
    index = {efa.start.states: 0}
    order = [efa.start.states]
    out = []
    i = 0
    while i < len(order):
        st = order[i]
        i += 1
        row = {}
        for sym, (target, paths) in transitions(efa, st).items():
            if target not in index:
                index[target] = len(order)
                order.append(target)
            row[sym] = (index[target], merge(paths, occ))
        out.append((st, efa.final in st, row))
    return out


def as_comparable(dfa: DFA) -> list[tuple[frozenset[int], bool, dict[int, tuple[int, tuple[int, ...]]]]]:
    return [
        (frozenset(bits(s.nfa)), s.accepting, {sym: (t, dfa.sequences[q]) for sym, (t, q) in s.trans.items()})
        for s in dfa.states
    ]


@pytest.mark.parametrize("name", sorted(SMALL_PROGRAMS))
def test_determinize_builds_the_frozenset_constructions_dfa(name: str) -> None:
    efa, occ = automaton(SMALL_PROGRAMS[name])
    dfa = determinize(efa, occ, 40_000)
    assert as_comparable(dfa) == reference_dfa(efa, occ)
    assert len(dfa.states) > 3


def test_the_lazy_dfas_analyses_see_the_states_its_rows_give() -> None:
    # Past the state limit the analyses explore 2,000 states of the lazy DFA breadth-first; on
    # masks they must see what the lazy DFA's own rows (frozensets) give.
    text = blowup_program(15)
    efa, occ = automaton(text)
    d = Diagnostics()
    program, _ = lower(check(parse(SourceFile("t.es", text), d), d), "t")
    states, timers, terminal, succ, complete = compile_module._explore_lazy(efa, occ, program)
    machine = LazyDFA(efa, occ)
    start, _ = machine.start()
    index, order, want_succ = {start: 0}, [start], []
    i = 0
    while i < len(order):
        row = machine.transitions(order[i])
        i += 1
        targets = []
        for t, _ in row.values():
            if t not in index and len(order) < compile_module.ANALYSIS_BUDGET:
                index[t] = len(order)
                order.append(t)
            if t in index:
                targets.append(index[t])
        want_succ.append(targets)
    assert [frozenset(bits(m)) for m in states] == order
    assert succ == want_succ and not complete and len(states) == compile_module.ANALYSIS_BUDGET
    assert not any(terminal) and not any(timers)


@pytest.mark.parametrize("name", ["difference", "intersection", "nested"])
def test_generated_programs_give_the_same_outputs_on_the_eager_and_the_lazy_dfa(name: str) -> None:
    text = SMALL_PROGRAMS[name]
    rnd = random.Random(11)
    trace = "[2026-01-01 00:00:00]\n" + "\n".join(f"E{rnd.randrange(10)}({rnd.randrange(100)})" for _ in range(1500))
    eager = run_program(text, trace)
    assert eager == run_program(text, trace, force_lazy=True)
    assert len(eager) > 10  # the patterns match: the comparison is not of two empty outputs


def test_generators_write_programs_of_the_size_asked() -> None:
    for lines, text in [
        (500, difference_program()),
        (500, intersection_program()),
        (500, nested_program()),
        (1000, difference_program(1000, 82)),
    ]:
        assert abs(text.count("\n") - lines) <= lines // 10
        assert compile_source(text).ok
    assert difference_program().count("  | .* ") == 40  # 41 patterns under -
    assert difference_program() == difference_program()  # deterministic: figures stay comparable


def test_the_blowup_program_runs_on_the_lazy_dfa_past_the_limit() -> None:
    comp = compile_source(blowup_program(15))
    assert comp.ok and comp.dfa_states is None
    assert compile_source(blowup_program(10)).dfa_states == 2048


def test_the_compiler_leaves_the_garbage_collector_as_it_found_it() -> None:
    import gc

    assert gc.isenabled()
    compile_source(blowup_program(3))
    assert gc.isenabled()
    gc.disable()
    try:
        compile_source(blowup_program(3))
        assert not gc.isenabled()
    finally:
        gc.enable()


def automata_imports() -> dict[str, set[str]]:
    """Module -> the modules of the automata package it imports (relative imports)."""
    graph: dict[str, set[str]] = {}
    for path in AUTOMATA.glob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module)
                else:
                    deps.update(a.name for a in node.names)
        graph[path.stem] = deps
    return graph


def test_the_automata_package_has_no_import_cycle_and_the_nfa_is_a_leaf() -> None:
    graph = automata_imports()
    assert graph["nfa"] <= {"actions"}
    done: set[str] = set()

    def visit(m: str, path: tuple[str, ...]) -> None:
        assert m not in path, f"import cycle: {' -> '.join((*path, m))}"
        if m in done:
            return
        for dep in graph.get(m, ()):
            visit(dep, (*path, m))
        done.add(m)

    for module in graph:
        visit(module, ())


def test_past_its_work_budget_the_eager_construction_gives_way_to_the_lazy_dfa(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program whose subset construction would take too long (a random program with many
    nested action blocks took 18 s before it met the state limit) runs on the lazy DFA, with
    the same outputs; within the budget the same program stays eager."""
    from eventscript.automata import subset

    src = difference_program(120, 10)
    eager = compile_source(src, name="p").require()
    assert not isinstance(eager.machine, LazyDFA)
    monkeypatch.setattr(subset, "WORK_LIMIT", 50)
    lazy = compile_source(src, name="p")
    assert isinstance(lazy.require().machine, LazyDFA)
    assert any("more than 50 steps" in n for n in lazy.notes), lazy.notes
