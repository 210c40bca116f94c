"""One RocksDB entry per changed live key (issue 26): the store keeps a live key's value as its
changelog record carries it, the key's information in front of the snapshot, and only an ended
key's marker under ``\\x05`` (state/store.py, state/keyinfo.py). Through the real ``Task``, its
store, the query (state/query.py) and an in-memory changelog partition: what a commit writes, a
store written before (the information of live keys under ``\\x05``) opened by this build, and keys
that end, come back and end again, with their markers pruned between.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import orjson
import pytest
from rocksdict import Options, Rdict, WriteBatch

import eventscript.task.task as task_module
from eventscript.engine.timeutil import format_time
from eventscript.explain.terms import ProgramTerms
from eventscript.state import store as store_module
from eventscript.state.changelog import INFO_PREFIX
from eventscript.state.keyinfo import INFO_FRAME, decode_info, info_key, split_value
from eventscript.state.query import StoreNotOpen, answer_from_store, read_committed
from eventscript.state.store import TaskStore
from eventscript.task.task import Task

from .test_uncommitted_batches import T0, commit, make_task, new_owner, process, tick

K, J, M = (orjson.dumps([k]) for k in ("k", "j", "m"))


def _answer(task: Task, key: str) -> dict[str, Any]:
    return answer_from_store(ProgramTerms(task.program), task.store, (key,), 0).to_json()


def _markers(task: Task) -> set[bytes]:
    """The keys with an entry under ``\\x05`` (ended markers, or information of the old layout)."""
    return {k[len(INFO_PREFIX) :] for k, _ in task.store.with_prefix(INFO_PREFIX)}


def test_a_commit_writes_one_entry_per_changed_live_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    owner, _ = new_owner(tmp_path / "owner")
    process(owner, tick(0, "k"), tick(1, "j"), tick(2, "m"))
    batches: list[int] = []
    db = owner.store.db
    write = db.write

    def counted(wb: WriteBatch) -> None:
        batches.append(wb.len())
        write(wb)

    monkeypatch.setattr(owner.store, "_db", types.SimpleNamespace(write=counted, get=db.get, iter=db.iter))
    changes = owner.changelog_records()
    live = [kb for kb in (K, J, M) if changes.get(kb) is not None]
    assert len(live) == 3
    owner.store.write(changes, 1, dict(owner.position))
    # The changes (three instances and the record clock), the checkpoint and the position: no
    # entry of the keys' information beside them (before: three more, under \x05).
    assert batches == [len(changes) + 2]
    monkeypatch.undo()
    for kb, offset in ((K, 0), (J, 1), (M, 2)):
        stored = owner.store.get(kb)
        assert stored is not None and stored.startswith(INFO_FRAME) and stored == changes[kb]
        snapshot = split_value(stored, None)[0]
        assert owner.store.snapshot(kb) == snapshot and snapshot is not None and not snapshot.startswith(INFO_FRAME)
        decoded = decode_info(owner.store.key_info(kb))
        assert decoded is not None and decoded.last == ("in", 0, offset, T0 + offset)
    assert _markers(owner) == set()
    assert _answer(owner, "k")["last_record"]["record"] == "in:0:0"
    # The instance read back from its stored value counts on: k's pair is (0, 5).
    owner.engine.clear()
    owner.load_from_store()
    assert process(owner, tick(5, "k")) == [{"k": "k", "a": 0, "b": 5}]
    owner.close()


def _old_layout(path: Path) -> None:
    """Rewrite the store at ``path`` as a build before wrote it: each live key's snapshot alone,
    its information under ``\\x05`` + key, and no format mark."""
    db = Rdict(str(path), options=Options(raw_mode=True))
    try:
        wb = WriteBatch(raw_mode=True)
        for k, v in db.items():
            if k[:1] == b"[" and v[:1] == INFO_FRAME:
                snapshot, info = split_value(v, None)
                wb.put(k, snapshot)
                wb.put(info_key(k), info)
        wb.delete(store_module._META_FORMAT)
        db.write(wb)
    finally:
        db.close()


def test_a_store_written_before_is_converted_when_opened(tmp_path: Path) -> None:
    owner, log = new_owner(tmp_path / "owner")
    process(owner, tick(0, "k"), tick(1, "j"), tick(2, "m"), tick(3, "m"))  # m's pair ends it
    committed = commit(owner, log, succeeds=True)
    owner.close()
    _old_layout(tmp_path / "owner")
    db = Rdict(str(tmp_path / "owner"), options=Options(raw_mode=True))
    assert db.get(K)[:1] != INFO_FRAME and db.get(info_key(K)) is not None  # (the old layout, for sure)
    db.close()

    again = make_task(tmp_path / "owner")
    again.load_from_store()
    assert again.store.get(b"\x00store-format") == b"2"
    assert _markers(again) == {M}  # only the ended key's marker is left under \x05
    assert again.store.get(K).startswith(INFO_FRAME)  # type: ignore[union-attr]
    k, j, m = (_answer(again, key) for key in ("k", "j", "m"))
    assert k["status"] == "present" and k["last_record"]["record"] == "in:0:0"
    assert j["status"] == "present" and j["last_record"]["record"] == "in:0:1"
    assert m["status"] == "ended" and m["last_record"]["record"] == "in:0:3"
    assert m["ended"]["at"] == format_time((T0 + 3) * 1000)
    assert again.store.position == committed  # (the checkpoint and position kept through the conversion)
    assert process(again, tick(7, "k"), tick(8, "j")) == [{"k": "k", "a": 0, "b": 7}, {"k": "j", "a": 1, "b": 8}]
    commit(again, log, succeeds=True)
    assert _answer(again, "k")["last_record"]["record"] == "in:0:7"
    again.close()


class _Clock:
    """The wall clock the task stamps ended markers with (``time.time``), set by the test."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def time(self) -> float:
        return self.ms / 1000

    def monotonic(self) -> float:
        import time

        return time.monotonic()


def test_a_key_that_ends_comes_back_and_ends_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock(1_800_000_000_000)
    monkeypatch.setattr(task_module, "time", clock)
    owner, log = new_owner(tmp_path / "owner")
    process(owner, tick(0, "k"), tick(1, "k"))  # k's pair: ended, marker at w1
    commit(owner, log, succeeds=True)
    w1 = clock.ms
    k = _answer(owner, "k")
    assert k["status"] == "ended" and k["last_record"]["record"] == "in:0:1"

    clock.ms += 60_000
    process(owner, tick(2, "k"))  # k again: live; its old marker stays (no second entry to delete it)
    commit(owner, log, succeeds=True)
    assert _markers(owner) == {K}
    k = _answer(owner, "k")  # the stale marker never wins over the live value
    assert k["status"] == "present" and k["ended"] is None and k["last_record"]["record"] == "in:0:2"

    wb = WriteBatch(raw_mode=True)
    assert owner.store.prune_ended(wb, w1 + 1) == 1  # w1's marker, past its retention: dropped
    owner.store.db.write(wb)
    assert _markers(owner) == set()
    k = _answer(owner, "k")
    assert k["status"] == "present" and k["last_record"]["record"] == "in:0:2"

    clock.ms += 60_000
    process(owner, tick(3, "k"))  # k's pair again: ended at w2; the live value's information is gone with it
    commit(owner, log, succeeds=True)
    w2 = clock.ms
    k = _answer(owner, "k")
    assert k["status"] == "ended" and k["last_record"]["record"] == "in:0:3"
    assert k["ended"]["at"] == format_time((T0 + 3) * 1000)

    clock.ms += 60_000
    process(owner, tick(4, "k"))  # and back once more, then ended a third time (w3)
    commit(owner, log, succeeds=True)
    clock.ms += 60_000
    process(owner, tick(5, "k"))
    commit(owner, log, succeeds=True)
    wb = WriteBatch(raw_mode=True)
    assert owner.store.prune_ended(wb, w2 + 1) == 1  # w2's index entry, not w3's newer marker
    owner.store.db.write(wb)
    k = _answer(owner, "k")
    assert k["status"] == "ended" and k["last_record"]["record"] == "in:0:5"
    assert k["ended"]["at"] == format_time((T0 + 5) * 1000)
    owner.close()


def test_the_query_reads_a_store_written_before_only_once_it_is_converted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state endpoint reads a task's store from its own thread (``other_thread``): not while
    the task's open converts it (its live values still unframed, their information apart)."""
    owner, log = new_owner(tmp_path / "owner")
    process(owner, tick(0, "k"))
    commit(owner, log, succeeds=True)
    owner.close()
    _old_layout(tmp_path / "owner")
    store = TaskStore(tmp_path / "owner")
    during: list[object] = []
    convert = TaskStore._convert_key_infos

    def watched(self: TaskStore) -> None:
        during.append(self.opened)  # what the other thread would be given meanwhile
        convert(self)

    monkeypatch.setattr(TaskStore, "_convert_key_infos", watched)
    with pytest.raises(StoreNotOpen):
        read_committed(store, K, other_thread=True)
    assert store.db is not None  # the task's own open, which converts
    assert during == [None]
    read = read_committed(store, K, other_thread=True)
    assert read.snapshot is not None and not read.snapshot.startswith(INFO_FRAME)
    assert read.info is not None and read.info.last == ("in", 0, 0, T0)
    store.close()
