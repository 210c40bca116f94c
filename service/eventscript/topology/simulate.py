"""A whole topology over a timed trace, in simulated time (``eventscript test TOPOLOGY.yaml``).

This is the pipeline tester of the language document (§6.5) run on the file that deploys: one
:class:`SimulatedTimeProvider` drives every program, so timers of all programs fire in one
global order. A trace event goes to every program that reads it from a source topic (a topic no
program writes); an emitted event goes to the topic the program's ``outputs:`` map names, and
from there to every program reading that topic (fan-out), as the event name the reader's input
setting gives it. Events on topics nobody in the topology reads, and every ``$error``, are the
output — each line also names its topic and program.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from ..automata.compiled import CompiledProgram
from ..engine.encoding import DecodeError, decode, encode
from ..engine.engine import Engine
from ..engine.events import ERROR_EVENT, ERROR_TYPE, Emitted, ErrorCode
from ..engine.time_provider import SimulatedTimeProvider
from ..engine.timeutil import format_time
from ..tester.pipeline import feed_emitted, timed_events
from ..tester.trace import TraceItem, event_argument, typed_argument
from .model import Stage, TopologyGraph


@dataclass
class TopicLine:
    """One output record of the simulated topology."""

    event: Emitted
    topic: str | None
    key_types: list[Any] | None

    def to_json(self) -> dict[str, Any]:
        e = self.event
        out: dict[str, Any] = {"time": format_time(e.time), "event": e.name, "value": encode(e.value, e.ty)}
        if self.key_types is not None and e.key is not None:
            out["key"] = [encode(k, t) for k, t in zip(e.key, self.key_types)]
        out["program"] = e.program
        if self.topic is not None:
            out["topic"] = self.topic
        return out


class TopologySimulation:
    """Engines wired by the topology's topic map, sharing one simulated clock."""

    def __init__(self, graph: TopologyGraph, sink: Callable[[TopicLine], None]) -> None:
        bad = [s.name for s in graph.stages if not s.ok]
        if bad:
            raise ValueError(f"programs that do not compile: {', '.join(bad)}")
        self.graph = graph
        self.sink = sink
        self.clock = SimulatedTimeProvider()
        self.engines: dict[int, Engine] = {}
        for st in graph.stages:
            compiled = st.compilation.program  # type: ignore[union-attr]
            assert compiled is not None
            self.engines[st.index] = Engine(
                compiled, self._router(st, compiled), self.clock, name=st.name, tz=ZoneInfo(st.config.timezone)
            )
        #: For each trace event name: the programs reading it from a source topic.
        self.sources: dict[str, list[tuple[Stage, str]]] = {}
        for topic in graph.external_topics:
            for rd in graph.reads[topic]:
                names = [rd.config.event] if rd.config.event else graph.source_events(topic) or list(rd.stage.inputs)
                for name in names:
                    targets = self.sources.setdefault(name, [])
                    if all(s is not rd.stage for s, _ in targets):
                        targets.append((rd.stage, name))

    def _router(self, st: Stage, compiled: CompiledProgram) -> Callable[[Emitted], None]:
        key_types = compiled.program.key_types
        cfg = st.config

        def route(e: Emitted) -> None:
            topic = cfg.error_topic if e.name == ERROR_EVENT else cfg.output_topic(e.name)
            if topic is None:
                return  # routed nowhere: the worker drops it too ('topology check' warns)
            readers = self.graph.reads.get(topic, [])
            if not readers or e.name == ERROR_EVENT:
                self.sink(TopicLine(e, topic, key_types))
                return
            for rd in readers:
                name = rd.name_of(e.name)
                if name is not None:
                    self._feed(rd.stage, name, e.value, e.ty)

        return route

    def _feed(self, st: Stage, name: str, value: Any, ty: Any) -> None:
        declared = st.inputs.get(name)
        feed_emitted(self.engines[st.index], declared.ty if declared is not None else None, name, value, ty)

    def start(self, t: int) -> None:
        self.clock.set_now(t)
        for st in self.graph.stages:
            self.engines[st.index].start()
        self.clock.run_due()

    def feed_trace_event(self, name: str, raw: Any, where: object = None) -> None:
        targets = self.sources.get(name)
        if not targets:
            first = self.graph.stages[0]
            self.sink(
                TopicLine(
                    Emitted(
                        first.name,
                        ERROR_EVENT,
                        [ErrorCode.UNDECLARED_EVENT, f"no program reads {name} from a source topic"],
                        ERROR_TYPE,
                        self.clock.now(),
                        None,
                    ),
                    first.config.error_topic,
                    None,
                )
            )
            return
        for st, as_name in targets:
            declared = st.inputs.get(as_name)
            engine = self.engines[st.index]
            if declared is None:
                engine.feed(as_name, raw)  # reported as $error 1 by the engine
                continue
            try:
                value = decode(typed_argument(raw, declared.ty), declared.ty)
            except DecodeError as exc:
                self.sink(
                    TopicLine(
                        Emitted(
                            st.name,
                            ERROR_EVENT,
                            [ErrorCode.BAD_INPUT_VALUE, f"{where}: {name}: {exc}" if where else f"{name}: {exc}"],
                            ERROR_TYPE,
                            self.clock.now(),
                            None,
                        ),
                        st.config.error_topic,
                        None,
                    )
                )
                continue
            engine.feed(as_name, value)
        self.clock.run_due()


def simulate(graph: TopologyGraph, items: list[TraceItem], sink: Callable[[TopicLine], None]) -> TopologySimulation:
    """Run ``items`` through the topology; raises :class:`TraceError` for a timestamp going back."""
    sim = TopologySimulation(graph, sink)
    for item in timed_events(items, sim.start, sim.clock.now, sim.clock.advance_to):
        sim.feed_trace_event(item.name, event_argument(item), item.pos)
    return sim
