"""The one simulated-time host: programs wired to each other, run over a timed trace, each
program run by the worker's own task code (``task.Task``, issue 19).

Both ``eventscript test PROGRAM...`` (a pipeline: program k's events go to program k+1,
``tester.pipeline.Pipeline``) and ``eventscript test TOPOLOGY.yaml`` (events go where the
topology's topics take them, ``tester.topology.TopologySimulation``) are this host with another
wiring. Each program is task 0 of a one-partition topology, as the Kafka worker and the backfill
run it: its records are decoded by its inputs' settings, its outputs and ``$error`` records carry
the worker's ``es-id`` and headers, its ``$error`` records describe the input record they are
about. What the host keeps of the language document's tester (§6.5, Fig. 13), and how:

- **One global timer order.** Every task gets the same ``task.clock.SimulatedClock``: the timers
  of all programs sit in one queue and fire in one order (deadline, then the order they were set).
- **A µs clock moved by the trace.** A timestamp moves the clock (firing what is due, each at
  its deadline) with no record; a record is processed at the time the host has set.
- **Ungrouped programs start at the first timestamp**, in program order, as their tasks start.
- **Immediate delivery.** A record a program sends to a topic another program reads is handed
  to that program's task at once, inside the step that emitted it; timers due now fire after the
  trace event's whole chain, not after each record.
- **A trace event is a record as ``eventscript produce`` writes it**: converted to the declared
  type of each program it goes to by the trace's strict rules (``$error`` 6 from the host, with
  the trace position, when it does not fit), in the type's JSON encoding, keyed by its group key;
  each timestamp takes an offset on the source topics, as produce's tick does. So a record's
  offset, and the ids it causes, are the worker's for the same trace.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..automata.compiled import CompiledProgram
from ..engine.encoding import DecodeError, decode, encode
from ..engine.engine import Engine
from ..engine.events import ERROR_EVENT, Emitted, ErrorCode
from ..engine.timeutil import check_clock_time, format_time
from ..language.types import DOUBLE, STRING, TIME
from ..task import codec
from ..task.clock import SimulatedClock
from ..task.codec import Headers
from ..task.keys import KeyScheme, scheme_for
from ..task.record import PlainRecord
from ..task.task import Task
from ..topology.config import InputConfig, ProgramConfig
from .trace import (
    Timestamp,
    TraceError,
    TraceEvent,
    TraceItem,
    TraceValueError,
    event_argument,
    typed_argument,
    value_place,
)


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


@dataclass(frozen=True)
class HostOutput:
    """One output record of the simulation, as the tester writes its line: the program that
    sent it (its index; the one an ``$error`` of the host's own is about), the topic and the
    line's ``time``, ``event``, ``value`` (an ``$error``'s code and message) and ``key``;
    ``record``: the record itself (its ``es-id`` and the rest), None for an ``$error`` the host
    reports itself (about the trace: a value that does not fit, an event no program reads)."""

    stage: int
    topic: str
    line: dict[str, Any]
    record: PlainRecord | None


def output_json(e: Emitted, key_types: list[Any] | None) -> dict[str, Any]:
    """An event an engine emitted, as the tester prints its line: time, event, value and, for a
    grouped program, key. For code that drives an ``Engine`` itself (the engine's property tests,
    the upgrade tests) and compares with the tester's lines."""
    out: dict[str, Any] = {"time": format_time(e.time), "event": e.name, "value": encode(e.value, e.ty)}
    if key_types is not None and e.key is not None:
        out["key"] = [encode(k, t) for k, t in zip(e.key, key_types)]
    return out


@dataclass(frozen=True)
class SimProgram:
    """A program of the simulation: compiled, and its configuration (inputs, outputs, errors)."""

    compiled: CompiledProgram
    config: ProgramConfig


#: How a double that is not finite is encoded (engine.encoding.encode_double).
_NON_FINITE_DOUBLES = frozenset({"NaN", "Infinity", "-Infinity"})


def _key_json(scheme: KeyScheme, raw: bytes | None) -> list[Any] | None:
    """A record key of the scheme, as the components of a line's ``key``."""
    if raw is None:
        return None
    if scheme.format == "json":
        key = orjson.loads(raw)
        return key if isinstance(key, list) else [key]
    text = raw.decode("utf-8", "surrogatepass")
    ty = scheme.types[0]
    # KeyScheme.key_bytes writes the component's encoded value: one encoded as text (a string, a
    # time, a double that is not finite) as that text, any other as its JSON.
    if ty in (STRING, TIME) or (ty == DOUBLE and text in _NON_FINITE_DOUBLES):
        return [text]
    return [orjson.loads(text)]


class SimulatedHost:
    """Programs run as tasks over a timed trace, in simulated time, wired by their configurations
    (a record goes to every program reading its topic); a subclass says where trace events go
    (:meth:`trace_readers`) and what an output is (:meth:`output`).

    ``tick_topics``: where each timestamp takes an offset, as the tick ``eventscript produce``
    writes there does (so that a record's offset, and the ids it gives, are the worker's for the
    same trace); the ticks themselves move no clock here (the host moves it) and are not fed.
    """

    def __init__(self, programs: Sequence[SimProgram], tick_topics: Sequence[str] = ()) -> None:
        self.programs = programs
        self.tick_topics = tick_topics
        self.clock = SimulatedClock()
        #: Never written (nothing is committed), so never created: a task's store reads as empty.
        self._store_dir = Path(tempfile.gettempdir()) / f"eventscript-simulation-{id(self)}"
        self.tasks: list[Task] = []
        self.readers: dict[str, list[Task]] = {}
        self._offsets: dict[str, int] = {}
        #: The trace position of the event being fed (1 for the first), stamped as ``es-seq`` as
        #: ``eventscript produce`` stamps it (how the worker's merges order same-time records).
        self._seq = 0
        self._schemes: list[KeyScheme] = []
        self._key_engines: dict[int, Engine] = {}
        self._input_schemes: dict[tuple[int, int], KeyScheme] = {}
        for i, p in enumerate(programs):
            cfg = p.config
            task = Task(
                0,
                p.compiled,
                cfg,
                cfg.inputs,
                f"{cfg.name}-repartition",
                f"{cfg.name}-changelog",
                1,
                self._store_dir / cfg.name,
                clock=self.clock,
            )
            task.attach(self._sender(i))
            task.load_from_store()
            self.tasks.append(task)
            self._schemes.append(task.scheme)
            for topic in dict.fromkeys(c.topic for c in cfg.inputs):
                self.readers.setdefault(topic, []).append(task)

    @property
    def engines(self) -> list[Engine]:
        """Each program's engine (its task's), in program order: what ``explain``'s recorder wraps."""
        return [task.engine for task in self.tasks]

    # -- the wiring, given by a subclass -------------------------------------------------------

    def trace_readers(self, name: str) -> Sequence[tuple[int, InputConfig]]:
        """The programs a trace event named ``name`` goes to (by index), each with the input
        (topic and settings) it reads it from; none: no program reads it (the host's $error 1)."""
        raise NotImplementedError

    def output(self, out: HostOutput) -> None:
        """An output: a record sent to a topic no program reads, or any ``$error``."""
        raise NotImplementedError

    # -- records between tasks -----------------------------------------------------------------

    def _record(self, topic: str, key: bytes | None, value: bytes | None, headers: Headers, ts: int) -> PlainRecord:
        """A record written on a simulated topic: one partition, offsets from 0."""
        offset = self._offsets.get(topic, 0)
        self._offsets[topic] = offset + 1
        return PlainRecord(topic, 0, offset, ts, key, value, headers)

    def _sender(self, stage: int) -> Callable[[str, int, bytes | None, bytes | None, Headers, int, bool], None]:
        """Program ``stage``'s ``send``: a record goes at once to every task reading its topic
        (the host's step goes on inside the emission, as the tester's delivery does), or is an
        output; every ``$error`` is an output."""
        cfg = self.programs[stage].config

        def send(
            topic: str, partition: int, key: bytes | None, value: bytes | None, headers: Headers, ts: int, log: bool
        ) -> None:
            if log:
                return  # (no commit: nothing is persisted)
            rec = self._record(topic, key, value, headers, ts)
            readers = self.readers.get(topic)
            if topic == cfg.error_topic or not readers:
                self.output(HostOutput(stage, topic, self._line(stage, rec), rec))
                return
            for task in readers:
                # Started first: every program starts at the first timestamp, so before any
                # record reaches it; a record a program sends from its own start finds the
                # reader started (initial actions run), also when it declares no such event
                # ($error 1 comes after them, not before).
                task.start_wall_clock()
                task.add(rec)
                task.process(0)

        return send

    def _line(self, stage: int, rec: PlainRecord) -> dict[str, Any]:
        headers = rec.headers()
        event = codec.header(headers, codec.HEADER_EVENT)
        when = codec.header_time(codec.header(headers, codec.HEADER_TIME))
        name = event.decode() if event is not None else ERROR_EVENT
        ts = rec.timestamp()[1]
        line: dict[str, Any] = {"time": format_time(when if when is not None else ts * 1000), "event": name}
        raw = rec.value()
        value = orjson.loads(raw) if raw is not None else None
        if name == ERROR_EVENT:
            assert isinstance(value, dict)  # (codec.error_value's document)
            line["value"] = {"code": value["code"], "message": value["message"]}
            if "key" in value:
                line["key"] = value["key"]
            return line
        line["value"] = value
        key = _key_json(self._schemes[stage], rec.key()) if self.tasks[stage].grouped else None
        if key is not None:
            line["key"] = key
        return line

    # -- the trace -----------------------------------------------------------------------------

    def _tick(self) -> None:
        for topic in self.tick_topics:
            self._offsets[topic] = self._offsets.get(topic, 0) + 1

    def _advance(self, t: int) -> None:
        self._tick()
        self.clock.advance_to(t)

    def _start(self, t: int) -> None:
        self._tick()
        self.clock.set_now(t)
        for task in self.tasks:
            task.start_wall_clock()
        self.clock.run_due()

    def _host_error(self, stage: int, code: int, message: str) -> None:
        """An ``$error`` the host reports itself (about the trace, not a record)."""
        line = {
            "time": format_time(self.clock.now()),
            "event": ERROR_EVENT,
            "value": {"code": code, "message": message},
        }
        self.output(HostOutput(stage, self.programs[stage].config.error_topic, line, None))

    def _key_engine(self, stage: int) -> Engine:
        """An engine of program ``stage`` only for the group keys of its trace records (as the
        producer computes them): an ``$error`` in a group expression is the task's to report,
        when it keys the record itself, not the producer's."""
        engine = self._key_engines.get(stage)
        if engine is None:
            engine = self._key_engines[stage] = Engine(self.programs[stage].compiled)
        return engine

    def _input_scheme(self, stage: int, inp: InputConfig) -> KeyScheme:
        """How the producers of program ``stage``'s input ``inp`` key its records (made once)."""
        scheme = self._input_schemes.get((stage, id(inp)))
        if scheme is None:
            task = self.tasks[stage]
            scheme = self._input_schemes[(stage, id(inp))] = scheme_for(task.cfg, task.key_types, inp)
        return scheme

    def _trace_value(
        self, stage: int, name: str, raw: Any, where: object, event: TraceEvent | None
    ) -> tuple[Any, Any] | None:
        """A trace event's value for program ``stage``: its declared type's JSON encoding and
        its run-time value (the raw value and None for a name the program does not declare: the
        task reports it); None, after the host's ``$error`` 6, when it does not fit its declared
        type by the trace's rules (stricter than a record's: ``tester.trace.check_trace_value``),
        its message at the value that does not fit where the trace ``event`` tells where it is."""
        ty = self.tasks[stage].input_types.get(name)
        if ty is None:
            return raw, None
        try:
            value = decode(typed_argument(raw, ty), ty)
        except DecodeError as exc:
            if isinstance(exc, TraceValueError) and event is not None:
                where = value_place(event, exc.at)
            at = f"{where}: " if where else ""
            self._host_error(stage, ErrorCode.BAD_INPUT_VALUE, f"{at}{name}: {exc}")
            return None
        return encode(value, ty), value

    def feed_trace_event(self, name: str, raw: Any, where: object = None, event: TraceEvent | None = None) -> None:
        """One trace event, to every program that reads it, as the record a producer writes on
        the topic each reads it from (as ``eventscript produce`` writes it: the value in its
        declared type's JSON encoding, keyed by the group key in the topic's key format; one
        offset on each topic, whoever reads it); then the timers due fire."""
        self._seq += 1
        targets = self.trace_readers(name)
        if not targets:
            self._host_error(0, ErrorCode.UNDECLARED_EVENT, f"no program reads {name} from a source topic")
            return
        offsets: dict[str, int] = {}
        for stage, inp in targets:
            fitted = self._trace_value(stage, name, raw, where, event)
            if fitted is None:
                continue
            payload, value = fitted
            task = self.tasks[stage]
            key = None
            if task.grouped and value is not None:
                group_key = self._key_engine(stage).group_key(name, value)
                if group_key is not None:
                    key = self._input_scheme(stage, inp).key_bytes(group_key)
            offset = offsets.get(inp.topic)
            if offset is None:
                offset = offsets[inp.topic] = self._offsets.get(inp.topic, 0)
                self._offsets[inp.topic] = offset + 1
            value_bytes, headers = codec.input_record(inp, name, payload)
            headers.append((codec.HEADER_SEQ, b"%d" % self._seq))
            task.add(PlainRecord(inp.topic, 0, offset, self.clock.now() // 1000, key, value_bytes, headers))
            task.process(0)
        self.clock.run_due()

    def run(self, items: Iterable[TraceItem]) -> None:
        """Run the trace ``items``; raises ``TraceError`` for a timestamp going back."""
        for item in timed_events(items, self._start, self.clock.now, self._advance):
            self.feed_trace_event(item.name, event_argument(item), item.pos, item)

    def close(self) -> None:
        """Let the tasks go (their engines, caches and stores: nothing was written)."""
        for task in self.tasks:
            task.close()
