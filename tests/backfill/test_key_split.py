"""Key-split mode (``Plan.split`` > 1: several tasks per input partition, each reading all of it
and running one key group): what only it does — refusing records that are not what their keys
say, choosing S, its hash, its hand-over state and the command's fallback (issue 7). Its outputs
per key are compared with partition mode's beside key-parallel mode's in test_key_parallel.py
(scrambled exports, the conformance cases) and test_topologies_backfill.py.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from kafka_helpers import instance_state
from test_backfill_tasks import T0, export_of, random_trace, topology
from test_handover import collect_state
from test_key_parallel import (
    KEY_SPLIT,
    REPEATING,
    T0_MS,
    assert_same_per_key,
    key_row,
    outputs_of,
    per_key,
    scrambled_plan,
    two_input_topology,
)
from test_key_parallel import keys_in as parallel_keys_in
from trace_export import CASES, SINGLE, case_topology, trace_rows, write_jsonl_export

from eventscript.backfill import handover as ho
from eventscript.backfill.job import Totals, check_totals, export_plan, outputs, run_locally
from eventscript.backfill.key_split import (
    SplitMismatchError,
    SplitStage,
    auto_split,
    batch_groups,
    key_group,
    split_refusal,
)
from eventscript.backfill.main import BackfillFailed, backfill
from eventscript.backfill.plan import Plan
from eventscript.backfill.sink import output_json
from eventscript.backfill.source import slice_batches
from eventscript.backfill.stages import run_partition
from eventscript.kafka.config import ProgramConfig, Topology, parse_topology
from eventscript.kafka.keys import scheme_for
from eventscript.kafka.state import SEQ_KEY
from eventscript.language.types import STRING


def split_outputs(plan: Plan, splits: int) -> list[dict[str, Any]]:
    return outputs_of(plan, f"split:{splits}")


def keys_in(cfg: ProgramConfig, partitions: int, splits: int, partition: int, group: int, count: int) -> list[str]:
    return parallel_keys_in(cfg, partitions, splits, partition, group, count, group_of=key_group)


def test_a_keyed_record_that_does_not_move_the_clock_stops_key_split_mode(tmp_path: Path) -> None:
    """Key b's record at 100 s cannot be decoded: in partition mode it leaves the clock at 0 s, so
    key a's late record at 10 s comes before a's timer (due at 30 s) fires. The other group took
    it, by its key, for a move to 100 s: its task fails rather than fire a's timer early. Behind
    the clock, the same record changes nothing, and key-split mode goes on."""
    topo = topology(tmp_path, 1)
    cfg = topo.programs[0]
    scheme = scheme_for(cfg, [STRING])
    (a,) = keys_in(cfg, 1, 2, partition=0, group=0, count=1)
    (b,) = keys_in(cfg, 1, 2, partition=0, group=1, count=1)
    ahead = [key_row(scheme, a, 0, 0, 0), key_row(scheme, b, 0, 1, 100, b"not json"), key_row(scheme, a, 0, 2, 10)]
    plan = export_plan(topo, cfg, [str(write_jsonl_export(ahead, tmp_path / "ahead.jsonl"))])
    with pytest.raises(SplitMismatchError, match=r"ticks-in:0:1 reached no instance"):
        split_outputs(plan, 2)
    behind = [
        key_row(scheme, a, 0, 0, 0),
        key_row(scheme, a, 0, 1, 20),
        key_row(scheme, b, 0, 2, 10, b"not json"),
        key_row(scheme, a, 0, 3, 40),
    ]
    plan = export_plan(topo, cfg, [str(write_jsonl_export(behind, tmp_path / "behind.jsonl"))])
    assert any(x["event"] == "$error" for x in assert_same_per_key(plan, ("split:2",)))


def test_a_record_keyed_as_another_group_stops_key_split_mode(tmp_path: Path) -> None:
    topo = topology(tmp_path, 1)
    cfg = topo.programs[0]
    scheme = scheme_for(cfg, [STRING])
    (a,) = keys_in(cfg, 1, 2, partition=0, group=0, count=1)
    (b,) = keys_in(cfg, 1, 2, partition=0, group=1, count=1)
    wrong = ("ticks-in", 0, 1, T0_MS + 5000, scheme.key_bytes((b,)), orjson.dumps({"k": a, "n": 1}), None)
    plan = export_plan(topo, cfg, [str(write_jsonl_export([key_row(scheme, a, 0, 0, 0), wrong], tmp_path / "e.jsonl"))])
    with pytest.raises(SplitMismatchError, match="a group key of another key group"):
        split_outputs(plan, 2)


def test_the_mode_is_chosen_from_the_slots_and_refused_where_it_cannot_work(tmp_path: Path) -> None:
    topo = topology(tmp_path, 3)
    trace = topo.programs[0]
    rows = [("ticks-in", p, 0, T0_MS, b"k", b"{}", None) for p in range(3)]
    plan = export_plan(topo, trace, [str(write_jsonl_export(rows, tmp_path / "e.jsonl"))])
    # 2 slots: two partitions whole, then the third's two halves (4 tasks: 1.5 partitions per slot);
    # 4: 12 quarters in 3 rounds; 8: 6 halves in one round.
    assert [auto_split(plan, slots) for slots in (1, 2, 3, 4, 8)] == [
        [1, 1, 1],
        [1, 1, 2],
        [1, 1, 1],
        [4, 4, 4],
        [2, 2, 2],
    ]
    uneven = dataclasses.replace(plan, split_each=[1, 1, 2])
    assert uneven.reads == 4 and [uneven.read_at(i) for i in range(4)] == [(0, 0), (1, 0), (2, 0), (2, 1)]
    two = two_input_topology(tmp_path, 3)
    path = write_jsonl_export([("a-in", p, 0, T0_MS, b"k", b"{}", None) for p in range(3)], tmp_path / "two.jsonl")
    two_plan = export_plan(two, two.programs[0], [str(path)])
    # Several inputs: a skipped record costs far more (MERGED_SKIP_COST): only an idle slot pays for it.
    assert split_refusal(two_plan) is None and [auto_split(two_plan, n) for n in (2, 4, 8)] == [
        [1, 1, 2],
        [1, 1, 1],
        [2, 2, 2],
    ]  # one input, 4: [4, 4, 4]
    for second, why in (
        ({"key": "json"}, "b-in's record keys are in format json, not the string"),
        ({"keyed": False}, "input b-in has no record keys"),
    ):
        mixed = two_input_topology(tmp_path, 3, second)
        mixed_plan = export_plan(mixed, mixed.programs[0], [str(path)])
        assert why in (split_refusal(mixed_plan) or "") and auto_split(mixed_plan, 8) == [1, 1, 1]
    with pytest.raises(BackfillFailed, match="--split 2: input b-in has no record keys to split by"):
        backfill(mixed, mixed.programs[0], output=str(tmp_path / "o.jsonl"), inputs=[str(path)], split=2)
    ungrouped = tmp_path / "all.es"
    ungrouped.write_text("in {string k;} Tick\nout {string k;} Seen\n( Tick(t) { !>Seen({k: t.k}); } )*\n")
    one = parse_topology(
        {
            "programs": [
                {
                    "name": "all",
                    "source": str(ungrouped),
                    "inputs": [{"topic": "ticks-in", "event": "Tick"}],
                    "outputs": {"default": "o"},
                    "errors": "e",
                    "clock": "record",
                }
            ],
            "topics": {"ticks-in": {"partitions": 3}},
        }
    )
    assert auto_split(export_plan(one, one.programs[0], [str(tmp_path / "e.jsonl")]), 8) == [1, 1, 1]


def test_partitions_split_unevenly_give_every_key_the_partition_modes_outputs(tmp_path: Path) -> None:
    """``auto_split``'s plans: some partitions whole (partition-mode tasks), others split."""
    plan = scrambled_plan(tmp_path, topology(tmp_path, 3, REPEATING), 3, 4, modes=KEY_SPLIT)
    want = per_key(outputs_of(plan, 0))
    for each in ([1, 1, 2], [3, 1, 2]):
        uneven = dataclasses.replace(plan, split_each=each)
        got = [output_json(r) for r in run_locally(uneven)]
        assert per_key(got) == want, each
        assert sum(1 for i in range(uneven.reads) if uneven.read_at(i)[1] == 0) == 3


def test_split_tasks_filter_keys_through_the_tasks_hook_and_open_no_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A split task runs the worker's ``Task`` as it is, telling it which keys it owns
    (``Task.set_key_filter``), not by replacing its methods; without hand-over it writes no
    state, so it never opens RocksDB (~50 ms per task)."""
    stages: list[SplitStage] = []
    init = SplitStage.__init__

    def kept(stage: SplitStage, *args: Any) -> None:
        init(stage, *args)
        stages.append(stage)

    monkeypatch.setattr(SplitStage, "__init__", kept)
    plan = scrambled_plan(tmp_path, topology(tmp_path, 3, REPEATING), 3, 4, modes=KEY_SPLIT)
    assert per_key(split_outputs(plan, 2)) == per_key(outputs_of(plan, 0))
    assert len(stages) == 6
    for stage in stages:
        task = stage.task
        assert task.key_filter is stage
        assert not {"_process_one", "_forward", "_error_record", "_advance"} & set(vars(task))
        assert all(
            getattr(fn, "__module__", None) != SplitStage.__module__
            for fn in (task.engine.feed, task.engine.feed_keyed)
        )
        assert task.store._db is None and not task.store.path.exists()


@pytest.mark.parametrize("inputs", [1, 2])
def test_split_tasks_hand_over_the_partition_modes_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inputs: int
) -> None:
    """The state rows of a partition's tasks, merged as the driver merges them, are partition
    mode's: instances, record clock and cut position (timer sequence numbers aside: each task's
    engine numbers its own timers); with two inputs, over late records."""
    if inputs == 1:
        topo = topology(tmp_path, 2)
        plan = export_plan(
            topo, topo.programs[0], [str(export_of(tmp_path, topo, random_trace(17, events=200), monkeypatch, 2))]
        )
    else:
        plan = scrambled_plan(tmp_path, two_input_topology(tmp_path, 2), 2, 8, modes=KEY_SPLIT)

    def handed_over(plan: Plan) -> dict[tuple[int, bytes], tuple[Any, ...]]:
        state = ho.HandoverState()
        try:
            collect_state(
                (b for i in range(plan.reads) for b in run_partition(plan, i, slice_batches(plan, plan.slice_of(i)))),
                state,
            )
            return {
                (p, key): (instance_state(value) if key[:1] == b"[" else value, tuple(headers))
                for _, p, key, value, headers, _ in state.records()
                if key != SEQ_KEY and p is not None and key is not None
            }
        finally:
            state.close()

    want = handed_over(dataclasses.replace(plan, handover=True))
    assert sum(1 for _, k in want if k[:1] == b"[") > 3
    assert handed_over(dataclasses.replace(plan, handover=True, split=3)) == want
    assert handed_over(dataclasses.replace(plan, handover=True, split_each=[1, 2])) == want


# -- several inputs: the task's own merge, the other groups' records as stubs ---------------------------------------


THREE_INPUTS = """
in {string k; long n;} A group(A.k), {string k; long n;} B group(B.k), {string k; long n;} C group(C.k)
out {string k; long n; string via;} Seen, {string k; long seen;} Quiet

{ seen = 0; }
( A(a) { seen = seen + 1; !>Seen({k: a.k, n: a.n, via: "A"}); }
| B(b) { seen = seen + 1; !>Seen({k: b.k, n: b.n, via: "B"}); }
| C(c) { seen = seen + 1; !>Seen({k: c.k, n: c.n, via: "C"}); }
| elapse[15 seconds]() { !>Quiet({k: group[0], seen: seen}); } )*
"""


def three_input_topology(tmp: Path, partitions: int) -> Topology:
    (tmp / "three.es").write_text(THREE_INPUTS)
    return parse_topology(
        {
            "programs": [
                {
                    "name": "three",
                    "source": str(tmp / "three.es"),
                    "inputs": [{"topic": f"{e.lower()}-in", "event": e} for e in "ABC"],
                    "outputs": {"default": "three-out"},
                    "errors": "three-err",
                    "clock": "record",
                }
            ],
            "topics": {f"{e.lower()}-in": {"partitions": partitions} for e in "ABC"},
        }
    )


@pytest.fixture
def stubs(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many records key-split tasks skipped, and how many stubs stood for them."""
    seen = {"skipped": 0, "stubs": 0}
    with_stubs = SplitStage._with_stubs

    def counting(stage: SplitStage, batch: pa.RecordBatch, skipped: Any, *rest: Any) -> pa.RecordBatch:
        before = stage.stub_count
        out = with_stubs(stage, batch, skipped, *rest)
        seen["skipped"] += int(skipped.sum())
        seen["stubs"] += stage.stub_count - before
        return out

    monkeypatch.setattr(SplitStage, "_with_stubs", counting)
    return seen


def test_several_inputs_reach_each_group_in_task_ps_merge_order_at_its_clock(
    tmp_path: Path, stubs: dict[str, int]
) -> None:
    """Late records on two and three topics: where task p's merge puts a group's records depends
    on the other groups' records, which no group's task decodes. Small batches: a run of another
    group's records, and a topic's latest timestamp, go on into the next batch."""
    for topo, partitions in ((two_input_topology(tmp_path, 3), 3), (three_input_topology(tmp_path, 2), 2)):
        plan = scrambled_plan(tmp_path, topo, partitions, 5, modes=KEY_SPLIT)
        for size in (7, plan.batch_size):
            want = assert_same_per_key(dataclasses.replace(plan, batch_size=size), KEY_SPLIT)
            assert {x["value"]["via"] for x in want if x["event"] == "Seen"} == set(
                "ABC"[: len(topo.programs[0].inputs)]
            )
    assert stubs["skipped"] > stubs["stubs"] > 1000  # most records are stubs of their own; some share one


def as_topic_per_event(case: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Plan | None:
    """A grouped conformance case's trace published as ``produce`` does to co-partitioned topics:
    one topic per input event (two topics taking turns for a program of one event), keyed by
    the group key, with no header: records key-split mode skips by their keys. None for an
    ungrouped program."""
    from eventscript.kafka.supervisor import compile_programs

    base = case_topology(case)
    program = compile_programs(base, [base.programs[0]])[base.programs[0].name].program
    if program.key_types is None:
        return None
    events = [i.name for i in program.inputs]
    inputs = [{"topic": f"in-{e}", "event": e} for e in events] + (
        [{"topic": "in-again", "event": events[0]}] if len(events) == 1 else []
    )
    topo = parse_topology(
        {
            "programs": [
                {
                    "name": "prog",
                    "source": str(CASES / case / "program.es"),
                    "inputs": inputs,
                    "outputs": {"default": "prog-out"},
                    "errors": "prog-err",
                    "clock": "record",
                }
            ],
            "topics": {i["topic"]: {"partitions": 2} for i in inputs},
        }
    )
    rows = trace_rows(topo, CASES / case / "input.trace", monkeypatch, 2)
    if len(events) == 1:  # every other record of the one event's topic to the second topic
        turns = itertools.cycle(["in-again", f"in-{events[0]}"])
        rows = [(next(turns) if r[0] == f"in-{events[0]}" and not r[6] else r[0], *r[1:]) for r in rows]
    offsets: dict[tuple[str, int], int] = defaultdict(int)
    numbered = []
    for topic, p, _, *rest in rows:
        numbered.append((topic, p, offsets[(topic, p)], *rest))
        offsets[(topic, p)] += 1
    return export_plan(topo, topo.programs[0], [str(write_jsonl_export(numbered, tmp / f"{case}.jsonl"))])


@pytest.mark.skipif(not SINGLE, reason="../shared/conformance is not beside the checkout")
def test_grouped_conformance_cases_on_several_topics_give_every_key_the_partition_modes_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stubs: dict[str, int]
) -> None:
    failures, cases = [], 0
    for case in SINGLE:
        plan = as_topic_per_event(case, tmp_path, monkeypatch)
        if plan is None:
            continue
        cases += 1
        want = per_key(outputs_of(plan, 0))
        for mode in KEY_SPLIT:
            try:
                got = outputs_of(plan, mode)
            except SplitMismatchError as exc:  # a keyed record that does not decode: the command's fallback
                failures.append(f"{case} ({mode}): {exc}")
                continue
            if per_key(got) != want:
                failures.append(f"{case} ({mode}): not the partition mode's records, ids or order")
    assert not failures, "\n".join(failures)
    assert cases >= 5 and stubs["stubs"] > 100


# -- on Spark ------------------------------------------------------------------------------------------------------


@pytest.mark.spark
def test_key_split_on_spark_equals_the_partition_mode_and_falls_back_when_it_must(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topo = topology(tmp_path, 3, REPEATING)
    cfg = topo.programs[0]
    plan = scrambled_plan(tmp_path, topo, 3, 9, until_us=T0 + 3_600_000_000, modes=KEY_SPLIT)
    totals = Totals()
    got = [output_json(r) for r in outputs(spark, dataclasses.replace(plan, split=2), totals)]
    check_totals(totals, dataclasses.replace(plan, split=2))
    assert totals.tasks == 6 and totals.records == plan.records
    assert per_key(got) == per_key(split_outputs(plan, 0))
    # The command: 3 partitions on 2 slots: split as auto_split balances them by default.
    out = tmp_path / "out.jsonl"
    export = plan.source.paths[0]
    chosen = auto_split(plan, 2)
    assert max(chosen) > 1
    assert backfill(
        topo, cfg, output=str(out), inputs=[export], until_us=plan.until_us, spark=spark, ui=False, err=None
    ).tasks == sum(chosen)
    lines = [orjson.loads(x) for x in out.read_text().splitlines()]
    assert per_key(lines) == per_key(split_outputs(plan, 0))
    # A keyed record key-split mode cannot take for what its key says: partition mode runs instead.
    scheme = scheme_for(cfg, [STRING])
    (a,) = keys_in(cfg, 3, 2, partition=0, group=0, count=1)
    (b,) = keys_in(cfg, 3, 2, partition=0, group=1, count=1)
    rows = [key_row(scheme, a, 0, 0, 0), key_row(scheme, b, 0, 1, 100, b"not json"), key_row(scheme, a, 0, 2, 10)]
    path = write_jsonl_export(rows, tmp_path / "bad.jsonl")
    capsys.readouterr()
    assert backfill(topo, cfg, output=str(out), inputs=[str(path)], spark=spark, ui=False, split=2).tasks == 3
    assert "ticks-in:0:1 reached no instance" in capsys.readouterr().err
    lines = [orjson.loads(x) for x in out.read_text().splitlines()]
    assert lines == split_outputs(export_plan(topo, cfg, [str(path)]), 0)


def test_a_batch_of_keys_gets_the_groups_of_its_keys_one_by_one() -> None:
    """The vectorized key hash (the filter of every batch) and the one-key hash (group keys, and
    errors about records) must agree, or a key would be run by two tasks or none."""
    rnd = random.Random(3)
    keys = [
        None if rnd.random() < 0.1 else bytes(rnd.randrange(256) for _ in range(rnd.randrange(30))) for _ in range(3000)
    ]
    for splits in (2, 3, 7):
        for column in (pa.array(keys, type=pa.binary()).slice(5), pa.array(keys, type=pa.large_binary())):
            want = [0 if k is None else key_group(k, splits) for k in column.to_pylist()]
            assert batch_groups(column, splits).tolist() == want
            assert set(want) == set(range(splits))
