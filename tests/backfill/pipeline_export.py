"""A shipped topology backfilled stage by stage, without Spark or a broker (issue 7).

A topology is a pipeline: a later program reads the topics an earlier one writes. Here the
sample trace becomes the export of the external input topics (what ``eventscript produce``
publishes, ``trace_export.trace_rows``); each program is backfilled over its export
(``job.export_plan`` + ``job.run_locally``), and its output records on the topics a later
program reads become that program's export, placed and numbered as the worker's producer and the
broker would: by the key's murmur2 partition, offsets in the order the tasks produced them.
"""

from __future__ import annotations

import dataclasses
import graphlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trace_export import trace_rows, write_jsonl_export

from eventscript.backfill.export import Row
from eventscript.backfill.job import export_plan, run_locally
from eventscript.backfill.key_split import split_refusal
from eventscript.backfill.plan import Plan
from eventscript.backfill.records import OutputRow
from eventscript.kafka.config import ProgramConfig, Topology
from eventscript.kafka.partitioner import partition_of
from eventscript.topology.model import TopologyGraph


def partitions_of(topo: Topology, topic: str) -> int:
    spec = topo.topics.get(topic)
    return spec.partitions if spec is not None else 1


def stage_order(graph: TopologyGraph) -> list[ProgramConfig]:
    """The programs in topological order: every program after the programs writing its inputs."""
    writers = {t: {w.stage.name for w in ws} for t, ws in graph.writes.items()}
    deps = {
        st.name: {w for i in st.config.inputs for w in writers.get(i.topic, set()) if w != st.name}
        for st in graph.stages
    }
    by_name = {st.name: st.config for st in graph.stages}
    return [by_name[n] for n in graphlib.TopologicalSorter(deps).static_order()]


def as_published(
    rows: list[OutputRow], topo: Topology, topics: set[str], offsets: dict[tuple[str, int], int]
) -> list[Row]:
    """Output records on ``topics`` as a topic export: the worker's producer places a keyed
    record by murmur2 of its key (``partitioner: murmur2_random``), and the broker numbers each
    partition's records in the order they come (``offsets``: each partition's next offset);
    headers, key, value and timestamp as they are."""
    out: list[Row] = []
    for r in rows:
        topic = r.topic()
        if topic not in topics:
            continue
        n = partitions_of(topo, topic)
        key = r.key()
        if n == 1:
            p = 0
        elif key is not None:
            p = partition_of(key, n)
        else:
            raise AssertionError(
                f"an unkeyed record on {topic} ({n} partitions): the worker's producer places "
                f"it at random, so no export can say where it lands"
            )
        offset = offsets.get((topic, p), 0)
        offsets[(topic, p)] = offset + 1
        out.append((topic, p, offset, r.timestamp()[1], key, r.value(), list(r.headers())))
    return out


def in_record_time_order(rows: list[OutputRow]) -> list[OutputRow]:
    """Output records by timestamp, ties in task order: a partition-mode task's outputs come so
    already; key-parallel mode's come group after group."""
    return sorted(rows, key=lambda r: r.timestamp()[1])


#: A backfill mode: 0 partition mode; N > 0 key-parallel mode with N key groups; "split:N"
#: key-split mode with N tasks per partition (partition mode for a program that cannot be split,
#: as the command does).
Mode = int | str


def with_mode(plan: Plan, mode: Mode) -> Plan:
    if isinstance(mode, str):
        splits = int(mode.removeprefix("split:"))
        return plan if split_refusal(plan) is not None else dataclasses.replace(plan, split=splits)
    return dataclasses.replace(plan, key_groups=mode)


def backfill_pipeline(
    graph: TopologyGraph,
    trace: Path,
    monkeypatch: Any,
    tmp: Path,
    key_groups: Mode = 0,
    also: tuple[Mode, ...] = (),
    published_as: Callable[[list[OutputRow]], list[OutputRow]] = lambda rows: rows,
) -> dict[Mode, dict[str, list[OutputRow]]]:
    """Every program's output records (all its topics), by mode (``Mode``) and program name. Each program is
    backfilled over the records its input topics would hold:
    the trace's for the external topics (published to the first program, as ``eventscript dev
    --trace`` does), and for the others the outputs of the earlier programs in mode
    ``key_groups``, in the order ``published_as`` gives them (default: as the tasks produced
    them). The modes in ``also`` run over the same exports (they feed nothing forward)."""
    topo = graph.topology
    first = topo.programs[0]
    external = set(graph.external_topics)
    assert external <= {i.topic for i in first.inputs}, (
        f"external topics {sorted(external)} are not all inputs of the first program {first.name}"
    )
    internal = {t for t in graph.reads if t not in external}
    published: list[Row] = trace_rows(topo, trace, monkeypatch, partitions_of(topo, first.inputs[0].topic))
    offsets: dict[tuple[str, int], int] = {}
    results: dict[Mode, dict[str, list[OutputRow]]] = {g: {} for g in (key_groups, *also)}
    for cfg in stage_order(graph):
        reads = {i.topic for i in cfg.inputs}
        path = write_jsonl_export([r for r in published if r[0] in reads], tmp / f"{cfg.name}-{key_groups}.jsonl")
        plan = export_plan(topo, cfg, [str(path)])
        for mode, by_program in results.items():
            by_program[cfg.name] = list(run_locally(with_mode(plan, mode)))
        published += as_published(published_as(results[key_groups][cfg.name]), topo, internal, offsets)
    return results
