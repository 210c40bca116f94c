"""The upgrade policies a host applies per instance (``upgrade.loader``): refuse by default,
carry as planned, restart everything; counts and the summary line."""

from __future__ import annotations

import logging

import pytest
from test_plan import CHECKED, DOORS
from upgrade_helpers import compiled

from eventscript.engine import context
from eventscript.engine.engine import Engine
from eventscript.upgrade.convert import CARRIED, RESTARTED, UpgradeRefused
from eventscript.upgrade.loader import UpgradeLoader

MINUTE = 60_000_000


def snapshots(src: str) -> dict[str, bytes]:
    """Snapshots of three doors: front opened at 0, back opened and checked, side opened then closed."""
    engine = Engine(compiled(src), lambda e: None)
    engine.start()
    for name, door in [
        ("Opened", "front"),
        ("Opened", "back"),
        ("Checked", "back"),
        ("Opened", "side"),
        ("Checked", "side"),
        ("Closed", "side"),
    ]:
        engine.feed(name, [door])
    return {key[0]: engine.snapshot(ctx) for key, ctx in engine.contexts.items()}


def test_state_of_another_version_is_refused_by_default() -> None:
    loader = UpgradeLoader(compiled(CHECKED), compiled(CHECKED.replace("5 minutes", "6 minutes")))
    with pytest.raises(UpgradeRefused, match="upgrade: carry"):
        loader.load(snapshots(CHECKED)["front"], 0)
    UpgradeLoader(compiled(CHECKED), compiled("// the same machine\n" + CHECKED)).admit()  # one fingerprint


def test_carry_converts_each_instance_as_planned_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    new = compiled(CHECKED.replace(" Checked()\n", "\n"))
    loader = UpgradeLoader(compiled(CHECKED), new, "carry", "doors")
    snaps = snapshots(CHECKED)
    now = 2 * MINUTE
    front, back, side = (loader.load(snaps[k], now) for k in ("front", "back", "side"))
    assert (front.verdict, back.verdict, side.verdict) == (CARRIED, RESTARTED, CARRIED)
    assert back.data is None and "Checked()" in back.reason
    restored = Engine(new, lambda e: None).restore(front.data)  # type: ignore[arg-type]
    assert restored.key == ("front",)
    assert context.decode(front.data).timer[0] == now + 5 * MINUTE  # type: ignore[arg-type,index]
    with caplog.at_level(logging.INFO, logger="eventscript.upgrade.loader"):
        loader.log_summary()
    assert "program doors: upgraded from es1-" in caplog.text
    assert "(carry): 2 instances carried, 1 restarted, 0 ended" in caplog.text


def test_carry_refuses_a_plan_that_cannot_be_applied_and_restart_drops_everything() -> None:
    new = compiled(DOORS.replace("group(Opened.door)", 'group(Opened.door + "!")'))
    with pytest.raises(UpgradeRefused, match=r"group clause changed.*upgrade: restart"):
        UpgradeLoader(compiled(DOORS), new, "carry").admit()
    loader = UpgradeLoader(compiled(DOORS), new, "restart")
    engine = Engine(compiled(DOORS), lambda e: None)
    engine.feed("Opened", ["front"])
    result = loader.load(engine.snapshot(engine.contexts[("front",)]), 0)
    assert (result.verdict, result.data) == (RESTARTED, None)
    assert loader.summary().endswith("(restart): 0 instances carried, 1 restarted, 0 ended")


def test_an_unknown_policy_is_named() -> None:
    with pytest.raises(ValueError, match="use one of carry, restart, refuse"):
        UpgradeLoader(compiled(DOORS), compiled(DOORS), "migrate")


def test_a_worker_refused_by_its_upgrade_policy_logs_one_line_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The walk's refused upgrade logged "worker failed" and thirty lines of frames before the line
    that says what to do; a fault of the worker itself keeps its traceback."""
    from eventscript.kafka.worker import log_failure

    refusal = UpgradeRefused("task 0: the stored state was written by version es1-a, this is es1-b; ...")
    with caplog.at_level(logging.ERROR, logger="eventscript.kafka.worker"):
        log_failure("doors", refusal)
        log_failure("doors", KeyError("bug"))
    refused, crashed = caplog.records
    assert refused.getMessage() == f"doors: worker stopped: {refusal}" and refused.exc_info is None
    assert crashed.getMessage() == "doors: worker failed" and crashed.exc_info is not None
