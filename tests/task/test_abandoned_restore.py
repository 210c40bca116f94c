"""A restore whose task is dropped before its first commit (issue: a duplicate under exactly-once
after a zombie worker), through the real ``Task`` and the real restore over an in-memory changelog.

A worker frozen past its session (SIGSTOP) resumes, its commit is refused, and it joins again:
until the group takes them away, it restores the tasks it had into its local stores, while their
new owner goes on committing. Nothing of such a restore is ever committed, and the store it leaves
behind must still equal a replay of the changelog up to its checkpoint, or the worker's next
restore from it (when the group gives it the task back) starts from a state the changelog never
had: seen as a key's instance of long ago coming back with the clock of the last commit, and its
timer firing a second time, at that clock ("Quiet" twice with the same ``es-id``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from eventscript.kafka.checkpoint import Checkpoint
from eventscript.kafka.restore import Restoration
from eventscript.kafka.waiting import Waiting
from eventscript.task.task import Task

from .test_uncommitted_batches import CHANGELOG, ChangelogPartition
from .test_zombie_changelog import commit, counts, make_task, produced, send, take_over, tick


def test_records_committed_while_a_restore_reads_are_not_passed_over_by_its_store(tmp_path: Path) -> None:
    """The restore reads the committed offsets, then the changelog: what the owner commits in
    between is not covered by those offsets, and is skipped. The store's checkpoint must stay
    before it, so that the next restore from the store applies it (the committed offsets then
    cover it)."""
    log = ChangelogPartition()
    owner = take_over(tmp_path / "owner", log, {}, None)
    assert counts(owner, tick(0)) == [1]
    committed = commit(owner, log)
    zombie = make_task(tmp_path / "zombie")
    restoration = Restoration("p", log, CHANGELOG, {0: zombie}, {0: committed})
    restoration.begin()
    assert counts(owner, tick(1)) == [2]  # the owner commits while the zombie's restore reads
    committed = commit(owner, log)
    while not restoration.done:
        restoration.step(1.0)
    restoration.finish(None)
    assert restoration.skipped[0] > 0
    zombie.close()  # its first commit is refused: dropped
    owner.close()
    again = take_over(tmp_path / "zombie", log, committed, None)  # the task is given back
    assert counts(again, tick(2)) == [3]  # the owner's count (2), not the one the zombie read (1)
    again.close()


def test_a_restore_dropped_before_its_first_commit_does_not_keep_its_own_epoch(tmp_path: Path) -> None:
    """A zombie's consumer still has the generation it had before it froze, below the new
    owner's: its epoch is raised above the highest applied (``state.changelog.owner_epoch``), and
    written in its store it fenced every record the new owner committed after the restore."""
    log = ChangelogPartition()
    owner = take_over(tmp_path / "owner", log, {}, 5)
    assert counts(owner, tick(0)) == [1]
    committed = commit(owner, log)
    zombie = take_over(tmp_path / "zombie", log, committed, 3)  # its generation from before it froze
    assert zombie.owner_epoch is not None and zombie.owner_epoch > 5
    zombie.close()  # its first commit is refused: dropped
    assert counts(owner, tick(1)) == [2]
    committed = commit(owner, log)
    owner.close()
    again = take_over(tmp_path / "zombie", log, committed, 9)  # the task is given back
    assert counts(again, tick(2)) == [3]  # the owner's count (2), not the one the zombie read (1)
    again.close()


def commit_through_the_checkpoint(task: Task, log: ChangelogPartition) -> None:
    """The worker's at-least-once commit of ``task`` (kafka/checkpoint.py, as in a revocation: the
    offsets committed synchronously): its changelog records reach the log, then its store takes
    them, with the checkpoint the producer reported."""
    output = SimpleNamespace(changelog_end={}, txn_open=False, produced=0, delivery_error=None)

    def send(topic: str, partition: int, key: Any, value: Any, headers: Any, ts: int, changelog: bool) -> None:
        if topic == CHANGELOG:
            log.append(key, value, headers)
            output.changelog_end[task.partition] = len(log.records)

    output.senders = lambda: (send, None)
    consumer = SimpleNamespace(commit=lambda offsets, asynchronous: None)
    producer = SimpleNamespace(flush=lambda timeout: 0)
    host = SimpleNamespace(consumer=consumer, producer=producer, output=output, poll_while_committing=None)
    tasks = SimpleNamespace(
        tasks={task.partition: task}, committed_offsets={}, rep_topic="p-repartition", member_replaced=lambda c: False
    )
    cfg = task.cfg.model_copy(update={"guarantee": "at_least_once"})
    waits = Waiting("p", lambda kind: None)
    checkpoint = Checkpoint(cfg, host, tasks, waits, lambda: None, lambda *_: None, lambda _: None)  # type: ignore[arg-type]
    checkpoint.commit(in_rebalance=True)
    assert not checkpoint.failed


def test_the_store_takes_the_tasks_epoch_at_its_first_commit(tmp_path: Path) -> None:
    """The new owner's store, continuing from its checkpoint after its commits, still fences the
    records a zombie of the earlier owner sends late (at the earlier owner's epoch)."""
    log = ChangelogPartition()
    owner = take_over(tmp_path / "owner", log, {}, 5)
    assert counts(owner, tick(0)) == [1]
    committed = commit(owner, log)
    assert counts(owner, tick(1)) == [2]
    queued = produced(owner)  # the owner freezes with these queued
    owner.close()
    new = take_over(tmp_path / "new", log, committed, 7)
    assert new.store.epoch == 5  # (not its own before it commits)
    assert counts(new, tick(1), tick(2)) == [2, 3]
    commit_through_the_checkpoint(new, log)
    assert new.store.epoch == 7
    committed = dict(new.position)
    new.close()
    send(log, queued)  # the zombie's records land after the new owner's commit, which covers them
    again = take_over(tmp_path / "new", log, committed, 9)
    assert counts(again, tick(3)) == [4]  # the new owner's count (3), not the zombie's (2)
    again.close()


def restarted_static_member(tmp_path: Path, log: ChangelogPartition) -> tuple[Task, dict[str, int]]:
    """A first owner (generation 3) commits key k's first count and is killed; it is restarted at
    once as a static member (the same generation) and counts k's next record, not committed yet.
    Returns the restarted task and the committed offsets."""
    first = take_over(tmp_path / "w0", log, {}, 3)
    assert counts(first, tick(0)) == [1]
    commit_through_the_checkpoint(first, log)
    committed = dict(first.position)
    first.close()  # killed
    restarted = take_over(tmp_path / "w0", log, committed, 3)  # the same generation: a static member
    assert counts(restarted, tick(1)) == [2]
    return restarted, committed


def owner_goes_on_and_the_next_restores_it(tmp_path: Path, log: ChangelogPartition, owner: Task) -> None:
    """The owner counts k's records again and commits; the next owner's restore has its count."""
    assert counts(owner, tick(1), tick(2)) == [2, 3]
    commit_through_the_checkpoint(owner, log)
    committed = dict(owner.position)
    owner.close()
    after = take_over(tmp_path / "w2", log, committed, 5)
    assert counts(after, tick(3)) == [4]  # the owner's count (3), not the refused (late) batch's (2)
    after.close()


@pytest.mark.parametrize("where", ["same worker", "another worker"])
def test_an_owner_takes_an_epoch_above_the_uncommitted_records_its_restore_passed(tmp_path: Path, where: str) -> None:
    """The fault harness's at_least_once-record failure (seed 2026, whole run of session 29): a
    worker killed and restarted at once (static membership) has the generation it had, 3, so its
    epoch is raised above its old store's (then 3 + 3; now 3 + 1). The group rebalances and the
    broker refuses its first commit, after its changelog records were sent; it joins again and
    restores, skipping them as not covered. Its epoch came from the stored base (0) and the
    generation now: 4, below them (then 6; now a tie). Its next commit covers their input
    position: every later replay applied them and then skipped the owner's records (epoch 4) as an
    earlier owner's (task 1's counts back from 22 to 10). The owner's epoch must be above every
    epoch its restore read, committed or not."""
    log = ChangelogPartition()
    restarted, committed = restarted_static_member(tmp_path, log)
    assert restarted.owner_epoch == 4  # one above its old store's highest epoch (3), no more
    send(log, produced(restarted))  # its changelog records land; the offset commit is refused
    restarted.close()  # dropped: the member rejoins
    store = tmp_path / ("w0" if where == "same worker" else "w1")
    owner = take_over(store, log, committed, 4)
    assert owner.owner_epoch is not None and owner.owner_epoch > restarted.owner_epoch
    owner_goes_on_and_the_next_restores_it(tmp_path, log, owner)


def test_an_owner_restored_before_a_raised_batch_lands_is_not_fenced_by_it(tmp_path: Path) -> None:
    """The same restarted static member, but another worker restores the task (generation 4)
    before the refused batch lands, so its restore cannot see the raised epoch: its own epoch
    (stored base 0 + 4) must not be below that batch's, or every later replay applies the late
    batch and skips all the owner wrote (the review of 2026-11-28: with the base raised to the
    highest epoch, 3 + 3 = 6 against 4, the next owner counted 3 where 4 is due)."""
    log = ChangelogPartition()
    restarted, committed = restarted_static_member(tmp_path, log)
    late = produced(restarted)  # sent, not landed yet; the offset commit will be refused
    restarted.close()
    owner = take_over(tmp_path / "w1", log, committed, 4)  # restored before the late batch lands
    assert owner.owner_epoch is not None and restarted.owner_epoch is not None
    assert owner.owner_epoch >= restarted.owner_epoch
    send(log, late)
    owner_goes_on_and_the_next_restores_it(tmp_path, log, owner)
