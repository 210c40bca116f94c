"""A trace run with every step recorded, through the tester's hosts: the pipeline of programs
(``eventscript test PROGRAM...``) or a whole topology (``eventscript test TOPOLOGY.yaml``). The
hosts run as they do for ``eventscript test``, one event at a time, so the state after event n
is the one the tester has after event n."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..automata.compiled import CompiledProgram
from ..tester.pipeline import OutputLine, Pipeline, timed_events
from ..tester.trace import TraceItem, event_argument
from .recorder import StepRecorder


@dataclass
class Recording:
    """The steps and outputs of a run, and the stages' names."""

    recorder: StepRecorder
    names: list[str]

    @property
    def steps(self) -> list[Any]:
        return self.recorder.steps

    @property
    def outputs(self) -> list[dict[str, Any]]:
        return self.recorder.outputs


def _drive(host: Any, items: Iterable[TraceItem]) -> None:
    for item in timed_events(items, host.start, host.clock.now, host.clock.advance_to):
        host.feed_trace_event(item.name, event_argument(item))


def record_pipeline(
    programs: list[CompiledProgram],
    items: Iterable[TraceItem],
    names: list[str] | None = None,
    before_step: Callable[[StepRecorder], None] | None = None,
) -> Recording:
    """Run ``items`` through the pipeline of ``programs``, recording each step. Raises what the
    tester raises (``TraceError``), and whatever ``before_step`` raises to stop the run."""
    box: list[StepRecorder] = []

    def sink(line: OutputLine) -> None:
        box[0].output(line.to_json())

    pipe = Pipeline(programs, sink, names)
    box.append(StepRecorder(pipe.engines, before_step))
    recording = Recording(box[0], names or [p.name for p in programs])
    _drive(pipe, items)
    return recording


def record_topology(
    graph: Any, items: Iterable[TraceItem], before_step: Callable[[StepRecorder], None] | None = None
) -> Recording:
    """Run ``items`` through a topology (``topology.model.TopologyGraph``), recording each step."""
    from ..topology.simulate import TopicLine, TopologySimulation

    box: list[StepRecorder] = []

    def sink(line: TopicLine) -> None:
        box[0].output(line.to_json())

    sim = TopologySimulation(graph, sink)
    stages = list(graph.stages)
    box.append(StepRecorder([sim.engines[st.index] for st in stages], before_step))
    recording = Recording(box[0], [st.name for st in stages])
    _drive(sim, items)
    return recording
