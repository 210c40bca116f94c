"""A live instance's changelog record carries its key's information inside its value, ahead of the
snapshot (``state.keyinfo.framed_value``: one header fewer a record), and a changelog written
before, with the information in an ``es-key`` header on every record, still restores. Through
the real ``Task``, the real restore (kafka/restore.py) and the real standby (kafka/standby.py)
over an in-memory changelog partition: each is run on the new form, on the old form (the same
records rewritten as a build before wrote them) and on a log that changes form midway (a worker
upgraded between two commits)."""

from __future__ import annotations

from pathlib import Path

import confluent_kafka
import orjson
import pytest

from eventscript.automata.compile import compile_source
from eventscript.explain.terms import ProgramTerms
from eventscript.state import keyinfo
from eventscript.state.changelog import BATCH_FRAME, HEADER_EPOCH, HEADER_POSITION, Position
from eventscript.state.keyinfo import INFO_FRAME, decode_info, info_key, split_value
from eventscript.state.query import explain_snapshot

from .task_helpers import changelog_fields, unframed
from .test_uncommitted_batches import ChangelogPartition
from .test_zombie_changelog import COUNT, K, commit, counts, standby_of, take_over, tick


def old_form(
    records: list[confluent_kafka.Message], info_in_value: bool = False
) -> list[tuple[bytes | None, bytes | None, list]]:
    """``records`` as a build before the batch frame wrote them (``es-pos`` and ``es-gen``
    headers), and, unless ``info_in_value``, before the information moved into the value too:
    the value the snapshot alone, the information in an ``es-key`` header after the others."""
    out = []
    for m in records:
        framed, pos, gen = changelog_fields(m)
        headers = [h for h in m.headers() or () if h[0] not in (keyinfo.HEADER_KEY_INFO, HEADER_POSITION, HEADER_EPOCH)]
        headers[:0] = [(HEADER_POSITION, pos)] + ([(HEADER_EPOCH, gen)] if gen is not None else [])
        if info_in_value:
            out.append((m.key(), framed, headers))
            continue
        value, info = split_value(framed, None)
        header_info = dict(m.headers() or ()).get(keyinfo.HEADER_KEY_INFO)
        info = info if info is not None else header_info
        if info is not None:
            headers.append((keyinfo.HEADER_KEY_INFO, info))
        out.append((m.key(), value, headers))
    return out


def written(tmp_path: Path) -> tuple[ChangelogPartition, Position]:
    """A log of two commits by one owner (k counted 2, then 3; j counted 1), and its position."""
    log = ChangelogPartition()
    owner = take_over(tmp_path / "owner", log, {}, 3)
    assert counts(owner, tick(0), tick(1), tick(2, "j")) == [1, 2, 1]
    commit(owner, log)
    owner.outbox.clear()
    assert counts(owner, tick(3)) == [3]
    committed = commit(owner, log)
    owner.close()
    return log, committed


def rewritten(log: ChangelogPartition, form: str) -> ChangelogPartition:
    """The same records in ``form``: "new" as written, "old" every one as a build before the
    information moved into the value wrote it, "headers" as one before the batch frame, and
    "upgraded" the first commit's (offsets below 3: k, j and the task state) in the old form only."""
    if form == "new":
        return log
    out = ChangelogPartition()
    old = old_form(log.records, info_in_value=form == "headers")
    for m, (key, value, headers) in zip(log.records, old, strict=True):
        if form in ("old", "headers") or m.offset() < 3:
            out.append(key, value, headers)
        else:
            out.append(m.key(), m.value(), m.headers())
    return out


def test_a_live_instances_record_carries_its_information_in_its_value(tmp_path: Path) -> None:
    log, _ = written(tmp_path)
    (k_last,) = [m for m in log.records if m.key() == K][-1:]
    assert not k_last.headers()  # no es-key (nor es-pos, es-gen: in the batch frame)
    value, pos, gen = changelog_fields(k_last)
    assert (pos, gen) == (b'{"in:0":4}', b"3")
    assert value is not None and value.startswith(INFO_FRAME)
    snapshot, info = split_value(value, None)
    assert snapshot is not None and not snapshot.startswith(INFO_FRAME)
    decoded = decode_info(info)
    assert decoded is not None and decoded.last == ("in", 0, 3, 1_767_225_600_003)
    # A value that is not framed reads as it is, with its header's information.
    assert split_value(snapshot, b"{}") == (snapshot, b"{}")
    assert split_value(None, b"{}") == (None, b"{}")


@pytest.mark.parametrize("form", ["new", "headers", "old", "upgraded"])
def test_a_task_restores_from_either_form(tmp_path: Path, form: str) -> None:
    log, committed = written(tmp_path)
    log = rewritten(log, form)
    if form != "new":
        assert any(HEADER_POSITION in dict(m.headers()) for m in log.records if m.value() is not None)
    if form in ("old", "upgraded"):
        assert any(keyinfo.HEADER_KEY_INFO in dict(m.headers()) for m in log.records if m.value() is not None)
    restored = take_over(tmp_path / "restored", log, committed, 5)
    info = decode_info(restored.store.key_info(K))
    assert info is not None and info.last == ("in", 0, 3, 1_767_225_600_003)
    j = decode_info(restored.store.key_info(orjson.dumps(["j"])))
    assert j is not None and j.last == ("in", 0, 2, 1_767_225_600_002)
    # One entry per live key, whichever form the log had: the record's value, framed (an old
    # record's header information framed into it), and nothing under \x05.
    assert restored.store.get(K) == unframed(
        [m for m in written(tmp_path / "again")[0].records if m.key() == K][-1].value()
    )
    assert restored.store.get(info_key(K)) is None and restored.store.get(info_key(orjson.dumps(["j"]))) is None
    assert counts(restored, tick(4), tick(5, "j")) == [4, 2]
    restored.close()


@pytest.mark.parametrize("form", ["new", "headers", "old", "upgraded"])
def test_a_standby_follows_either_form(tmp_path: Path, form: str) -> None:
    log, committed = written(tmp_path)
    log = rewritten(log, form)
    standbys = standby_of(tmp_path, log, committed)
    standbys.step()
    store = standbys.tasks[0].store
    assert store.checkpoint == len(log.records)
    k_value = unframed([m for m in written(tmp_path / "again")[0].records if m.key() == K][-1].value())
    assert store.get(K) == k_value and k_value.startswith(INFO_FRAME)  # type: ignore[union-attr]
    assert store.get(info_key(K)) is None  # (one entry: the information is in the value)
    info = decode_info(store.key_info(K))
    assert info is not None and info.last == ("in", 0, 3, 1_767_225_600_003)
    standbys.close()
    # The standby's store, taken over, counts on from where the log left k and j.
    successor = take_over(tmp_path / "standby" / "task-0", log, committed, 7)
    assert counts(successor, tick(4), tick(5, "j")) == [4, 2]
    successor.close()


def test_a_raw_changelog_value_is_explained_as_its_snapshot(tmp_path: Path) -> None:
    """What a reader of raw changelog records shows (``explain_snapshot``, the chaos harness's
    diagnosis): the framed value's instance, as its bare snapshot's."""
    log, _ = written(tmp_path)
    raw = [m for m in log.records if m.key() == K][-1].value()
    framed = unframed(raw)
    assert raw is not None and raw.startswith(BATCH_FRAME)
    assert framed is not None and framed.startswith(INFO_FRAME)
    terms = ProgramTerms(compile_source(COUNT, name="p").require())
    shown = explain_snapshot(terms, raw)
    assert shown == explain_snapshot(terms, framed)
    assert shown == explain_snapshot(terms, split_value(framed, None)[0])  # type: ignore[arg-type]
    assert [v["value"] for v in shown["variables"] if v["name"] == "count"] == [3]
