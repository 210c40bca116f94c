"""What a task keeps about a key beside its instance (state/keyinfo.py): the last record its
instance took, and when and why it ended — answered by state/query.py from the task's store, and
from the store of a successor that restored the changelog (kafka/restore.py), so after a restart
too. Through the real ``Task``, the real restore and an in-memory changelog partition.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from eventscript.engine.timeutil import format_time
from eventscript.explain.terms import ProgramTerms
from eventscript.state import keyinfo
from eventscript.state.keyinfo import ENDED_RETENTION_MS, decode_info, info_key
from eventscript.state.query import answer_from_store

from .test_uncommitted_batches import T0, commit, new_owner, process, restore, tick


def _answer(task, key: str) -> dict:
    return answer_from_store(ProgramTerms(task.program), task.store, (key,), 0).to_json()


def test_an_ended_key_says_when_and_why_and_its_last_record(tmp_path: Path) -> None:
    owner, log = new_owner(tmp_path / "owner")
    process(owner, tick(0, "k"), tick(1, "j"))
    commit(owner, log, succeeds=True)
    k = _answer(owner, "k")
    assert k["status"] == "present" and k["ended"] is None
    assert k["last_record"] == {"known": True, "record": "in:0:0", "time": format_time(T0 * 1000)}
    assert process(owner, tick(5, "k")) == [{"k": "k", "a": 0, "b": 5}]  # the pair ends k's instance
    commit(owner, log, succeeds=True)
    k = _answer(owner, "k")
    assert k["status"] == "ended" and k["instance"] is None
    assert k["ended"]["at"] == format_time((T0 + 5) * 1000)  # the task's clock when it ended
    assert k["ended"]["why"] == "terminated" and "reached its end" in k["ended"]["explained"]
    assert k["last_record"]["record"] == "in:0:5"  # the record that ended it
    assert _answer(owner, "nobody")["status"] == "absent"  # never seen: still absent, not ended
    assert _answer(owner, "j")["status"] == "present"
    owner.close()

    successor = restore(tmp_path / "successor", log, {"in:0": 6})  # a restart without the local store
    k = _answer(successor, "k")
    assert k["status"] == "ended" and k["ended"]["at"] == format_time((T0 + 5) * 1000)
    assert k["last_record"]["record"] == "in:0:5"
    assert _answer(successor, "j")["last_record"]["record"] == "in:0:1"
    assert _answer(successor, "nobody")["status"] == "absent"
    # The key starts again: present, and no longer ended.
    process(successor, tick(7, "k"))
    commit(successor, log, succeeds=True)
    k = _answer(successor, "k")
    assert k["status"] == "present" and k["ended"] is None and k["last_record"]["record"] == "in:0:7"
    successor.close()


def test_an_instance_that_began_and_ended_between_commits_is_ended_not_unknown(tmp_path: Path) -> None:
    owner, log = new_owner(tmp_path / "owner")
    process(owner, tick(0, "k"), tick(1, "k"))  # created and ended in one batch
    commit(owner, log, succeeds=True)
    (record,) = [r for r in log.records if r.key() == orjson.dumps(["k"])]
    assert record.value() is None  # a tombstone (nothing was ever written for k before it)
    info = decode_info(dict(record.headers())[keyinfo.HEADER_KEY_INFO])
    assert info is not None and info.why == "terminated" and info.last == ("in", 0, 1, T0 + 1)
    assert _answer(owner, "k")["status"] == "ended"
    owner.close()


def test_a_failed_commit_keeps_nothing_of_its_batch(tmp_path: Path) -> None:
    owner, log = new_owner(tmp_path / "owner")
    process(owner, tick(0, "k"))
    commit(owner, log, succeeds=True)
    process(owner, tick(1, "k"))  # ends k, but the commit fails: k is still present at in:0:0
    commit(owner, log, succeeds=False)
    k = _answer(owner, "k")
    assert k["status"] == "present" and k["last_record"]["record"] == "in:0:0"
    assert not owner.store.pending_infos
    owner.close()


def test_ended_markers_past_their_retention_are_dropped(tmp_path: Path) -> None:
    owner, log = new_owner(tmp_path / "owner")
    process(owner, tick(0, "k"), tick(1, "k"), tick(2, "j"), tick(3, "j"), tick(4, "m"))
    commit(owner, log, succeeds=True)
    store = owner.store
    info = decode_info(store.get(info_key(orjson.dumps(["k"]))))
    last = decode_info(store.get(info_key(orjson.dumps(["j"]))))  # (ended in the same or a later ms)
    assert info is not None and info.wall is not None and last is not None and last.wall is not None
    from rocksdict import WriteBatch

    wb = WriteBatch(raw_mode=True)
    assert store.prune_ended(wb, info.wall) == 0  # not yet past it
    wb = WriteBatch(raw_mode=True)
    assert store.prune_ended(wb, last.wall + 1) == 2  # k and j's markers, not m (present)
    store.db.write(wb)
    assert _answer(owner, "k")["status"] == "absent" and _answer(owner, "j")["status"] == "absent"
    assert _answer(owner, "m")["status"] == "present"
    assert decode_info(store.key_info(orjson.dumps(["m"]))) is not None  # a live key's information stays
    assert store.get(info_key(orjson.dumps(["m"]))) is None  # (inside its value: one entry)
    assert ENDED_RETENTION_MS == 24 * 3600 * 1000  # what docs/operations.md says
    owner.close()


def test_a_marker_of_a_key_that_started_again_is_not_dropped_with_its_old_end(tmp_path: Path) -> None:
    owner, log = new_owner(tmp_path / "owner")
    process(owner, tick(0, "k"), tick(1, "k"))
    commit(owner, log, succeeds=True)
    old = decode_info(owner.store.get(info_key(orjson.dumps(["k"]))))
    assert old is not None and old.wall is not None
    process(owner, tick(2, "k"))  # k again: present
    commit(owner, log, succeeds=True)
    from rocksdict import WriteBatch

    wb = WriteBatch(raw_mode=True)
    assert owner.store.prune_ended(wb, old.wall + 1) == 1  # the old end's index entry
    owner.store.db.write(wb)
    k = _answer(owner, "k")
    assert k["status"] == "present" and k["last_record"]["record"] == "in:0:2"
    owner.close()


def test_headers_written_before_they_existed_are_read_as_unknown() -> None:
    assert decode_info(None) is None and decode_info(b"") is None
    assert decode_info(b"not json") is None and decode_info(b'{"last": 3}') is None
    assert decode_info(b"{}") == keyinfo.KeyInfo()


def test_a_record_through_the_repartition_topic_is_named_by_the_input_record_it_copies(tmp_path: Path) -> None:
    from eventscript.task import codec
    from eventscript.task.record import PlainRecord

    owner, log = new_owner(tmp_path / "owner")
    copy = PlainRecord(
        "p-rep",
        0,
        3,
        T0 + 9,
        orjson.dumps(["k"]),
        orjson.dumps({"k": "k", "n": 9}),
        [(codec.HEADER_SOURCE, b"in:1:41"), (codec.HEADER_INPUT, b"in")],
    )
    owner.add(copy)
    owner.process(0)
    commit(owner, log, succeeds=True)
    assert _answer(owner, "k")["last_record"] == {
        "known": True,
        "record": "in:1:41",  # the input record, not the copy at p-rep:0:3
        "time": format_time((T0 + 9) * 1000),
    }
    owner.close()


def test_the_last_record_an_instance_took_is_let_go_at_each_commit(tmp_path: Path) -> None:
    """Each instance notes the record it took last (``InstanceContext.note``) until the commit
    reads it into the key information: no instance holds a record past the commit that wrote
    it, nor past a batch whose changes were discarded."""
    owner, log = new_owner(tmp_path / "owner")
    process(owner, tick(0, "k"), tick(1, "j"), tick(2, "m"))
    live = list(owner.engine.contexts.values())
    assert live and all(ctx.note is not None for ctx in live)
    commit(owner, log, succeeds=True)
    assert [ctx.note for ctx in owner.engine.contexts.values()] == [None] * len(live)
    process(owner, tick(3, "n"))  # (a second record of k, j or m would end its instance: the pair)
    (n,) = [ctx for ctx in owner.engine.contexts.values() if ctx.note is not None]
    assert n.key == ("n",) and n.note.offset() == 3
    owner.discard_changes()
    assert all(ctx.note is None for ctx in owner.engine.contexts.values())
    owner.close()
