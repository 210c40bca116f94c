"""Runs programs over a timed trace in simulated time (language document §6.5, Fig. 13).

A pipeline is the chain topology of the simulated host (``tester.host``): the trace's events go
to the first program (topic ``trace``); program k writes every output to topic ``link-k+1``,
which program k+1 reads, every event under its own name (the ``es-event`` header), keyed or not
as program k keys it; the last program's events (topic ``results``) and every program's
``$error`` events are the output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..automata.compiled import CompiledProgram
from ..engine.events import ERROR_EVENT
from ..task import codec
from ..task.record import PlainRecord
from ..topology.config import InputConfig, NameFrom, ProgramConfig
from .host import HostOutput, SimProgram, SimulatedHost, timed_events
from .trace import TraceItem

__all__ = ["OutputLine", "Pipeline", "chain_configs", "run_trace", "timed_events"]


@dataclass
class OutputLine:
    """An output of the pipeline: ``output`` (the host's), from program ``stage``, named ``program``."""

    output: HostOutput
    last_stage: bool
    program: str

    @property
    def stage(self) -> int:
        return self.output.stage

    @property
    def record(self) -> PlainRecord | None:
        """The record the program's task sent (its ``es-id`` and headers); None: the host's own."""
        return self.output.record

    def to_json(self) -> dict[str, Any]:
        line = self.output.line
        if line["event"] == ERROR_EVENT and not self.last_stage:
            return {**line, "program": self.program}
        return dict(line)


CHAIN_ERRORS = "errors"


def chain_configs(programs: Sequence[CompiledProgram], names: Sequence[str]) -> list[ProgramConfig]:
    """A pipeline as a chain topology: program k reads topic ``link-k`` (the first, ``trace``),
    every event under its own name (the ``es-event`` header), keyed or not as its writer keys
    it (``keyed: false``: a pipeline's link takes what its writer emits), and writes every output
    to the next link (the last, ``results``)."""
    last = len(programs) - 1
    return [
        ProgramConfig(
            name=name,
            source=f"{name}.es",
            inputs=[
                InputConfig(
                    topic="trace" if k == 0 else f"link-{k}",
                    event_from=NameFrom(header=codec.HEADER_EVENT),
                    keyed=False,
                )
            ],
            outputs={"default": "results" if k == last else f"link-{k + 1}"},
            errors=CHAIN_ERRORS,
        )
        for k, name in enumerate(names)
    ]


class Pipeline(SimulatedHost):
    """Programs chained one to the next, each run as a task, sharing one simulated clock."""

    def __init__(
        self, programs: list[CompiledProgram], sink: Callable[[OutputLine], None], names: list[str] | None = None
    ) -> None:
        self.sink = sink
        self.names = names or [p.name for p in programs]
        self._last = len(programs) - 1
        configs = chain_configs(programs, self.names)
        self._first = ((0, configs[0].inputs[0]),)
        super().__init__([SimProgram(p, c) for p, c in zip(programs, configs)], ["trace"])

    def trace_readers(self, name: str) -> Sequence[tuple[int, InputConfig]]:
        return self._first

    def output(self, out: HostOutput) -> None:
        self.sink(OutputLine(out, out.stage == self._last, self.names[out.stage]))


def run_trace(
    programs: list[CompiledProgram],
    items: list[TraceItem],
    sink: Callable[[OutputLine], None],
    names: list[str] | None = None,
) -> Pipeline:
    """Run the trace ``items`` through the pipeline of ``programs``."""
    pipe = Pipeline(programs, sink, names)
    pipe.run(items)
    return pipe
