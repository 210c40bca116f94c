"""Ties among the tasks that write one partition (issue 21): records of one record time that
several upstream tasks write to the same partition reach the reading task in whatever order the
writers' commits landed. The reading task must take them in one order every run, and in the
tester's: here two keys of one site on two source partitions tick at the same times, and the
second stage pairs each site's records in the order it takes them. The trace names the key of
partition 0 first, or that of partition 1 first, or each first in turn: the order of the trace
reaches the second stage through ``es-seq`` (the trace position ``produce`` writes, which outputs
copy from their cause)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from eventscript.task.partitioner import murmur2_partition
from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.config import load_topology
from eventscript.topology.model import load_graph

from .pipeline_log import PipelineRun

RELAY = """
in {string site; string k;} Tick group(Tick.k)
out {string site; string k;} Seen

( Tick(t) { !>Seen({site: t.site, k: t.k}); } )*
"""

#: relay with a timer: each key's Seen comes 3 s after its tick, so both keys of a site give one at
#: the same deadline, from two tasks; the tester fires them in the order they were set (the
#: order of the ticks in the trace), not the order their instances were created in.
QUIET = """
in {string site; string k;} Tick group(Tick.k)
out {string site; string k;} Seen

{ s = ""; }
( ( Tick(t) { s = t.site; } )+ elapse[3 seconds]() { !>Seen({site: s, k: group[0]}); } )*
"""

PAIRS = """
in {string site; string k;} Seen group(Seen.site)
out {string site; string first; string second;} Pair

( Seen(a) Seen(b) { !>Pair({site: group[0], first: a.k, second: b.k}); } )*
"""


def pipeline_topology(tmp: Path, seen_partitions: int = 1, relay: str = RELAY) -> Path:
    """relay (grouped by key, ticks on 2 partitions) → seen → pairs (grouped by site). With
    ``seen`` on 2 partitions, pairs runs two tasks that re-publish to each other the records of
    the other's sites (its repartition topic, merged per source partition)."""
    (tmp / "relay.es").write_text(relay)
    (tmp / "pairs.es").write_text(PAIRS)
    doc = {
        "application": "ties",
        "programs": [
            {
                "name": "relay",
                "source": "relay.es",
                "clock": "record",
                "inputs": [{"topic": "ticks", "event": "Tick"}],
                "outputs": {"default": "seen"},
                "errors": "errors",
            },
            {
                "name": "pairs",
                "source": "pairs.es",
                "clock": "record",
                "inputs": [{"topic": "seen", "event": "Seen"}],
                "outputs": {"default": "pairs"},
                "errors": "errors",
            },
        ],
        "topics": {"ticks": {"partitions": 2}, "seen": {"partitions": seen_partitions}, "pairs": {"partitions": 1}},
    }
    path = tmp / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def key_on(site: str, partition: int) -> str:
    """A key of ``site`` that the ticks topic places on ``partition``."""
    return next(k for i in range(100) if murmur2_partition((k := f"{site}-k{i}").encode(), 2) == partition)


def trace_text(order: str) -> str:
    """Every 5 s, on three sites, a key of partition 0 and one of partition 1: the one of
    partition 0 first (``order`` "0-first"), the one of partition 1 first ("1-first"), or each
    first in turn, changing with the time and the site ("turns")."""
    lines = []
    for i in range(24):
        lines.append(f"[2026-01-01 00:{i * 5 // 60:02d}:{i * 5 % 60:02d}]")
        for j, site in enumerate(("s1", "s2", "s3")):
            first = {"0-first": 0, "1-first": 1, "turns": (i + j) % 2}[order]
            lines.append(f'Tick({{site: "{site}", k: "{key_on(site, first)}"}})')
            lines.append(f'Tick({{site: "{site}", k: "{key_on(site, 1 - first)}"}})')
    return "\n".join(lines) + "\n"


def pairs(lines: list[dict[str, Any]]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for x in lines:
        if x["event"] == "Pair":
            out.setdefault(x["value"]["site"], []).append((x["time"], x["value"]["first"], x["value"]["second"]))
    return out


@pytest.mark.parametrize("order", ["0-first", "1-first", "turns"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_ties_among_upstream_tasks_are_taken_in_the_testers_order(seed: int, order: str, tmp_path: Path) -> None:
    assert_testers_pairs(pipeline_topology(tmp_path), order, seed, tmp_path)


@pytest.mark.parametrize("order", ["1-first", "turns"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ties_among_source_partitions_in_the_repartition_topic_are_taken_in_the_testers_order(
    seed: int, order: str, tmp_path: Path
) -> None:
    assert_testers_pairs(pipeline_topology(tmp_path, seen_partitions=2), order, seed, tmp_path)


@pytest.mark.parametrize("order", ["0-first", "1-first", "turns"])
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("seen_partitions", [1, 2])
def test_timers_of_one_deadline_in_upstream_tasks_reach_the_reader_in_the_order_they_were_set(
    seed: int, order: str, seen_partitions: int, tmp_path: Path
) -> None:
    """Each key's timer is set by its tick, so the two keys of a site time out together, one on
    each task of relay: the tester fires them in the order the ticks came ("1-first": the key of
    partition 1 first, whose instance was not created first). Their outputs carry what set them
    (``es-armed``); without it they went in the order of what created their instances."""
    path = pipeline_topology(tmp_path, seen_partitions=seen_partitions, relay=QUIET)
    assert_testers_pairs(path, order, seed, tmp_path)


@pytest.mark.parametrize("eos", [False, True], ids=["at-least-once", "exactly-once"])
def test_timers_of_one_deadline_keep_the_order_they_were_set_in_across_kills(eos: bool, tmp_path: Path) -> None:
    """What set a timer is kept in the instance's snapshot: tasks killed at random and taken on
    from their last commits give the simulated run's pairs (``test_random_kills.py``'s loop).
    With the snapshots leaving it out, seed 8 failed at-least-once and 6, 7 and 8 exactly-once
    (of seeds 1-29); with it, seeds 1-39 pass both."""
    from .test_random_kills import assert_kills_give_the_simulated_records

    path = pipeline_topology(tmp_path, seen_partitions=2, relay=QUIET)
    (tmp_path / "sample.trace").write_text(trace_text("turns"))
    for seed in (6, 7, 8):
        assert_kills_give_the_simulated_records(path, None, eos, seed, tmp_path / f"seed-{seed}")


def test_records_of_one_time_on_two_inputs_are_merged_in_the_producers_order() -> None:
    """Two source topics of one task: records of one time go in ``es-seq`` order (the trace's),
    before the order the topology lists the inputs in; without one, in that order."""
    from eventscript.task.codec import HEADER_SEQ
    from eventscript.task.merge import InputPartition, PartitionGroup
    from eventscript.topology.config import InputConfig

    from .task_helpers import PlainRecord

    first = InputPartition("a", 0, 0, InputConfig(topic="a", event="A"))
    second = InputPartition("b", 0, 1, InputConfig(topic="b", event="B"))
    group = PartitionGroup([first, second])
    group.add(PlainRecord("a", 0, 0, 1_000, b"k", b"{}", [(HEADER_SEQ, b"2")]))
    group.add(PlainRecord("a", 0, 1, 2_000, b"k", b"{}"))
    group.add(PlainRecord("b", 0, 0, 1_000, b"k", b"{}", [(HEADER_SEQ, b"1")]))
    group.add(PlainRecord("b", 0, 1, 2_000, b"k", b"{}"))
    taken: list[tuple[str, int]] = []
    group.process(0, lambda ip, msg: taken.append((msg.topic(), msg.timestamp()[1])))
    assert taken == [("b", 1_000), ("a", 1_000), ("a", 2_000), ("b", 2_000)]


def assert_testers_pairs(path: Path, order: str, seed: int, tmp_path: Path) -> None:
    """The topology over ``trace_text(order)`` in a random schedule pairs each site's ticks as
    the simulated run does."""
    (tmp_path / "sample.trace").write_text(trace_text(order))
    want: list[dict[str, Any]] = []
    simulate(load_graph(path), read_trace(str(tmp_path / "sample.trace")), lambda line: want.append(line.to_json()))
    pipeline = PipelineRun(load_topology(path), path, tmp_path / "store")
    pipeline.publish(tmp_path / "sample.trace")
    pipeline.run(seed)
    got = [line for lines in pipeline.results().values() for line in lines]
    assert all(len(site) >= 10 for site in pairs(want).values()), pairs(want)
    assert pairs(got) == pairs(want)
    assert pipeline.held_back() == 0
