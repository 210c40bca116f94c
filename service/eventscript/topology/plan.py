"""``eventscript topology plan``: every topic a topology needs, and what exists already.

The worker creates these topics itself at start (``kafka/admin.py``); the plan shows them ahead
of time, for review and for clusters where topics are created by operators. The rules are the
worker's: declared topics as declared; each program's repartition topic (delete) and changelog
topic (compact) with its inputs' partition count; undeclared output and error topics with that
count too. ``--apply`` creates what is missing and never changes an existing topic: a partition
count that differs from the plan is reported and nothing is created, since changing it would move
keys between partitions and strand the programs' state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .config import TopicSpec
from .errors import partitions_word
from .model import TopologyGraph


@dataclass
class PlannedTopic:
    name: str
    role: str  # source, link, output, errors, repartition, changelog
    partitions: int | None  # None: taken from the inputs' topics on the broker
    replication: int | None  # None: the broker's default.replication.factor
    cleanup: str
    declared: bool
    existing: int | None = None  # partitions on the broker, when one was asked
    config: dict[str, str] = field(default_factory=dict)  # topic settings given at creation

    @property
    def conflict(self) -> bool:
        return self.existing is not None and self.partitions is not None and self.existing != self.partitions

    def spec(self) -> TopicSpec:
        return TopicSpec(partitions=self.partitions or 1, replication=self.replication, config=dict(self.config))


def _role(graph: TopologyGraph, topic: str) -> str:
    if topic in graph.error_writers and topic not in graph.writes:
        return "errors"
    if topic in graph.writes and topic in graph.reads:
        return "link"
    if topic in graph.writes:
        return "output"
    if topic in graph.reads:
        return "source"
    return "declared"


def plan(graph: TopologyGraph, existing: dict[str, int] | None = None) -> list[PlannedTopic]:
    """The topics of the topology, in the order: declared and wired topics, then internal ones."""
    topo = graph.topology
    specs = topo.topics
    out: dict[str, PlannedTopic] = {}

    resolving: set[str] = set()

    def topic_partitions(topic: str) -> int | None:
        """Declared, else on the broker, else what the worker creates it with: its writer's
        partition count (so a chain of undeclared links follows its first declared source)."""
        if topic in specs:
            return specs[topic].partitions
        if existing is not None and topic in existing:
            return existing[topic]
        writer = next(
            (w.stage.index for w in graph.writes.get(topic, [])),
            next((s.index for s in graph.error_writers.get(topic, [])), None),
        )
        if writer is None or topic in resolving:
            return None
        resolving.add(topic)
        try:
            return program_partitions(writer)
        finally:
            resolving.discard(topic)

    def program_partitions(stage_index: int) -> int | None:
        counts = [n for n in (topic_partitions(i.topic) for i in topo.programs[stage_index].inputs) if n is not None]
        return max(counts) if counts else None

    def replication(stage_index: int) -> int | None:
        cfg = topo.programs[stage_index]
        given = [specs[i.topic].replication for i in cfg.inputs if i.topic in specs]
        known = [r for r in given if r is not None]
        return max(known) if known else getattr(topo, "replication", None)

    for topic in graph.all_topics():
        role = _role(graph, topic)
        if topic in specs:
            s = specs[topic]
            out[topic] = PlannedTopic(
                topic,
                role,
                s.partitions,
                s.replication or getattr(topo, "replication", None),
                s.config.get("cleanup.policy", "delete"),
                True,
                config=dict(s.config),
            )
            continue
        writer = next(
            (w.stage.index for w in graph.writes.get(topic, [])),
            next((s.index for s in graph.error_writers.get(topic, [])), None),
        )
        if writer is None:  # a source topic nobody declared: it must exist already
            reader = graph.reads[topic][0].stage.index
            out[topic] = PlannedTopic(topic, role, None, replication(reader), "delete", False)
        else:
            out[topic] = PlannedTopic(topic, role, topic_partitions(topic), replication(writer), "delete", False)
    retention = getattr(topo, "repartition_retention_ms", None)
    repartition = {"cleanup.policy": "delete", **({"retention.ms": str(retention)} if retention else {})}
    for st in graph.stages:
        parts = program_partitions(st.index)
        for name, role, config in (
            (topo.repartition_topic(st.config), "repartition", repartition),
            (topo.changelog_topic(st.config), "changelog", {"cleanup.policy": "compact"}),
        ):
            out[name] = PlannedTopic(
                name, role, parts, replication(st.index), config["cleanup.policy"], False, config=config
            )
    if existing is not None:
        for t in out.values():
            t.existing = existing.get(t.name)
    return list(out.values())


def render(topics: list[PlannedTopic], with_broker: bool) -> str:
    rows = [["topic", "role", "partitions", "replication", "cleanup", *(["on the broker"] if with_broker else [])]]
    for t in topics:
        row = [
            t.name,
            t.role,
            "?" if t.partitions is None else str(t.partitions),
            _replication_text(t.replication),
            t.cleanup,
        ]
        if with_broker:
            if t.existing is None:
                row.append("missing" if t.role != "source" else "missing (a source: create it or feed it)")
            elif t.conflict:
                row.append(f"exists with {partitions_word(t.existing)}: CONFLICT (plan says {t.partitions})")
            else:
                row.append(f"exists ({partitions_word(t.existing)})")
        elif t.partitions is None:
            row[2] = "? (from the broker)"
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def _replication_text(r: int | None) -> str:
    return "default" if r is None else str(r)


class AdminLike(Protocol):
    def partition_counts(self, timeout: float = 10.0) -> dict[str, int]: ...

    def create(self, topics: dict[str, TopicSpec]) -> None: ...


class PlanRefused(Exception):
    """Applying the plan would change existing topics; nothing was created."""


def apply(graph: TopologyGraph, admin: AdminLike) -> list[PlannedTopic]:
    """Create the missing topics of the plan; refuse (create nothing) when an existing topic's
    partition count differs from the plan. Returns the topics created."""
    existing = admin.partition_counts()
    topics = plan(graph, existing)
    conflicts = [t for t in topics if t.conflict]
    if conflicts:
        shown = "; ".join(f"{t.name} has {t.existing} partitions, the plan {t.partitions}" for t in conflicts)
        raise PlanRefused(
            f"refusing to change partition counts of existing topics ({shown}); nothing was created. "
            f"Fix 'partitions:' in the topology to match, or delete the topics (and the programs' "
            f"state) to start over"
        )
    missing_sources = [t.name for t in topics if t.existing is None and t.partitions is None and t.role == "source"]
    if missing_sources:
        raise PlanRefused(
            f"source topics {', '.join(missing_sources)} do not exist and their partition counts are "
            f"not declared; list them under 'topics:' with 'partitions:'"
        )
    missing = {t.name: t.spec() for t in topics if t.existing is None}
    admin.create(missing)
    return [t for t in topics if t.name in missing]
