"""Wording shared by diagnostics: "did you mean" suggestions and short lists of names.

A misspelt name is the most common mistake in a language without declarations of variables, and
the compiler knows every name that would have been right: suggesting the closest one costs a
``difflib`` lookup and saves the user a trip to the reference.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: At most this many names are listed in a hint ("declared: A, B, ... and 12 more").
MAX_LISTED = 10
#: difflib's similarity ratio a name needs to be suggested: "sqr" finds "sqrt" (0.86), "twise"
#: finds "twice" (0.8), "foo" does not find "floor" (0.75).
CUTOFF = 0.8


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like ``name``, if one is close enough to be a plausible misspelling.

    Case is ignored when comparing (``Sqrt`` for ``sqrt``); ties go to the candidate that sorts
    first, so the suggestion does not depend on declaration order.
    """
    by_folded: dict[str, str] = {}
    for c in sorted(set(candidates)):
        if c != name:
            by_folded.setdefault(c.casefold(), c)
    folded = name.casefold()
    for c, original in by_folded.items():
        if c == folded or _swapped(folded, c):
            return original
    matches = difflib.get_close_matches(folded, list(by_folded), n=1, cutoff=CUTOFF)
    return by_folded[matches[0]] if matches else None


def _swapped(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with two adjacent characters exchanged (``Maen`` for ``Mean``):
    a common slip that difflib's ratio rates no higher than unrelated names of that length."""
    if len(a) != len(b):
        return False
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """``"did you mean 'sqrt'?"`` or None."""
    best = closest(name, candidates)
    return f"did you mean {best!r}?" if best is not None else None


def listing(names: Iterable[str]) -> str:
    """Sorted names, cut after :data:`MAX_LISTED`: ``"A, B, C"``, ``"none"``, ``"A, ... and 3 more"``."""
    ordered = sorted(set(names))
    if not ordered:
        return "none"
    shown = ", ".join(ordered[:MAX_LISTED])
    rest = len(ordered) - MAX_LISTED
    return shown if rest <= 0 else f"{shown} and {rest} more"


def join_hints(*hints: str | None) -> str | None:
    """Hints joined with "; ", leaving out the missing ones."""
    present = [h for h in hints if h]
    return "; ".join(present) if present else None
