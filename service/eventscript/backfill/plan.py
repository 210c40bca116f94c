"""What a backfill runs, fixed on the driver before any Spark task starts, and shipped to the tasks.

A plan names the program (its source text travels with it, so executors need no copy of the
topology's files), where the records come from, and *the cut*: for every Kafka partition p the
offset range [start, end) of each input topic's partition p. One Spark partition (one worker
task) per p; its reader stops exactly at each end. A plan is JSON, so it can be handed to the
data source as an option and read back on any executor.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..topology.progress import progress_plan


@dataclass(frozen=True)
class OffsetRange:
    """Records ``start <= offset < end`` of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def empty(self) -> bool:
        return self.end <= self.start


@dataclass(frozen=True)
class TaskSlice:
    """Partition p of every input topic: what one worker task (one Spark partition) reads."""

    partition: int
    ranges: list[OffsetRange]


@dataclass(frozen=True)
class ProgramSpec:
    name: str
    source_path: str
    source_text: str
    state_limit: int
    config_json: str  # ProgramConfig as JSON
    repartition_topic: str
    changelog_topic: str
    partitions: int  # of the (co-partitioned) input topics: the group-key routing modulus
    #: Whether its timers' outputs say what set them (``Task.name_timers``), as the program's
    #: worker tasks do where other programs read them: the records must be the worker's, byte
    #: for byte.
    names_timers: bool = False


@dataclass(frozen=True)
class SourceSpec:
    """kind "kafka": ``kafka`` = librdkafka consumer settings; kind "export": ``paths`` are
    Parquet or JSON-lines files of topic records (see ``export.py``)."""

    kind: str
    kafka: dict[str, Any] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Plan:
    program: ProgramSpec
    source: SourceSpec
    slices: list[TaskSlice]
    #: Record time (µs) up to which pending timers fire after the last record; None: none do.
    until_us: int | None = None
    #: Input records per Arrow batch handed to a task.
    batch_size: int = 10_000
    #: 0: one task per input partition (partition mode); N > 0: key-parallel mode, N key groups.
    key_groups: int = 0
    #: Whether each task ends by sending its final state (kind "state" rows) for ``--handover``.
    handover: bool = False
    #: 0 or 1: one task per input partition; S > 1 (with no key groups): key-split mode, S tasks
    #: per input partition, each reading the whole partition and running one key group
    #: (``key_split.py``).
    split: int = 0
    #: Tasks per input partition, slice by slice (key-split mode as ``auto_split`` balances it:
    #: some partitions whole, others split); empty: ``split`` for every slice.
    split_each: list[int] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> Plan:
        d = json.loads(text)
        return Plan(
            program=ProgramSpec(**d["program"]),
            source=SourceSpec(**d["source"]),
            slices=[TaskSlice(s["partition"], [OffsetRange(**r) for r in s["ranges"]]) for s in d["slices"]],
            until_us=d.get("until_us"),
            batch_size=d.get("batch_size", 10_000),
            key_groups=d.get("key_groups", 0),
            handover=d.get("handover", False),
            split=d.get("split", 0),
            split_each=d.get("split_each", []),
        )

    def splits_of(self, index: int) -> int:
        """Tasks that task slice ``index`` is split into (1: a partition-mode task)."""
        if self.key_groups:
            return 1
        s = self.split_each[index] if self.split_each else self.split
        return s if s > 1 else 1

    @property
    def splits(self) -> int:
        """The most tasks any input partition is split into: > 1 in key-split mode."""
        return max((self.splits_of(i) for i in range(len(self.slices))), default=1)

    @property
    def reads(self) -> int:
        """Spark partitions of the data source: ``splits_of`` each task slice, each reading it."""
        return sum(self.splits_of(i) for i in range(len(self.slices)))

    def read_at(self, read: int) -> tuple[int, int]:
        """(task slice, key group) of data source partition ``read``: the slices in order, each
        once per key group of its split."""
        for i in range(len(self.slices)):
            n = self.splits_of(i)
            if read < n:
                return i, read
            read -= n
        raise IndexError(f"data source partition {read} is past the plan's {self.reads}")

    def slice_of(self, read: int) -> TaskSlice:
        """The task slice that data source partition ``read`` reads."""
        return self.slices[self.read_at(read)[0]]

    @property
    def tasks(self) -> int:
        """How many tasks report a summary: one per input partition (``splits`` per partition in
        key-split mode), or one per key group."""
        return self.key_groups or self.reads

    @property
    def records(self) -> int:
        """How many offsets the cut covers (an upper bound on records: offsets may have gaps)."""
        return sum(max(0, r.end - r.start) for s in self.slices for r in s.ranges)


def program_spec(topo: Any, cfg: Any, partitions: int) -> ProgramSpec:
    """The spec of a topology's program (reads its source file)."""
    path: Path = topo.source_path(cfg)
    return ProgramSpec(
        name=cfg.name,
        source_path=str(path),
        source_text=path.read_text(encoding="utf-8"),
        state_limit=cfg.state_limit,
        config_json=cfg.model_dump_json(),
        repartition_topic=topo.repartition_topic(cfg),
        changelog_topic=topo.changelog_topic(cfg),
        partitions=partitions,
        names_timers=bool(progress_plan(topo, cfg, lambda _topic: partitions).outputs),
    )
