"""Key-parallel mode (``Plan.key_groups`` > 0) gives every key the partition mode's outputs:
the same values, in the same order, with the same ``es-id`` (issue 7).

The exports here are harder than ``eventscript produce`` writes: several partitions and input
topics, late records (timestamps behind the clock), ticks, undecodable and unkeyed records, and
programs whose timers reset, repeat or end their instance.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from pipeline_export import Mode, with_mode
from test_backfill_tasks import PROGRAM, T0, random_trace, topology
from trace_export import CASES, SINGLE, case_topology, expected_lines, trace_rows, write_jsonl_export

from eventscript.backfill.export import Row
from eventscript.backfill.job import Totals, check_totals, export_plan, outputs, run_locally
from eventscript.backfill.key_parallel import key_group, route_values
from eventscript.backfill.key_split import SplitMismatchError, split_refusal
from eventscript.backfill.key_split import key_group as split_group
from eventscript.backfill.plan import Plan
from eventscript.backfill.sink import output_json
from eventscript.kafka import codec
from eventscript.kafka.config import ProgramConfig, Topology, parse_topology
from eventscript.kafka.keys import scheme_for
from eventscript.language.types import STRING
from eventscript.tester.expect import compare

T0_MS = T0 // 1000

REPEATING = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long n;} Seen, {string k; long count;} Quiet

{ count = 0; }
( Tick(t) { count = count + 1; !>Seen({k: t.k, n: t.n}); }
| elapse[10 seconds]() { !>Quiet({k: group[0], count: count}); } )*
"""

ENDING = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long n;} First, {string k;} Done

Tick(t) { !>First({k: t.k, n: t.n}); } Tick()* elapse[30 seconds]() { !>Done({k: group[0]}); }
"""

TWO_INPUTS = """
in {string k; long n;} A group(A.k), {string k; long n;} B group(B.k)
out {string k; long n; string via;} Seen, {string k;} Quiet

( A(a) { !>Seen({k: a.k, n: a.n, via: "A"}); }
| B(b) { !>Seen({k: b.k, n: b.n, via: "B"}); }
| elapse[20 seconds]() { !>Quiet({k: group[0]}); } )*
"""


def two_input_topology(tmp: Path, partitions: int, second: dict[str, Any] | None = None) -> Topology:
    """Program "two" over topics a-in and b-in (``second``: more settings of input b-in)."""
    (tmp / "two.es").write_text(TWO_INPUTS)
    return parse_topology(
        {
            "programs": [
                {
                    "name": "two",
                    "source": str(tmp / "two.es"),
                    "inputs": [{"topic": "a-in", "event": "A"}, {"topic": "b-in", "event": "B", **(second or {})}],
                    "outputs": {"default": "two-out"},
                    "errors": "two-err",
                    "clock": "record",
                }
            ],
            "topics": {"a-in": {"partitions": partitions}, "b-in": {"partitions": partitions}},
        }
    )


def scrambled_rows(cfg: ProgramConfig, partitions: int, seed: int, events: int = 400, keys: int = 15) -> list[Row]:
    """Records of every input topic, each keyed and placed as the key scheme says, with some
    late timestamps, ticks, undecodable values and unkeyed records mixed in."""
    rnd = random.Random(seed)
    scheme = scheme_for(cfg, [STRING])
    topics = [i.topic for i in cfg.inputs]
    offsets: dict[tuple[str, int], int] = defaultdict(int)
    rows: list[Row] = []
    t = T0_MS
    for i in range(events):
        t += rnd.choice([0, 1, 2, 5, 20, 40, 70]) * 1000
        k = f"k{rnd.randrange(keys)}"
        topic = rnd.choice(topics)
        p = scheme.partition(scheme.routing_bytes((k,)), partitions)
        ts = t - rnd.choice([0, 0, 0, 0, 0, 3000, 25_000])
        key: bytes | None = scheme.key_bytes((k,))
        value = orjson.dumps({"k": k, "n": i})
        headers: list[tuple[str, bytes | None]] | None = None
        dice = rnd.random()
        if dice < 0.04:
            value = b"not json"
        elif dice < 0.07:
            key = None
        elif dice < 0.13:
            topic, key, value, headers = topics[0], None, b"{}", [(codec.HEADER_TICK, b"1")]
            p = rnd.randrange(partitions)
        rows.append((topic, p, offsets[(topic, p)], ts, key, value, headers))
        offsets[(topic, p)] += 1
    return rows


def per_key(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Outputs by key; an $error by key and by the partition of the record it is about (an
    unkeyed record's $error belongs to no key's history, only to its partition's)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for x in rows:
        where = x["value"]["source"]["partition"] if x["event"] == "$error" else None
        out[orjson.dumps([x.get("key"), where]).decode()].append(x)
    return dict(out)


def outputs_of(plan: Plan, mode: Mode) -> list[dict[str, Any]]:
    return [output_json(r) for r in run_locally(with_mode(plan, mode))]


#: The modes compared with partition mode: key groups, or tasks per partition in key-split mode.
KEY_PARALLEL: tuple[Mode, ...] = (1, 2, 5)
KEY_SPLIT: tuple[Mode, ...] = ("split:2", "split:3")


def assert_same_per_key(plan: Plan, modes: tuple[Mode, ...] = KEY_PARALLEL) -> list[dict[str, Any]]:
    want = outputs_of(plan, 0)
    for mode in modes:
        got = outputs_of(plan, mode)
        assert len(got) == len(want), mode
        assert per_key(got) == per_key(want), mode
    return want


def keyed_by_scheme(rows: list[Row]) -> list[Row]:
    """The records with the undecodable ones unkeyed: every keyed record is then what key-split
    mode takes it for (the unkeyed ones every task of the partition decodes)."""
    return [
        (t, p, o, ts, None if value == b"not json" else key, value, headers)
        for t, p, o, ts, key, value, headers in rows
    ]


def scrambled_plan(
    tmp: Path,
    topo: Topology,
    partitions: int,
    seed: int,
    until_us: int | None = None,
    modes: tuple[Mode, ...] = KEY_PARALLEL,
) -> Plan:
    rows = scrambled_rows(topo.programs[0], partitions, seed)
    if modes == KEY_SPLIT:
        rows = keyed_by_scheme(rows)
    path = write_jsonl_export(rows, tmp / f"scrambled-{seed}.jsonl")
    return export_plan(topo, topo.programs[0], [str(path)], until_us=until_us)


MODES = pytest.mark.parametrize("modes", [KEY_PARALLEL, KEY_SPLIT], ids=["key-parallel", "key-split"])


@MODES
@pytest.mark.parametrize("program", [PROGRAM, REPEATING, ENDING], ids=["reset", "repeating", "ending"])
def test_every_key_gets_the_partition_modes_outputs(tmp_path: Path, program: str, modes: tuple[Mode, ...]) -> None:
    topo = topology(tmp_path, 3, program)
    for seed in (1, 2):
        want = assert_same_per_key(scrambled_plan(tmp_path, topo, 3, seed, modes=modes), modes)
        events = {x["event"] for x in want}
        assert "$error" in events and len(events) >= 3  # the outputs, their timers' outputs and errors


def test_two_co_partitioned_inputs_keep_the_tasks_merge_order(tmp_path: Path) -> None:
    """A key's records on two topics reach its group in the order task p merged them (by
    timestamp, late records where they came), not in the order of their timestamps."""
    topo = two_input_topology(tmp_path, 2)
    want = assert_same_per_key(scrambled_plan(tmp_path, topo, 2, 5))
    vias = {x["value"]["via"] for x in want if x["event"] == "Seen"}
    assert vias == {"A", "B"}


@MODES
def test_undecodable_and_unkeyed_records_give_the_same_errors(tmp_path: Path, modes: tuple[Mode, ...]) -> None:
    topo = topology(tmp_path, 3)
    plan = scrambled_plan(tmp_path, topo, 3, 7, modes=modes)
    want = sorted((x for x in outputs_of(plan, 0) if x["event"] == "$error"), key=lambda x: x["id"])
    got = sorted((x for x in outputs_of(plan, modes[-1]) if x["event"] == "$error"), key=lambda x: x["id"])
    assert got == want
    messages = {x["value"]["message"] for x in want}
    assert any("not JSON" in m for m in messages) and any("no key" in m for m in messages)
    assert {x["value"]["time"] for x in want} != {x["value"]["source"]["timestamp"] for x in want}


@MODES
def test_until_fires_the_same_timers_in_every_key_group(tmp_path: Path, modes: tuple[Mode, ...]) -> None:
    topo = topology(tmp_path, 3)
    plain = scrambled_plan(tmp_path, topo, 3, 3, modes=modes)
    until = scrambled_plan(tmp_path, topo, 3, 3, until_us=T0 + 86_400_000_000, modes=modes)
    assert len(assert_same_per_key(until, modes[-2:])) > len(outputs_of(plain, 0))


def keys_in(
    cfg: ProgramConfig,
    partitions: int,
    groups: int,
    partition: int,
    group: int,
    count: int,
    group_of: Callable[[bytes, int], int] = key_group,
) -> list[str]:
    """Keys of a given partition and key group (``group_of``: key-parallel mode's hash, or
    key-split mode's)."""
    scheme = scheme_for(cfg, [STRING])
    found = []
    for i in range(10_000):
        rb = scheme.routing_bytes((f"x{i}",))
        if scheme.partition(rb, partitions) == partition and group_of(rb, groups) == group:
            found.append(f"x{i}")
            if len(found) == count:
                return found
    raise AssertionError("no such keys")


def key_row(scheme: Any, k: str, p: int, offset: int, seconds: int, value: bytes | None = None) -> Row:
    return (
        "ticks-in",
        p,
        offset,
        T0_MS + seconds * 1000,
        scheme.key_bytes((k,)),
        value or orjson.dumps({"k": k, "n": offset}),
        None,
    )


@pytest.mark.parametrize("mode", [2, "split:2"], ids=["key-parallel", "key-split"])
def test_each_partitions_clock_reaches_every_group_and_stops_at_its_last_record(tmp_path: Path, mode: Mode) -> None:
    """Key a's timer is due by its partition's last record, which is another group's; key c's
    group also holds a later record of another partition (key-parallel mode), which must not
    fire c's timer."""
    topo = topology(tmp_path, 2)
    cfg = topo.programs[0]
    scheme = scheme_for(cfg, [STRING])
    group_of = split_group if isinstance(mode, str) else key_group
    (a,) = keys_in(cfg, 2, 2, partition=1, group=0, count=1, group_of=group_of)
    (b,) = keys_in(cfg, 2, 2, partition=1, group=1, count=1, group_of=group_of)
    (c,) = keys_in(cfg, 2, 2, partition=0, group=1, count=1, group_of=group_of)
    rows = [key_row(scheme, c, 0, 0, 0), key_row(scheme, a, 1, 0, 0), key_row(scheme, b, 1, 1, 100)]
    plan = export_plan(topo, cfg, [str(write_jsonl_export(rows, tmp_path / "e.jsonl"))])
    want = [(x["key"], x["event"], x["time"]) for x in assert_same_per_key(plan, (mode,))]
    assert ([a], "Quiet", "2026-01-01T00:00:30.000000Z") in want
    assert not any(x == [c] and e == "Quiet" for x, e, _ in want)


# -- the conformance cases in key-parallel mode ------------------------------------------------------------


def compare_per_key(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> list[str]:
    """The tester's comparison, key by key: key groups interleave keys differently from one task."""

    def split(lines: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for x in lines:
            out[orjson.dumps(x.get("key")).decode()].append(x)
        return out

    a, b = split(want), split(got)
    return [f"key {k}: {line}" for k in sorted(a.keys() | b.keys()) for line in compare(a.get(k, []), b.get(k, []))]


def _conformance_plan(case: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Plan:
    topo = case_topology(case)
    path = write_jsonl_export(trace_rows(topo, CASES / case / "input.trace", monkeypatch), tmp / "in.jsonl")
    return export_plan(topo, topo.programs[0], [str(path)])


@pytest.mark.skipif(not SINGLE, reason="../shared/conformance is not beside the checkout")
def test_every_conformance_case_in_key_parallel_and_key_split_modes_equals_the_tester(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Key-split mode runs the cases it can split (one keyed input; the others run in partition
    mode, as the command does) and may refuse one whose keyed records do not decode: the
    command then runs it in partition mode."""
    failures, split, refused = [], 0, 0
    for case in SINGLE:
        (tmp_path / case).mkdir()
        plan = _conformance_plan(case, tmp_path / case, monkeypatch)
        want = outputs_of(plan, 0)
        for mode in (2, 3, *KEY_SPLIT):
            if isinstance(mode, str) and split_refusal(plan) is not None:
                continue
            try:
                got = outputs_of(plan, mode)
            except SplitMismatchError:
                refused += 1
                continue
            split += isinstance(mode, str)
            problem = "\n".join(compare_per_key(expected_lines(case), got))
            if problem:
                failures.append(f"{case} ({mode}): {problem}")
            elif per_key(got) != per_key(want):
                failures.append(f"{case} ({mode}): not the partition mode's ids or order")
    assert not failures, "\n".join(failures)
    assert split > refused, f"{split} runs in key-split mode, {refused} refused"


# -- on Spark ------------------------------------------------------------------------------------------------------


@pytest.mark.spark
def test_key_groups_get_a_spark_task_each(spark: Any) -> None:
    from pyspark.sql.functions import spark_partition_id

    for n in (2, 3, 7):
        routes = route_values(n)
        df = spark.createDataFrame([(r,) for r in routes], "route int").repartition(n, "route")
        placed = {row.route: row.pid for row in df.withColumn("pid", spark_partition_id()).collect()}
        assert [placed[r] for r in routes] == list(range(n))


@pytest.mark.spark
def test_key_parallel_on_spark_equals_the_partition_mode(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topo = two_input_topology(tmp_path, 2)
    plan = dataclasses.replace(scrambled_plan(tmp_path, topo, 2, 9, until_us=T0 + 3_600_000_000), key_groups=3)
    totals = Totals()
    got = [output_json(r) for r in outputs(spark, plan, totals)]
    check_totals(totals, plan)
    assert totals.tasks == 3 and totals.records == plan.records
    assert per_key(got) == per_key(outputs_of(plan, 0))
    # A conformance-style export with ticks, and the tester's own comparison.
    ticks = topology(tmp_path, 3)
    (tmp_path / "t").mkdir()
    trace = tmp_path / "t" / "trace.txt"
    trace.write_text(random_trace(4, events=120))
    rows = trace_rows(ticks, trace, monkeypatch, 3)
    plan = dataclasses.replace(
        export_plan(ticks, ticks.programs[0], [str(write_jsonl_export(rows, tmp_path / "t.jsonl"))]), key_groups=2
    )
    want = per_key(outputs_of(plan, 0))
    for fused in (True, False):  # the key stage in the data source, or in a mapInArrow stage after it
        got = [output_json(r) for r in outputs(spark, plan, Totals(), fused=fused)]
        assert per_key(got) == want
