"""Running a program through the tester up to a cut, converting every instance with an upgrade
plan, and going on with the new version; and the reference such a run is compared with.

A trace here is data, a list of ``("time", "08:00:00")`` and ``(event, door)`` items, so that a
test can leave out the events of keys that restart (their reference is a fresh instance)."""

from __future__ import annotations

import json
from typing import Any

from eventscript.automata.compile import compile_source
from eventscript.automata.compiled import CompiledProgram
from eventscript.engine.encoding import DecodeError, encode
from eventscript.engine.engine import Engine
from eventscript.engine.events import Emitted, ErrorCode
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.engine.timeutil import format_time
from eventscript.language.source import SourceFile
from eventscript.tester.pipeline import run_trace
from eventscript.tester.trace import Timestamp, event_argument, parse_trace, typed_argument
from eventscript.upgrade.convert import RESTARTED, Conversion, convert
from eventscript.upgrade.plan import Plan

Item = tuple[str, Any]


def compiled(src: str, name: str = "doors") -> CompiledProgram:
    return compile_source(src, name=name).require()


def render(items: list[Item]) -> str:
    """Trace text: the first timestamp with its date, then later times; events with their value."""
    out = []
    for kind, value in items:
        if kind == "time":
            out.append(f"[{'2026-01-01 ' if not out else ''}{value}]")
        else:
            out.append(f"{kind}({json.dumps(value)})")
    return " ".join(out)


def tester_line(e: Emitted, key_types: list[Any] | None) -> dict[str, Any]:
    """An event the engine emitted as the tester prints it: time, event, value and, for a grouped
    program, key."""
    line: dict[str, Any] = {"time": format_time(e.time), "event": e.name, "value": encode(e.value, e.ty)}
    if key_types is not None and e.key is not None:
        line["key"] = [encode(k, t) for k, t in zip(e.key, key_types)]
    return line


def run_tester(prog: CompiledProgram, items: list[Item]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    run_trace([prog], parse_trace(SourceFile("<trace>", render(items))), lambda line: lines.append(line.to_json()))
    return lines


def run_upgraded(
    plan: Plan, text: str, cut: int, *, make_engine: Any = None
) -> tuple[list[dict[str, Any]], list[Conversion]]:
    """Run ``plan.old`` like the tester over ``text`` up to item ``cut``; there convert every
    instance with ``plan`` (at the clock's time), restore the results into an engine of
    ``plan.new`` on a fresh clock, and go on. Returns the outputs and the conversions."""
    out: list[dict[str, Any]] = []
    conversions: list[Conversion] = []
    make_engine = make_engine or (lambda prog, sink, clock: Engine(prog, sink, clock))

    def sink_for(prog: CompiledProgram) -> Any:
        def sink(e: Emitted) -> None:
            out.append(tester_line(e, prog.program.key_types))

        return sink

    clock = SimulatedTimeProvider()
    engine = make_engine(plan.old, sink_for(plan.old), clock)
    started = False
    for i, item in enumerate(parse_trace(SourceFile("<trace>", text))):
        if i == cut and started:
            contexts = list(engine.contexts.values()) if engine.grouped else [engine.single]
            now = clock.now()
            conversions = [convert(plan, engine.snapshot(ctx), now) for ctx in contexts if ctx is not None]
            clock = SimulatedTimeProvider(now)
            engine = make_engine(plan.new, sink_for(plan.new), clock)
            for c in conversions:
                if c.data is not None:
                    engine.restore(c.data)
            if not engine.grouped and any(c.verdict == RESTARTED for c in conversions):
                engine.start()  # an ungrouped program's one instance starts afresh
            clock.run_due()
        if isinstance(item, Timestamp):
            if not started:
                clock.set_now(item.time)
                engine.start()
                clock.run_due()
                started = True
            else:
                clock.advance_to(item.time)
        else:
            ty = engine.input_type(item.name)  # as the tester reads a trace value (positional fields)
            raw = event_argument(item)
            try:
                value = raw if ty is None else typed_argument(raw, ty)
            except DecodeError as exc:  # a value that does not conform: $error 6, as the tester says
                engine.report_error(ErrorCode.BAD_INPUT_VALUE, f"{item.name}: {exc}")
            else:
                engine.feed_json(item.name, value)
            clock.run_due()
    return out, conversions


def reference(
    old: CompiledProgram, new: CompiledProgram, items: list[Item], cut: int, restarted: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """What an upgrade at item ``cut`` must give, from two tester runs that know nothing of
    plans: the old program's outputs over the trace up to the cut, then the new program's
    outputs past the cut when it runs the whole trace; for the keys in ``restarted``, the new
    program's run leaves out their events before the cut (a restarted instance is a new one).
    It holds where the edit leaves the events before the cut meaning the same to both versions,
    as the tests' traces are chosen to."""
    before = run_tester(old, items[:cut])
    kept = [it for i, it in enumerate(items) if i >= cut or it[0] == "time" or it[1] not in restarted]  # (keys: doors)
    new_cut = cut - (len(items) - len(kept))
    return before + run_tester(new, kept)[len(run_tester(new, kept[:new_cut])) :]
