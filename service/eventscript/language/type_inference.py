"""Type inference: propagate types between the typing sites until nothing changes, then a
reporting pass over every site (see ``checker``'s docstring for the rules).
"""

from __future__ import annotations

from . import ast
from .check_hints import choose_guess, suggest
from .checked import Variable
from .checker_state import MAX_INFERENCE_PASSES, CheckerState
from .source import Pos
from .types import Type


class TypeInference(CheckerState):
    """Runs the typing sites to a fixed point, then checks every variable got a type."""

    # -- inference ----------------------------------------------------------------------

    def _infer(self) -> None:
        """Type every variable, then report.

        Firm rules first: event markers, emits, assignments and the contexts that require one
        type (conditions, subscripts, parameters other than double) never convert, so a type they
        give is the only possible one. Only when they are exhausted does a context that promotes
        long to double (an operand of an arithmetic operator or comparison, a ?: branch, a double
        parameter) give an untyped variable the type it meets there: all such guesses of a round
        at once, so that the result never depends on the order of the program text. Then the
        firm rules again, and so on. (In one pass in text order, ``!>D(d * x)`` written before
        the marker ``B(x)`` made x a double, and the long of B was then rejected.)
        """
        self.reporting = False
        self.candidates = {}
        for _ in range(MAX_INFERENCE_PASSES):
            self.changed = False
            self.candidates.clear()
            for site in self.sites:
                site()
            if self.changed:
                continue  # the firm rules made progress: guesses wait until they are exhausted
            guesses = {v: c for v, c in self.candidates.items() if v.ty is None}
            if not guesses:
                break
            for v, candidates in guesses.items():
                v.ty, v.origin = choose_guess(candidates)
        self.candidates = None
        self.reporting = True
        for site in self.sites:
            site()

    def _give_type(self, v: Variable, t: Type, pos: Pos) -> None:
        if self.guessing and self.candidates is not None:
            self.candidates.setdefault(v, []).append((t, pos))
            return
        v.ty, v.origin = t, pos
        self.changed = True

    def _soft_expect(self, e: ast.Expr, t: Type) -> Type | None:
        """The expectation of a context where promotion lets a long stand for a double, or a
        double make a long operand's result double: a numeric ``t`` is only a guess there, kept
        until the firm rules are exhausted (see _infer). Other types are required as they are."""
        if not t.is_numeric:
            return self.expect(e, t)
        was = self.guessing
        self.guessing = True
        try:
            return self.expect(e, t)
        finally:
            self.guessing = was

    def _unset_hint(self, name: str) -> str:
        if name in self.inputs or name in self.classes:
            return f"in actions an event's value is reached through its marker's variable, e.g. {name}(x) then x"
        # A variable never set is most often a misspelt one that is (a new user's 'ipp' for 'ip').
        given = (v.name for v in self.variables.values() if v.assigned_at is not None and v.name != name)
        return suggest(name, given, "set it in an action (x = ...;) or with an event marker (Event(x))")

    def _final_variable_checks(self) -> None:
        for v in sorted(self.variables.values(), key=lambda v: v.index):
            if v.assigned_at is None and v.ty is not None:
                # The document (2.5, 12) makes a read of a variable never set a warning, not an
                # error: at run time each read is $error 3 and gives the type's default value.
                self.d.warning(
                    v.first_pos,
                    f"{v.name!r} is never given a value: each read is $error 3 and gives the default value",
                    self._unset_hint(v.name),
                    "never-set",
                )
            elif v.assigned_at is None:
                self.d.error(
                    v.first_pos,
                    f"{v.name!r} is never given a value, and nothing gives it a type",
                    self._unset_hint(v.name),
                )
            elif v.ty is None:
                if v.broken:
                    continue
                self.d.error(
                    v.first_pos,
                    f"cannot infer the type of {v.name!r}",
                    "assign it a value of known type, or use it where its type is required",
                )
            elif v.read_at is None:
                self.d.warning(
                    v.assigned_at,
                    f"variable {v.name!r} is set but never read",
                    "remove it, or check the spelling of its uses",
                    "never-read",
                )
