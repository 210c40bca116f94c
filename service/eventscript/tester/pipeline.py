"""Runs programs over a timed trace in simulated time (language document §6.5, Fig. 13).

A pipeline is the chain topology of the simulated host (``tester.host``): the trace's events go
to the first stage; an emitted event of stage k is fed to stage k+1 at once; the last stage's
events and every stage's ``$error`` events are the output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..automata.compiled import CompiledProgram
from ..engine.events import ERROR_EVENT, Emitted
from .host import Delivery, HostedProgram, SimulatedHost, feed_emitted, output_json, timed_events
from .trace import TraceItem

__all__ = ["OutputLine", "Pipeline", "feed_emitted", "run_trace", "timed_events"]


@dataclass
class OutputLine:
    event: Emitted
    stage: int
    last_stage: bool
    key_types: list[Any] | None

    def to_json(self) -> dict[str, Any]:
        e = self.event
        out = output_json(e, self.key_types)
        if e.name == ERROR_EVENT and not self.last_stage:
            out["program"] = e.program
        return out


class Pipeline(SimulatedHost):
    """Engines chained stage to stage, sharing one simulated clock."""

    def __init__(
        self, programs: list[CompiledProgram], sink: Callable[[OutputLine], None], names: list[str] | None = None
    ) -> None:
        self.programs = programs
        self.sink = sink
        self.names = names or [p.name for p in programs]
        self._last = len(programs) - 1
        self._key_types = [p.program.key_types for p in programs]
        #: Where each stage's events go, by name: made on first use (one per name, not per event).
        self._next: list[dict[str, Sequence[Delivery]]] = [{} for _ in programs]
        super().__init__([HostedProgram(p, n) for p, n in zip(programs, self.names)])

    def trace_readers(self, name: str) -> Sequence[Delivery]:
        return (Delivery(0, name),)

    def only_reader(self) -> int | None:
        return 0

    def destinations(self, stage: int, event: Emitted) -> Sequence[Delivery] | None:
        if stage == self._last or event.name == ERROR_EVENT:
            return None
        to = self._next[stage].get(event.name)
        if to is None:
            to = self._next[stage][event.name] = (Delivery(stage + 1, event.name),)
        return to

    def output(self, stage: int, event: Emitted) -> None:
        self.sink(OutputLine(event, stage, stage == self._last, self._key_types[stage]))


def run_trace(
    programs: list[CompiledProgram],
    items: list[TraceItem],
    sink: Callable[[OutputLine], None],
    names: list[str] | None = None,
) -> Pipeline:
    """Run the trace ``items`` through the pipeline of ``programs``: one ``feed_many`` call of
    the first stage reads them all (``SimulatedHost.run``)."""
    pipe = Pipeline(programs, sink, names)
    pipe.run(items)
    return pipe
