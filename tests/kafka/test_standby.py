"""Standby replicas (``num_standby``): a worker keeps a warm copy of another worker's task by
reading its changelog, so that when that worker dies the survivor serves its task after
replaying only the changelog's tail, and the outputs stay exact."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING
from kafka_helpers import (
    Broker,
    KeyedProducer,
    Oracle,
    TopicWatcher,
    endpoint_json,
    free_port,
    outputs_by_key,
    program_entry,
    read_many,
    start_worker,
    told,
    topology,
    unique,
    wait_for,
)

from eventscript.kafka.standby import Standbys, standby_tasks
from eventscript.kafka.state import position_header
from eventscript.task.record import PlainRecord

PROGRAM = """
in {string k; long n;} Hit group(Hit.k)
out {string k; long count; long last;} Count
{ count = 0; }
( Hit(h) { count = count + 1; !>Count({k: h.k, count: count, last: h.n}); } )*
"""
PARTITIONS = 2
KEYS = 40
FIRST, SECOND = 1500, 500
T0 = 1_767_225_600_000


def test_standby_rule_covers_every_task_of_a_balanced_assignment() -> None:
    assert standby_tasks({0, 2}, 4, 1) == {1, 3}
    assert standby_tasks({0, 1}, 6, 1) == {2, 3}  # the next ones after its own, wrapping around
    assert standby_tasks({4, 5}, 6, 1) == {0, 1}
    assert standby_tasks({0, 3}, 6, 1) == {1, 4}
    assert standby_tasks({0}, 2, 3) == {1}  # never more than the tasks it does not own
    assert standby_tasks(set(), 4, 1) == set()
    assert standby_tasks({0, 1}, 4, 0) == set()
    # Three workers, six tasks, a round-robin assignment: each task has exactly one standby.
    owners = [{0, 3}, {1, 4}, {2, 5}]
    stood = [t for owned in owners for t in standby_tasks(owned, 6, 1)]
    assert sorted(stood) == list(range(6))
    assert all(not (standby_tasks(owned, 6, 1) & owned) for owned in owners)


class _Record(PlainRecord):
    """A changelog record with the ``Message`` accessors read_changelog calls."""

    def error(self) -> None:
        return None


def _record(partition: int, offset: int, key: bytes, value: bytes | None, input_offset: int) -> _Record:
    """A changelog record of a batch that reached ``input_offset`` on the task's input."""
    return _Record(
        "cl", partition, offset, 0, key, value, [("es-pos", position_header({f"in:{partition}": input_offset}))]
    )


class _Reader:
    """A changelog consumer that hands over the records given to it, once."""

    def __init__(self) -> None:
        self.queue: list[_Record] = []
        self.assigned: list[tuple[str, int, int]] = []

    def consume(self, num_messages: int, timeout: float) -> list[_Record]:
        out, self.queue = self.queue[:num_messages], self.queue[num_messages:]
        return out

    def incremental_assign(self, tps: list[Any]) -> None:
        self.assigned += [(tp.topic, tp.partition, tp.offset) for tp in tps]

    def incremental_unassign(self, tps: list[Any]) -> None:
        pass

    def pause(self, tps: list[Any]) -> None:
        pass

    def resume(self, tps: list[Any]) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_standby_applies_only_the_committed_prefix_of_the_changelog(tmp_path: Path) -> None:
    """Records apply in changelog order once the committed offsets cover their batch, never past
    one that is not covered (it may be an aborted batch's); the store's checkpoint follows, and
    its position never passes for the committed state."""
    from confluent_kafka import TopicPartition

    from eventscript.kafka.state import TaskStore, same_position

    committed = {"in": 0}
    reader = _Reader()
    standbys = Standbys(
        "p",
        "cl",
        ["in"],
        tmp_path,
        reader,
        lambda tps: [TopicPartition(tp.topic, tp.partition, committed[tp.topic]) for tp in tps],
    )
    standbys.retarget({1})
    assert reader.assigned == [("cl", 1, OFFSET_BEGINNING)]
    # Batch A (input offset 10) committed; batch B (20) aborted; batch C (30) re-writes k2.
    reader.queue = [
        _record(1, 0, b'["k1"]', b"a1", 10),
        _record(1, 1, b'["k2"]', b"b2", 20),
        _record(1, 2, b'["k2"]', b"c2", 30),
        _record(1, 3, b'["k3"]', None, 30),
    ]
    committed["in"] = 10
    standbys.step()
    store = standbys.tasks[1].store
    assert (store.checkpoint, store.get(b'["k1"]'), store.get(b'["k2"]')) == (1, b"a1", None)
    committed["in"] = 30
    standbys._last_committed = 0.0  # read the committed offsets again now
    standbys.step()
    assert (store.checkpoint, store.get(b'["k2"]'), store.get(b'["k3"]')) == (4, b"c2", None)
    assert not same_position(store.position, {"in:1": 30})  # the restore still reads the tail
    standbys.release(1)
    reopened = TaskStore(tmp_path / "task-1")  # released: the task can open its store
    try:
        assert reopened.checkpoint == 4
    finally:
        reopened.close()


def _running(workers: dict[Path, subprocess.Popen[bytes]]) -> bool:
    """True while every worker runs; a worker that exited fails the test with its log."""
    for log, w in workers.items():
        if w.poll() is not None:
            raise AssertionError(f"worker exited with {w.returncode}: {log.read_text()[-3000:]}")
    return True


def _owned(log: str) -> set[int]:
    """The tasks a worker owns after the assignment changes its log shows."""
    owned: set[int] = set()
    for kind, tasks in re.findall(r": (assigned|revoked) tasks \[([\d, ]*)\]", log):
        parts = {int(t) for t in tasks.split(",") if t.strip()}
        owned = owned | parts if kind == "assigned" else owned - parts
    return owned


def _state(port: int, program: str, key: str) -> tuple[int, dict[str, Any]]:
    """A worker's answer to ``GET /state/<program>?key=<key>`` (kafka/state_endpoint.py): its
    status and body; (0, {}) while the worker does not listen yet."""
    try:
        return endpoint_json(port, f"/state/{program}?key={key}")
    except OSError:
        return 0, {}


def _applied_offsets(owner: int, standby: int, program: str, key: str) -> tuple[int | None, int | None]:
    """The changelog offset of ``key``'s task that its owner's store has committed and the one
    the standby on the other worker has applied (None: that worker does not answer as such)."""
    offsets: list[int | None] = []
    for port, role in ((owner, "owner"), (standby, "standby")):
        status, body = _state(port, program, key)
        offsets.append(
            body["committed"]["changelog_offset"] if status == 200 and body["served_by"]["role"] == role else None
        )
    return offsets[0], offsets[1]


@pytest.mark.kafka
def test_a_standby_takes_over_a_killed_workers_task_from_the_changelog_tail(broker: Broker, tmp_path: Path) -> None:
    name = unique("standby")
    app = unique("sb")
    (tmp_path / "p.es").write_text(PROGRAM)
    program = program_entry(name, "Hit", clock="record", commit_interval_ms=50, num_standby=1)
    topics = {f"{name}-in": {"partitions": PARTITIONS}}
    # The state endpoint tells how far each worker's store of a task has come (owner or standby).
    port_a, port_b = free_port(), free_port()
    topo_a, topo_b = (
        topology(
            broker,
            tmp_path,
            [program],
            topics,
            file=f"{w}.yaml",
            application=app,
            state=f"state-{w}",
            health={"port": port},
            state_query={"enabled": True},
        )
        for w, port in (("a", port_a), ("b", port_b))
    )
    from eventscript.kafka.admin import Admin
    from eventscript.kafka.config import load_topology

    Admin(load_topology(topo_a)).prepare(load_topology(topo_a).programs)
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    a = start_worker(topo_a, "-v", log=log_a)
    b = start_worker(topo_b, "-v", log=log_b)
    watcher = TopicWatcher(broker, f"{name}-out")
    try:
        # Each worker owns one task and stands by for the other's.
        wait_for(
            lambda: (
                _running({log_a: a, log_b: b})
                and log_a.exists()
                and log_b.exists()
                and len(_owned(log_a.read_text())) == 1
                and len(_owned(log_b.read_text())) == 1
                and "standby for task" in log_a.read_text()
                and "standby for task" in log_b.read_text()
            ),
            60,
            what="one task and one standby each",
        )
        producer = KeyedProducer(broker, f"{name}-in", PARTITIONS)
        producer.run(FIRST, KEYS, rate=5000)
        wait_for(lambda: _running({log_a: a, log_b: b}) and watcher.distinct() >= FIRST, 60, what="the first outputs")
        (taken,) = _owned(log_a.read_text())
        # A key of A's task, and B's standby of that task caught up with A's last commit (it
        # reads the committed offsets every second): B's store has applied the changelog up to
        # the offset A's store committed.
        key = next((k for k in (f"k{i}" for i in range(KEYS)) if _state(port_a, name, k)[1].get("task") == taken), "")
        assert key, f"worker A's state endpoint names no key of its task {taken}"
        offsets: list[tuple[int | None, int | None]] = []

        def standby_caught_up() -> bool:
            offsets.append(_applied_offsets(port_a, port_b, name, key))
            owner, standby = offsets[-1]
            return _running({log_a: a, log_b: b}) and owner is not None and owner == standby

        try:
            wait_for(standby_caught_up, 60, what=f"B's standby of task {taken} to apply what A committed")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: (A's, B's) changelog offsets last {offsets[-1:]}") from exc
        a.send_signal(signal.SIGKILL)
        a.wait()
        producer.run(SECOND, KEYS, rate=5000, t0=T0 + FIRST * 250, seed=43)
        wait_for(
            lambda: _running({log_b: b}) and watcher.distinct() >= FIRST + SECOND,
            60,
            what="the outputs after the fail-over",
        )
        b.send_signal(signal.SIGTERM)
        assert b.wait(60) == 0, log_b.read_text()[-3000:]
    except AssertionError as exc:
        raise told(exc, log_a, log_b) from exc
    finally:
        watcher.close()
        for w in (a, b):
            if w.poll() is None:
                w.kill()
    text = log_b.read_text()
    stopped = re.findall(rf"standby for task {taken} stopped at changelog offset (\d+) \((\d+) records applied\)", text)
    assert stopped and int(stopped[-1][1]) > 0, "the survivor's standby applied nothing"
    restores = [
        (int(o), int(n)) for o, n in re.findall(rf"task {taken}: changelog from offset (\d+): (\d+) applied", text)
    ]
    assert restores, text[-3000:]
    offset, applied = restores[-1]
    assert offset == int(stopped[-1][0]) > 0, "the take-over replayed the changelog from the start"
    assert applied < int(stopped[-1][1]), "the take-over replayed more than the standby had applied"

    in_records = read_many(broker, [f"{name}-in"], dedupe=False)[f"{name}-in"]
    assert len(in_records) == FIRST + SECOND
    got, _ = outputs_by_key(read_many(broker, [f"{name}-out"], dedupe=False)[f"{name}-out"])
    assert got == Oracle(PROGRAM, "Hit", in_records).outputs
