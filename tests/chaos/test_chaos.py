"""The project's fault harness (issue 18 item 5) on a three-broker Apache Kafka cluster: a steady
producer with 1% poison records, three workers killed -9 in rotation, a fourth joining and
leaving, a worker frozen past its session timeout and resumed, a broker killed -9 and restarted;
under both guarantees and both clocks. See chaos_run.py for the run and chaos_verdict.py for the
verdict per key.

``make test`` runs one short round per variant. ``make chaos`` sets ``CHAOS_LONG=1`` and runs the
rounds, rate and seed of the ``CHAOS_*`` variables (chaos_plan.from_env); the figures are printed
either way, past pytest's capture. tests/chaos/README.md has the figures and what the harness found.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from chaos_plan import ChaosPlan, from_env
from chaos_run import run_chaos

LONG = bool(os.environ.get("CHAOS_LONG"))


class WallRepeatsDiffer(AssertionError):
    """At-least-once repeats that carry the same es-id as the first copy but other bytes, and no
    other problem (allowed on the wall clock only)."""


WEDGED_REASON = (
    "issue 20 fault 2 (FENCED_INSTANCE_ID on a commit must mean every task lost, and a rejoin): a worker whose "
    "static consumer librdkafka fenced goes on without it (Worker._take tests err.fatal(), but librdkafka reports "
    "its fatal error as code _FATAL with fatal() false), so the group keeps its tasks with it and their outputs "
    "never come"
)


VARIANTS = [
    pytest.param("exactly_once", "record", id="exactly_once-record"),
    pytest.param("at_least_once", "record", id="at_least_once-record"),
    pytest.param("exactly_once", "wall", id="exactly_once-wall"),
    pytest.param("at_least_once", "wall", id="at_least_once-wall"),
]


@pytest.fixture
def cluster(three_brokers: Any) -> Any:
    """The session's three brokers (tests/conftest.py), shared with the broker failover tests;
    ``run_chaos`` heals them first."""
    return three_brokers


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.timeout(3 * 3600 if LONG else 600)
@pytest.mark.parametrize(("guarantee", "clock"), VARIANTS)
def test_chaos(cluster: Any, tmp_path: Path, guarantee: str, clock: str, capsys: pytest.CaptureFixture[str]) -> None:
    plan = ChaosPlan(guarantee=guarantee, clock=clock)
    if LONG:
        plan = from_env(
            ChaosPlan(guarantee=guarantee, clock=clock, rounds=5, rate=150.0, progress=150, wedged_fail=True)
        )
    run = run_chaos(cluster, tmp_path, plan)
    with capsys.disabled():  # the figures, also where pytest captures the output (make test)
        print(f"\n{run.figures()}")
    if not run.verdict.ok and run.verdict.figures["wedged"] and not LONG:
        # Not a strict marker: the fault shows only when a worker's consumer was fenced, which
        # depends on the broker kill's timing (2 runs in 5 of exactly_once-wall); a run without
        # it must pass in full. The long run fails on it.
        pytest.xfail(f"{WEDGED_REASON}\n{plan.describe()}\n{run.verdict.summary()}")
    assert run.verdict.ok, (
        f"{plan.describe()}\n{run.verdict.summary()}\nexits: {run.verdict.figures['exits']}\n{run.diagnosis}"
    )
    assert run.verdict.figures["kills"] == 3 * plan.rounds and run.verdict.figures["broker kills"] == plan.rounds
    assert run.verdict.figures["poison in"] > 0, "no poison record was produced: raise the rate or the rounds"
    assert run.verdict.figures["timer outputs"] > 0, "no timer output was exercised"
    # On the wall clock a record processed again is processed at another time, which its outputs
    # carry (es-time, timestamp, an $error's time), and a timer may fire before it: such repeats keep
    # their id and cause but not their bytes (docs/worker.md, "What a repeat holds"). On the record
    # clock, with one input partition per task, repeats must be byte-identical.
    if run.verdict.differing_repeats and clock == "record":
        raise WallRepeatsDiffer(
            f"{run.verdict.differing_repeats} repeats differ from their first copy, for "
            f"example {run.verdict.differing_examples[0]}"
        )
