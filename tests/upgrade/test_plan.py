"""Upgrade plans for edits of each kind (issue 22): the verdict for every old state, the timer
re-arm rule, variables and group keys; for carried states, a tester run upgraded at a cut equals
the reference of ``upgrade_helpers.reference`` (the old program's outputs up to the cut, then the
new program's past it, from runs that know nothing of plans)."""

from __future__ import annotations

import pytest
from upgrade_helpers import compiled, reference, render, run_tester, run_upgraded

from eventscript.engine import context
from eventscript.upgrade.convert import CARRIED, ENDED, RESTARTED, UpgradeRefused, convert
from eventscript.upgrade.fingerprint import fingerprint
from eventscript.upgrade.plan import make_plan

DECLS = "in {string door;} Opened group(Opened.door), {string door;} Closed group(Closed.door)"
DOORS = f"""{DECLS}
out {{string door;}} LeftOpen

( Opened()
  ( Closed()
  | elapse[5 minutes]() {{ !>LeftOpen({{door: group[0]}}); }} Closed()
  )
)*
"""


def verdicts(plan) -> list[tuple[str, int | None]]:  # type: ignore[no-untyped-def]
    return [(s.verdict, s.new_state) for s in plan.states]


def check_live_run(
    old_src: str, new_src: str, items: list[tuple[str, str]], cut: int, restarted: frozenset[str] = frozenset()
) -> list[str]:
    """Upgrade at ``cut`` and compare with the reference; returns the verdicts met."""
    old, new = compiled(old_src), compiled(new_src)
    plan = make_plan(old, new)
    out, conversions = run_upgraded(plan, render(items), cut)
    assert out == reference(old, new, items, cut, restarted)
    return sorted(c.verdict for c in conversions)


TRACE = [
    ("time", "08:00:00"),
    ("Opened", "front"),
    ("Opened", "back"),
    ("time", "08:01:00"),
    ("Closed", "back"),
    ("Opened", "back"),
    ("time", "08:02:00"),  # the cut is before this item (index 6)
    ("Closed", "side"),
    ("time", "08:04:00"),
    ("Closed", "back"),
    ("time", "08:30:00"),
    ("Opened", "front"),
    ("time", "09:00:00"),
]
CUT = 6


def test_the_same_program_carries_every_state_to_itself() -> None:
    prog = compiled(DOORS)
    for trust in (True, False):
        plan = make_plan(prog, prog, trust_fingerprint=trust)
        assert verdicts(plan) == [(CARRIED, i) for i in range(3)]
        assert plan.exit_code == 0


def test_a_comment_or_whitespace_change_keeps_the_fingerprint_and_every_state() -> None:
    edited = DOORS.replace("( Opened()", "// doors\n(   Opened()  /* first */").replace("\n  | ", "\n\n    | ")
    old, new = compiled(DOORS), compiled(edited)
    assert fingerprint(old) == fingerprint(new)
    assert fingerprint(old) != fingerprint(compiled(DOORS.replace("5 minutes", "6 minutes")))
    plan = make_plan(old, new, trust_fingerprint=False)
    assert verdicts(plan) == [(CARRIED, i) for i in range(3)] and plan.exit_code == 0
    assert check_live_run(DOORS, edited, TRACE, CUT) == [CARRIED, CARRIED]


def test_an_alternative_added_carries_every_state() -> None:
    new_src = DOORS.replace(DECLS, DECLS + ", {string door;} Locked group(Locked.door)").replace(
        "( Closed()\n", "( Closed()\n  | Locked()\n"
    )
    plan = make_plan(compiled(DOORS), compiled(new_src))
    assert plan.exit_code == 0, plan.to_json()
    after_opened = plan.states[1]
    assert [w.split(" at ")[0] for w in after_opened.waits_before] == ["Closed()", "elapse[5 minutes]()"]
    assert [w.split(" at ")[0] for w in after_opened.waits_after] == ["Closed()", "Locked()", "elapse[5 minutes]()"]
    assert {m["change"] for m in plan.markers} == {"kept", "added"}
    items = [*TRACE[:CUT], ("time", "08:02:00"), ("Locked", "back"), ("Locked", "front"), ("time", "08:20:00")]
    assert check_live_run(DOORS, new_src, items, CUT) == [CARRIED, CARRIED]


def test_alternatives_reordered_carry_every_state() -> None:
    new_src = DOORS.replace(
        """( Closed()
  | elapse[5 minutes]() { !>LeftOpen({door: group[0]}); } Closed()
  )""",
        """( elapse[5 minutes]() { !>LeftOpen({door: group[0]}); } Closed()
  | Closed()
  )""",
    )
    assert new_src != DOORS
    plan = make_plan(compiled(DOORS), compiled(new_src))
    assert plan.exit_code == 0
    assert all(m["change"] == "kept" for m in plan.markers)
    assert check_live_run(DOORS, new_src, TRACE, CUT) == [CARRIED, CARRIED]


@pytest.mark.parametrize("minutes", [10, 3])
def test_a_timer_duration_changed_is_re_armed_from_the_state_entry(minutes: int) -> None:
    """Front opened at 08:00 and the upgrade is at 08:01: with 10 minutes its timer is due at
    08:10, with 3 minutes at 08:03, as if the new program had entered the state at 08:00."""
    new_src = DOORS.replace("5 minutes", f"{minutes} minutes")
    old, new = compiled(DOORS), compiled(new_src)
    plan = make_plan(old, new)
    assert plan.exit_code == 0
    (rules,) = plan.states[1].rearm.values()
    assert [(r.how, r.amount_us) for r in rules] == [("entry", minutes * 60_000_000)]
    assert check_live_run(DOORS, new_src, TRACE, CUT) == [CARRIED, CARRIED]
    out, _ = run_upgraded(plan, render(TRACE), CUT)
    first = next(line for line in out if line["event"] == "LeftOpen")
    assert (first["time"][11:19], first["key"]) == (f"08:{minutes:02d}:00", ["front"])


def test_a_shorter_timer_already_past_fires_at_the_upgrade_instant() -> None:
    new_src = DOORS.replace("5 minutes", "1 minutes")
    plan = make_plan(compiled(DOORS), compiled(new_src))
    out, conversions = run_upgraded(plan, render(TRACE), CUT)  # cut at 08:01, front opened at 08:00
    assert [c.verdict for c in conversions] == [CARRIED, CARRIED]
    left_open = [(line["time"], line["key"]) for line in out if line["event"] == "LeftOpen"]
    assert left_open[0] == ("2026-01-01T08:01:00.000000Z", ["front"])


CHECKED = f"""{DECLS}, {{string door;}} Checked group(Checked.door)
out {{string door;}} LeftOpen

( Opened() Checked()
  ( Closed()
  | elapse[5 minutes]() {{ !>LeftOpen({{door: group[0]}}); }} Closed()
  )
)*
"""


def test_a_state_removed_restarts_the_instances_only_it_could_hold() -> None:
    new_src = CHECKED.replace(" Checked()\n", "\n")
    plan = make_plan(compiled(CHECKED), compiled(new_src))
    assert plan.exit_code == 1
    by_old = {s.old_state: s for s in plan.states}
    assert by_old[1].verdict == CARRIED  # after Opened(): waited for Checked(), now for Closed() or the timer
    assert by_old[1].waits_before[0].startswith("Checked()")
    assert by_old[1].waits_after[0].startswith("Closed()")
    assert [(r.how, r.amount_us) for r in by_old[1].rearm[None]] == [("now", 5 * 60_000_000)]
    assert by_old[2].verdict == RESTARTED and "Checked()" in by_old[2].reason
    assert "no longer has" in by_old[2].reason
    # back has been checked (restarts); front has only opened, at the cut's instant (carried, and
    # its new timer armed at the upgrade is the one the new program would have armed then).
    items = [
        ("time", "08:00:00"),
        ("Opened", "back"),
        ("Checked", "back"),
        ("Opened", "front"),
        ("time", "08:01:00"),
        ("Closed", "back"),
        ("Opened", "back"),
        ("time", "08:20:00"),
    ]
    assert check_live_run(CHECKED, new_src, items, 4, restarted=frozenset({"back"})) == [CARRIED, RESTARTED]


def test_a_variable_added_takes_its_initial_constant() -> None:
    new_src = (
        DOORS.replace("out {string door;} LeftOpen", "out {string door;} LeftOpen, long Closings")
        .replace("( Opened()", "{ n = 0; }\n( Opened()")
        .replace("( Closed()\n", "( Closed() { n = n + 1; }\n")
        .replace("!>LeftOpen({door: group[0]});", "!>LeftOpen({door: group[0]}); !>Closings(n);")
    )
    plan = make_plan(compiled(DOORS), compiled(new_src))
    assert plan.exit_code == 0
    assert [(v.name, v.how, v.value) for v in plan.variables] == [("n", "initial", 0)]
    items = [
        ("time", "08:00:00"),
        ("Opened", "front"),
        ("Opened", "back"),
        ("time", "08:01:00"),
        ("Closed", "back"),
        ("Opened", "back"),
        ("time", "08:20:00"),
    ]
    assert check_live_run(DOORS, new_src, items, 3) == [CARRIED, CARRIED]
    out, _ = run_upgraded(plan, render(items), 3)
    assert {(line["key"][0], line["value"]) for line in out if line["event"] == "Closings"} == {
        ("front", 0),
        ("back", 1),
    }


def test_a_variable_whose_type_changed_cannot_be_applied() -> None:
    old_src = DOORS.replace("( Opened()", "{ n = 0; }\n( Opened() { n = n + 1; }")
    new_src = DOORS.replace("( Opened()", '{ n = ""; }\n( Opened() { n = n + "o"; }')
    plan = make_plan(compiled(old_src), compiled(new_src))
    assert plan.exit_code == 2
    assert any("variable n: long in the old program, string in the new one" in p.message for p in plan.problems)
    long_to_double = make_plan(
        compiled(old_src), compiled(old_src.replace("n = 0;", "n = 0.0;").replace("n + 1", "n + 1.0"))
    )
    assert long_to_double.exit_code == 0 and [v.how for v in long_to_double.variables] == ["promoted"]


@pytest.mark.parametrize(
    "edit",
    [
        ("group(Opened.door)", 'group(Opened.door + "!")'),  # the same key type, another clause
        (
            "{string door;} Opened group(Opened.door), {string door;} Closed group(Closed.door)",
            "{long door;} Opened group(Opened.door), {long door;} Closed group(Closed.door)",
        ),
    ],
)
def test_a_group_key_changed_cannot_be_applied(edit: tuple[str, str]) -> None:
    new_src = DOORS.replace(*edit).replace("LeftOpen({door: group[0]})", "LeftOpen({door: string(group[0])})")
    old = compiled(DOORS)
    plan = make_plan(old, compiled(new_src))
    assert plan.exit_code == 2
    assert any("group" in p.message for p in plan.problems), plan.problems
    snapshot = context.encode(1, [], ("front",), None)
    with pytest.raises(UpgradeRefused):
        convert(plan, snapshot, 0)


def test_an_instance_whose_match_the_new_program_completes_ends() -> None:
    old_src = f"{DECLS}\nout long X\nOpened() Closed() Closed()\n"
    new_src = f"{DECLS}\nout long X\nOpened() Closed()\n"
    plan = make_plan(compiled(old_src), compiled(new_src))
    assert plan.exit_code == 1
    assert [s.verdict for s in plan.states] == [CARRIED, CARRIED, ENDED, ENDED]
    assert [s.already_ended for s in plan.states] == [False, False, False, True]
    conv = convert(plan, context.encode(2, [], ("front",), None), 0)
    assert (conv.verdict, conv.data) == (ENDED, None)


def test_snapshots_that_are_not_the_old_programs_are_refused() -> None:
    plan = make_plan(compiled(DOORS), compiled(DOORS))
    with pytest.raises(ValueError, match="not a state of the old program"):
        convert(plan, context.encode(7, [], ("front",), None), 0)
    with pytest.raises(ValueError, match="variables"):
        convert(plan, context.encode(1, [1], ("front",), None), 0)


RISES = """in double Temp
out double Rise

( Temp(a) Temp(b) { b - a > 5.0 ? !>Rise(b - a); } )*
"""


def test_an_ungrouped_instance_carries_its_state_and_variables() -> None:
    new_src = RISES.replace("5.0", "2.0")
    plan = make_plan(compiled(RISES), compiled(new_src))
    assert plan.exit_code == 0 and [v.how for v in plan.variables] == ["carried", "carried"]
    items = [
        ("time", "08:00:00"),
        ("Temp", 10.0),
        ("Temp", 13.0),
        ("Temp", 20.0),  # cut: waiting for b, a = 20
        ("time", "08:01:00"),
        ("Temp", 23.5),
        ("Temp", 1.0),
        ("Temp", 4.0),
        ("time", "08:02:00"),
    ]
    assert check_live_run(RISES, new_src, items, 4) == [CARRIED]
    out, _ = run_upgraded(plan, render(items), 4)
    assert [line["value"] for line in out] == [3.5, 3.0]  # 23.5 - 20 and 4 - 1 pass the new threshold only


def test_a_restarted_ungrouped_instance_starts_afresh_at_the_upgrade() -> None:
    old_src = RISES.replace("Temp(a) Temp(b)", "Temp(a) Temp(c) Temp(b)")
    plan = make_plan(compiled(old_src), compiled(RISES))
    assert [s.verdict for s in plan.states] == [CARRIED, CARRIED, RESTARTED]
    assert plan.dropped_variables == ["c"]
    items = [
        ("time", "08:00:00"),
        ("Temp", 10.0),
        ("Temp", 11.0),  # cut: after c, which is gone
        ("time", "08:01:00"),
        ("Temp", 30.0),
        ("Temp", 40.0),
        ("time", "08:02:00"),
    ]
    out, conversions = run_upgraded(plan, render(items), 3)
    assert [c.verdict for c in conversions] == [RESTARTED]
    assert out == run_tester(compiled(RISES), [("time", "08:00:00"), *items[3:]])  # a fresh instance


def test_what_set_a_timer_is_kept_when_the_upgrade_re_arms_it() -> None:
    """A snapshot whose timer says what set it (``es-armed``: a worker task whose outputs another
    program reads) keeps it through the conversion, its deadline re-armed by the new program."""
    from eventscript.engine.engine import Engine
    from eventscript.engine.time_provider import SimulatedTimeProvider

    new_src = DOORS.replace("5 minutes", "10 minutes")
    plan = make_plan(compiled(DOORS), compiled(new_src))
    engine = Engine(compiled(DOORS), SimulatedTimeProvider(0), compact=False)
    engine.arm_of = lambda: b"0,1,7,doors:0:3"
    ctx = engine.feed("Opened", ["front"])
    assert ctx is not None
    done = convert(plan, engine.snapshot(ctx), 60_000_000)
    assert done.verdict == CARRIED and done.data is not None
    snap = context.decode(done.data)
    assert snap.timer is not None and snap.timer[0] == 600_000_000
    assert snap.armed == b"0,1,7,doors:0:3"
