"""Name resolution and type inference.

EventScript variables are not declared; their types are inferred. The checker collects every
*typing site* of the program (event markers, assignments, emits, conditions, subscripts,
time-marker expressions, function arguments) and propagates types between them until nothing
changes: a marker gives its variable the event's type, an emit pushes the output type into its
argument, ``x = e`` gives x the type of e (or e the type of x), and so on. A final pass then
re-checks every site and reports inconsistencies, with the place the conflicting type came from.

The rules: ``long`` operands of binary operators are promoted to ``double`` when the other
operand is ``double``; assignments, emits and markers never convert.

``Checker`` is one class per stage, each in a module of its own (``checker_state`` says which);
this module puts them together and runs them in order (``Checker.check``).
"""

from __future__ import annotations

from . import ast, time_checks
from .check_actions import ActionSites
from .check_declarations import DeclarationChecks
from .check_regex import RegexSites
from .checked import (
    CheckedProgram,
    EventClass,
    EventValue,
    ExternalFunction,
    InputEvent,
    LoopIndex,
    OutputEvent,
    Variable,
)
from .checker_state import CheckerState
from .diagnostics import Diagnostics
from .external_functions import resolve_external
from .type_inference import TypeInference
from .type_synthesis import TypeSynthesis

__all__ = [
    "CheckedProgram",
    "Checker",
    "EventClass",
    "EventValue",
    "ExternalFunction",
    "InputEvent",
    "LoopIndex",
    "OutputEvent",
    "Variable",
    "check",
    "resolve_external",
]


class Checker(DeclarationChecks, RegexSites, ActionSites, TypeInference, TypeSynthesis, CheckerState):
    """Checks one program: its stages in order (``check``), sharing ``CheckerState``."""

    # -- entry point ----------------------------------------------------------------

    def check(self, program: ast.Program) -> CheckedProgram:
        self.reporting = True
        search = [program.pos.source.path.parent] if program.pos.source.path else []
        for decl in program.decls:
            if isinstance(decl, ast.TypeDecl):
                self._typedef(decl)
            elif isinstance(decl, ast.FunctionDecl):
                self._function(decl, search)
            elif isinstance(decl, ast.OutputDecl):
                for o in decl.entries:
                    self._output(o)
            elif isinstance(decl, ast.InputDecl):
                for i in decl.entries:
                    self._input(i)
        self._check_groups()
        for ev in self.inputs.values():
            self._case_clause(ev)
        if program.regex is not None:
            self._collect_regex(program.regex)
        self._infer()
        self._final_variable_checks()
        self._unemitted_outputs()
        if program.regex is not None:
            time_checks.check_zero_elapse_loops(program.regex, self.d)
            time_checks.check_ambiguous_patterns(program.regex, self.d)
        variables = sorted(self.variables.values(), key=lambda v: v.index)
        return CheckedProgram(
            program, self.inputs, self.outputs, self.classes, variables, self.externals, self.key_types, self.loop_slots
        )

    def _unemitted_outputs(self) -> None:
        """A declared output event no action emits: a newcomer's program that prints nothing
        often emits under a misspelt name or not at all (a warning: a pipeline may declare an
        output for later)."""
        for out in self.outputs.values():
            if out.name not in self.emitted:
                self.d.warning(
                    out.pos,
                    f"output event {out.name!r} is declared but never emitted",
                    f"emit it in an action, e.g. {{ !>{out.name}(...); }}, or remove its declaration",
                    "never-emitted",
                )


def check(program: ast.Program, diagnostics: Diagnostics, *, resolve_externals: bool = True) -> CheckedProgram:
    return Checker(diagnostics, resolve_externals=resolve_externals).check(program)
