"""A zombie's changelog records under at-least-once (issue 20), through the real ``Task``, the real
restore (kafka/restore.py) and the real standby (kafka/standby.py) over an in-memory changelog.

The scenario (the fault harness's at_least_once-wall failure): owner A commits, processes one more
batch and produces its changelog records, and is frozen before they are sent. Owner B takes the
task over, processes the same records and more, and commits. A resumes and its producer sends the
queued records: they land after B's, and B's commits cover their input position. Whoever
replays the changelog next must keep B's state: A's records carry an older owner epoch
(``es-gen``) and are skipped (``state.changelog.EpochFence``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import confluent_kafka
import orjson

from eventscript.automata.compile import compile_source
from eventscript.kafka.changelog_dump import FoldedTask, fold_records
from eventscript.kafka.restore import Coverage, Restoration
from eventscript.kafka.standby import Standbys
from eventscript.state.changelog import EpochFence, Position, owner_epoch
from eventscript.state.keyinfo import stored_value
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig

from .task_helpers import T0, PlainRecord, build_task, changelog_fields, program_config, unframed
from .test_uncommitted_batches import CHANGELOG, ChangelogPartition

COUNT = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count;} Count
{ count = 0; }
( Tick() { count = count + 1; !>Count({k: group[0], count: count}); } )*
"""
K = orjson.dumps(["k"])


def make_task(store: Path) -> Task:
    cfg = program_config([InputConfig(topic="in", event="Tick")])
    return build_task(compile_source(COUNT, name="p").require(), cfg, store, changelog=CHANGELOG)


def tick(offset: int, key: str = "k") -> PlainRecord:
    return PlainRecord("in", 0, offset, T0 + offset, orjson.dumps([key]), orjson.dumps({"k": key, "n": offset}))


def counts(task: Task, *records: PlainRecord) -> list[int]:
    """Process ``records`` in one batch: the counts it emitted."""
    for r in records:
        task.add(r)
    task.process(0)
    return [orjson.loads(r.value)["count"] for r in task.outbox if r.topic == "out"]


def take_over(store: Path, log: ChangelogPartition, committed: Position, generation: int | None) -> Task:
    """A new owner of the task, a member of group generation ``generation``: its state replayed
    from the changelog (from the store's checkpoint, if ``store`` has one) as the worker does."""
    task = make_task(store)
    restoration = Restoration("p", log, CHANGELOG, {0: task}, {0: committed})
    restoration.begin()
    while not restoration.done:
        restoration.step(1.0)
    restoration.finish(generation)
    return task


def produced(task: Task) -> list[confluent_kafka.Message]:
    """The changelog records of the task's batch, as its producer has them (not yet in the log)."""
    task.changelog_records()
    queue = ChangelogPartition()
    for r in task.take_outputs():
        if r.topic == CHANGELOG:
            queue.append(r.key, r.value, r.headers)
    return queue.records


def send(log: ChangelogPartition, records: list[confluent_kafka.Message]) -> None:
    for m in records:
        log.append(m.key(), m.value(), m.headers())


def commit(task: Task, log: ChangelogPartition) -> Position:
    """The worker's at-least-once commit: the changelog records land, then the store takes them
    (kafka/checkpoint.py: with the checkpoint and the input position, not the epoch)."""
    changes = task.changelog_records()
    for r in task.take_outputs():
        if r.topic == CHANGELOG:
            log.append(r.key, r.value, r.headers)
    task.store.write(changes, len(log.records), dict(task.position))
    return dict(task.position)


def zombie_after_new_owner(tmp_path: Path, log: ChangelogPartition) -> tuple[Position, list[Any]]:
    """A (generation 3) commits k at 1, then produces k at 2 and j at 1 and freezes; B (generation
    5) takes over and commits k at 3 and j at 1. Returns B's committed position and A's queued
    records (not yet in the log)."""
    a = take_over(tmp_path / "a", log, {}, 3)
    assert counts(a, tick(0)) == [1]
    commit(a, log)
    assert counts(a, tick(1), tick(2, "j")) == [2, 1]
    queued = produced(a)
    assert {m.key() for m in queued} >= {K, orjson.dumps(["j"])}
    assert all(changelog_fields(m)[2] == b"3" for m in queued)
    a.close()
    b = take_over(tmp_path / "b", log, {"in:0": 1}, 5)
    assert counts(b, tick(1), tick(2, "j"), tick(3)) == [2, 1, 3]
    committed = commit(b, log)
    b.close()
    return committed, queued


def test_a_zombies_records_sent_after_the_new_owners_are_not_restored(tmp_path: Path) -> None:
    log = ChangelogPartition()
    committed, queued = zombie_after_new_owner(tmp_path, log)
    send(log, queued)  # A resumes: its producer sends what it had queued
    c = take_over(tmp_path / "c", log, committed, 7)
    assert c.owner_epoch == 7
    assert counts(c, tick(4)) == [4]  # B's k (3), not A's (2)
    # The keys of A's skipped records are written again at C's next commit, above them in the log
    # (a compaction could otherwise keep A's as their only record).
    start = len(log.records)
    c.outbox.clear()
    commit(c, log)
    written = {m.key(): m for m in log.records[start:]}
    assert orjson.dumps(["j"]) in written and changelog_fields(written[orjson.dumps(["j"])])[2] == b"7"
    c.close()


def test_a_store_continuing_from_its_checkpoint_keeps_fencing(tmp_path: Path) -> None:
    """C restores after B's commit and keeps its store; A's records land; C's store is later
    replayed from its checkpoint (only A's records): they are still an older owner's."""
    log = ChangelogPartition()
    committed, queued = zombie_after_new_owner(tmp_path, log)
    c = take_over(tmp_path / "c", log, committed, 7)
    c.close()  # revoked before it processed anything
    send(log, queued)
    again = take_over(tmp_path / "c", log, committed, 9)
    assert again.store.checkpoint == len(log.records)
    assert counts(again, tick(4)) == [4]
    again.close()


class LogReader:
    """The standby's changelog consumer over an in-memory partition."""

    def __init__(self, log: ChangelogPartition) -> None:
        self.log = log

    def incremental_assign(self, tps: list[confluent_kafka.TopicPartition]) -> None:
        self.log.assign(tps)

    def consume(self, num_messages: int, timeout: float) -> list[confluent_kafka.Message]:
        return [m for m in self.log.consume(num_messages, timeout) if m.error() is None]

    def incremental_unassign(self, tps: list[Any]) -> None:
        self.log.unassign()

    def pause(self, tps: list[Any]) -> None:
        pass

    def resume(self, tps: list[Any]) -> None:
        pass

    def close(self) -> None:
        pass


def standby_of(tmp_path: Path, log: ChangelogPartition, committed: Position) -> Standbys:
    offsets = {name.split(":")[0]: off for name, off in committed.items()}

    def committed_offsets(tps: list[confluent_kafka.TopicPartition]) -> list[confluent_kafka.TopicPartition]:
        return [confluent_kafka.TopicPartition(tp.topic, tp.partition, offsets.get(tp.topic, -1)) for tp in tps]

    standbys = Standbys("p", CHANGELOG, ["in"], tmp_path / "standby", LogReader(log), committed_offsets)
    standbys.retarget({0})
    return standbys


def test_a_standby_passes_over_a_zombies_records(tmp_path: Path) -> None:
    log = ChangelogPartition()
    committed, queued = zombie_after_new_owner(tmp_path, log)
    b_k = unframed([m for m in log.records if m.key() == K][-1].value())  # (its information inside)
    send(log, queued)
    standbys = standby_of(tmp_path, log, committed)
    standbys.step()
    store = standbys.tasks[0].store
    assert store.checkpoint == len(log.records)
    assert store.get(K) == b_k
    assert standbys.tasks[0].fence.skipped > 0
    standbys.close()


def test_a_standbys_store_taken_over_keeps_fencing(tmp_path: Path) -> None:
    """The standby applies B's records and is released (its task is assigned here); A's records
    land meanwhile; the restore goes on from the standby's checkpoint with its highest epoch."""
    log = ChangelogPartition()
    committed, queued = zombie_after_new_owner(tmp_path, log)
    standbys = standby_of(tmp_path, log, committed)
    standbys.step()
    assert standbys.tasks[0].store.epoch == 5
    standbys.close()
    send(log, queued)
    c = take_over(tmp_path / "standby" / "task-0", log, committed, 7)
    assert counts(c, tick(4)) == [4]
    c.close()


def test_a_group_made_again_raises_the_epoch_base(tmp_path: Path) -> None:
    """The group is deleted and made again (``eventscript reset`` keeps nothing; here the changelog
    stays): generations start at 1 again, below the changelog's epochs. The new owners' records
    must not be skipped as older ones, and a zombie among them is still fenced."""
    log = ChangelogPartition()
    a = take_over(tmp_path / "a", log, {}, 40)
    assert counts(a, tick(0)) == [1]
    committed = commit(a, log)
    a.close()
    b = take_over(tmp_path / "b", log, committed, 1)  # the new group's first generation
    assert (b.epoch_base, b.owner_epoch) == (40, 41)
    assert counts(b, tick(1)) == [2]
    committed = commit(b, log)
    assert counts(b, tick(2)) == [3]
    queued = produced(b)  # B freezes with these queued
    b.close()
    c = take_over(tmp_path / "c", log, committed, 2)
    assert (c.epoch_base, c.owner_epoch) == (40, 42)  # the base came with B's committed state
    assert counts(c, tick(2), tick(3)) == [3, 4]
    committed = commit(c, log)
    c.close()
    send(log, queued)
    d = take_over(tmp_path / "d", log, committed, 3)
    assert d.owner_epoch == 43
    assert counts(d, tick(4)) == [5]  # C's state: neither skipped as below 40, nor B's late one
    d.close()


def test_records_without_an_epoch_are_applied_as_before(tmp_path: Path) -> None:
    """A host without a consumer group (the tester, a backfill hand-over) writes no epoch."""
    log = ChangelogPartition()
    a = take_over(tmp_path / "a", log, {}, None)
    assert counts(a, tick(0), tick(1)) == [1, 2]
    committed = commit(a, log)
    assert all(changelog_fields(m)[2] is None for m in log.records)
    a.close()
    b = take_over(tmp_path / "b", log, committed, 4)
    assert counts(b, tick(2)) == [3]
    b.close()


def test_the_state_dump_folds_with_the_fence(tmp_path: Path) -> None:
    log = ChangelogPartition()
    committed, queued = zombie_after_new_owner(tmp_path, log)
    b_k = unframed([m for m in log.records if m.key() == K][-1].value())  # (its information inside)
    send(log, queued)
    folded = FoldedTask(0, committed)
    records = []
    for m in log.records:
        value, pos, gen = changelog_fields(m)  # (as read_changelog reads it)
        value, info = stored_value(value, dict(m.headers() or ()).get("es-key"))
        records.append((0, m.offset(), m.key(), value, pos, info, gen))
    fold_records({0: folded}, {0: Coverage(committed)}, records)
    assert folded.records[K][0] == b_k
    assert folded.fence.skipped == len(queued)


def test_the_epoch_rule() -> None:
    fence = EpochFence()
    assert [fence.admits(g) for g in (None, b"3", b"3", b"5", None, b"3", b"5", b"7", b"4")] == [
        True,
        True,
        True,
        True,
        True,
        False,
        True,
        True,
        False,
    ]
    assert (fence.highest, fence.skipped) == (7, 2)
    assert not EpochFence(9).admits(b"8")  # a store's highest epoch carries on
    assert owner_epoch(7, 0, 5) == (7, 0)
    assert owner_epoch(1, 0, 40) == (41, 40)  # a group made again
    assert owner_epoch(2, 40, 41) == (42, 40)
    assert owner_epoch(5, 0, 5) == (6, 1)  # the same generation (a static member's replacement)
    assert owner_epoch(6, 0, 5) == (6, 0)  # the next generation's owner, the raise not seen: a tie
    assert owner_epoch(3, 2, 9) == (10, 7)  # one above the highest, however far below it


def test_the_spark_state_dump_folds_with_the_fence(tmp_path: Path) -> None:
    """The Spark dump's per-partition fold (backfill/state_dump.py), over the data source's rows."""
    from eventscript.backfill.state_dump import _rows_of_partition

    log = ChangelogPartition()
    committed, queued = zombie_after_new_owner(tmp_path, log)
    send(log, queued)
    rows = [
        {
            "partition": 0,
            "offset": m.offset(),
            "key": m.key(),
            "value": m.value(),
            "headers": [{"key": k, "value": v} for k, v in m.headers() or ()],
        }
        for m in log.records
    ]
    program = compile_source(COUNT, name="p").require()
    (k_row,) = [r for r in _rows_of_partition("p", program.dumps(), {0: committed}, iter(rows)) if r[2] == '["k"]']
    variables = orjson.loads(k_row[5])["variables"]
    assert [v["value"] for v in variables if v["name"] == "count"] == [3]  # B's count, not A's 2
