"""The compiler's front door: source text to :class:`CompiledProgram`, with every diagnostic.

Stages, each in its own module: parse (language.parser) → check and infer types
(language.checker) → lower to the intermediate form (language.lower) → Thompson NFA with
actions (thompson, product) → epsilon elimination (epsilon) → subset construction (subset), or, past
the state limit, a lazy DFA over the same epsilon-free NFA (machine) → analyses (analysis).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..language import ir
from ..language.allow import Acceptance
from ..language.checker import CheckedProgram, check
from ..language.diagnostics import CompileError, Diagnostics
from ..language.lower import lower
from ..language.parser import parse
from ..language.source import SourceFile
from . import analysis
from .actions import OccurrenceTable
from .compiled import CompiledProgram, sha256
from .epsilon import EFA, eliminate
from .graphs import can_reach
from .limits import DEFAULT_STATE_LIMIT
from .machine import DFAMachine, LazyDFA
from .nfa import AutomatonTooLarge
from .simulate import Positions
from .subset import StateLimitExceeded, determinize
from .thompson import build_nfa

#: How many lazy-DFA states the compile-time analyses look at when the DFA is too large.
ANALYSIS_BUDGET = 2_000


@dataclass
class Compilation:
    diagnostics: Diagnostics
    program: CompiledProgram | None = None
    checked: CheckedProgram | None = None
    #: Number of DFA states, or None when the program runs on the lazy DFA.
    dfa_states: int | None = None
    notes: list[str] = field(default_factory=list)
    #: How many warnings allow comments accepted (left out of ``diagnostics``).
    accepted: int = 0

    @property
    def ok(self) -> bool:
        return self.program is not None and not self.diagnostics.has_errors

    def require(self) -> CompiledProgram:
        if self.program is None or self.diagnostics.has_errors:
            raise CompileError(self.diagnostics)
        return self.program


def compile_source(
    source: SourceFile | str,
    *,
    name: str | None = None,
    state_limit: int = DEFAULT_STATE_LIMIT,
    resolve_externals: bool = True,
    force_lazy: bool = False,
) -> Compilation:
    if isinstance(source, str):
        source = SourceFile(name=name or "<program>", text=source)
    if name is None:
        name = Path(source.name).stem if source.name and not source.name.startswith("<") else "program"
    acceptance = Acceptance()
    d = Diagnostics(accept=acceptance.accepts)
    try:
        with _collector_paused():
            comp = _compile(source, name, d, acceptance, state_limit, resolve_externals, force_lazy)
    except RecursionError:
        # The parser bounds nesting, so this is a last resort: report, never raise.
        d.error(
            source.pos(0),
            "the program is nested too deeply to compile",
            "split deeply nested expressions or regular expressions into smaller parts",
        )
        comp = Compilation(d)
    # Whether an allow accepted nothing is known only when every analysis ran to its end.
    acceptance.report(d, complete=comp.ok and comp.dfa_states is not None)
    comp.accepted = acceptance.accepted
    return comp


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while compiling.

    The compiler allocates hundreds of thousands of short-lived tuples, lists and dicts (a 500-line
    program: ~250 young-generation passes), and the passes over them found nothing to free,
    since these structures hold no reference cycles (reference counting frees them): a quarter
    of the compile time. Restored afterwards, so a caller that keeps it off keeps it off.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _compile(
    source: SourceFile,
    name: str,
    d: Diagnostics,
    acceptance: Acceptance,
    state_limit: int,
    resolve_externals: bool,
    force_lazy: bool,
) -> Compilation:
    tree = parse(source, d, on_line_comment=acceptance.read_comment)
    if d.has_errors:
        return Compilation(d)
    checked = check(tree, d, resolve_externals=resolve_externals)
    if d.has_errors:
        return Compilation(d, checked=checked)
    program_ir, positions = lower(checked, name)
    comp = Compilation(d, checked=checked)

    occ = OccurrenceTable()
    assert positions.regex is not None
    try:
        builder, nfa = build_nfa(program_ir, occ, state_limit)
        if builder.cyclic:
            for unit in sorted({occ.items[o].unit for o in builder.cyclic}):
                d.error(
                    positions.units[unit],
                    "this action is on a cyclic path with no event marker, so it would run forever",
                    "put an event marker on every loop that contains actions, e.g. (A() {...})* "
                    "instead of (A()* {...})*",
                )
            return comp
        efa = eliminate(nfa)
    except AutomatonTooLarge as exc:
        d.error(positions.regex, str(exc))
        return comp

    maybe_unset = analysis.definite_assignment(nfa, program_ir, occ)
    analysis.warn_reads(program_ir, maybe_unset, positions, d)

    machine: DFAMachine | LazyDFA
    try:
        if force_lazy:
            raise StateLimitExceeded(state_limit)
        dfa = determinize(efa, occ, state_limit)
        machine = DFAMachine.from_dfa(dfa, occ)
        comp.dfa_states = len(dfa.states)
        state_sets = [s.nfa for s in dfa.states]
        timer_sets = [[sym for sym in s.trans if sym in program_ir.time_symbols] for s in dfa.states]
        terminal = [s.terminal for s in dfa.states]
        succ = [[t for t, _ in s.trans.values()] for s in dfa.states]
        complete = True
    except StateLimitExceeded as exc:
        machine = LazyDFA(efa, occ)
        comp.notes.append(f"{exc}; the program runs on a lazy DFA that builds states on demand")
        state_sets, timer_sets, terminal, succ, complete = _explore_lazy(efa, occ, program_ir)

    analysis.mark_read_checks(program_ir, None if (occ.cycle_broken or not complete) else maybe_unset)
    analysis.warn_ambiguity(analysis.ambiguous_pairs(efa, state_sets), program_ir, positions, d)
    analysis.warn_simultaneous_timers((t for t in timer_sets if len(t) > 1), program_ir, positions, d)
    if state_sets and not state_sets[0]:
        d.warning(
            positions.regex,
            "the regular expression matches no sequence of events",
            "every event will be reported as unexpected ($error 2)",
            "matches-nothing",
        )
    elif program_ir.grouped and complete:
        can_end = can_reach(succ, terminal)
        analysis.warn_nontermination(can_end[0], all(can_end), positions, d)

    comp.program = CompiledProgram(program_ir, machine, source.name, sha256(source.text))
    return comp


def _explore_lazy(
    efa: EFA, occ: OccurrenceTable, program: ir.ProgramIR
) -> tuple[list[int], list[list[int]], list[bool], list[list[int]], bool]:
    """The first ``ANALYSIS_BUDGET`` states of the lazy DFA, breadth-first as ``determinize``
    numbers them (bit masks of NFA states), for the analyses: each state's timer symbols, whether
    it is terminal, its successors among them, and whether that was every state."""
    pos = Positions(efa, occ)
    index = {pos.start: 0}
    order = [pos.start]
    timer_sets: list[list[int]] = []
    terminal: list[bool] = []
    succ: list[list[int]] = []
    time_symbols = program.time_symbols
    i = 0
    complete = True
    while i < len(order):
        m = order[i]
        i += 1
        row = pos.row(m)
        timer_sets.append([sym for sym, _, _ in row if sym in time_symbols])
        terminal.append(pos.terminal(m))
        targets = []
        for _, t, _ in row:
            if t not in index:
                if len(order) >= ANALYSIS_BUDGET:
                    complete = False
                    continue
                index[t] = len(order)
                order.append(t)
            targets.append(index[t])
        succ.append(targets)
    return order, timer_sets, terminal, succ, complete


def compile_file(
    path: str | Path,
    *,
    name: str | None = None,
    state_limit: int = DEFAULT_STATE_LIMIT,
    resolve_externals: bool = True,
    force_lazy: bool = False,
) -> Compilation:
    return compile_source(
        SourceFile.read(path),
        name=name,
        state_limit=state_limit,
        resolve_externals=resolve_externals,
        force_lazy=force_lazy,
    )
