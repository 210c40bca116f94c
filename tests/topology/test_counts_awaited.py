"""A reader on record time waits, before it plans, for the partition counts its plan reads and
nothing gives (``progress.counts_awaited``): exactly the topics ``topology_partitions`` takes as 1
for want of a count while the plan counts its gated inputs' writers' tasks. One walk gives both."""

from __future__ import annotations

from typing import Any

import pytest

from eventscript.topology.config import Topology, parse_topology
from eventscript.topology.progress import counts_awaited, progress_plan, topology_partitions


def _program(name: str, reads: list[str], writes: str, clock: str = "record") -> dict[str, Any]:
    return {
        "name": name,
        "source": f"{name}.es",
        "clock": clock,
        "inputs": [{"topic": t, "event": "E"} for t in reads],
        "outputs": {"default": writes},
        "errors": "err",
    }


def _topology(*programs: dict[str, Any], topics: dict[str, Any] | None = None) -> Topology:
    return parse_topology({"application": "a", "programs": list(programs), "topics": topics or {}})


#: a -> v1 -> y, b -> v2 -> y; y -> w -> g; g -> r: y's count is v1's task count (its first writer).
TWO_WRITERS = (
    _program("v1", ["a"], "y"),
    _program("v2", ["b"], "y"),
    _program("w", ["y"], "g"),
    _program("r", ["g"], "out"),
)
#: x -> v (wall clock) -> y -> w -> g -> r, and a cycle c <-> d feeding w as well.
CHAIN = (
    _program("v", ["x"], "y", clock="wall"),
    _program("w", ["y", "c"], "g"),
    _program("cy", ["d"], "c"),
    _program("dy", ["c"], "d"),
    _program("r", ["g"], "out"),
)


def _unknown_in_plan(topo: Topology, reader: str, counts: dict[str, int]) -> set[str]:
    """The topics the reader's plan took as 1 for want of a count, besides its own inputs (those
    the worker awaits as inputs)."""
    unknown: list[str] = []
    cfg = topo.program(reader)
    progress_plan(topo, cfg, topology_partitions(topo, counts, unknown=unknown))
    return set(unknown) - {i.topic for i in cfg.inputs}


@pytest.mark.parametrize("programs", [TWO_WRITERS, CHAIN], ids=["two-writers", "chain-and-cycle"])
@pytest.mark.parametrize("counts", [{}, {"a": 4}, {"y": 2}, {"x": 3, "b": 2}])
def test_a_reader_awaits_exactly_the_counts_its_plan_lacks(programs: tuple[Any, ...], counts: dict[str, int]) -> None:
    topo = _topology(*programs)
    awaited = counts_awaited(topo, topo.program("r"), counts)
    assert set(awaited) == _unknown_in_plan(topo, "r", counts)
    assert _unknown_in_plan(topo, "r", {**counts, **dict.fromkeys(awaited, 5)}) == set()  # then none


def test_a_topic_written_twice_takes_its_first_writers_task_count() -> None:
    topo = _topology(*TWO_WRITERS)
    assert list(counts_awaited(topo, topo.program("r"), {})) == ["a"]  # (not b: the plan never reads it)
    assert "the programs writing g program r waits on" in counts_awaited(topo, topo.program("r"), {})["a"]
    assert topology_partitions(topo, {"a": 4, "b": 2})("y") == 4
    declared = _topology(*TWO_WRITERS, topics={"y": {"partitions": 3}})
    assert counts_awaited(declared, declared.program("r"), {}) == {}
