"""The one simulated-time host: programs wired to each other, run over a timed trace.

Both ``eventscript test PROGRAM...`` (a pipeline: stage k's events go to stage k+1) and
``eventscript test TOPOLOGY.yaml`` (events go where the topology's topic map sends them) are this
host with another wiring (``tester.pipeline.Pipeline``, ``tester.topology.TopologySimulation``).
What they share is the semantics of the language document's tester (§6.5, Fig. 13), kept here
once: one :class:`SimulatedTimeProvider` drives every program, so timers of all programs fire in
one global order (deadline, then the order they were set); a trace timestamp advances the clock,
firing every timer due up to it; a trace event is converted to the declared type of each program
it goes to (``$error`` 6 there when it does not fit); an emitted event is fed at once to every
program the wiring sends it to (started first, converted through JSON where the receiver declares
another type); what the wiring sends nowhere is an output line.

It runs engines, not the worker's host-neutral ``task.Task``, because the tester's semantics are
not a task's: a task has a clock of its own (timers of two programs would fire in each task's
order, not one global order), moves it only with records, in ms (a trace timestamp moves the clock
with no event, in µs), starts an ungrouped program at its first record (the tester: at the first
timestamp), and hands its outputs to a collector as records (bytes) for a topic that another task
reads when it next polls, where the tester feeds the next program at once, inside the step that
emitted them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import Any

from ..automata.compiled import CompiledProgram
from ..engine.encoding import DecodeError, decode, encode
from ..engine.engine import Engine
from ..engine.events import ERROR_EVENT, ERROR_TYPE, Emitted, ErrorCode
from ..engine.time_provider import SimulatedTimeProvider
from ..engine.timeutil import check_clock_time, format_time
from .trace import Timestamp, TraceError, TraceEvent, TraceItem, event_argument, typed_argument

#: What :meth:`SimulatedHost.decoded` gives for a trace value that does not fit its declared type.
UNFIT = object()


@dataclass(frozen=True)
class Delivery:
    """An event goes to program ``stage`` (an index into the host's programs) as event ``name``."""

    stage: int
    name: str


@dataclass(frozen=True)
class HostedProgram:
    """One program of the host: compiled, its name in outputs, and the zone its calendar uses."""

    compiled: CompiledProgram
    name: str
    tz: tzinfo = UTC


def output_json(e: Emitted, key_types: list[Any] | None) -> dict[str, Any]:
    """An output line's time, event, value and key (where the program groups its events): what
    every host's line starts with (``tester.pipeline.OutputLine``, ``tester.topology.TopicLine``)."""
    out: dict[str, Any] = {"time": format_time(e.time), "event": e.name, "value": encode(e.value, e.ty)}
    if key_types is not None and e.key is not None:
        out["key"] = [encode(k, t) for k, t in zip(e.key, key_types)]
    return out


def feed_emitted(engine: Any, declared: Any, name: str, value: Any, ty: Any) -> None:
    """Feed an event one program emitted to another program. Where the receiver declares the
    event with another type, the value goes through the JSON encoding, as it would through a
    topic; what does not fit is the receiver's $error 6."""
    if declared is not None and declared != ty:
        try:
            value = decode(encode(value, ty), declared)
        except DecodeError as exc:
            engine.report_error(ErrorCode.BAD_INPUT_VALUE, f"{name}: {exc}")
            return
    engine.feed(name, value)


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


class SimulatedHost:
    """Engines sharing one simulated clock, wired by a subclass.

    A subclass says where events go: :meth:`trace_readers` (the programs a trace event goes to)
    and :meth:`destinations` (the programs an emitted event goes to, or None when it is an
    output), and what an output is: :meth:`output`.
    """

    def __init__(self, programs: Sequence[HostedProgram]) -> None:
        self.clock = SimulatedTimeProvider()
        self.engines: list[Engine] = [
            Engine(p.compiled, self._consumer(i), self.clock, name=p.name, tz=p.tz) for i, p in enumerate(programs)
        ]
        #: Each program's declared input types, by event name.
        self.declared: list[dict[str, Any]] = [{i.name: i.ty for i in p.compiled.program.inputs} for p in programs]

    # -- the wiring, given by a subclass -------------------------------------------------

    def trace_readers(self, name: str) -> Sequence[Delivery]:
        """The programs a trace event named ``name`` goes to; none: no program reads it."""
        raise NotImplementedError

    def destinations(self, stage: int, event: Emitted) -> Sequence[Delivery] | None:
        """The programs ``event``, emitted by program ``stage``, goes to; None: it is an output."""
        raise NotImplementedError

    def output(self, stage: int, event: Emitted) -> None:
        """Write an output line: ``event``, emitted by program ``stage`` (or on its behalf)."""
        raise NotImplementedError

    # -- running -------------------------------------------------------------------------

    def _consumer(self, stage: int) -> Callable[[Emitted], None]:
        def consume(e: Emitted) -> None:
            to = self.destinations(stage, e)
            if to is None:
                self.output(stage, e)
                return
            for d in to:
                self.deliver(d, e.value, e.ty)

        return consume

    def deliver(self, to: Delivery, value: Any, ty: Any) -> None:
        """Feed an emitted event to a program. The program is started first (every program
        starts at the first timestamp, so before any event reaches it): an event another program
        emits from its own start finds this one started (initial actions run), also when it is
        not declared here ($error 1 comes after them, not before)."""
        engine = self.engines[to.stage]
        engine.start()
        feed_emitted(engine, self.declared[to.stage].get(to.name), to.name, value, ty)

    def start(self, t: int) -> None:
        self.clock.set_now(t)
        for engine in self.engines:
            engine.start()
        self.clock.run_due()

    def advance(self, t: int) -> None:
        self.clock.advance_to(t)

    def _error(self, stage: int, code: int, message: str) -> None:
        """An ``$error`` output the host reports on behalf of program ``stage``."""
        e = Emitted(self.engines[stage].name, ERROR_EVENT, [code, message], ERROR_TYPE, self.clock.now(), None)
        self.output(stage, e)

    def decoded(self, to: Delivery, raw: Any, where: object = None) -> Any:
        """A trace event's value as program ``to.stage`` takes it: converted to the declared type
        (an undeclared name goes as it is: the engine reports $error 1), or ``UNFIT`` when it
        does not fit (reported here as $error 6, with ``where`` it came from in the trace)."""
        declared = self.declared[to.stage].get(to.name)
        if declared is None:
            return raw
        try:
            return decode(typed_argument(raw, declared), declared)
        except DecodeError as exc:
            at = f"{where}: " if where else ""
            self._error(to.stage, ErrorCode.BAD_INPUT_VALUE, f"{at}{to.name}: {exc}")
            return UNFIT

    def feed_trace_event(self, name: str, raw: Any, where: object = None) -> None:
        """One trace event, to every program that reads it; then the timers due fire."""
        targets = self.trace_readers(name)
        if not targets:
            self._error(0, ErrorCode.UNDECLARED_EVENT, f"no program reads {name} from a source topic")
            return
        for to in targets:
            value = self.decoded(to, raw, where)
            if value is not UNFIT:
                self.engines[to.stage].feed(to.name, value)
        self.clock.run_due()

    def _batched(self, items: Iterable[TraceItem], stage: int) -> Iterator[tuple[str, Any]]:
        """The trace's events for ``feed_many`` of the one program that reads them all: it is
        read one event at a time, so a timestamp moves the clock (firing timers) between two
        events, and the timers due after an event fire before the next is taken."""
        for item in timed_events(items, self.start, self.clock.now, self.advance):
            to = Delivery(stage, item.name)
            value = self.decoded(to, event_argument(item), item.pos)
            if value is not UNFIT:
                yield item.name, value
                self.clock.run_due()

    def only_reader(self) -> int | None:
        """The one program every trace event goes to under its own name, if there is one (then
        the trace is read through one ``feed_many``); None by default."""
        return None

    def run(self, items: Iterable[TraceItem], *, batched: bool = True) -> None:
        """Run the trace ``items``; raises :class:`TraceError` for a timestamp going back.
        ``batched=False`` feeds one event at a time even where one program reads them all (for
        a host that wraps each engine's ``feed``, as ``explain``'s recorder does)."""
        only = self.only_reader() if batched else None
        if only is not None:
            self.engines[only].feed_many(self._batched(items, only))
            return
        for item in timed_events(items, self.start, self.clock.now, self.advance):
            self.feed_trace_event(item.name, event_argument(item), item.pos)
