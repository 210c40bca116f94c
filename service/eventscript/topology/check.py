"""``eventscript topology check``: do the links of a topology fit? Without a broker.

A link is a topic one program writes and another reads. It fits when the reader can decode what
the writer writes (the ``es-event`` header names each record's event), every event name the
reader takes from it is one a writer writes there, the types agree field by field, grouped
readers get keyed records, co-read topics have one partition count, and no program feeds itself.
Every problem is reported with where it is (``file:line:col`` in the topology or the program)
and what to do.
"""

from __future__ import annotations

from .findings import Finding, Severity, program_diagnostic, type_difference
from .headers import HEADER_EVENT
from .model import Read, Stage, TopologyGraph, Write
from .sources import external_sources

__all__ = ["Finding", "Severity", "check", "errors", "type_difference"]


def check(graph: TopologyGraph) -> list[Finding]:
    """Every wiring problem of the topology: errors first, then warnings, each in file order."""
    out: list[Finding] = []
    out += _compile_problems(graph)
    ok = [s for s in graph.stages if s.ok]
    for st in ok:
        out += _declared_names(graph, st)
    for topic, readers in graph.reads.items():
        for rd in readers:
            if rd.stage.ok:
                out += _link(graph, topic, rd)
    out += _copartitioned(graph)
    out += _cycles(graph)
    out += _unread_outputs(graph)
    out += _unfed_inputs(graph)
    out += external_sources(graph)
    out += _unset_variables(graph)
    return sorted(out, key=lambda f: f.severity is not Severity.ERROR)


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.ERROR]


# ---------------------------------------------------------------------------------------


def _unset_variables(graph: TopologyGraph) -> list[Finding]:
    """A warning per ``${VAR}`` whose variable is not set here: the links were checked without it
    (the deployment's environment gives it), but a worker reading the topology where it is not
    set stops, so it is said, with how to give it a default."""
    return [
        Finding(
            Severity.WARNING,
            u.where or str(graph.file),
            f"{u.setting}: environment variable {u.name} is not set: checked with '${{{u.name}}}' as written",
            f"a worker stops where it is not set: set {u.name} where the workers run, or give a default "
            f"(${{{u.name}:-default}})",
            "unset-variable",
        )
        for u in graph.unset_variables
    ]


def _compile_problems(graph: TopologyGraph) -> list[Finding]:
    out: list[Finding] = []
    for st in graph.stages:
        where = graph.where_program(st, "source")
        if st.read_error is not None:
            out.append(
                Finding(
                    Severity.ERROR,
                    where,
                    f"program {st.name}: {st.path}: {st.read_error}",
                    "fix 'source:' (it is relative to the topology file)",
                    "unreadable",
                )
            )
        elif st.compilation is not None and not st.compilation.ok:
            shown = [d.render() for d in st.compilation.diagnostics.sorted() if d.severity is Severity.ERROR]
            out.append(
                Finding(
                    Severity.ERROR,
                    where,
                    f"program {st.name} does not compile:\n" + "\n".join(shown),
                    f"run 'eventscript check {st.path}' and fix the program",
                    "compile",
                )
            )
        if st.compilation is not None:
            out += _program_warnings(st)
    return out


def _program_warnings(st: Stage) -> list[Finding]:
    """The compiler's warnings of a program, as ``eventscript check`` shows them: a topology that
    passes ``topology check --strict`` must not hide a misspelt variable in one of its programs."""
    assert st.compilation is not None
    shown = st.compilation.diagnostics.sorted()
    return [program_diagnostic(st.name, d, "program-warning") for d in shown if d.severity is Severity.WARNING]


def _declared_names(graph: TopologyGraph, st: Stage) -> list[Finding]:
    """Names the topology gives must be names the program declares."""
    out: list[Finding] = []
    for j, inp in enumerate(st.config.inputs):
        if inp.event is not None and inp.event not in st.inputs:
            out.append(
                Finding(
                    Severity.ERROR,
                    graph.where_program(st, "inputs", j, "event"),
                    f"program {st.name} reads topic {inp.topic} as event {inp.event}, but {st.path.name} declares no "
                    f"input {inp.event} (its inputs: {', '.join(st.inputs) or 'none'}{_carried(graph, inp.topic)})",
                    "name one of the program's input events, or declare it in the program's 'in' clause",
                    "unknown-input",
                )
            )
    for event in st.config.outputs:
        if event != "default" and event not in st.outputs:
            out.append(
                Finding(
                    Severity.ERROR,
                    graph.where_program(st, "outputs", event),
                    f"program {st.name} routes output {event} to topic {st.config.outputs[event]}, but {st.path.name} "
                    f"declares no output {event} (its outputs: {', '.join(st.outputs) or 'none'})",
                    "name one of the program's output events, or 'default' for all the others",
                    "unknown-output",
                )
            )
    return out


def _carried(graph: TopologyGraph, topic: str) -> str:
    """``; topic t carries E (writer)``: the names a misspelt ``event:`` was likely meant to be."""
    written = sorted({f"{w.event} ({w.stage.name})" for w in graph.writes.get(topic, []) if w.stage.ok})
    return f"; topic {topic} carries {', '.join(written)}" if written else ""


def _link(graph: TopologyGraph, topic: str, rd: Read) -> list[Finding]:
    writes = [w for w in graph.writes.get(topic, []) if w.stage.ok]
    if not writes:
        return []
    where = graph.where_program(rd.stage, "inputs", rd.input_index)
    c = rd.config
    if rd.name_of("x") is None:
        how = (
            "format: cloudevents"
            if c.format == "cloudevents"
            else f"event_from: {{field: {c.event_from.field}}}"
            if c.event_from and c.event_from.field
            else f"event_from: {{header: {c.event_from.header if c.event_from else '?'}}}"
        )
        writers = ", ".join(sorted({w.stage.name for w in writes}))
        return [
            Finding(
                Severity.ERROR,
                where,
                f"program {rd.stage.name} reads topic {topic} with {how}, but programs ({writers}) write "
                f"it: their records are JSON values with the event name in the '{HEADER_EVENT}' header",
                f"read it with 'event_from: {{header: {HEADER_EVENT}}}' or 'event: NAME'",
                "undecodable",
            )
        ]
    out: list[Finding] = []
    # (an event the reader does not declare is its unknown-input error alone: a misspelt name)
    if c.event is not None and c.event in rd.stage.inputs and all(w.event != c.event for w in writes):
        written = ", ".join(sorted({f"{w.event} ({w.stage.name})" for w in writes}))
        out.append(
            Finding(
                Severity.ERROR,
                graph.where_program(rd.stage, "inputs", rd.input_index, "event"),
                f"program {rd.stage.name} reads event {c.event} from topic {topic}, but no program "
                f"writes {c.event} there (written there: {written})",
                f"route {c.event} to {topic} in the writer's 'outputs:', or read the right topic",
                "not-written",
            )
        )
    for w in writes:
        out += _write_fits(graph, w, rd, where)
    return out


def _write_fits(graph: TopologyGraph, w: Write, rd: Read, where: str) -> list[Finding]:
    name = rd.name_of(w.event)
    assert name is not None
    reader, writer = rd.stage, w.stage
    out: list[Finding] = []
    declared = reader.inputs.get(name)
    if declared is None:
        if rd.config.event is None:
            out.append(
                Finding(
                    Severity.ERROR,
                    where,
                    f"program {writer.name} writes event {w.event} to topic {w.topic}, which program {reader.name} "
                    f"reads, but {reader.path.name} declares no input {w.event}: each such record would become "
                    f"an $error event",
                    f"declare {w.event} in {reader.path.name}, or route it elsewhere in {writer.name}'s 'outputs:'",
                    "undeclared-input",
                )
            )
        return out
    out_decl = writer.outputs[w.event]
    diff = type_difference(out_decl.ty, declared.ty)
    if diff is not None:
        out.append(
            Finding(
                Severity.ERROR,
                where,
                f"type mismatch on topic {w.topic}: program {writer.name} writes {w.event} as {out_decl.ty} "
                f"({out_decl.pos}) but program {reader.name} reads it as {name} {declared.ty} ({declared.pos}): {diff}",
                "declare the same fields, with the same types, in the same order in both programs",
                "type",
            )
        )
    accepts_unkeyed = rd.config.keyed is False or getattr(rd.config, "key", None) == "none"
    if reader.grouped and not writer.grouped and not accepts_unkeyed:
        out.append(
            Finding(
                Severity.ERROR,
                where,
                f"program {reader.name} is grouped, so its input records must be keyed, but program {writer.name} "
                f"is not grouped and writes {w.event} to topic {w.topic} without a key: each record would become "
                f"$error 6",
                f"add 'keyed: false' to this input (the worker then keys records by {reader.name}'s group key), "
                f"or group {writer.name}",
                "keys",
            )
        )
    return out


def _copartitioned(graph: TopologyGraph) -> list[Finding]:
    out: list[Finding] = []
    specs = graph.topology.topics
    for st in graph.stages:
        counts = {i.topic: specs[i.topic].partitions for i in st.config.inputs if i.topic in specs}
        if len(set(counts.values())) > 1:
            shown = ", ".join(f"{t}: {n}" for t, n in counts.items())
            out.append(
                Finding(
                    Severity.ERROR,
                    graph.where_program(st, "inputs"),
                    f"program {st.name} reads topics with different partition counts ({shown}); a "
                    f"program's input topics must be co-partitioned",
                    "give them the same 'partitions:' under 'topics:'",
                    "partitions",
                )
            )
    return out


def _successors(graph: TopologyGraph, st: Stage) -> list[Stage]:
    topics = {w for w, ws in graph.writes.items() if any(x.stage is st for x in ws)}
    topics.add(st.config.error_topic)
    seen: dict[int, Stage] = {}
    for t in sorted(topics):
        for rd in graph.reads.get(t, []):
            seen.setdefault(rd.stage.index, rd.stage)
    return [seen[k] for k in sorted(seen)]


def _cycles(graph: TopologyGraph) -> list[Finding]:
    """Programs that feed themselves, directly or through others (one finding per cycle found)."""
    out: list[Finding] = []
    state: dict[int, int] = {}  # 1: on the path, 2: done
    path: list[Stage] = []

    def visit(st: Stage) -> None:
        state[st.index] = 1
        path.append(st)
        for nxt in _successors(graph, st):
            if state.get(nxt.index) == 1:
                loop = [*path[path.index(nxt) :], nxt]
                shown = " → ".join(s.name for s in loop)
                out.append(
                    Finding(
                        Severity.ERROR,
                        graph.where_program(nxt),
                        f"the programs form a cycle: {shown}; a topology must be a pipeline "
                        f"(each event would feed its own causes)",
                        "break the cycle: write the last link to a topic the first program does not read",
                        "cycle",
                    )
                )
            elif nxt.index not in state:
                visit(nxt)
        path.pop()
        state[st.index] = 2

    for st in graph.stages:
        if st.index not in state:
            visit(st)
    return out


def _unread_outputs(graph: TopologyGraph) -> list[Finding]:
    out: list[Finding] = []
    for st in graph.stages:
        for event, decl in st.outputs.items():
            if st.config.output_topic(event) is None:
                out.append(
                    Finding(
                        Severity.WARNING,
                        graph.where_program(st, "outputs"),
                        f"program {st.name} declares output {event} ({decl.pos}) but routes it to no "
                        f"topic: its events are dropped",
                        f"add '{event}: TOPIC' (or 'default: TOPIC') under the program's 'outputs:'",
                        "unrouted-output",
                    )
                )
    return out


def _delivers(graph: TopologyGraph, st: Stage, event: str) -> bool:
    for inp in st.config.inputs:
        if inp.event == event:
            return True
        if inp.event is None:
            writes = graph.writes.get(inp.topic)
            if writes:
                if any(w.event == event for w in writes):
                    return True
            else:
                listed = graph.source_events(inp.topic)
                if listed is None or event in listed:
                    return True  # a source topic carries the events its declaration lists, or any
    return False


def _unfed_inputs(graph: TopologyGraph) -> list[Finding]:
    out: list[Finding] = []
    for st in graph.stages:
        for event, decl in st.inputs.items():
            if not _delivers(graph, st, event):
                out.append(
                    Finding(
                        Severity.WARNING,
                        graph.where_program(st, "inputs"),
                        f"program {st.name} declares input {event} ({decl.pos}) but none of its "
                        f"input topics carries it: no program writes it there, and no external "
                        f"topic's 'events:' lists it",
                        f"add an input topic with 'event: {event}', or route {event} to one of its topics",
                        "unfed-input",
                    )
                )
    return out
