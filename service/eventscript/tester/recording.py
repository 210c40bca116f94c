"""A trace run with every step recorded (``explain.recorder``), through the tester's hosts: the
pipeline of programs (``eventscript test PROGRAM...``) or a whole topology (``eventscript test
TOPOLOGY.yaml``). The hosts run as they do for ``eventscript test``, one event at a time, so the
state after event n is the one the tester has after event n. (In ``tester/``, not ``explain/``:
``explain`` is read by the worker's state endpoint, below the hosts.)"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..automata.compiled import CompiledProgram
from ..explain.recorder import Recording, StepRecorder
from .pipeline import OutputLine, Pipeline
from .trace import TraceItem


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
    pipe.run(items)
    return recording


def record_topology(
    graph: Any, items: Iterable[TraceItem], before_step: Callable[[StepRecorder], None] | None = None
) -> Recording:
    """Run ``items`` through a topology (``topology.model.TopologyGraph``), recording each step."""
    from .topology import TopicLine, TopologySimulation

    box: list[StepRecorder] = []

    def sink(line: TopicLine) -> None:
        box[0].output(line.to_json())

    sim = TopologySimulation(graph, sink)
    stages = list(graph.stages)
    box.append(StepRecorder(sim.engines, before_step))
    recording = Recording(box[0], [st.name for st in stages])
    sim.run(items)
    return recording
