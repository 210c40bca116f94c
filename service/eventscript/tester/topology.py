"""A whole topology over a timed trace, in simulated time (``eventscript test TOPOLOGY.yaml``).

This is the pipeline tester of the language document (§6.5) run on the file that deploys: the
simulated host of ``eventscript test PROGRAM...`` (``tester.host``: each program run as the
worker's task, one simulated clock, so timers of all programs fire in one global order) wired by
the topology's own configuration. A trace event goes to every program that reads it from a
source topic (a topic no program writes); an emitted event goes to the topic the program's
``outputs:`` map names, and from there to every program reading that topic (fan-out, in
topology order), decoded as that reader's input settings say. Events on topics nobody in the
topology reads, and every ``$error``, are the output — each line also names its topic and program.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..task.record import PlainRecord
from ..topology.config import InputConfig
from ..topology.model import Read, TopologyGraph
from .host import HostOutput, SimProgram, SimulatedHost
from .trace import TraceItem


@dataclass
class TopicLine:
    """One output record of the simulated topology: ``output`` (the host's), of ``program``."""

    output: HostOutput
    program: str

    @property
    def topic(self) -> str:
        return self.output.topic

    @property
    def record(self) -> PlainRecord | None:
        """The record the program's task sent (its ``es-id`` and headers); None: the host's own."""
        return self.output.record

    def to_json(self) -> dict[str, Any]:
        return {**self.output.line, "program": self.program, "topic": self.output.topic}


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
    """The simulated host (``tester.host``) wired by the topology: program i of the host is the
    topology's stage i, run with its own configuration."""

    def __init__(self, graph: TopologyGraph, sink: Callable[[TopicLine], None]) -> None:
        bad = [s.name for s in graph.stages if not s.ok]
        if bad:
            raise ValueError(f"programs that do not compile: {', '.join(bad)}")
        self.graph = graph
        self.sink = sink
        programs = []
        for i, st in enumerate(graph.stages):
            assert st.index == i, "a topology's stages are numbered in order"
            compiled = st.compilation.program if st.compilation is not None else None
            assert compiled is not None
            programs.append(SimProgram(compiled, st.config))
        #: For each trace event name: the programs reading it from a source topic, and the input.
        self.sources: dict[str, list[tuple[int, InputConfig]]] = {
            name: [(rd.stage.index, rd.config) for rd in reads] for name, reads in source_reads(graph).items()
        }
        super().__init__(programs, graph.external_topics)

    def trace_readers(self, name: str) -> Sequence[tuple[int, InputConfig]]:
        return self.sources.get(name, ())

    def output(self, out: HostOutput) -> None:
        self.sink(TopicLine(out, self.graph.stages[out.stage].name))


def simulate(graph: TopologyGraph, items: list[TraceItem], sink: Callable[[TopicLine], None]) -> TopologySimulation:
    """Run ``items`` through the topology; raises :class:`TraceError` for a timestamp going back."""
    sim = TopologySimulation(graph, sink)
    sim.run(items)
    return sim
