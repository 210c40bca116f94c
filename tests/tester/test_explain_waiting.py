"""What `explain` says an instance waits for. Where two markers read one symbol (`Closed()` in two
places), the state after `Opened()` was said to wait for both: the DFA state was read by its
symbols. It waits only for the copies its NFA states stand before (``ProgramTerms.waiting``)."""

from __future__ import annotations

import pytest

from eventscript.automata.compile import compile_source
from eventscript.explain.terms import ProgramTerms

DOOR = """in {string d;} Opened group(Opened.d), {string d;} Closed group(Closed.d)
out {string d;} Left

Opened() ( Closed() | elapse[5 minutes]() { !>Left({d: group[0]}); } Closed() )
"""


def _after(terms: ProgramTerms, *names: str) -> object:
    """The state (snapshot form) after events of these names, from the start."""
    symbols = {terms.symbol(s): s for s in range(len(terms.program.symbols))}
    state, _ = terms.start()
    for name in names:
        sym = symbols[name]
        target, _ = terms.transitions(state)[sym]
        state = terms.machine.state_to_json(target)
    return state


def _waits(terms: ProgramTerms, state: object) -> list[str]:
    return [str(m) for m in terms.waiting(state)]


def test_the_state_after_opened_waits_for_the_first_closed_and_the_timer_only() -> None:
    terms = ProgramTerms(compile_source(DOOR, name="door").require())
    assert _waits(terms, _after(terms, "Opened")) == ["Closed()@4:12", "elapse[5 minutes]@4:23"]
    timed = [s for s in range(len(terms.program.symbols)) if s in terms.program.time_symbols]
    state = _after(terms, "Opened")
    target, _ = terms.transitions(state)[timed[0]]
    assert _waits(terms, terms.machine.state_to_json(target)) == ["Closed()@4:70"]


def test_a_lazy_dfa_reads_its_states_by_their_symbols() -> None:
    """A lazy DFA's state is its NFA states already, but the copies are not rebuilt for it: the
    reading by symbol stays (both markers of the symbol)."""
    terms = ProgramTerms(compile_source(DOOR, name="door", force_lazy=True).require())
    assert _waits(terms, _after(terms, "Opened")) == ["Closed()@4:12", "elapse[5 minutes]@4:23", "Closed()@4:70"]


def test_a_products_states_keep_the_reading_by_symbol() -> None:
    product = "in {} A, {} B\n( A() B() | A() A() ) & ( A() B() )\n"
    terms = ProgramTerms(compile_source(product, name="p").require())
    assert _waits(terms, _after(terms, "A")) == ["B()@2:7", "B()@2:31"]


def test_a_rebuild_that_fails_reads_states_by_symbol_and_is_not_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A product whose operands pass the rebuild's limits (the review's `X - X` compiled with a
    larger state limit) raised AutomatonTooLarge from `waiting`: the Kafka state endpoint answered
    503 to every request, rebuilding for seconds each time."""
    from eventscript.automata import marker_copies
    from eventscript.automata.nfa import AutomatonTooLarge

    calls: list[int] = []

    def too_large(compiled: object, machine: object) -> None:
        calls.append(1)
        raise AutomatonTooLarge("the automaton would need more than 400000 NFA states")

    monkeypatch.setattr(marker_copies, "rebuild", too_large)
    compiled = compile_source(DOOR, name="door").require()
    terms = ProgramTerms(compiled)
    opened = _after(terms, "Opened")
    assert _waits(terms, opened) == ["Closed()@4:12", "elapse[5 minutes]@4:23", "Closed()@4:70"]
    assert _waits(terms, terms.start()[0]) == ["Opened()@4:1"]
    assert _waits(ProgramTerms(compiled), opened)  # (another reader of the same program: kept there)
    assert calls == [1]


def test_the_copies_are_rebuilt_once_per_program_and_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiling builds no second automaton; the first state explained does, once for the program
    (the state endpoint and the recorder each make their own ``ProgramTerms``)."""
    from eventscript.automata import marker_copies

    calls: list[int] = []
    rebuild = marker_copies.rebuild

    def counted(program: object, machine: object) -> object:
        calls.append(1)
        return rebuild(program, machine)  # type: ignore[arg-type]

    monkeypatch.setattr(marker_copies, "rebuild", counted)
    compiled = compile_source(DOOR, name="door").require()
    assert calls == []
    first, second = ProgramTerms(compiled), ProgramTerms(compiled)
    assert _waits(first, _after(first, "Opened")) == _waits(second, _after(second, "Opened"))
    assert calls == [1]
