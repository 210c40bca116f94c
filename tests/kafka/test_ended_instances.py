"""Instances that end before they were ever persisted cost nothing at commit (issue 10, item 4).

With many keys, most instances of a program like ``Reading(r) { !>Echo(r); }`` (or the echo
program ``( Reading(r) { !>Echo(r); } )*``, whose instance retires after every record) are created
and ended between two commits. Nothing of them is in the changelog or the store, so they need no
tombstone, no store delete and no cache bookkeeping -- except the tombstone of an instance that
terminated (reached the program's end): since issue 23 it carries the key's ended marker
(``es-key``, state/keyinfo.py), so that a query can tell "ended" from "never seen"; an instance
that retires (back at its start, as the echo program's) still writes nothing. An instance that was
persisted (by an earlier commit, or loaded from the store) still gets its tombstone. Broker-free: a real ``Task`` and
RocksDB store, committing, rewinding and restarting as the worker does (see
test_task_recovery.py).
"""

from __future__ import annotations

from pathlib import Path

import msgpack
import orjson
import pytest
from task_builder import stored_task
from test_task_recovery import T0, _commit, _feed, _raw, _rewind

from eventscript.kafka import codec
from eventscript.kafka.task import Task
from eventscript.state.changelog import is_instance_key
from eventscript.state.keyinfo import snapshot_of
from eventscript.task.record import PlainRecord

#: Ends after each record: the next record of the key creates a new instance.
TERMINATING = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long n;} Echo
Tick(t) { !>Echo(t); }
"""
#: Retires after each record: back at its start with nothing live, it equals a fresh instance.
ECHO = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long n;} Echo
( Tick(t) { !>Echo(t); } )*
"""
#: Ends after a key's second record.
PAIRS = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long first; long second;} Pair
Tick(a) Tick(b) { !>Pair({k: a.k, first: a.n, second: b.n}); }
"""
#: Ends when its timer fires, 10 s after the key's record.
TIMED = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long n;} Late
Tick(t) elapse[10 seconds]() { !>Late(t); }
"""
#: Never ends: a counter per key.
COUNTER = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count;} Count
{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count}); } )*
"""


def _task(store: Path, program: str, cache_instances: int | None = None) -> Task:
    return stored_task(store, program, cache_instances=cache_instances)


def _records(keys: list[str], start: int, count: int, step_ms: int = 1000) -> list[PlainRecord]:
    return [
        PlainRecord(
            "in",
            0,
            i,
            T0 + i * step_ms,
            keys[i % len(keys)].encode(),
            orjson.dumps({"k": keys[i % len(keys)], "n": i}),
            None,
        )
        for i in range(start, start + count)
    ]


def _instances(changes: dict[bytes, bytes | None]) -> dict[bytes, bytes | None]:
    """The instances' snapshots of a commit's values (their keys' information taken out)."""
    return {k: v if v is None else snapshot_of(v) for k, v in changes.items() if is_instance_key(k)}


def _ended_only(changes: dict[bytes, bytes | None], program: str, keys: list[str]) -> bool:
    """What a commit wrote of instances created and ended since the last: nothing for a retiring
    program; for a terminating one, tombstones (carrying the ended marker) for the keys, no snapshot."""
    if program == ECHO:
        return changes == {}
    return changes == {f'["{k}"]'.encode(): None for k in keys}


@pytest.mark.parametrize("program", [TERMINATING, ECHO], ids=["terminating", "echo"])
def test_instances_created_and_ended_between_commits_write_no_snapshot(tmp_path: Path, program: str) -> None:
    task = _task(tmp_path / "t", program)
    keys = [f"k{i}" for i in range(50)]
    first = _feed(task, _records(keys, 0, 200))
    assert len(first) == 200
    if program == ECHO and task.engine.instance_count:
        pytest.skip("this engine keeps the echo program's instances (no retirement)")
    assert _ended_only(_instances(_commit(task)), program, keys), "a snapshot for an instance never persisted"
    assert not task.cache.ended and not task.cache.unsaved and not task.engine.dirty
    assert dict(task.store.instances()) == {}
    # Rewound to that commit, and restarted from its store: the same outputs, ids included.
    batch = _records(keys, 200, 100)
    once = _feed(task, batch)
    _rewind(task)
    again = _feed(task, batch)
    assert _raw(again) == _raw(once)
    assert _ended_only(_instances(_commit(task)), program, keys)
    task.close()
    restarted = _task(tmp_path / "t", program)
    later = _records(keys, 300, 50)
    fresh = _task(tmp_path / "reference", program)
    _feed(fresh, _records(keys, 0, 300))
    assert _raw(_feed(restarted, later)) == _raw(_feed(fresh, later))


def test_an_instance_ended_on_a_later_record_of_the_batch_writes_only_its_tombstone(tmp_path: Path) -> None:
    task = _task(tmp_path / "t", PAIRS)
    out = _feed(task, _records(["a", "b"], 0, 4))  # a, b, a, b: both created and ended
    assert len(out) == 2
    assert _instances(_commit(task)) == {b'["a"]': None, b'["b"]': None}  # (the ended markers' tombstones)
    _feed(task, _records(["a"], 4, 1))  # a new instance of a, alive at the commit: its snapshot
    changes = _instances(_commit(task))
    assert list(changes) == [b'["a"]'] and changes[b'["a"]'] is not None


def test_a_persisted_instance_still_gets_its_tombstone(tmp_path: Path) -> None:
    task = _task(tmp_path / "t", PAIRS)
    _feed(task, _records(["a"], 0, 1))
    assert _instances(_commit(task))[b'["a"]'] is not None
    # a's persisted instance ends, a new one is created and ends in the same batch: one tombstone.
    out = _feed(task, _records(["a"], 1, 3))
    assert [orjson.loads(r.value or b"")["first"] for r in out] == [0, 2]
    assert _instances(_commit(task)) == {b'["a"]': None}
    assert task.store.get(b'["a"]') is None
    # The key starts afresh (not from the stored snapshot the tombstone replaced).
    out = _feed(task, _records(["a"], 4, 2))
    assert [orjson.loads(r.value or b"")["first"] for r in out] == [4]


def test_an_instance_loaded_from_the_store_gets_its_tombstone(tmp_path: Path) -> None:
    task = _task(tmp_path / "t", PAIRS, cache_instances=16)
    keys = [f"k{i}" for i in range(100)]
    _feed(task, _records(keys, 0, 100))  # one record each: 100 instances, most evicted at the commit
    _commit(task)
    assert task.cache.evicted > 0
    out = _feed(task, _records(keys, 100, 100))  # the second record of each: every instance ends
    assert len(out) == 100
    assert _instances(_commit(task)) == {f'["{k}"]'.encode(): None for k in keys}
    assert dict(task.store.instances()) == {}


def test_an_instance_ended_by_its_timer_before_the_commit_writes_only_its_tombstone(tmp_path: Path) -> None:
    task = _task(tmp_path / "t", TIMED)
    records = _records(["a", "b"], 0, 2) + _records(["c"], 2, 1, step_ms=60_000)  # c's time fires a's, b's
    out = _feed(task, records)
    assert [codec.header(r.headers, codec.HEADER_EVENT) for r in out] == [b"Late", b"Late"]
    # The timer outputs' ids name the instances' origins (the records that created them).
    assert [codec.header(r.headers, codec.HEADER_ID) for r in out] == [b"p/in:0:0~1/1", b"p/in:0:1~1/1"]
    changes = _instances(_commit(task))
    assert sorted(changes) == [b'["a"]', b'["b"]', b'["c"]']
    assert changes[b'["a"]'] is None and changes[b'["b"]'] is None  # (the ended markers' tombstones)
    assert msgpack.unpackb(changes[b'["c"]'] or b"")[6] == "in:0:2", "a timed instance keeps its origin"


def test_an_instance_of_a_program_without_timers_carries_no_origin(tmp_path: Path) -> None:
    task = _task(tmp_path / "t", COUNTER)
    _feed(task, _records(["a"], 0, 2))
    snapshot = _instances(_commit(task))[b'["a"]']
    assert msgpack.unpackb(snapshot or b"")[6] is None


def test_a_creation_cut_short_by_an_error_leaves_later_endings_their_tombstones(tmp_path: Path) -> None:
    task = _task(tmp_path / "t", PAIRS)
    _feed(task, _records(["a"], 0, 1))
    _commit(task)  # a's instance is persisted
    feed_keyed = task.engine.feed_keyed

    def failing(name: str, value: object, key: tuple[object, ...]) -> object:
        feed_keyed(name, value, key)  # creates b's instance, then fails
        raise RuntimeError("an external function failed")

    task.engine.feed_keyed = failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        _feed(task, _records(["b"], 1, 1))
    task.engine.feed_keyed = feed_keyed  # type: ignore[method-assign]
    _feed(task, _records(["a"], 2, 1))  # a's persisted instance ends
    assert _instances(_commit(task))[b'["a"]'] is None
