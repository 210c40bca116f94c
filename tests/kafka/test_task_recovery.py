"""A task going back to its last commit, without a broker (issue: recovery is exact).

The worker rewinds a task by reloading it from its local store (``Task.load_from_store``) and
reading its inputs again from the committed offsets. These tests drive a real ``Task`` with real
RocksDB stores, committing as the worker does (changelog records to the store, with the input
position), and check what must hold whatever the broker does: the record clock goes back with
the task, no stale change of a discarded instance is persisted, and every output — timer outputs
included, on either clock — gets the same id and the same bytes when it is produced again.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from task_builder import stored_task

from eventscript.automata.compile import compile_source
from eventscript.kafka import codec
from eventscript.kafka.config import InputConfig, ProgramConfig
from eventscript.kafka.task import KeyFilter, OutRecord, Task
from eventscript.task.record import PlainRecord

PROGRAM = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count; long last;} Count, {string k; long count;} Quiet

{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count, last: t.n}); } )*
elapse[30 seconds]() { !>Quiet({k: group[0], count: count}); }
"""

T0 = 1_767_225_600_000  # ms


def Record(
    offset: int,
    ts_ms: int,
    key: str,
    n: int,
    topic: str = "in",
    partition: int = 0,
    headers: list[tuple[str, bytes | None]] | None = None,
) -> PlainRecord:
    """An input record of key ``key`` and value {"k": key, "n": n}, with the ``Message``
    accessors the worker's task calls (the backfill's record class)."""
    return PlainRecord(topic, partition, offset, ts_ms, orjson.dumps([key]), orjson.dumps({"k": key, "n": n}), headers)


def _task(store: Path, clock: str = "record", program: str = PROGRAM, event: str = "Tick") -> Task:
    return stored_task(store, program, clock=clock, event=event)


def _feed(task: Task, records: list[Record]) -> list[OutRecord]:
    for r in records:
        task.add(r)
    task.process(0)
    out = [r for r in task.outbox if not r.changelog]
    task.outbox = [r for r in task.outbox if r.changelog]
    return out


def _commit(task: Task) -> dict[bytes, bytes | None]:
    """What the worker does when a batch commits: changelog records, then the local store."""
    changes = task.changelog_records()
    task.outbox.clear()
    task.store.write(changes, None, dict(task.position))
    return changes


def _rewind(task: Task) -> None:
    """What the worker does when a batch cannot commit (Worker._rewind)."""
    for ip in task.inputs:
        ip.buffer.clear()
    task.outbox.clear()
    task.position = {}
    task.load_from_store()


def _ids(records: list[OutRecord]) -> list[bytes]:
    return [codec.header(r.headers, codec.HEADER_ID) or b"" for r in records]


def _raw(records: list[OutRecord]) -> list[tuple[Any, ...]]:
    return [(r.topic, r.key, r.value, tuple(r.headers), r.timestamp) for r in records]


def _records(keys: list[str], start: int, count: int, step_ms: int = 4000) -> list[Record]:
    return [Record(i, T0 + i * step_ms, keys[i % len(keys)], i) for i in range(start, start + count)]


def test_the_record_clock_goes_back_with_the_task(tmp_path: Path) -> None:
    task = _task(tmp_path / "t")
    first = _records(["a", "b", "c"], 0, 10)
    _feed(task, first)
    _commit(task)
    committed_clock = task.clock.now()
    assert committed_clock == first[-1].timestamp()[1] * 1000
    # b stays silent for more than 30 s: its timer fires within this batch, then the batch fails.
    batch = _records(["a", "c"], 10, 12)
    once = _feed(task, batch)
    assert any(codec.header(r.headers, codec.HEADER_EVENT) == b"Quiet" for r in once)
    _rewind(task)
    assert task.clock.now() == committed_clock
    again = _feed(task, batch)
    assert _raw(again) == _raw(once)


def test_a_restarted_task_resumes_its_record_clock(tmp_path: Path) -> None:
    task = _task(tmp_path / "t")
    _feed(task, _records(["a"], 0, 5))
    _commit(task)
    clock = task.clock.now()
    task.close()
    restarted = _task(tmp_path / "t")
    assert restarted.clock.now() == clock > 0


def test_a_rewind_leaves_no_stale_change_to_persist(tmp_path: Path) -> None:
    """Changes of instances discarded by a rewind must not reach the changelog: they would
    write tombstones (or old snapshots) for instances that are alive in the store."""
    task = _task(tmp_path / "t")
    _feed(task, _records(["a", "b", "c"], 0, 6))
    _commit(task)
    _feed(task, _records(["a", "b", "c"], 6, 3))
    _rewind(task)
    changes = task.changelog_records()
    assert all(v is not None for v in changes.values()), "a tombstone for a live instance"
    assert not [k for k in changes if k[:1] == b"["], "a change of a discarded instance"


def test_timer_output_ids_depend_only_on_the_keys_history(tmp_path: Path) -> None:
    """Key a's timer fires when another key's record moves the clock (one task holding a and b),
    or when a's own next record does (a task, or a key-parallel backfill, holding only a): its
    outputs get the same ids and bytes either way."""
    a0, b1, b2, a3 = (
        Record(0, T0, "a", 0),
        Record(1, T0 + 10_000, "b", 1),
        Record(2, T0 + 50_000, "b", 2),
        Record(3, T0 + 60_000, "a", 3),
    )
    shared = _feed(_task(tmp_path / "shared"), [a0, b1, b2, a3])
    alone = _feed(_task(tmp_path / "alone"), [a0, a3])
    key_a = b"a"  # output keys take the inputs' key format: a plain string by default
    assert _raw([r for r in shared if r.key == key_a]) == _raw(alone)
    assert [codec.header(r.headers, codec.HEADER_EVENT) for r in alone] == [b"Count", b"Quiet", b"Count"]


def test_ids_are_unique_across_instances_of_one_key(tmp_path: Path) -> None:
    """A key whose instance ended and started again never repeats an id of the earlier one."""
    task = _task(tmp_path / "t")
    out = _feed(task, [Record(i, T0 + i * 40_000, "a", i) for i in range(6)])  # each instance times out
    ids = _ids(out)
    assert len(out) == 11 and len(set(ids)) == len(ids)


def test_a_repartitioned_record_is_named_by_its_original(tmp_path: Path) -> None:
    direct = _feed(_task(tmp_path / "direct"), [Record(7, T0, "a", 0)])
    copy = Record(3, T0, "a", 0, topic="p-rep", headers=[(codec.HEADER_SOURCE, b"in:0:7"), (codec.HEADER_INPUT, b"in")])
    via_rep = _feed(_task(tmp_path / "rep"), [copy])
    assert _ids(via_rep) == _ids(direct) == [b"p/in:0:7/1"]


@pytest.mark.parametrize("restart", [False, True])
def test_a_wall_clock_timer_fired_again_is_an_exact_copy(tmp_path: Path, restart: bool) -> None:
    """Killed (or rewound) after its timer fired but before the commit, a worker fires it again
    later: same id, same value, same emission time (the deadline), not a new output."""
    program = """
    in {string k;} Arm group(Arm.k)
    out {string k; time armed;} Fired
    ( Arm() { armed = now(); } elapse[2 seconds]() { !>Fired({k: group[0], armed: armed}); } )*
    """
    start_ms = time.time_ns() // 1_000_000 + 86_400_000  # tomorrow: the wall clock never goes back
    now = [start_ms * 1000]
    task = _task(tmp_path / "t", clock="wall", program=program, event="Arm")
    task.clock._clock = lambda: now[0] * 1000  # type: ignore[attr-defined]
    r = Record(0, start_ms, "a", 0)
    r._value = orjson.dumps({"k": "a"})
    _feed(task, [r])
    _commit(task)
    now[0] += 2_500_000
    task.fire_timers()
    fired = [x for x in task.outbox if not x.changelog]
    assert len(fired) == 1
    if restart:
        task.close()
        task = _task(tmp_path / "t", clock="wall", program=program, event="Arm")
    else:
        _rewind(task)
    now[0] += 7_000_000  # much later
    task.clock._clock = lambda: now[0] * 1000  # type: ignore[attr-defined]
    task.restored = True
    task.fire_timers()
    again = [x for x in task.outbox if not x.changelog]
    assert _raw(again) == _raw(fired)
    assert fired[0].timestamp == start_ms + 2000


def test_a_record_timestamp_past_year_9999_is_an_error_record(tmp_path: Path) -> None:
    task = _task(tmp_path / "t")
    late = Record(0, 253_402_300_800_000, "a", 0)  # 10000-01-01
    out = _feed(task, [late, Record(1, T0, "a", 1)])
    assert [r.topic for r in out] == ["err", "out"]
    error = orjson.loads(out[0].value or b"")
    assert error["code"] == 6 and "year 9999" in error["message"] and error["source"]["offset"] == 0


def test_an_object_value_with_a_lone_surrogate_is_still_written(tmp_path: Path) -> None:
    program = """
    in long N
    out object O
    function object chr(long): "builtins:chr"
    ( N(n) { !>O(chr(n)); } )*
    """
    cfg = ProgramConfig(
        name="p",
        source="p.es",
        clock="record",
        inputs=[InputConfig(topic="in", event="N")],
        outputs={"default": "out"},
        errors="err",
    )
    task = Task(0, compile_source(program, name="p").require(), cfg, cfg.inputs, "p-rep", "p-cl", 1, tmp_path / "t")
    task.load_from_store()
    r = Record(0, T0, "x", 0)
    r._value = b"55296"
    out = _feed(task, [r])
    assert [x.value for x in out] == [b'"\\ud800"']


class OnlyKey(KeyFilter):
    """Owns one group key (a string key's routing bytes: its UTF-8)."""

    def __init__(self, key: str) -> None:
        self.route = key.encode()
        self.passed_by: list[int] = []

    def owns(self, route: bytes) -> bool:
        return route == self.route

    def passed(self, msg: Any) -> None:
        self.passed_by.append(msg.offset())


def test_a_key_filter_runs_its_keys_and_lets_the_others_move_the_clock(tmp_path: Path) -> None:
    """A task told it owns key a only (key-split backfill) gives a's outputs, ids and timers as a
    task owning every key does — b's records still move the record clock, so a's timer (due at
    30 s) fires when b's record at 40 s arrives — and runs no instance of b."""
    records = [
        Record(0, T0, "a", 1),
        Record(1, T0 + 10_000, "b", 2),
        Record(2, T0 + 40_000, "b", 3),
        Record(3, T0 + 50_000, "a", 4),
    ]
    everyone = _feed(_task(tmp_path / "all"), records)
    task = _task(tmp_path / "a")
    only_a = OnlyKey("a")
    task.set_key_filter(only_a)
    got = _feed(task, records)
    assert [(r.key, r.value, r.headers) for r in got] == [
        (r.key, r.value, r.headers) for r in everyone if r.key == b"a"
    ]
    assert [(dict(r.headers)["es-event"], r.timestamp) for r in got] == [
        (b"Count", T0),
        (b"Quiet", T0 + 30_000),
        (b"Count", T0 + 50_000),
    ]
    assert only_a.passed_by == [1, 2]
    assert task.engine.instance_count == 1 and task.clock.now() == (T0 + 50_000) * 1000


def test_a_task_opens_its_store_only_when_it_has_state_to_keep(tmp_path: Path) -> None:
    """Creating and running a task reads an absent store as empty without opening RocksDB; the
    first commit opens it, and a task created on an existing store reads it back."""
    task = _task(tmp_path / "s")
    _feed(task, [Record(0, T0, "a", 1)])
    assert task.store._db is None and not (tmp_path / "s").exists()
    _commit(task)
    assert (tmp_path / "s").exists()
    task.close()
    again = _task(tmp_path / "s")
    assert again.clock.now() == T0 * 1000 and again.store.checkpoint == 0 and again.store.has_instances()
    again.close()
