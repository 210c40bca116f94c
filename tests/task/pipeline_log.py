"""A topology's tasks run in one process over an in-memory log, in a random schedule.

Each topic partition is a list of records; tasks write through ``send`` (a record with partition
-1 goes where Kafka's murmur2 partitioner puts its key) and read their input partitions at their
own pace: a random task takes a random number of the records waiting for it, processes what its
merge releases, moves to its inputs' frontier, and now and then writes its progress markers as a
commit would. A schedule is one interleaving a broker could produce; the outputs of every
schedule must be the simulated run's (task/progress.py).
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from eventscript.task.codec import HEADER_ID, header, record_to_json
from eventscript.task.partitioner import murmur2_partition
from eventscript.task.task import Task
from eventscript.tester.trace import read_trace
from eventscript.topology.config import ProgramConfig, TopicSpec, Topology
from eventscript.topology.model import TopologyGraph, build_graph
from eventscript.topology.progress import progress_plan, topology_partitions

from .task_helpers import PlainRecord, build_task


class MemoryLog:
    """Topic → partitions → records; also the ``Producer`` stand-in ``produce_trace`` writes to."""

    def __init__(self, partitions_of: Any) -> None:
        self.partitions_of = partitions_of
        self.topics: dict[str, list[list[PlainRecord]]] = {}

    def partition_list(self, topic: str) -> list[list[PlainRecord]]:
        if topic not in self.topics:
            self.topics[topic] = [[] for _ in range(self.partitions_of(topic))]
        return self.topics[topic]

    def send(
        self, topic: str, partition: int, key: bytes | None, value: bytes | None, headers: Any, ts: int, changelog: bool
    ) -> None:
        if changelog:
            return
        parts = self.partition_list(topic)
        if partition < 0:
            partition = murmur2_partition(key, len(parts)) if key is not None else 0
        part = parts[partition]
        part.append(PlainRecord(topic, partition, len(part), ts, key, value, list(headers or []) or None))

    # -- the confluent_kafka.Producer calls of produce_trace --

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = -1,
        timestamp: int = 0,
        headers: Any = None,
        on_delivery: Any = None,
    ) -> None:
        self.send(topic, partition, key, value, headers, timestamp, False)

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0


def with_partitions(topo: Topology, counts: dict[str, int]) -> Topology:
    """The topology with these partition counts (every other topic: as declared)."""
    topo = topo.model_copy(deep=True)
    for topic, n in counts.items():
        spec = topo.topics.get(topic)
        topo.topics[topic] = spec.model_copy(update={"partitions": n}) if spec is not None else TopicSpec(partitions=n)
    return topo


class PipelineRun:
    """Every task of every program of a topology, over one ``MemoryLog``."""

    def __init__(self, topo: Topology, file: Path, store: Path, commit_markers_first: bool = False) -> None:
        """``commit_markers_first``: the tasks' markers reach readers only as they commit, as the
        Kafka host's (``Task.set_progress``): the caller commits a task that asks
        (``Task.wants_commit``)."""
        self.topo = topo
        self.graph: TopologyGraph = build_graph(topo, file)
        self.partitions_of = topology_partitions(topo)
        self.log = MemoryLog(self.partitions_of)
        #: (task, its read cursors "topic" → next offset)
        self.tasks: list[tuple[Task, dict[str, int]]] = []
        # (every program's text, as the worker's: a stage that keeps its upstream's key re-publishes nothing)
        programs = {st.config.name: st.compilation.program.program for st in self.graph.stages}  # type: ignore[union-attr]
        for st in self.graph.stages:
            cfg = st.config
            plan = progress_plan(topo, cfg, self.partitions_of, programs)
            program = st.compilation.program  # type: ignore[union-attr]
            rep = topo.repartition_topic(cfg)
            self.log.topics[rep] = [[] for _ in range(plan.tasks)]
            for p in range(plan.tasks):
                task = build_task(
                    program,
                    cfg,
                    store / f"{cfg.name}-{p}",
                    partition=p,
                    tasks=plan.tasks,
                    repartition=rep,
                    changelog=topo.changelog_topic(cfg),
                )
                task.load_from_store()
                task.attach(self.log.send)
                task.set_progress(plan, commit_markers_first=commit_markers_first)
                self.tasks.append((task, {ip.topic: 0 for ip in task.inputs}))

    def publish(self, trace: Path) -> None:
        """The trace into the first program's inputs, as ``eventscript produce`` writes it."""
        import eventscript.kafka.tools as tools

        first: ProgramConfig = self.topo.programs[0]
        stage = self.graph.stages[0]
        real = tools.Producer
        tools.Producer = lambda conf: self.log  # type: ignore[assignment,misc]
        try:
            tools.produce_trace(
                self.topo.kafka,
                first,
                stage.compilation.program,  # type: ignore[union-attr]
                read_trace(str(trace)),
                self.partitions_of(first.inputs[0].topic),
            )
        finally:
            tools.Producer = real  # type: ignore[misc]

    def step(
        self, task: Task, cursors: dict[str, int], rng: random.Random, take_all: bool = False, mark: bool = True
    ) -> int:
        """One turn of one task; returns how much happened (records taken or processed, markers).
        ``mark``: now and then it writes its markers (False: the caller does, as it commits)."""
        happened = 0
        for topic in cursors:
            part = self.log.partition_list(topic)[task.partition]
            at = cursors[topic]
            n = len(part) - at if take_all else rng.randint(0, min(4, len(part) - at))
            for rec in part[at : at + n]:
                task.add(rec)
            cursors[topic] = at + n
            happened += n
            if at + n == len(part):  # as a consumer hears of a partition's end once it reaches it
                task.mark_eof(topic, task.partition)
        happened += task.process(0)
        happened += task.move_to_progress()
        if mark and (take_all or rng.random() < 0.3):
            happened += task.write_progress()
        return happened

    def run(self, seed: int, max_turns: int = 200_000) -> None:
        """Random turns, then full rounds until nothing more happens."""
        rng = random.Random(seed)
        for _ in range(max_turns // 10):
            task, cursors = rng.choice(self.tasks)
            self.step(task, cursors, rng)
        for _ in range(max_turns):
            if not sum(self.step(task, cursors, rng, take_all=True) for task, cursors in self.tasks):
                return
        raise AssertionError("the pipeline did not come to rest")

    def held_back(self) -> int:
        return sum(task.held_back for task, _ in self.tasks)

    def results(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """The records of the result and $error topics (markers left out), per topic and key, in
        the order each key's records were written; each with its ``es-id``."""
        out: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        topics = [*self.graph.sink_topics, *(t for t in self.graph.error_writers if t not in self.graph.sink_topics)]
        for topic in topics:
            for part in self.log.topics.get(topic, []):
                for rec in part:
                    line = record_to_json(rec)
                    line["es-id"] = (header(rec.headers(), HEADER_ID) or b"").decode()
                    out[(topic, repr(line.get("key")))].append(line)
        for (_, key), lines in out.items():  # as on Kafka, where unkeyed records keep no order
            if key == "None":
                lines.sort(key=lambda x: (x["time"], x["es-id"]))
        return dict(out)
