"""The checkpoint's purge of consumed repartition records (``Checkpoint._purge_repartition``), without
a broker: a failed purge gets a new admin client next time (a client that failed may stay stuck), a
broker that once deleted records is never given up on for failures that pass (an outage), and one
that never did is given up on after three (the embedded broker has no DeleteRecords)."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from eventscript.kafka import admin as admin_module
from eventscript.kafka.checkpoint import Checkpoint


def _checkpoint(made: list[object]) -> Any:
    cfg = SimpleNamespace(name="p", guarantee="at_least_once", commit_interval=100)
    task = SimpleNamespace(position={"rep:0": 10})
    tasks = SimpleNamespace(rep_topic="rep", tasks={0: task})

    def make_admin() -> object:
        made.append(object())
        return made[-1]

    cp = Checkpoint(cfg, None, tasks, None, make_admin, lambda *_: None, lambda _: None)  # type: ignore[arg-type]
    return cp, task


def _purges(monkeypatch: pytest.MonkeyPatch, answers: list[list[str]]) -> list[tuple[object, dict[Any, int]]]:
    calls: list[tuple[object, dict[Any, int]]] = []

    def purge(client: object, offsets: dict[Any, int], timeout: float = 10.0) -> list[str]:
        calls.append((client, dict(offsets)))
        return answers.pop(0)

    monkeypatch.setattr(admin_module, "purge", purge)
    return calls


@pytest.fixture
def unlimited(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's logger without the rate limit a worker run earlier in this process installed
    (``kafka/logs.py``: a warning like one of the last 10 s is held back, as the test before
    this one's are)."""
    monkeypatch.setattr(logging.getLogger("eventscript.kafka.worker"), "filters", [])


def test_a_broker_that_deleted_records_is_purged_again_after_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    cp, task = _checkpoint(made)
    outage = ["rep:0: KafkaError{code=_TIMED_OUT}"]
    calls = _purges(monkeypatch, [[], outage, outage, outage, outage, []])
    for position in (10, 20, 20, 20, 20, 30):
        task.position = {"rep:0": position}
        cp._purge_repartition()
    assert [offsets[("rep", 0)] for _, offsets in calls] == [10, 20, 20, 20, 20, 30]
    # each failed call's client is dropped: the next call has a new one
    assert [client for client, _ in calls] == [made[0], made[0], made[1], made[2], made[3], made[4]]
    assert cp._purge_supported and cp._purged == {0: 30}


def test_a_broker_that_never_deleted_records_is_given_up_after_three(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, unlimited: None
) -> None:
    made: list[object] = []
    cp, _ = _checkpoint(made)
    calls = _purges(monkeypatch, [["rep:0: not supported here"]] * 3)
    with caplog.at_level(logging.INFO, logger="eventscript"):
        for _ in range(5):
            cp._purge_repartition()
    assert len(calls) == 3 and not cp._purge_supported
    # One warning, when it is given up; the failures before it (not yet known to be for good) are
    # information only.
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "the broker does not delete records" in warnings[0], warnings
    assert sum("purging the repartition topic" in r.getMessage() for r in caplog.records) == 2


def test_a_broker_that_deleted_records_warns_of_each_failure(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, unlimited: None
) -> None:
    cp, task = _checkpoint([])
    _purges(monkeypatch, [[], ["rep:0: KafkaError{code=_TIMED_OUT}"]])
    with caplog.at_level(logging.INFO, logger="eventscript"):
        cp._purge_repartition()
        task.position = {"rep:0": 20}
        cp._purge_repartition()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == ["p: purging the repartition topic: rep:0: KafkaError{code=_TIMED_OUT}"]


def test_an_unsupported_answer_gives_up_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    cp, task = _checkpoint(made)
    calls = _purges(monkeypatch, [[], ["rep:0: UNSUPPORTED_VERSION"]])
    task.position = {"rep:0": 10}
    cp._purge_repartition()
    task.position = {"rep:0": 20}
    cp._purge_repartition()
    task.position = {"rep:0": 30}
    cp._purge_repartition()
    assert len(calls) == 2 and not cp._purge_supported
