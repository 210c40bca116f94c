"""Every shipped topology, backfilled stage by stage in partition mode and in key-parallel mode,
gives the tester's records (issue 7: "the backfill's output equals the tester's, record for
record"), without Spark or a broker (those are covered by test_spark_backfill.py and
tests/test_topologies.py). How the stages are chained: pipeline_export.py."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from pipeline_export import Mode, backfill_pipeline, in_record_time_order

from eventscript.backfill.records import OutputRow
from eventscript.backfill.sink import output_json
from eventscript.kafka import codec
from eventscript.tester.expect import read_expected
from eventscript.topology.model import TopologyGraph, load_graph

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
TOPOLOGY_FILES = sorted(TOPOLOGIES.glob("*/topology.yaml"))
KEY_GROUPS = 3
COMPARED = ("time", "event", "value", "topic", "program")


def as_tester_line(row: OutputRow) -> dict[str, Any]:
    """A record in the tester's encoding (the backfill's JSON-lines line: ``id`` included), with
    the topic it is on and the program that wrote it, which topology expectations name."""
    line = output_json(row)
    line["topic"] = row.topic()
    program = codec.header(row.headers(), codec.HEADER_PROGRAM)
    line["program"] = program.decode() if program is not None else None
    return line


def per_key(lines: list[dict[str, Any]], fields: tuple[str, ...]) -> dict[str, list[tuple[str, ...]]]:
    """``fields`` of each record, by key (and, for an $error, the partition of the record it is
    about): each key's records in order; nothing orders records of different keys."""
    out: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for x in lines:
        where = x["value"]["source"]["partition"] if x["event"] == "$error" else None
        out[orjson.dumps([x.get("key"), where]).decode()].append(
            tuple(orjson.dumps(x.get(f), option=orjson.OPT_SORT_KEYS).decode() for f in fields)
        )
    return dict(out)


def sink_lines(graph: TopologyGraph, results: dict[str, list[OutputRow]]) -> list[dict[str, Any]]:
    sinks = set(graph.sink_topics)
    return [as_tester_line(r) for rows in results.values() for r in rows if r.topic() in sinks]


@pytest.fixture(scope="module", params=TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def graph(request: pytest.FixtureRequest) -> TopologyGraph:
    """The shipped pipeline on one partition per topic, as it shipped before issue 21: the
    backfill's stage-by-stage export publishes each stage's outputs in task order, which does not
    yet carry progress markers (issue 21's backfill item), and cannot place unkeyed records on
    several partitions."""
    g = load_graph(request.param)
    for spec in g.topology.topics.values():
        spec.partitions = 1
    return g


def expected_of(graph: TopologyGraph) -> list[dict[str, Any]]:
    want = read_expected((graph.file.parent / "expected.jsonl").read_text(encoding="utf-8"))
    assert want, "an empty expected.jsonl compares nothing"
    return want


def assert_sinks_hold(graph: TopologyGraph, results: dict[str, list[OutputRow]], mode: str) -> None:
    """The sink topics' records (error topics included: the expectations list no $error, so none
    may come) are the expected ones, per key in order."""
    want = expected_of(graph)
    fields = tuple(f for f in COMPARED if all(f in x for x in want))  # some name no topic or program
    got = sink_lines(graph, results)
    assert per_key(got, fields) == per_key(want, fields), mode
    assert len(got) == len(want), mode


def test_partition_mode_stage_by_stage_gives_the_testers_records(
    graph: TopologyGraph, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    trace = graph.file.parent / "sample.trace"
    results = backfill_pipeline(graph, trace, monkeypatch, tmp_path)[0]
    assert_sinks_hold(graph, results, "partition mode, outputs published in task order")


@pytest.mark.parametrize("mode", [KEY_GROUPS, "split:2"], ids=["key-parallel", "key-split"])
def test_key_parallel_and_key_split_modes_give_every_key_the_partition_modes_ids_and_values_at_every_stage(
    graph: TopologyGraph, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: Mode
) -> None:
    """Each stage in partition mode and in ``mode`` over the same export (partition mode's
    chain): the same records per key, with the same es-ids, unique."""
    trace = graph.file.parent / "sample.trace"
    by_mode = backfill_pipeline(graph, trace, monkeypatch, tmp_path, also=(mode,))
    for name, rows in by_mode[0].items():
        lines = [as_tester_line(r) for r in rows]
        ids = [x["id"] for x in lines]
        assert all(ids) and len(set(ids)) == len(ids), f"{name}: es-ids missing or repeated"
        other = [as_tester_line(r) for r in by_mode[mode][name]]
        assert per_key(other, ("id", *COMPARED)) == per_key(lines, ("id", *COMPARED)), name
        assert len(other) == len(lines), name
    assert sum(map(len, by_mode[0].values())) > 0


def test_key_parallel_mode_stage_by_stage_in_record_time_order_gives_the_testers_records(
    graph: TopologyGraph, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Key-parallel mode all along, each stage's outputs published in record-time order.

    In the order its tasks produce them (key group after key group) they do not give the tester's
    records: a next stage that groups differently (site over sensor) reads them as late records,
    in another interleaving than the worker's topic holds (see the report of issue 7)."""
    trace = graph.file.parent / "sample.trace"
    chained = backfill_pipeline(graph, trace, monkeypatch, tmp_path, KEY_GROUPS, published_as=in_record_time_order)
    assert_sinks_hold(graph, chained[KEY_GROUPS], f"{KEY_GROUPS} key groups, outputs published by record time")
