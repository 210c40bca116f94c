"""Runs programs over a timed trace in simulated time (language document §6.5, Fig. 13).

One :class:`SimulatedTimeProvider` drives every stage of a pipeline, so timers of all stages
fire in one global order (deadline, then the order they were set). The trace processor is both
the input adapter and the clock: a timestamp advances the clock, firing every timer due up to
it; an event is converted to its declared type and fed to the first stage; an emitted event of
stage k is fed to stage k+1 at once; the last stage's events and every stage's ``$error``
events are the output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..automata.compiled import CompiledProgram
from ..engine.encoding import DecodeError, decode, encode
from ..engine.engine import Engine
from ..engine.events import ERROR_EVENT, ERROR_TYPE, Emitted, ErrorCode
from ..engine.time_provider import SimulatedTimeProvider
from ..engine.timeutil import check_clock_time, format_time
from .trace import Timestamp, TraceError, TraceEvent, TraceItem, event_argument, typed_argument


def feed_emitted(engine: Any, declared: Any, name: str, value: Any, ty: Any) -> None:
    """Feed an event one program emitted to another program (the next stage of a pipeline). Where
    the receiver declares the event with another type, the value goes through the JSON encoding,
    as it would through a topic; what does not fit is the receiver's $error 6."""
    if declared is not None and declared != ty:
        try:
            value = decode(encode(value, ty), declared)
        except DecodeError as exc:
            engine.report_error(ErrorCode.BAD_INPUT_VALUE, f"{name}: {exc}")
            return
    engine.feed(name, value)


@dataclass
class OutputLine:
    event: Emitted
    stage: int
    last_stage: bool
    key_types: list[Any] | None

    def to_json(self) -> dict[str, Any]:
        e = self.event
        out: dict[str, Any] = {"time": format_time(e.time), "event": e.name, "value": encode(e.value, e.ty)}
        if self.key_types is not None and e.key is not None:
            out["key"] = [encode(k, t) for k, t in zip(e.key, self.key_types)]
        if e.name == ERROR_EVENT and not self.last_stage:
            out["program"] = e.program
        return out


@dataclass
class Pipeline:
    """Engines chained stage to stage, sharing one simulated clock."""

    programs: list[CompiledProgram]
    sink: Callable[[OutputLine], None]
    names: list[str] | None = None
    clock: SimulatedTimeProvider = field(default_factory=SimulatedTimeProvider)
    engines: list[Engine] = field(default_factory=list)

    def __post_init__(self) -> None:
        names = self.names or [p.name for p in self.programs]
        n = len(self.programs)
        for i, prog in enumerate(self.programs):
            self.engines.append(Engine(prog, self._consumer(i, i == n - 1), self.clock, name=names[i]))
        self._inputs = {i.name: i for i in self.programs[0].program.inputs}  # the first stage's

    def _consumer(self, stage: int, last: bool) -> Callable[[Emitted], None]:
        key_types = self.programs[stage].program.key_types

        def consume(e: Emitted) -> None:
            if last or e.name == ERROR_EVENT:
                self.sink(OutputLine(e, stage, last, key_types))
            else:
                self._feed(stage + 1, e.name, e.value, e.ty)

        return consume

    def _feed(self, stage: int, name: str, value: Any, ty: Any) -> None:
        engine = self.engines[stage]
        # Every stage starts at the first timestamp, so before any event reaches it: an event the
        # stage before emits from its own start finds this one started (initial actions run), also
        # when it is not declared here ($error 1 comes after them, not before).
        engine.start()
        declared = next((i for i in engine.program.inputs if i.name == name), None)
        feed_emitted(engine, declared.ty if declared is not None else None, name, value, ty)

    def start(self, t: int) -> None:
        self.clock.set_now(t)
        for engine in self.engines:
            engine.start()
        self.clock.run_due()

    def advance(self, t: int) -> None:
        self.clock.advance_to(t)

    def _decoded(self, name: str, raw: Any, where: object = None) -> tuple[str, Any] | None:
        """A trace event as the first stage takes it: its value converted to the declared type
        (an undeclared name goes as it is: the engine reports $error 1), or None when the value
        does not fit (reported here as $error 6, with ``where`` it came from in the trace)."""
        first = self.engines[0]
        declared = self._inputs.get(name)
        if declared is None:
            return name, raw
        try:
            return name, decode(typed_argument(raw, declared.ty), declared.ty)
        except DecodeError as exc:
            at = f"{where}: " if where is not None else ""
            self.sink(
                OutputLine(
                    Emitted(
                        first.name,
                        ERROR_EVENT,
                        [ErrorCode.BAD_INPUT_VALUE, f"{at}{name}: {exc}"],
                        ERROR_TYPE,
                        self.clock.now(),
                        None,
                    ),
                    0,
                    len(self.engines) == 1,
                    None,
                )
            )
            return None

    def feed_trace_event(self, name: str, raw: Any) -> None:
        event = self._decoded(name, raw)
        if event is not None:
            self.engines[0].feed(*event)
            self.clock.run_due()

    def trace_events(self, items: Iterable[TraceItem]) -> Iterator[tuple[str, Any]]:
        """The trace's events for the first stage's ``feed_many``, as ``run_trace`` did them one
        by one: it is read one event at a time, so a timestamp moves the clock (firing timers)
        between two events, and the timers due after an event fire before the next is taken."""
        for item in timed_events(items, self.start, self.clock.now, self.advance):
            event = self._decoded(item.name, event_argument(item), item.pos)
            if event is not None:
                yield event
                self.clock.run_due()


def timed_events(
    items: Iterable[TraceItem], start: Callable[[int], None], now: Callable[[], int], advance: Callable[[int], Any]
) -> Iterator[TraceEvent]:
    """The events of a trace, its timestamps applied on the way (when the next event is asked
    for): the first one ``start``s the clock, each later one ``advance``s it, or raises
    :class:`TraceError` if it is earlier than the one before."""
    started = False
    for item in items:
        if isinstance(item, TraceEvent):
            yield item
            continue
        assert isinstance(item, Timestamp)
        if not started:
            start(item.time)
            started = True
        else:
            try:
                check_clock_time(item.time, now())  # the rule advance_to applies
            except ValueError as exc:
                raise TraceError(item.pos, f"{exc}; a timestamp may not be earlier than the one before it") from None
            advance(item.time)


def run_trace(
    programs: list[CompiledProgram],
    items: list[TraceItem],
    sink: Callable[[OutputLine], None],
    names: list[str] | None = None,
) -> Pipeline:
    """Run the trace ``items`` through the pipeline of ``programs``: one ``feed_many`` call of
    the first stage reads them all (``Pipeline.trace_events``)."""
    pipe = Pipeline(programs, sink, names)
    pipe.engines[0].feed_many(pipe.trace_events(items))
    return pipe
