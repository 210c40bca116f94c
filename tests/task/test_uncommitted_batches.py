"""Changelog records of a batch that was never committed (issue 20, fault 1), through the real
``Task`` and the real restore (kafka/restore.py) over an in-memory changelog partition.

The scenario: batch A processes r0, which creates key k, and writes k's snapshot; A's commit
fails. The retry's batch holds r0 and r1 (a backlog is read after a rewind), and r1 ends k inside
that batch, so k is never written again; the commit covers both records. A replay of the
changelog must not bring A's snapshot of k back: the next record of k starts a new instance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import confluent_kafka
import orjson

from eventscript.automata.compile import compile_source
from eventscript.kafka.restore import Restoration
from eventscript.state.changelog import Position
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig

from .task_helpers import T0, PlainRecord, build_task, changelog_fields, program_config

#: Two records of a key make a pair, and the instance ends with it.
PAIR = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long a; long b;} Pair
{ a = 0; }
Tick(x) { a = x.n; } Tick(y) { !>Pair({k: group[0], a: a, b: y.n}); }
"""
CHANGELOG = "p-changelog"


def make_task(store: Path) -> Task:
    cfg = program_config([InputConfig(topic="in", event="Tick")])
    return build_task(compile_source(PAIR, name="p").require(), cfg, store, changelog=CHANGELOG)


def tick(offset: int, key: str = "k") -> PlainRecord:
    return PlainRecord("in", 0, offset, T0 + offset, orjson.dumps([key]), orjson.dumps({"k": key, "n": offset}))


class ChangelogPartition:
    """Partition 0 of the changelog, as a consumer assigned to it reads it: the records from the
    assigned offset, then the end-of-partition signal."""

    def __init__(self) -> None:
        self.records: list[confluent_kafka.Message] = []
        self._next: int | None = None

    def append(self, key: bytes | None, value: bytes | None, headers: Any) -> None:
        self.records.append(
            confluent_kafka.Message(
                topic=CHANGELOG,
                partition=0,
                offset=len(self.records),
                key=key,
                value=value,
                headers=list(headers or ()),
            )
        )

    def assign(self, tps: list[confluent_kafka.TopicPartition]) -> None:
        (tp,) = tps
        self._next = max(tp.offset, 0)

    def consume(self, num_messages: int, timeout: float) -> list[confluent_kafka.Message]:
        assert self._next is not None
        out = self.records[self._next : self._next + num_messages]
        self._next += len(out)
        if self._next >= len(self.records):
            out.append(
                confluent_kafka.Message(
                    topic=CHANGELOG,
                    partition=0,
                    offset=self._next,
                    error=confluent_kafka.KafkaError(confluent_kafka.KafkaError._PARTITION_EOF),
                )
            )
        return out

    def unassign(self) -> None:
        self._next = None

    def get_watermark_offsets(
        self, tp: confluent_kafka.TopicPartition, timeout: float, cached: bool
    ) -> tuple[int, int]:
        """Its start and its end (no transaction is ever left open here)."""
        return 0, len(self.records)


def new_owner(store: Path) -> tuple[Task, ChangelogPartition]:
    """Where each scenario starts: the task's first owner, with an empty store at ``store``
    (loaded), and the empty changelog partition it writes to."""
    owner = make_task(store)
    owner.load_from_store()
    return owner, ChangelogPartition()


def process(task: Task, *records: PlainRecord) -> list[dict[str, Any]]:
    """Process ``records`` in one batch; the outputs it emitted."""
    for r in records:
        task.add(r)
    task.process(0)
    return [orjson.loads(r.value) for r in task.outbox if r.topic == "out"]


def send_changelog(task: Task, log: ChangelogPartition) -> None:
    """Write the changelog records the task sent (only the last one is flagged ``changelog``:
    its delivery moves the store's checkpoint) to the log; drop its other records."""
    for r in task.take_outputs():
        if r.topic == CHANGELOG:
            log.append(r.key, r.value, r.headers)


def commit(task: Task, log: ChangelogPartition, *, succeeds: bool) -> Position:
    """The worker's commit: the batch's changelog records are written; if the commit succeeds,
    the store takes them with the new checkpoint and input position; if not, the task goes back
    to the last commit (its changelog records stay in the log: at-least-once, or a broker that
    shows aborted records)."""
    changes = task.changelog_records()
    send_changelog(task, log)
    if not succeeds:
        task.rewind()
        task.resume()
        return {}
    task.store.write(changes, len(log.records), dict(task.position))
    return dict(task.position)


def restore(store: Path, log: ChangelogPartition, committed: Position) -> Task:
    """A new owner of the task: its state replayed from the changelog (kafka/restore.py)."""
    task = make_task(store)
    restoration = Restoration("p", log, CHANGELOG, {0: task}, {0: committed})
    restoration.begin()
    while not restoration.done:
        restoration.step(1.0)
    restoration.finish()
    return task


def test_a_failed_commit_leaves_no_ghost_instance_for_a_replay(tmp_path: Path) -> None:
    owner, log = new_owner(tmp_path / "owner")
    assert process(owner, tick(0)) == []  # batch A: r0 creates k
    commit(owner, log, succeeds=False)
    assert any(r.key() == orjson.dumps(["k"]) and r.value() is not None for r in log.records)
    assert process(owner, tick(0), tick(1)) == [{"k": "k", "a": 0, "b": 1}]  # the retry: r1 ends k
    committed = commit(owner, log, succeeds=True)
    assert committed == {"in:0": 2}
    owner.close()

    successor = restore(tmp_path / "successor", log, committed)  # no local store: all of the log
    assert process(successor, tick(2)) == []  # k starts again: no pair with A's r0
    assert process(successor, tick(3)) == [{"k": "k", "a": 2, "b": 3}]
    successor.close()


def test_a_batch_lost_with_its_owner_leaves_no_ghost_instance(tmp_path: Path) -> None:
    first, log = new_owner(tmp_path / "first")
    process(first, tick(0))
    first.changelog_records()  # batch A's records are written, then the worker is killed
    send_changelog(first, log)
    first.close()

    second = restore(tmp_path / "second", log, {})  # A's records are not covered: skipped
    assert process(second, tick(0), tick(1)) == [{"k": "k", "a": 0, "b": 1}]
    committed = commit(second, log, succeeds=True)
    second.close()

    third = restore(tmp_path / "third", log, committed)
    assert process(third, tick(2)) == []
    third.close()


def test_the_retry_rewrites_only_the_keys_of_the_batch_that_failed(tmp_path: Path) -> None:
    owner, log = new_owner(tmp_path / "owner")
    process(owner, tick(0, "j"))
    commit(owner, log, succeeds=True)
    process(owner, tick(1, "k"))
    commit(owner, log, succeeds=False)
    process(owner, tick(1, "k"), tick(2, "k"))
    start = len(log.records)
    commit(owner, log, succeeds=True)
    written = {r.key(): r.value() for r in log.records[start:]}
    assert written[orjson.dumps(["k"])] is None  # A's snapshot of k overwritten by a tombstone
    assert orjson.dumps(["j"]) not in written  # committed before A: not written again
    assert all(changelog_fields(r)[1] == b'{"in:0":3}' for r in log.records[start:])
    # (k's tombstone also says that its instance ended, and the last record it took: state/keyinfo.py)
    (k_headers,) = [dict(r.headers()) for r in log.records[start:] if r.key() == orjson.dumps(["k"])]
    info = orjson.loads(k_headers["es-key"])
    assert info["ended"][1] == "terminated" and info["last"][:3] == ["in", 0, 2]
    process(owner, tick(3, "m"))
    start = len(log.records)
    commit(owner, log, succeeds=True)
    assert orjson.dumps(["k"]) not in {r.key() for r in log.records[start:]}  # once is enough
    owner.close()
