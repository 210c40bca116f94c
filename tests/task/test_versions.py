"""A task over state written by another version of its program (issue 22), through the real
``Task`` and restore over an in-memory changelog partition: the snapshots name their version, the
task state keeps each version's compiled program, and the topology's ``upgrade`` policy decides
(refuse by default, carry by the plan with the timer re-arm rule, restart)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from eventscript.automata.compile import compile_file, compile_source
from eventscript.engine import context
from eventscript.kafka.restore import Restoration
from eventscript.state.changelog import SINGLE_KEY, TIMERS_KEY, UNTAGGED_KEY, Position
from eventscript.state.keyinfo import decode_info, split_value
from eventscript.task import versions
from eventscript.task.task import Task
from eventscript.task.versions import fingerprint_of, read_version_record, version_key
from eventscript.topology.config import InputConfig, ProgramConfig
from eventscript.upgrade.convert import UpgradeRefused
from eventscript.upgrade.places import source_places

from .task_helpers import unframed
from .test_task_parts import PlainRecord
from .test_uncommitted_batches import CHANGELOG, ChangelogPartition, commit

#: After two Ticks a key goes quiet when no third one follows within the timeout.
QUIET = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long n;} Quiet
( Tick(a) Tick()
  ( Tick()
  | elapse[5 minutes]() { !>Quiet({k: group[0], n: a.n}); } Tick()
  )
)*
"""
#: The same with a shorter timeout: every state carries, a pending timer re-armed from its entry.
SHORTER = QUIET.replace("5 minutes", "2 minutes")
#: Grouped by another key expression: the plan cannot be applied (only ``restart`` runs it).
REKEYED = QUIET.replace("group(Tick.k)", 'group(Tick.k + "!")')
T0 = 1_767_225_600_000  # ms
MINUTE = 60_000


def make_task(store: Path, src: str | Path, policy: str = "refuse") -> Task:
    """A task of program ``src``: its text, or its file (a refusal can point into that file)."""
    cfg = ProgramConfig(
        name="p",
        source="p.es",
        clock="record",
        inputs=[InputConfig(topic="in", event="Tick")],
        outputs={"default": "out"},
        errors="err",
        upgrade=policy,  # type: ignore[arg-type]
    )
    compiled = compile_file(src) if isinstance(src, Path) else compile_source(src, name="p")
    return Task(0, compiled.require(), cfg, cfg.inputs, "p-rep", CHANGELOG, 1, store)


def tick(offset: int, key: str, at_ms: int) -> PlainRecord:
    return PlainRecord("in", 0, offset, T0 + at_ms, orjson.dumps([key]), orjson.dumps({"k": key, "n": offset}))


def process(task: Task, *records: PlainRecord) -> list[dict[str, Any]]:
    for r in records:
        task.add(r)
    task.process(0)
    return [orjson.loads(r.value) for r in task.take_outputs() if r.topic == "out"]


def restore(store: Path, log: ChangelogPartition, committed: Position, src: str | Path, policy: str = "refuse") -> Task:
    task = make_task(store, src, policy)
    restoration = Restoration("p", log, CHANGELOG, {0: task}, {0: committed})
    restoration.begin()
    while not restoration.done:
        restoration.step(1.0)
    restoration.finish()
    return task


def run_v1(tmp_path: Path) -> tuple[ChangelogPartition, Position]:
    """Program v1 over a and b, committed: a waits for its timeout (deadline T0 + 5 min), b for
    its second Tick (no timer)."""
    log = ChangelogPartition()
    v1 = make_task(tmp_path / "v1", QUIET)
    v1.load_from_store()
    assert process(v1, tick(0, "a", 0), tick(1, "a", 0), tick(2, "b", MINUTE // 2)) == []
    committed = commit(v1, log, succeeds=True)
    v1.close()
    return log, committed


def written(log: ChangelogPartition, start: int = 0) -> dict[bytes, bytes | None]:
    return {r.key(): split_value(unframed(r.value()), None)[0] for r in log.records[start:]}  # (the snapshot)


def test_snapshots_name_their_version_and_the_task_state_keeps_its_program(tmp_path: Path) -> None:
    log, _ = run_v1(tmp_path)
    records = written(log)
    fp = fingerprint_of(compile_source(QUIET, name="p").require())
    tag = context.program_tag(fp)
    assert context.snapshot_tag(records[orjson.dumps(["a"])]) == tag  # type: ignore[arg-type]
    stored_fp, stored = read_version_record(records[version_key(tag)])  # type: ignore[arg-type]
    assert stored_fp == fp and fingerprint_of(stored) == fp
    assert records[UNTAGGED_KEY] == b"%08x" % tag


def test_another_version_is_refused_by_default_with_what_to_do(tmp_path: Path) -> None:
    log, committed = run_v1(tmp_path)
    with pytest.raises(UpgradeRefused, match=r"upgrade plan OLD NEW.*'upgrade: carry'") as caught:
        restore(tmp_path / "v2", log, committed, SHORTER)
    assert "written by version es1-" in str(caught.value)
    # the same program, recompiled with other comments and layout, is the same version
    same = restore(tmp_path / "same", log, committed, "// reformatted\n" + QUIET.replace("  ", " "))
    assert process(same, tick(3, "a", MINUTE)) == []
    same.close()


def test_carry_converts_lazily_and_fires_re_armed_timers_of_keys_seen_no_more(tmp_path: Path) -> None:
    log, committed = run_v1(tmp_path)
    v2 = restore(tmp_path / "v2", log, committed, SHORTER, "carry")
    # a's timer, armed at T0 for 5 minutes, is re-armed from the entry: due at T0 + 2 min. No
    # record of a comes again: the eager pass at load converted it, so another key's record
    # past that instant fires it (the index entry still says T0 + 5 min).
    assert process(v2, tick(3, "c", 3 * MINUTE)) == [{"k": "a", "n": 0}]
    assert v2.counts["upgraded_carried"] == 1
    # b is converted when its next record comes: its second Tick arms the new 2-minute timeout
    assert process(v2, tick(4, "b", 4 * MINUTE)) == []
    assert v2.counts["upgraded_carried"] == 2
    start = len(log.records)
    committed = commit(v2, log, succeeds=True)
    tag2 = v2.versions.tag
    new = written(log, start)
    assert {context.snapshot_tag(new[orjson.dumps([k])]) for k in "abc"} == {tag2}  # type: ignore[arg-type]
    assert version_key(tag2) in new
    assert new[TIMERS_KEY] == b"%08x" % tag2  # the eager pass is done: later loads skip it
    # a, converted by the eager pass (no record of it since), keeps its last record in its value
    a_value = [unframed(r.value()) for r in log.records[start:] if r.key() == orjson.dumps(["a"])][-1]
    a_info = decode_info(split_value(a_value, None)[1])
    assert a_info is not None and a_info.last == ("in", 0, 1, T0)
    v2.close()
    # a later owner (the policy kept at carry) reads the converted state as its own
    again = restore(tmp_path / "again", log, committed, SHORTER, "carry")
    assert process(again, tick(5, "b", 7 * MINUTE)) == [{"k": "b", "n": 2}]  # b's 2-minute timeout
    assert not again.counts["upgraded_carried"]
    a_info = decode_info(again.store.key_info(orjson.dumps(["a"])))
    assert a_info is not None and a_info.last == ("in", 0, 1, T0)
    again.close()


def test_restart_drops_the_old_instances_even_when_the_plan_cannot_be_applied(tmp_path: Path) -> None:
    log, committed = run_v1(tmp_path)
    with pytest.raises(UpgradeRefused, match="group clause"):
        restore(tmp_path / "carry", log, committed, REKEYED, "carry")
    v2 = restore(tmp_path / "v2", log, committed, REKEYED, "restart")
    assert process(v2, tick(3, "c", 10 * MINUTE)) == []  # a's old timer is gone with it
    assert v2.counts["upgraded_restarted"] == 1  # a (it had a timer: the eager pass)
    start = len(log.records)
    commit(v2, log, succeeds=True)
    assert written(log, start)[orjson.dumps(["a"])] is None  # a tombstone for the dropped instance
    v2.close()


def test_a_refusal_for_the_plan_s_problems_points_at_the_new_program_s_source(tmp_path: Path) -> None:
    """The worker's refusal says file:line:col in the new program's source, as 'eventscript
    upgrade plan' does for the same problem (the places are the plan's: upgrade/places.py)."""
    log, committed = run_v1(tmp_path)
    program = tmp_path / "p.es"
    program.write_text(REKEYED, encoding="utf-8")
    with pytest.raises(UpgradeRefused) as caught:
        restore(tmp_path / "carry", log, committed, program, "carry")
    col = REKEYED.split("\n")[1].index("group(") + 1
    assert f"cannot be applied: {program}:2:{col}: input Tick: its group clause changed" in str(caught.value)
    # a source changed since it was compiled would give wrong lines: none are given then
    compiled = compile_file(program).require()
    assert source_places(compiled).group() is not None
    program.write_text("// edited\n" + REKEYED, encoding="utf-8")
    assert source_places(compiled).group() is None


def test_an_ungrouped_instance_carries_too(tmp_path: Path) -> None:
    src = "in {long n;} Tick\nout {long n;} Sum\n{ s = 0; } ( Tick(t) { s = s + t.n; !>Sum({n: s}); } )*\n"
    log = ChangelogPartition()
    v1 = make_task(tmp_path / "v1", src)
    v1.load_from_store()
    process(v1, tick(0, "x", 0), tick(5, "x", 1))
    committed = commit(v1, log, succeeds=True)
    v1.close()
    v2 = restore(tmp_path / "v2", log, committed, src.replace("s + t.n", "s + t.n + 100"), "carry")
    # Converted at load and committed before any record: written with its key's information
    start = len(log.records)
    commit(v2, log, succeeds=True)
    (converted,) = [unframed(r.value()) for r in log.records[start:] if r.key() == SINGLE_KEY]
    info = decode_info(split_value(converted, None)[1])
    assert info is not None and info.last == ("in", 0, 5, T0 + 1)
    assert v2.store.get(SINGLE_KEY) == converted  # (the store keeps the same value)
    assert process(v2, tick(6, "x", 2)) == [{"n": 111}]  # s = 5 carried by name
    assert v2.counts["upgraded_carried"] == 1
    start = len(log.records)
    commit(v2, log, succeeds=True)
    assert context.snapshot_tag(written(log, start)[SINGLE_KEY]) == v2.versions.tag  # type: ignore[arg-type]
    v2.close()


def test_a_version_too_large_to_keep_can_be_restarted_not_carried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(versions, "MAX_PROGRAM_RECORD", 10)  # every compiled program is "too large"
    log, committed = run_v1(tmp_path)
    assert read_version_record(written(log)[version_key(v1_tag())])[1] is None  # type: ignore[arg-type]
    with pytest.raises(UpgradeRefused, match=r"too large to keep.*'upgrade: restart'"):
        restore(tmp_path / "carry", log, committed, SHORTER, "carry")
    v2 = restore(tmp_path / "v2", log, committed, SHORTER, "restart")
    assert process(v2, tick(3, "b", 2 * MINUTE), tick(4, "a", 10 * MINUTE)) == []  # a's timer went with it
    assert v2.counts["upgraded_restarted"] == 2  # a (eagerly: its timer), then b
    v2.close()


def v1_tag() -> int:
    return context.program_tag(fingerprint_of(compile_source(QUIET, name="p").require()))


def test_the_state_query_reads_another_version_s_snapshot_in_its_writer_s_terms(tmp_path: Path) -> None:
    """Until the new version's first commit writes the converted instances back, the store holds
    them as v1 wrote them: the state query explained them in v2's terms (v2's "elapse[2 minutes]"
    beside v1's deadline, T0 + 5 minutes). It reads them in v1's terms and says so."""
    from eventscript.explain.terms import ProgramTerms
    from eventscript.state.query import answer_from_store

    log, committed = run_v1(tmp_path)
    v2 = restore(tmp_path / "v2", log, committed, SHORTER, "carry")

    def asked(key: str) -> dict[str, Any]:
        return answer_from_store(ProgramTerms(v2.program), v2.store, (key,), 0).to_json()

    before = asked("a")["instance"]
    assert before["timer"]["marker"]["text"] == "elapse[5 minutes]"  # v1's marker, v1's deadline
    assert before["timer"]["deadline"].startswith("2026-01-01T00:05:00")
    assert before["version"]["own"] is False and before["version"]["tag"] == f"{v1_tag():08x}"
    assert before["version"]["fingerprint"] == fingerprint_of(compile_source(QUIET, name="p").require())
    from eventscript.cli.state_cmds import answer_text

    said = answer_text(answer_from_store(ProgramTerms(v2.program), v2.store, ("a",), 0).to_json())
    assert any(line.startswith(f"  version {v1_tag():08x}: written by another version") for line in said), said
    commit(v2, log, succeeds=True)  # a converted at load (its timer), written back in v2
    after = asked("a")["instance"]
    assert "version" not in after
    assert after["timer"]["marker"]["text"] == "elapse[2 minutes]"
    assert after["timer"]["deadline"].startswith("2026-01-01T00:02:00")
    v2.close()


def test_state_dump_reads_another_version_s_rows_in_their_writer_s_terms(tmp_path: Path) -> None:
    """``state dump`` with the new version's topology over a changelog v1 wrote: each row says its
    version and is explained in v1's terms (the version record folded from the same changelog)."""
    from eventscript.kafka.changelog_dump import FoldedTask, dump_rows

    log, committed = run_v1(tmp_path)
    folded = FoldedTask(0, committed)
    for offset, r in enumerate(log.records):
        folded.records[r.key()] = (unframed(r.value()), offset)
    rows = {tuple(row["key"]): row for row in dump_rows(compile_source(SHORTER, name="p").require(), [folded])}
    a = rows[("a",)]["instance"]
    assert a["version"]["tag"] == f"{v1_tag():08x}" and a["timer"]["marker"]["text"] == "elapse[5 minutes]"
    own = {tuple(row["key"]): row for row in dump_rows(compile_source(QUIET, name="p").require(), [folded])}
    assert "version" not in own[("a",)]["instance"]
