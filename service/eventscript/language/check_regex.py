"""The checker's second stage: the typing sites of the regular expression.

Event markers give their variables the event's type; time markers (elapse, arrive) type their
expressions; every site is kept for inference (``type_inference``).
"""

from __future__ import annotations

import calendar
import functools
from collections.abc import Callable

from . import ast
from .check_hints import ERROR_EVENTS_HINT, suggest
from .checked import Variable
from .checker_state import PATTERN_RANGE_HINT, RESERVED_PREFIX, CheckerState
from .hints import listing
from .source import Pos
from .types import LONG, TIME, Type, describe


class RegexSites(CheckerState):
    """Collects the typing sites of the regular expression: markers, time markers and their expressions."""

    # -- collecting the regular expression --------------------------------------------

    def variable(self, name: str, pos: Pos) -> Variable:
        v = self.variables.get(name)
        if v is None:
            v = self.variables[name] = Variable(name, len(self.variables), pos)
        return v

    def event_type(self, name: str) -> Type | None:
        if name in self.inputs:
            return self.inputs[name].ty
        if name in self.classes:
            return self.classes[name].ty
        return None

    def _collect_regex(self, r: ast.Regex) -> None:
        if isinstance(r, (ast.RSeq, ast.RAlt)):
            for item in r.items:
                self._collect_regex(item)
        elif isinstance(r, (ast.RInter, ast.RDiff)):
            self._collect_regex(r.left)
            self._collect_regex(r.right)
        elif isinstance(r, ast.RRepeat):
            self._collect_regex(r.item)
        elif isinstance(r, ast.RActions):
            self._collect_action(r.block, {})
        elif isinstance(r, ast.RMarker):
            self._collect_marker(r)
        elif isinstance(r, ast.RElapse):
            self._collect_expr(r.amount, {})
            amount = r.amount
            self.sites.append(lambda: self._number_site(amount, "an elapse amount"))
            self._marker_target(r.target, r.target_pos, TIME)
        elif isinstance(r, ast.RArrive):
            self._collect_arrive(r)

    def _collect_marker(self, r: ast.RMarker) -> None:
        t = self.event_type(r.name)
        if t is None:
            self._untyped_target(r)
            if r.name in self.broken_events:
                return  # reported at its declaration
            if r.name.startswith(RESERVED_PREFIX):
                self.err(
                    r.pos,
                    f"{r.name!r} cannot be matched: names starting with '$' are the engine's "
                    "(a program's own errors go to its error topic)",
                    ERROR_EVENTS_HINT,
                )
            elif r.name in self.outputs:
                self.err(
                    r.pos,
                    f"{r.name!r} is an output event; event markers match input events",
                    f"declare it with 'in' to receive it: in <type> {r.name}",
                )
            else:

                def hint() -> str:
                    known = [*self.inputs, *self.classes]
                    return suggest(r.name, known, f"declare it with 'in <type> {r.name}' (declared: {listing(known)})")

                self.err(r.pos, f"undeclared input event {r.name!r}", hint)
            return
        self._marker_target(r.target, r.target_pos, t)

    def _untyped_target(self, r: ast.RMarker) -> None:
        """The target of a marker whose event has no type (undeclared, an output event, or declared
        with a type that has errors): it is set there, with no type to give. The marker's error
        says what is wrong; "'f' is never given a value" would only repeat it, misleadingly."""
        if r.target is not None and r.target_pos is not None:
            v = self.variable(r.target, r.target_pos)
            v.assigned_at = v.assigned_at or r.target_pos
            v.broken = True

    def _marker_target(self, target: str | None, pos: Pos | None, t: Type) -> None:
        if target is None or pos is None:
            return
        v = self.variable(target, pos)
        v.assigned_at = v.assigned_at or pos

        def site() -> None:
            if v.ty is None:
                self._give_type(v, t, pos)
            else:
                self._settle_order(v, t)
            if v.ty != t:
                self.err(
                    pos,
                    f"{target!r} receives {describe(t)} here but is {describe(v.ty)} (from {v.origin})",
                    "use a different variable for each type",
                )

        self.sites.append(site)

    def _check_constant_components(self, p: ast.ArrivePattern) -> None:
        """Pattern numbers out of range can never match: say so now, not at run time. A constant
        written in parentheses is an expression, evaluated when the timer is set, as every other
        expression is (``arrive[(20+5):00]``, and ``10 / 0`` in an action): out of range, it gives
        ``$error`` 8 then, and is only warned of here."""
        named: list[tuple[ast.PatternComponent, str, int, int]] = []
        if p.date is not None:
            named += zip(p.date, ("year", "month", "day"), (1, 1, 1), (9999, 12, 31))
        if p.time is not None:
            named += zip(p.time, ("hour", "minute", "second"), (0, 0, 0), (23, 59, 59))
        ok = True
        for c, what, lo, hi in named:
            if isinstance(c, ast.IntLit) and not lo <= c.value <= hi:
                problem = f"{what} {c.value} is out of range {lo}..{hi}"
            elif isinstance(c, ast.FloatLit) and what == "second" and not 0 <= c.value < 60:
                problem = f"second {c.value} is out of range: seconds are from 0 to less than 60"
            else:
                continue
            ok = False
            if c.parenthesized:
                self._always_fails(c.pos, problem)
            else:
                self.err(c.pos, problem, PATTERN_RANGE_HINT)
        if ok and p.date is not None:  # (every component in range)
            year, month, day = p.date
            if not (isinstance(month, ast.IntLit) and isinstance(day, ast.IntLit)):
                return
            y = year.value if isinstance(year, ast.IntLit) else 2000  # a leap year: any year may match
            days = calendar.monthrange(y, month.value)[1]
            if day.value > days:
                which = f"{y:04d}-{month.value:02d}" if isinstance(year, ast.IntLit) else f"month {month.value}"
                problem = f"day {day.value} never comes: {which} has {days} days"
                if any(isinstance(c, ast.IntLit) and c.parenthesized for c in p.date):
                    self._never_fires(day.pos, problem)
                else:
                    self.err(day.pos, problem)

    def _always_fails(self, pos: Pos, problem: str) -> None:
        """A parenthesized pattern constant out of range: a warning (in the reporting pass)."""
        self._pattern_warning(pos, f"{problem}; each time this timer is set it gives $error 8 and does not fire")

    def _never_fires(self, pos: Pos, problem: str) -> None:
        """A date of parenthesized constants that never comes: its timer is set and never fires."""
        self._pattern_warning(pos, f"{problem}; this timer never fires")

    def _pattern_warning(self, pos: Pos, message: str) -> None:
        if self.reporting:
            self.d.warning(
                pos, message, "write a value in range; without the parentheses it is refused at once", "out-of-range"
            )

    def _collect_arrive(self, r: ast.RArrive) -> None:
        p = r.pattern
        self._check_constant_components(p)
        if p.time_expr is not None:
            self._collect_expr(p.time_expr, {})
            te = p.time_expr
            self.sites.append(lambda: self._typed_site(te, TIME, "an arrive time"))
        else:
            comps = [*(p.date or []), *(p.time or [])]
            last = len(comps) - 1
            for i, c in enumerate(comps):
                if isinstance(c, ast.Wild):
                    continue
                self._collect_expr(c, {})
                if i == last and p.time is not None and len(p.time) == 3 and isinstance(c, ast.FloatLit):
                    continue  # fractional seconds
                self.sites.append(functools.partial(self._typed_site, c, LONG, "an arrive pattern component"))
        self._marker_target(r.target, r.target_pos, TIME)

    def _typed_site(self, e: ast.Expr, t: Type, what: str, hint: Callable[[Type], str | None] | None = None) -> None:
        self.expect(e, t)
        got = self.synth(e)
        if got is not None and got != t:
            self.err(e.pos, f"{what} must be {describe(t)}, not {describe(got)}", hint(got) if hint else None)

    def _number_site(self, e: ast.Expr, what: str) -> None:
        got = self.synth(e)
        if got is not None and not got.is_numeric:
            self.err(e.pos, f"{what} must be long or double, not {describe(got)}")
