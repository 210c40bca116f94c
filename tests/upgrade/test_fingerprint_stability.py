"""An upgrade of EventScript itself keeps a program's fingerprint where its machine is the same,
so a worker's stored state stays its own and the default ``upgrade: refuse`` does not stop it
(task/versions.py: "upgrade EventScript first, then the program").

The expected values are what the previous version (76f7900) computed for these programs: a
change of the compiler that alters them makes every running program with such a construct refuse
its state after the upgrade. Two such changes were caught this way: a builder keeping its
fields' written order (``ir.Build.order``), and empty action blocks (``{}``) accepted on loops."""

from __future__ import annotations

import pytest
from upgrade_helpers import compiled

from eventscript.upgrade.fingerprint import fingerprint
from eventscript.upgrade.plan import make_plan

PROGRAMS = {
    # A builder whose fields are written in another order than declared.
    "builder": (
        "in {string k; long n;} A\nout {string k; long n;} O\n( A(a) { !>O({n: a.n, k: a.k}); } )*",
        "es1-803450cbffcdf67c348872348fc690ae",
    ),
    # An empty action block where it was always allowed (not on a loop of its own).
    "empty block": (
        "in {} A, {} B\nout {} Z\n( A() {} B() { !>Z({}); } )*",
        "es1-5c9f7dda6dd0a5d337b9653ea2aa9031",
    ),
    "plain": ("in {} A\nout long O\n( A() { !>O(1); } )*", "es1-673223e94bc45f97c1d343e4f0e15a34"),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_previous_versions_fingerprint(name: str) -> None:
    source, expected = PROGRAMS[name]
    assert fingerprint(compiled(source)) == expected


def test_a_loop_of_empty_blocks_is_planned_as_compiled() -> None:
    # The upgrade planner rebuilds the automaton from the intermediate form and must meet the
    # compiled machine (automata/thompson.build_nfa): a program with `( {} )*` plans itself.
    prog = compiled("in {} A, {} B\nout {} Z\n( A() ( {} )* B() { !>Z({}); } )*")
    plan = make_plan(prog, prog, trust_fingerprint=False)
    assert plan.states and all(s.verdict == "carried" for s in plan.states)
