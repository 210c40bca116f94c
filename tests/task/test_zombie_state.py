"""A worker that another member replaced while it was frozen (a zombie) must not bring an older state
of its keys back (the fault harness's at_least_once-wall failure of 2026-11-26: a key's count back
at 33 where 67 was due, then a Quiet count of 21 where 51 was due), through the worker's real
``TaskManager``, ``Checkpoint`` and ``Task`` over an in-memory changelog, with stand-ins for the
group member's consumer and the producer.

The scenario: worker A owns task 0 and is frozen past its session; B is given the task, restores
it, processes more records of key k and commits them. A resumes in the middle of its loop with
records it had fetched before, processes them and commits before librdkafka tells it its tasks
were lost. Under at-least-once its changelog records are written before its offset commit is
refused, with its old input position, which B's commits cover: a later restore applied them over
B's newer records. Two rules keep that from happening: a batch made while the loop stalled for
longer than the session timeout is not committed (the tasks go back to the last commit instead),
and going back to the last commit restores from the changelog a task whose offsets another member
committed meanwhile, instead of reloading the local store, which holds A's older state.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError

from eventscript.kafka.checkpoint import Checkpoint
from eventscript.kafka.task_manager import TaskManager
from eventscript.kafka.waiting import Waiting
from eventscript.kafka.worker_errors import MemberEnded
from eventscript.task.collector import OutRecord

from .task_helpers import T0, tick
from .test_restore_positions import Changelog, GroupMember, counts, first_owner, next_owner, run_turns
from .test_uncommitted_batches import CHANGELOG, ChangelogPartition

SESSION_S = 3.0


def commit(manager: TaskManager, member: GroupMember, sent: list[OutRecord], log: ChangelogPartition) -> None:
    """A successful at-least-once commit of task 0 as the worker makes it: the changelog records
    reach the log, the offsets are committed, the store takes the records."""
    task = manager.tasks[0]
    changes = task.changelog_records()
    for r in sent:
        if r.topic == CHANGELOG:
            log.append(r.key, r.value, r.headers)
    sent[:] = [r for r in sent if r.topic != CHANGELOG]
    member.committed_offsets[("in", 0)] = task.position["in:0"]
    task.store.write(changes, len(log.records), dict(task.position))
    manager.committed_offsets.setdefault(0, {}).update(task.position)


def owners_a_and_b(tmp_path: Path, records: list[Any]) -> tuple[Any, ...]:
    """A restored task 0 at offset 5 (k counted 5) and processed records 5-6 without committing
    them; then it was frozen, and B restored the task and committed records 5-9 (k counted 10)."""
    log = Changelog()
    first_owner(tmp_path / "first", log, records[:5])
    member_a = GroupMember(records[:7], {("in", 0): 5})
    a, sent_a = next_owner(tmp_path / "a", log, member_a, "at_least_once")
    run_turns(a, member_a)
    assert counts(sent_a) == [(5, 6), (6, 7)]
    member_b = GroupMember(records[:10], {("in", 0): 5})
    b, sent_b = next_owner(tmp_path / "b", log, member_b, "at_least_once")
    run_turns(b, member_b)
    assert counts(sent_b) == [(5, 6), (6, 7), (7, 8), (8, 9), (9, 10)]
    commit(b, member_b, sent_b, log)
    member_a.committed_offsets[("in", 0)] = 10  # the group's offsets are B's now
    member_a.records = records
    return log, a, member_a, sent_a


def test_going_back_to_the_last_commit_restores_a_task_another_member_committed(tmp_path: Path) -> None:
    records = [tick(i, T0 + i * 1000, "k") for i in range(12)]
    _, a, member_a, sent_a = owners_a_and_b(tmp_path, records)
    sent_a.clear()
    a.rewind(member_a)  # A's commit failed: back to the last commit
    run_turns(a, member_a)
    assert a.ready
    assert counts(sent_a) == [(10, 11), (11, 12)]  # B's count, not A's store's (5) nor its batch's (7)


def test_a_batch_made_while_the_worker_was_frozen_past_its_session_is_not_committed(tmp_path: Path) -> None:
    records = [tick(i, T0 + i * 1000, "k") for i in range(12)]
    _, a, member_a, sent_a = owners_a_and_b(tmp_path, records)
    waits = Waiting("p", lambda kind: None)
    output = SimpleNamespace(changelog_end={}, txn_open=False, produced=0, delivery_error=None)
    producer = SimpleNamespace(flush=lambda timeout: 0)  # every record delivered at once
    host = SimpleNamespace(consumer=member_a, producer=producer, output=output, poll_while_committing=lambda t: None)
    checkpoint = Checkpoint(a.cfg, host, a, waits, lambda: None, lambda *_: None, lambda _: None, stall_limit=SESSION_S)  # type: ignore[arg-type]
    # The group answers the zombie's offset commit as Kafka does: its member id is gone.
    member_a.commit = lambda offsets, asynchronous: checkpoint.on_commit(KafkaError(KafkaError.UNKNOWN_MEMBER_ID), [])  # type: ignore[attr-defined]
    waits.last_loop = time.monotonic() - 2 * SESSION_S  # frozen in the middle of a turn of the loop
    sent_a.clear()
    with contextlib.suppress(MemberEnded):  # (the refused offset commit: too late for the changelog)
        checkpoint.commit()
    assert not any(r.topic == CHANGELOG for r in sent_a)  # nothing written over B's records
    assert checkpoint.failed and not a.ready  # back to the last commit: restored from B's
    run_turns(a, member_a)
    assert counts(sent_a) == [(10, 11), (11, 12)]


def test_the_stall_limit_is_the_session_timeout_less_a_heartbeat() -> None:
    """The group counts a session from the member's last heartbeat, which may come a heartbeat
    interval before the loop's last beat: a stall that long before the session's end counts."""
    from eventscript.kafka.clients import consumer_config
    from eventscript.kafka.worker import stall_limit
    from eventscript.topology.config import KafkaConfig

    assert stall_limit(consumer_config(KafkaConfig(bootstrap_servers="k:9092"), "g")) == 42.0  # 45 s, 3 s
    short = KafkaConfig(bootstrap_servers="k:9092", consumer={"session.timeout.ms": SESSION_S * 1000})
    assert stall_limit(consumer_config(short, "g")) == 2.0  # 3 s, heartbeats at a third of it
