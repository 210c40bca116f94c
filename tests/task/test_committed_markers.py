"""Under at-least-once a task marks its progress only once its batch is committed (issue 21).

A marker tells the readers downstream that the task's records up to its time may be taken. Sent
before the batch's commit, it let them take the batch's records; the worker killed before the
commit, the task's next owner wrote them again from the last commit, and a reader took both
copies (the killed-midway fridge-alerts run: F2's Warm twice, an extra ``$error``). Through the
worker's real ``Checkpoint`` and ``Task``, with stand-ins for the consumer and the producer."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError

from count_programs import COUNT_QUIET
from eventscript.automata.compile import compile_source
from eventscript.kafka.checkpoint import Checkpoint
from eventscript.kafka.waiting import Waiting
from eventscript.kafka.worker_errors import MemberEnded
from eventscript.task.progress import read_marker
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig
from eventscript.topology.progress import ProgressPlan

from .task_helpers import T0, build_task, program_config, tick


def worker(
    tmp_path: Path, guarantee: str, answer: KafkaError | None, replaced: bool = False
) -> tuple[Checkpoint, Task, list[str]]:
    """A worker's checkpoint over one task that marks its progress on "out", whose offset
    commits the group answers with ``answer`` (None: committed), its consumer another group member
    than the task was assigned under if ``replaced``; and what happened, in order:
    "output", "changelog", "marker" (records sent, one entry for several in a row), "offsets"
    (the offset commit), "rewind"."""
    happened: list[str] = []
    cfg = program_config([InputConfig(topic="in", event="Tick")]).model_copy(update={"guarantee": guarantee})
    task = build_task(compile_source(COUNT_QUIET, name="p").require(), cfg, tmp_path / "store")
    task.load_from_store()
    task.set_progress(ProgressPlan("p", 1, outputs={"out": 1}))

    def send(topic: str, partition: int, key: Any, value: Any, headers: Any, ts: int, changelog: bool) -> None:
        kind = "changelog" if topic == task.changelog_topic else "marker" if read_marker(headers) else "output"
        if not happened or happened[-1] != kind:
            happened.append(kind)

    task.attach(send)
    tasks = SimpleNamespace(
        tasks={0: task},
        committed_offsets={},
        rep_topic="p-rep",
        rewind=lambda c: (happened.append("rewind"), task.rewind()),
        member_replaced=lambda c: replaced,
    )
    output = SimpleNamespace(changelog_end={}, txn_open=False, produced=0, delivery_error=None, begin=lambda: None)
    producer = SimpleNamespace(
        flush=lambda timeout: 0,
        send_offsets_to_transaction=lambda *a: happened.append("offsets"),
        commit_transaction=lambda *a: None,
    )
    consumer = SimpleNamespace(consumer_group_metadata=lambda: None)
    host = SimpleNamespace(consumer=consumer, producer=producer, output=output, poll_while_committing=lambda t: None)
    waits = Waiting("p", lambda kind: None)
    waits.txn_call = lambda what, call: call(1.0)  # type: ignore[method-assign]
    checkpoint = Checkpoint(cfg, host, tasks, waits, lambda: None, lambda *_: None, lambda _: None)  # type: ignore[arg-type]

    def commit(offsets: Any, asynchronous: bool) -> None:
        happened.append("offsets")
        checkpoint.on_commit(answer, [])

    consumer.commit = commit  # type: ignore[attr-defined]
    return checkpoint, task, happened


def a_due_commit_after_a_record(checkpoint: Checkpoint, task: Task) -> None:
    """The worker's turn: a record processed, then the commit interval has passed."""
    task.add(tick(0, T0, "k"))
    task.process(0)
    checkpoint.dirty = True
    checkpoint.last_commit -= 10 * checkpoint.interval
    checkpoint.commit_if_due()


def test_at_least_once_markers_come_after_the_batch_is_committed(tmp_path: Path) -> None:
    checkpoint, task, happened = worker(tmp_path, "at_least_once", None)
    a_due_commit_after_a_record(checkpoint, task)
    assert happened == ["output", "changelog", "offsets", "marker"]  # (before: the marker first)


@pytest.mark.parametrize(
    "answer", [KafkaError(KafkaError.REQUEST_TIMED_OUT), KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE)]
)
def test_at_least_once_a_batch_whose_commit_failed_is_not_marked(tmp_path: Path, answer: KafkaError) -> None:
    checkpoint, task, happened = worker(tmp_path, "at_least_once", answer)
    a_due_commit_after_a_record(checkpoint, task)
    assert happened == ["output", "changelog", "offsets", "rewind"]


def test_exactly_once_markers_stay_in_the_batchs_transaction(tmp_path: Path) -> None:
    checkpoint, task, happened = worker(tmp_path, "exactly_once", None)
    a_due_commit_after_a_record(checkpoint, task)
    assert happened == ["output", "marker", "changelog", "offsets"]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_a_member_replaced_sends_none_of_its_batchs_changelog_records(tmp_path: Path, guarantee: str) -> None:
    """A zombie whose consumer joined the group again as another member (kafka/task_manager.py,
    ``member_replaced``) commits nothing, and at least once its changelog records must not reach
    the log either: they carry the epoch its restore took after it joined again, which can be
    above the new owner's (the consumer's newer generation, or raised above the records it read),
    and a later replay would skip every record the new owner writes after them."""
    checkpoint, task, happened = worker(tmp_path, guarantee, None, replaced=True)
    with pytest.raises(MemberEnded):
        a_due_commit_after_a_record(checkpoint, task)
    assert "changelog" not in happened and "offsets" not in happened
