"""Matching on the syntax tree: residual terms, the paths they stand for, and feasibility.

Written from the language document (sections 2.3, 3.2, 3.3.1), not from ``automata/``: the
regular expression becomes a tree of hashable tuples, and matching is done with Antimirov-style
partial derivatives, so that each residual term *is* one path (one set of positions) and the
state of an instance is the set of its live paths.

- A *ready* term is ``EPS`` (the path has matched the whole expression) or has an event marker,
  or an intersection/difference in progress, at its head: it waits for the next event.
- :meth:`Matcher.lead` follows a term's empty moves to ready terms, collecting the actions met;
  :meth:`Matcher.step` consumes one event (or time event) from a ready term.
- Actions are identified by their place in the source text (a character offset), so a copy made
  by a multiplier is the *same* action: it runs at most once per transition.
- The actions a path meets are a set of sequences: one sequence per linear strand, an
  intersection or difference contributing one strand per operand.
- ``L & R``: one path through each operand, consuming the same events; it ends when both end.
- ``L - R``: one path through ``L`` with the set of *all* live paths through ``R``; it ends when
  ``L`` ends and no path through ``R`` ends with it. Actions of ``R`` run while their path can
  still match ``R`` (document 3.3.1: they react to the discovery that the whole must fail).
- A path is *feasible* when the events so far can be extended to a match of the whole
  expression along it (document 3.2); only feasible paths run actions or survive.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from eventscript.language import ast

Term = tuple  # type: ignore[type-arg]
Acts = frozenset[tuple[int, ...]]

EPS: Term = ("eps",)
ONE: Acts = frozenset({()})


def cat(first: Acts, second: Acts) -> Acts:
    """Every strand of ``first`` followed by every strand of ``second``."""
    if second == ONE:
        return first
    if first == ONE:
        return second
    return frozenset(a + b for a in first for b in second)


def seq(first: Term, second: Term) -> Term:
    if first == EPS:
        return second
    if second == EPS:
        return first
    if first[0] == "seq":
        return ("seq", first[1], seq(first[2], second))
    return ("seq", first, second)


def head_and_rest(ready: Term) -> tuple[Term, Term]:
    if ready[0] == "seq":
        return ready[1], ready[2]
    return ready, EPS


@dataclass(frozen=True)
class Marker:
    """An event marker, wildcard or time marker, by its place in the text."""

    offset: int
    kind: str  # "name", "wild", "elapse", "arrive"
    name: str | None
    target: str | None
    node: ast.Regex


def from_ast(regex: ast.Regex, markers: dict[int, Marker], blocks: dict[int, ast.RActions]) -> Term:
    """The term for a regular expression; fills the tables of markers and action blocks."""
    if isinstance(regex, ast.RSeq):
        term = EPS
        for item in reversed(regex.items):
            term = seq(from_ast(item, markers, blocks), term)
        return term
    if isinstance(regex, ast.RAlt):
        alts = [from_ast(i, markers, blocks) for i in regex.items]
        term = alts[-1]
        for alt in reversed(alts[:-1]):
            term = ("alt", alt, term)
        return term
    if isinstance(regex, ast.RInter):
        return ("and", from_ast(regex.left, markers, blocks), from_ast(regex.right, markers, blocks))
    if isinstance(regex, ast.RDiff):
        return ("diff", from_ast(regex.left, markers, blocks), frozenset({from_ast(regex.right, markers, blocks)}))
    if isinstance(regex, ast.RRepeat):
        item = from_ast(regex.item, markers, blocks)
        term = ("star", item) if regex.high is None else EPS
        if regex.high is not None:
            for _ in range(regex.high - regex.low):
                term = ("alt", EPS, seq(item, term))
        for _ in range(regex.low):
            term = seq(item, term)
        return term
    if isinstance(regex, ast.RActions):
        blocks[regex.pos.offset] = regex
        return ("act", regex.pos.offset)
    offset = regex.pos.offset
    if isinstance(regex, ast.RMarker):
        markers[offset] = Marker(offset, "name", regex.name, regex.target, regex)
    elif isinstance(regex, ast.RWildcard):
        markers[offset] = Marker(offset, "wild", None, None, regex)
    elif isinstance(regex, ast.RElapse):
        markers[offset] = Marker(offset, "elapse", None, regex.target, regex)
    elif isinstance(regex, ast.RArrive):
        markers[offset] = Marker(offset, "arrive", None, regex.target, regex)
    else:
        raise TypeError(f"unknown regular expression node {regex!r}")
    return ("mark", offset)


#: An event as the matcher sees it: ("ev", declared name, class or None) or ("time", marker offset).
Symbol = tuple  # type: ignore[type-arg]


class Matcher:
    """Partial derivatives with actions over one program's term (caches are per program)."""

    def __init__(self, root: Term, markers: dict[int, Marker], alphabet: Iterable[Symbol]) -> None:
        self.root = root
        self.markers = markers
        #: The classes of each input with a case clause: its name in a marker stands for all of
        #: them (document footnote 9), also for another input's events of a class they share.
        self.classes: dict[str, set[str]] = {}
        for symbol in alphabet:
            if symbol[2] is not None:
                self.classes.setdefault(symbol[1], set()).add(symbol[2])
        self.alphabet = list(alphabet) + [
            ("time", m.offset) for m in markers.values() if m.kind in ("elapse", "arrive")
        ]
        self._lead: dict[Term, list[tuple[Acts, Term]]] = {}
        self._step: dict[tuple[Term, Symbol], list[tuple[Acts, Term]]] = {}
        self._feasible: dict[Term, bool] = {EPS: True}

    # -- empty moves -------------------------------------------------------------------

    def lead(self, term: Term) -> list[tuple[Acts, Term]]:
        cached = self._lead.get(term)
        if cached is None:
            cached = self._lead[term] = _merge(self._lead_uncached(term))
        return cached

    def _lead_uncached(self, term: Term) -> list[tuple[Acts, Term]]:
        kind = term[0]
        if kind == "eps":
            return [(ONE, EPS)]
        if kind == "act":
            return [(frozenset({(term[1],)}), EPS)]
        if kind == "mark":
            return [(ONE, term)]
        if kind == "alt":
            return self.lead(term[1]) + self.lead(term[2])
        if kind == "star":
            return [(ONE, EPS)] + [(acts, seq(x, term)) for acts, x in self.lead(term[1]) if x != EPS]
        if kind == "seq":
            out: list[tuple[Acts, Term]] = []
            for acts, first in self.lead(term[1]):
                if first == EPS:
                    out += [(cat(acts, more), rest) for more, rest in self.lead(term[2])]
                else:
                    out.append((acts, seq(first, term[2])))
            return out
        if kind == "and":
            out = []
            for left_acts, left in self.lead(term[1]):
                for right_acts, right in self.lead(term[2]):
                    both = left_acts | right_acts
                    if left == EPS and right == EPS:
                        out.append((both, EPS))
                    elif left != EPS and right != EPS:
                        out.append((both, ("and", left, right)))
            return out
        if kind == "diff":
            right_acts, rights = self._right_paths([self.lead(r) for r in term[2]])
            out = []
            for left_acts, left in self.lead(term[1]):
                if left == EPS:
                    if EPS not in rights:
                        out.append((left_acts | right_acts, EPS))
                else:
                    out.append((left_acts | right_acts, ("diff", left, rights)))
            return out
        raise TypeError(f"unknown term {term!r}")

    def _right_paths(self, moves: list[list[tuple[Acts, Term]]]) -> tuple[Acts, frozenset[Term]]:
        """The right operand of a difference: its paths that can still match it, and their actions."""
        acts: set[tuple[int, ...]] = set()
        terms: set[Term] = set()
        for options in moves:
            for a, t in options:
                if self.feasible(t):
                    acts |= a
                    terms.add(t)
        return frozenset(acts), frozenset(terms)

    # -- consuming an event ------------------------------------------------------------

    def matches(self, marker: Marker, symbol: Symbol) -> bool:
        if symbol[0] == "time":
            return marker.offset == symbol[1]
        if marker.kind == "wild":
            return True
        if marker.kind != "name":
            return False
        if symbol[2] is None:  # an input without a case clause
            return marker.name == symbol[1]
        return marker.name == symbol[2] or symbol[2] in self.classes.get(marker.name, ())

    def step(self, ready: Term, symbol: Symbol) -> list[tuple[Acts, Term]]:
        key = (ready, symbol)
        cached = self._step.get(key)
        if cached is None:
            cached = self._step[key] = _merge(self._step_uncached(ready, symbol))
        return cached

    def _step_uncached(self, ready: Term, symbol: Symbol) -> list[tuple[Acts, Term]]:
        if ready == EPS:
            return []
        head, rest = head_and_rest(ready)
        kind = head[0]
        if kind == "mark":
            marker = self.markers[head[1]]
            if not self.matches(marker, symbol):
                return []
            bind: Acts = frozenset({(marker.offset,)}) if marker.target else ONE
            return [(cat(bind, acts), t) for acts, t in self.lead(rest)]
        out: list[tuple[Acts, Term]] = []
        if kind == "and":
            for left_acts, left in self.step(head[1], symbol):
                for right_acts, right in self.step(head[2], symbol):
                    both = left_acts | right_acts
                    if left == EPS and right == EPS:
                        out += [(cat(both, acts), t) for acts, t in self.lead(rest)]
                    elif left != EPS and right != EPS:
                        out.append((both, seq(("and", left, right), rest)))
            return out
        if kind == "diff":
            right_acts, rights = self._right_paths([self.step(r, symbol) for r in head[2]])
            for left_acts, left in self.step(head[1], symbol):
                both = left_acts | right_acts
                if left == EPS:
                    if EPS not in rights:
                        out += [(cat(both, acts), t) for acts, t in self.lead(rest)]
                else:
                    out.append((both, seq(("diff", left, rights), rest)))
            return out
        raise TypeError(f"not a ready term: {ready!r}")

    # -- feasibility -------------------------------------------------------------------

    def feasible(self, ready: Term) -> bool:
        """Can this path still reach the end of its expression (some continuation matches)?"""
        known = self._feasible.get(ready)
        if known is not None:
            return known
        seen = {ready}
        stack = [ready]
        found = False
        while stack and not found:
            term = stack.pop()
            for symbol in self.alphabet:
                for _, nxt in self.step(term, symbol):
                    if nxt == EPS or self._feasible.get(nxt):
                        found = True
                        break
                    if nxt not in seen and self._feasible.get(nxt) is None:
                        seen.add(nxt)
                        stack.append(nxt)
                if found:
                    break
        if found:
            self._feasible[ready] = True
        else:
            for term in seen:  # nothing reachable from any of them ends
                self._feasible[term] = False
        return found

    def time_markers(self, ready: Term) -> set[int]:
        """Offsets of the time markers this path waits for (document 2.4)."""
        if ready == EPS:
            return set()
        head, _ = head_and_rest(ready)
        if head[0] == "mark":
            return {head[1]} if self.markers[head[1]].kind in ("elapse", "arrive") else set()
        if head[0] == "and":
            return self.time_markers(head[1]) & self.time_markers(head[2])
        return self.time_markers(head[1])


def _merge(options: list[tuple[Acts, Term]]) -> list[tuple[Acts, Term]]:
    """One entry per distinct term; their action strands pooled."""
    pooled: dict[Term, set[tuple[int, ...]]] = {}
    for acts, term in options:
        pooled.setdefault(term, set()).update(acts)
    return [(frozenset(a), t) for t, a in pooled.items()]
