"""Which topics of a topology carry progress markers, and who writes them (``task/progress.py``).

A program on record time writes markers on every topic it writes that a program reads; a reader
on record time waits on a topic (is *gated* there) when every program writing it is on record
time, and then needs a marker from each of their tasks (where each writer task ``t`` writes only
partition ``t``, ``keyed.writes_own_partition``, partition ``t``'s watermark follows the tasks
``t`` alone while they are not idle: ``InputProgress.own``). A program's task count is its
inputs' partition count, so the plan needs only the partition count of each topic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .config import ProgramConfig, Topology
from .keyed import keeps_upstream_key, writes_own_partition

if TYPE_CHECKING:
    from ..language.ir import ProgramIR


@dataclass(frozen=True)
class ProgressPlan:
    """The markers of one program's tasks: what they write and what they wait on."""

    program: str
    tasks: int
    #: Topic → partition count: the topics its tasks write markers on.
    outputs: dict[str, int] = field(default_factory=dict)
    #: Input topic → the writers ("program/task") it is gated on.
    writers: dict[str, frozenset[str]] = field(default_factory=dict)
    #: Input topics other programs write (their records may be markers, gated or not).
    marked: frozenset[str] = frozenset()
    #: The tasks mark their progress on the program's repartition topic, and wait on it: they
    #: re-publish each other's records ahead (``Task.forward_ahead``). Not where every record
    #: read is on its key's task already (``keyed.keeps_upstream_key``).
    repartition: bool = False
    #: The program is on record time with markers: its tasks merge their source partitions in
    #: record-time order (``PartitionGroup.order_sources``), on one task as on several.
    record: bool = False
    #: Gated input topics whose partition ``p`` only the writers' tasks ``p`` write
    #: (``keyed.writes_own_partition``): their progress moves its watermark (``owners_of``).
    placed: frozenset[str] = frozenset()

    def owners_of(self, topic: str, partition: int) -> frozenset[str] | None:
        """The writers whose records partition ``partition`` of gated input ``topic`` holds,
        where not every writer of the topic (None: all of them, or not gated): on a ``placed``
        topic, the tasks numbered ``partition`` (``InputProgress.own``)."""
        writers = self.writers.get(topic)
        if writers is None or topic not in self.placed:
            return None
        suffix = f"/{partition}"
        return frozenset(w for w in writers if w.endswith(suffix))


def _writes(cfg: ProgramConfig) -> set[str]:
    return {*cfg.outputs.values(), cfg.error_topic}


def progress_plan(
    topo: Topology,
    cfg: ProgramConfig,
    partitions_of: Callable[[str], int],
    programs: Mapping[str, ProgramIR] | None = None,
) -> ProgressPlan:
    """The plan of program ``cfg``; ``partitions_of(topic)`` is a topic's partition count.
    ``programs``: the topology's compiled programs by name, which may show that the program's
    tasks need not re-publish each other's records (``keeps_upstream_key``); without them
    they do. (Every worker of a program must be given the same: they wait on each other.)"""

    def tasks_of(p: ProgramConfig) -> int:
        return max((partitions_of(i.topic) for i in p.inputs), default=1)

    read = {i.topic for p in topo.programs for i in p.inputs}
    record = cfg.clock == "record" and topo.event_time_markers
    tasks = tasks_of(cfg)
    outputs = {t: partitions_of(t) for t in sorted(_writes(cfg) & read)} if record else {}
    writers: dict[str, frozenset[str]] = {}
    marked: set[str] = set()
    placed: set[str] = set()
    for inp in cfg.inputs:
        upstream = [p for p in topo.programs if inp.topic in _writes(p)]
        if not upstream:
            continue
        marked.add(inp.topic)
        if record and all(p.clock == "record" for p in upstream):
            writers[inp.topic] = frozenset(f"{p.name}/{t}" for p in upstream for t in range(tasks_of(p)))
            if programs and all(
                writes_own_partition(p, programs.get(p.name), inp.topic, partitions_of) for p in upstream
            ):
                placed.add(inp.topic)
    repartition = record and tasks > 1 and not (programs and keeps_upstream_key(topo, cfg, programs, partitions_of))
    if repartition:
        # Not where the tasks re-publish each other's records: there a task's repartition marker
        # vouches for its source partition to the other tasks, which then ran ahead of its writer's
        # records (tests/task/test_idle_pause.py, sector-divergence: a breakout's order swapped).
        placed.clear()
    return ProgressPlan(
        cfg.name, tasks, outputs, writers, frozenset(marked), repartition, record, placed=frozenset(placed)
    )


def counts_awaited(topo: Topology, cfg: ProgramConfig, counts: Mapping[str, int]) -> dict[str, str]:
    """The topics whose partition count program ``cfg``'s plan needs and nothing gives yet
    (``counts``: the brokers' partition counts), each with why. A reader gated on a topic waits on
    a marker from each task of its writers, whose task count is their inputs' partition count
    (``topology_partitions``: the brokers', or the topology's ``topics:``, or for a topic not
    there yet that a program writes, that program's task count in turn). Only where that chain
    ends at a topic written by no program, neither on the brokers nor declared, is the count
    unknown: a worker started then took it as 1 and waited on too few writers, releasing a later
    writer's records without waiting on its progress; it waits for such topics instead, as for
    its own inputs (``Admin.await_inputs``)."""
    if not (cfg.clock == "record" and topo.event_time_markers):
        return {}
    needed: dict[str, str] = {}
    for inp in cfg.inputs:
        upstream = [p for p in topo.programs if inp.topic in _writes(p)]
        if not upstream or not all(p.clock == "record" for p in upstream):
            continue
        unknown: list[str] = []
        partitions_of = topology_partitions(topo, counts, unknown=unknown)
        for writer in upstream:
            for w_inp in writer.inputs:
                partitions_of(w_inp.topic)  # (the writer's task count, as progress_plan reads it)
        why = f"its partition count sets how many tasks of the programs writing {inp.topic} program {cfg.name} waits on"
        for topic in unknown:
            needed.setdefault(topic, why)
    return needed


def upstream_inputs(
    topo: Topology, plan: ProgressPlan, partitions_of: Callable[[str], int]
) -> dict[str, tuple[int, str, str]]:
    """The inputs of the programs writing the topics ``plan`` is gated on, each with its partition
    count (the writer's task count, which the reader waits on), the writer and the gated topic:
    what a reader watches while it runs (``kafka/input_partitions.py``)."""
    out: dict[str, tuple[int, str, str]] = {}
    for gated in sorted(plan.writers):
        for p in topo.programs:
            if gated in _writes(p):
                for inp in p.inputs:
                    out.setdefault(inp.topic, (partitions_of(inp.topic), p.name, gated))
    return out


def topology_partitions(
    topo: Topology, counts: Mapping[str, int] | None = None, unknown: list[str] | None = None
) -> Callable[[str], int]:
    """A topic's partition count: the broker's (``counts``) where known, else the topology's
    ``topics:``, else its writer's task count (the worker creates undeclared outputs so), else 1.
    ``unknown``, where given, is told each topic taken as 1 for want of any of these (no program
    writes it): what a worker waits for before it plans (``counts_awaited``)."""
    counts = counts or {}

    def partitions_of(topic: str, seen: frozenset[str] = frozenset()) -> int:
        if topic in counts:
            return counts[topic]
        spec = topo.topics.get(topic)
        if spec is not None:
            return spec.partitions
        written = False
        for p in topo.programs:
            if topic in _writes(p):
                written = True
                if p.inputs and topic not in seen:
                    return max(partitions_of(i.topic, seen | {topic}) for i in p.inputs)
        if unknown is not None and not written:
            unknown.append(topic)
        return 1

    return partitions_of
