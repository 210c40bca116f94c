"""A whole topology over a timed trace, in simulated time (``eventscript test TOPOLOGY.yaml``).

This is the pipeline tester of the language document (§6.5) run on the file that deploys: the
simulated host of ``eventscript test PROGRAM...`` (``tester.host``: one simulated clock, so timers
of all programs fire in one global order) wired by the topology. A trace event goes to every
program that reads it from a source topic (a topic no program writes); an emitted event goes to
the topic the program's ``outputs:`` map names, and from there to every program reading that
topic (fan-out), as the event name the reader's input setting gives it. Events on topics nobody
in the topology reads, and every ``$error``, are the output — each line also names its topic
and program.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from ..engine.events import ERROR_EVENT, Emitted
from ..topology.model import Read, TopologyGraph
from .host import Delivery, HostedProgram, SimulatedHost, output_json
from .trace import TraceItem


@dataclass
class TopicLine:
    """One output record of the simulated topology."""

    event: Emitted
    topic: str | None
    key_types: list[Any] | None

    def to_json(self) -> dict[str, Any]:
        e = self.event
        out = output_json(e, self.key_types)
        out["program"] = e.program
        if self.topic is not None:
            out["topic"] = self.topic
        return out


def source_reads(graph: TopologyGraph) -> dict[str, list[Read]]:
    """For each trace event name, the reads of the programs that take it from a source topic (a
    topic no program writes; one read per program, the first): a read with a fixed event takes
    that name, another every name the topic's declaration lists, or else every input its program
    declares."""
    sources: dict[str, list[Read]] = {}
    for topic in graph.external_topics:
        for rd in graph.reads[topic]:
            names = [rd.config.event] if rd.config.event else graph.source_events(topic) or list(rd.stage.inputs)
            for name in names:
                reads = sources.setdefault(name, [])
                if all(r.stage.index != rd.stage.index for r in reads):
                    reads.append(rd)
    return sources


class TopologySimulation(SimulatedHost):
    """The simulated host (``tester.host``) wired by the topology's topic map: program i of the
    host is the topology's stage i."""

    def __init__(self, graph: TopologyGraph, sink: Callable[[TopicLine], None]) -> None:
        bad = [s.name for s in graph.stages if not s.ok]
        if bad:
            raise ValueError(f"programs that do not compile: {', '.join(bad)}")
        self.graph = graph
        self.sink = sink
        hosted = []
        for i, st in enumerate(graph.stages):
            assert st.index == i, "a topology's stages are numbered in order"
            compiled = st.compilation.program if st.compilation is not None else None
            assert compiled is not None
            hosted.append(HostedProgram(compiled, st.name, ZoneInfo(st.config.timezone)))
        super().__init__(hosted)
        self._key_types = [p.compiled.program.key_types for p in hosted]
        #: For each trace event name: the programs reading it from a source topic.
        self.sources: dict[str, list[Delivery]] = {
            name: [Delivery(rd.stage.index, name) for rd in reads] for name, reads in source_reads(graph).items()
        }

    def _topic(self, stage: int, e: Emitted) -> str | None:
        cfg = self.graph.stages[stage].config
        return cfg.error_topic if e.name == ERROR_EVENT else cfg.output_topic(e.name)

    def trace_readers(self, name: str) -> Sequence[Delivery]:
        return self.sources.get(name, ())

    def destinations(self, stage: int, event: Emitted) -> Sequence[Delivery] | None:
        topic = self._topic(stage, event)
        if topic is None:
            return ()  # routed nowhere: the worker drops it too ('topology check' warns)
        readers = self.graph.reads.get(topic, [])
        if not readers or event.name == ERROR_EVENT:
            return None
        return [Delivery(rd.stage.index, name) for rd in readers if (name := rd.name_of(event.name)) is not None]

    def output(self, stage: int, event: Emitted) -> None:
        self.sink(TopicLine(event, self._topic(stage, event), self._key_types[stage]))


def simulate(graph: TopologyGraph, items: list[TraceItem], sink: Callable[[TopicLine], None]) -> TopologySimulation:
    """Run ``items`` through the topology; raises :class:`TraceError` for a timestamp going back."""
    sim = TopologySimulation(graph, sink)
    sim.run(items)
    return sim
