"""``eventscript test --trace FILE PROGRAM...``: the tester (language document §6.5).

Given one topology file (``.yaml``/``.yml``) instead of programs, the whole topology runs in
simulated time, each program's outputs routed by the topology's topic map (``tester/topology.py``).
Its options: ``test_options``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..engine.encoding import json_line
from ..engine.timeutil import format_time
from ..tester.expect import ExpectedError, compare, read_expected_numbered
from ..tester.host import SimulatedHost
from ..tester.pipeline import Pipeline
from ..tester.trace import TraceError
from .program_cmds import load_or_report
from .trace_file import read_trace_or_report
from .trace_names import warn_unread_events
from .wording import counted


def _is_topology(paths: list[str]) -> bool:
    return len(paths) == 1 and Path(paths[0]).suffix.lower() in (".yaml", ".yml")


def _finish(args: argparse.Namespace, lines: list[dict]) -> int:
    """Compare the collected output with --expect: each difference named by the expected file's
    ``file:line``, then a diff."""
    try:
        numbered = read_expected_numbered(Path(args.expect).read_text(encoding="utf-8"))
    except OSError as exc:  # the reason, not Python's "[Errno 2] ...: 'path'"
        print(f"{args.expect}: error: cannot read the expected output: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except ExpectedError as exc:
        print(exc.render(args.expect), file=sys.stderr)
        return 2
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        print(f"{args.expect}: error: cannot read expected output: {exc}", file=sys.stderr)
        return 2
    expected = [obj for _, obj in numbered]
    problems = compare(expected, lines, [f"{args.expect}:{number}" for number, _ in numbered])
    if problems:
        for p in problems:
            print(p)
        return 1
    print(f"ok: {counted(len(lines), 'event')} as expected")
    return 0


def _explained(args: argparse.Namespace, record) -> int:
    """``--explain``: run with every step recorded (``eventscript.explain``) and print the steps;
    with ``--expect``, then compare the outputs."""
    from ..explain.text import explanation

    try:
        recording = record()
    except TraceError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    for line in explanation(recording):
        print(line)
    if args.expect is None:
        return 0
    return _finish(args, [{k: v for k, v in o.items() if k != "step"} for o in recording.outputs])


def _pending_timer_note(host: SimulatedHost) -> str | None:
    """A note when a timer is still pending after the trace's last timestamp: it never fires, and
    a newcomer whose trace ends before a deadline sees no output for it and no reason why."""
    deadline = host.clock.next_deadline()
    if deadline is None:
        return None
    return (
        f"note: a timer was still pending when the trace ended (the first due {format_time(deadline)}); "
        "a timer fires only when the trace reaches its time: end the trace with a later [timestamp] to see it"
    )


def _simulate(
    args: argparse.Namespace, run_host: Callable[[Callable[[Any], None]], SimulatedHost], record: Callable[[], Any]
) -> int:
    """Run the trace through a simulated host (``run_host(sink)``, the pipeline or the topology, run
    and returned): print each output line as JSON, or with ``--expect`` compare them;
    ``--explain``: ``record``."""
    from ..engine.tuning import configure_gc

    configure_gc()
    if args.explain:
        return _explained(args, record)
    lines: list[dict] = []
    out = sys.stdout
    expecting = args.expect is not None
    printed = 0

    def sink(line: Any) -> None:
        nonlocal printed
        obj = line.to_json()
        if expecting:
            lines.append(obj)
        else:
            out.write(json_line(obj) + "\n")
            printed += 1

    try:
        host = run_host(sink)
    except TraceError as exc:
        out.flush()
        print(str(exc), file=sys.stderr)
        return 2
    if expecting:
        return _finish(args, lines)
    pending = _pending_timer_note(host)
    if pending and printed:  # (with no output at all, the note below says this too)
        out.flush()
        print(pending, file=sys.stderr)
    if not printed:
        # A program that never emits printed nothing at all, and a newcomer could not tell a run
        # from a hang or a mistake: say so, and where to look.
        out.flush()
        print(
            "note: no output: nothing was emitted over this trace (no output event, no $error); "
            f"'{shlex.join(['eventscript', 'test', '--explain', '--trace', args.trace, *args.programs])}' shows, "
            "event by event, the state each key is in and what it waits for (a timer fires only if the trace "
            "reaches its time: end the trace with a later [timestamp])",
            file=sys.stderr,
        )
    return 0


def run_topology(args: argparse.Namespace) -> int:
    """The whole topology over the trace, in simulated time."""
    from ..tester.topology import TopologySimulation
    from ..topology.check import errors as check_errors
    from ..topology.config import TopologyError
    from ..topology.model import load_graph

    try:
        graph = load_graph(args.programs[0], args.state_limit)
    except TopologyError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    from ..topology.check import check

    findings = check(graph)
    wiring = check_errors(findings)
    for f in findings if args.warnings else wiring:  # -W: warnings too, as 'topology check' prints them
        print(f.render(), file=sys.stderr)
    if wiring:
        print(
            f"{graph.file}: the topology has wiring errors (above); fix them, then run the test again "
            f"('eventscript topology check {graph.file}' checks the wiring alone)",
            file=sys.stderr,
        )
        return 2
    items = read_trace_or_report(args.trace)
    if items is None:
        return 2
    sources = TopologySimulation(graph, lambda _: None).sources  # the events it takes from the trace
    unread = f"no program of {args.programs[0]} reads event {{name}} from a source topic"
    warn_unread_events(items, sources, unread, sys.stderr)

    def record() -> Any:
        from ..tester.recording import record_topology  # only for --explain

        return record_topology(graph, items)

    return _simulate(args, lambda sink: _ran(TopologySimulation(graph, sink), items), record)


def run(args: argparse.Namespace) -> int:
    if _is_topology(args.programs):
        return run_topology(args)
    compiled = []
    for path in args.programs:
        program = load_or_report(path, args.state_limit, warnings=args.warnings)
        if program is None:
            return 2
        compiled.append(program)
    items = read_trace_or_report(args.trace)
    if items is None:
        return 2
    names = [Path(p).stem for p in args.programs]
    inputs = [i.name for i in compiled[0].program.inputs]
    warn_unread_events(items, inputs, f"{args.programs[0]} declares no input event {{name}}", sys.stderr)

    def record() -> Any:
        from ..tester.recording import record_pipeline  # only for --explain

        return record_pipeline(compiled, items, names)

    return _simulate(args, lambda sink: _ran(Pipeline(compiled, sink, names), items), record)


def _ran(host: SimulatedHost, items: list[Any]) -> SimulatedHost:
    """``host`` after running ``items`` (what is left pending in it is told after the output)."""
    host.run(items)
    return host
