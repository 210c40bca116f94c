"""What the playground's page asks of the server, as functions of JSON-shaped requests: check
programs (diagnostics), run a trace with every step recorded, save a conformance case. The
HTTP layer (``server``) only moves JSON; these functions are tested without it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from ..automata.compile import Compilation, compile_source
from ..engine.engine import EngineError
from ..explain.instance import explain_timer
from ..explain.recorder import Recording
from ..language.diagnostics import Diagnostic
from ..language.source import SourceFile
from ..tester.recording import record_pipeline, record_topology
from ..tester.trace import TraceError, TraceItem, parse_trace
from ..tester.unread import unread_events
from . import drawing, topology_check
from .limits import LimitExceeded, Limits, RunGuard
from .source import Source, name_problem

if TYPE_CHECKING:  # for the annotation only: _run_topology imports the topology package when it runs
    from ..topology.model import TopologyGraph


class RequestError(Exception):
    """A request the page should not have sent (a missing field, a wrong type)."""


def sources_of(body: Any, limits: Limits) -> list[Source]:
    programs = body.get("programs") if isinstance(body, dict) else None
    if not isinstance(programs, list) or not programs:
        raise RequestError("the request has no programs")
    limits.check_programs(len(programs))
    out: list[Source] = []
    for p in programs:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) or not isinstance(p.get("text"), str):
            raise RequestError("each program needs a name and a text")
        problem = name_problem(p["name"])
        if problem:
            raise RequestError(problem)
        if any(s.name == p["name"] for s in out):
            raise RequestError(f"{p['name']!r}: two programs of that name; give each its own")
        limits.check_program(p["name"], p["text"])
        out.append(Source(p["name"], p["text"]))
    return out


def compile_one(src: Source, limits: Limits) -> Compilation:
    """Compile as ``eventscript check`` does; external functions are resolved (imported) only
    when the playground allows them."""
    return compile_source(SourceFile(src.name, src.text), name=src.stem, resolve_externals=limits.allow_externals)


def diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    return {
        "severity": d.severity.value,
        "line": d.pos.line,
        "col": d.pos.col,
        "offset": d.pos.offset,
        "message": d.message,
        "hint": d.hint,
        "where": str(d.pos),
        "code": d.code,
    }


def diagnostics_of(comp: Compilation) -> list[dict[str, Any]]:
    return [diagnostic_json(d) for d in comp.diagnostics.sorted() if isinstance(d, Diagnostic)]


def check(body: Any, limits: Limits) -> dict[str, Any]:
    """Each program's diagnostics (errors and warnings) with line, column and hint; with a
    topology, also the topology's (what ``eventscript topology check`` prints)."""
    out = []
    sources = sources_of(body, limits)
    for src in sources:
        comp = compile_one(src, limits)
        out.append({"name": src.name, "ok": comp.ok, "diagnostics": diagnostics_of(comp)})
    answer: dict[str, Any] = {"programs": out}
    yaml_text = _topology_text(body)
    if yaml_text is not None:
        answer["topology"] = {"diagnostics": topology_check.diagnostics(sources, yaml_text, limits.allow_externals)}
    return answer


def _topology_text(body: Any) -> str | None:
    topology = body.get("topology")
    if topology is not None and not isinstance(topology, str):
        raise RequestError("the topology must be YAML text")
    return topology  # (its size: bounded by the request's, and by the topology reader's 1 MiB)


def _externals_refused(src: Source, comp: Compilation, limits: Limits) -> str | None:
    if limits.allow_externals or comp.program is None or not comp.program.program.externals:
        return None
    names = ", ".join(e.name for e in comp.program.program.externals)
    return (
        f"{src.name}: the program declares external functions ({names}); the playground runs them only "
        f"when started with --allow-externals"
    )


def _trace_items(text: str) -> list[Any]:
    return parse_trace(SourceFile("trace", text))


def run(body: Any, limits: Limits) -> dict[str, Any]:
    """Run the trace through the programs (a pipeline in order) or the topology, recording each
    step; returns what the page shows, or the reason it could not run."""
    sources = sources_of(body, limits)
    trace = body.get("trace")
    if not isinstance(trace, str):
        raise RequestError("the request has no trace")
    topology = _topology_text(body)
    comps = [compile_one(s, limits) for s in sources]
    result: dict[str, Any] = {
        "programs": [{"name": s.name, "ok": c.ok, "diagnostics": diagnostics_of(c)} for s, c in zip(sources, comps)]
    }
    failed = [s.name for s, c in zip(sources, comps) if not c.ok]
    if failed:
        return {**result, "error": f"{', '.join(failed)}: fix the errors underlined in the program first"}
    refused = next((r for s, c in zip(sources, comps) if (r := _externals_refused(s, c, limits))), None)
    if refused:
        return {**result, "error": refused}
    guard = limits.run_guard()
    stages = _Stages()
    try:
        limits.check_trace(trace)
        items = _trace_items(trace)
        if topology is not None:
            recording = _run_topology(sources, topology, items, guard, stages)
        else:
            stages.compiled = [c.require() for c in comps]
            stages.names = [s.stem for s in sources]
            stages.files = [s.name for s in sources]
            recording = record_pipeline(stages.compiled, items, stages.names, guard)
    except TraceError as exc:
        return {
            **result,
            "error": str(exc),
            "trace_error": {"line": exc.pos.line, "col": exc.pos.col, "message": exc.message},
        }
    except LimitExceeded as exc:
        if guard.recorder is None:  # (stopped before the run: the trace's size)
            return {**result, "error": str(exc)}
        # what ran up to the limit: a program that never ends shows its first steps
        recording = Recording(guard.recorder, stages.names)
        shown = _shown(recording, stages.compiled, stages.files)
        return {**result, **stages.pictures(), **shown, **_unread(items, stages), "error": str(exc)}
    except _TopologyProblem as exc:
        return {**result, "error": str(exc)}
    except EngineError as exc:  # e.g. an allowed external function that cannot be loaded
        return {**result, "error": f"the program cannot run: {exc}"}
    return {**result, **stages.pictures(), **_shown(recording, stages.compiled, stages.files), **_unread(items, stages)}


def _unread(items: list[TraceItem], stages: _Stages) -> dict[str, Any]:
    """``trace_warnings``: the trace's events no program reads, each name at its first place with
    the name probably meant, as ``eventscript test`` warns on stderr (the page underlines them:
    their ``$error`` 1 outputs say neither the place nor the name meant)."""
    if stages.graph is not None:
        from ..tester.topology import source_reads

        readable: set[str] = set(source_reads(stages.graph))
        unread = "no program of the topology reads event {name} from a source topic"
    elif stages.compiled:
        readable = {i.name for i in stages.compiled[0].program.inputs}
        unread = f"{stages.files[0]} declares no input event {{name}}"
    else:
        return {}
    warnings = [
        {"line": u.event.pos.line, "col": u.event.pos.col, "message": u.warning(unread)}
        for u in unread_events(items, readable)
    ]
    return {"trace_warnings": warnings} if warnings else {}


@dataclass
class _Stages:
    """What a run's answer says of its stages, known before it runs (so that a run stopped by a
    limit still shows what it did): each stage's compiled program, name and file (by the name the
    page's tab has: a topology's ``source:``), and a topology's graph."""

    compiled: list[Any] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    graph: TopologyGraph | None = None

    def pictures(self) -> dict[str, Any]:
        return {} if self.graph is None else {"pipeline": drawing.pipeline(self.graph)}


class _TopologyProblem(Exception):
    pass


def _run_topology(
    sources: list[Source], yaml_text: str, items: list[Any], guard: RunGuard, stages: _Stages
) -> Recording:
    """A topology runs from files: the YAML and the programs in a temporary folder."""
    from ..topology.check import check as check_topology
    from ..topology.check import errors as check_errors
    from ..topology.config import TopologyError

    with topology_check.topology_folder(sources, yaml_text) as folder:
        try:
            graph = topology_check.load(folder, guard.limits.allow_externals)
        except TopologyError as exc:
            raise _TopologyProblem(topology_check.without_folder(str(exc), folder)) from None
        problems = check_errors(check_topology(graph))
        if problems:
            raise _TopologyProblem("\n".join(topology_check.without_folder(f.render(), folder) for f in problems))
        bad = [st.name for st in graph.stages if not st.ok]
        if bad:
            raise _TopologyProblem(f"programs that do not compile: {', '.join(bad)}")
        # every stage compiled (refused above otherwise)
        stages.compiled = [st.compilation.require() for st in graph.stages if st.compilation is not None]
        stages.names = [st.name for st in graph.stages]
        stages.files = [str(PurePosixPath(st.config.source)) for st in graph.stages]
        stages.graph = graph
        return record_topology(graph, items, guard)


def _shown(recording: Recording, compiled: list[Any], files: list[str]) -> dict[str, Any]:
    """The run as the page draws it: per stage the automaton, and each state met explained (the
    markers it waits for); the steps and outputs. ``files``: each stage's program by the name
    the page's tab has (its source, relative to the topology), which ties a stage to its text."""
    steps = [s.page_json() for s in recording.steps]
    stages = []
    for i, name in enumerate(recording.names):
        terms = recording.recorder.terms[i]
        states: dict[str, Any] = {}
        start = terms.start()[0]
        met: dict[Any, Any] = {_hashable(start): start}
        for s in recording.steps:
            if s.stage == i and s.after is not None and s.after.state is not None:
                met.setdefault(_hashable(s.after.state), s.after.state)
        for state in met.values():
            states[drawing.state_id(state)] = {
                "waiting": [m.to_json() for m in terms.waiting(state)],
                "accepting": terms.accepting(state),
            }
        stages.append(
            {
                "name": name,
                "source": files[i],
                "grouped": compiled[i].grouped,
                "variables": [{"name": v.name, "type": str(v.ty)} for v in terms.program.variables],
                "markers": [m.to_json() for m in terms.markers],
                "units": [terms.unit(u) for u in range(len(terms.program.units))],
                "automaton": drawing.automaton(compiled[i]),
                "states": states,
                "timers": {str(sym): _timer_marker(terms, sym) for sym in terms.program.time_symbols},
            }
        )
    return {"stages": stages, "steps": steps, "outputs": recording.outputs}


def _hashable(state: Any) -> Any:
    """A state's snapshot form as a dict key: a DFA's number, or a lazy DFA's NFA states."""
    return tuple(state) if isinstance(state, list) else state


def _timer_marker(terms: Any, sym: int) -> dict[str, Any] | None:
    told = explain_timer(terms, (0, sym, 0))
    return None if told is None else {"marker": told["marker"], "how": told["how"]}
