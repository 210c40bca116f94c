"""Topics fed from outside the topology, declared under ``topics:`` with ``external: true``.

A topic that programs read and no program writes is either a source (producers outside the
topology write it) or a mistake (a misspelt link, a writer routed elsewhere). Without a
declaration the two look alike, so ``topology check`` asks for one. When the declaration also
lists the events the outside producers write, with or without their types, every reader is
checked against it as it would be against a writing program: the names it reads must be listed,
the names listed must be inputs it declares, and the types must agree field by field.
"""

from __future__ import annotations

import difflib

from ..language.checker import Checker
from ..language.diagnostics import Diagnostics
from ..language.lexer import tokenize
from ..language.parser import ParseError, Parser
from ..language.source import SourceFile
from ..language.types import Type
from .config import TopicSpec
from .findings import Finding, Severity, type_difference
from .model import Read, TopologyGraph


def parse_event_type(text: str) -> tuple[Type | None, str | None]:
    """An EventScript type written in a topology file (``{string symbol; double price;}``), or
    None and what is wrong with it. Only built-in type names: a topology has no ``type`` lines."""
    diagnostics = Diagnostics()
    try:
        tokens = tokenize(SourceFile("<type>", text), diagnostics, allow_include=False)
        if diagnostics.errors:
            return None, diagnostics.errors[0].message
        parser = Parser(tokens, diagnostics)
        node = parser.parse_type()
        if not parser.at("EOF"):
            return None, f"unexpected {parser.tok.text!r} after the type"
    except ParseError as exc:
        return None, exc.message
    checker = Checker(diagnostics, resolve_externals=False)
    checker.reporting = True
    ty = checker.resolve_type(node)
    if ty is None or diagnostics.errors:
        return None, diagnostics.errors[0].message if diagnostics.errors else "not a type"
    return ty, None


def external_sources(graph: TopologyGraph) -> list[Finding]:
    """Every problem with the topology's sources and their declarations."""
    out = _undeclared_sources(graph) + _written_externals(graph) + _unread_externals(graph)
    for topic, spec in graph.topology.topics.items():
        if not (spec.external and spec.events):
            continue
        types = _declared_types(graph, topic, spec, out)
        for rd in graph.reads.get(topic, []):
            if rd.stage.ok:
                out += _reader_fits(graph, spec, types, rd)
    return out


def _undeclared_sources(graph: TopologyGraph) -> list[Finding]:
    out: list[Finding] = []
    written = [*graph.writes, *graph.error_writers]
    # A program that cannot be read or compiled writes nothing in the graph; the topics its
    # 'outputs:' route to are probably its, and its own error already says what to fix.
    routed_by_failed = {t for st in graph.stages if not st.ok for t in st.config.outputs.values()}
    for topic in graph.external_topics:
        spec = graph.topology.topics.get(topic)
        if (spec is not None and spec.external) or topic in routed_by_failed:
            continue
        rd = graph.reads[topic][0]
        near = difflib.get_close_matches(topic, written, n=1, cutoff=0.85)
        # ... or a source declared under a close name ('door-event' read, 'door-events' declared).
        sources = [t for t, s in graph.topology.topics.items() if s.external]
        near_source = difflib.get_close_matches(topic, sources, n=1, cutoff=0.85)
        spelling = (
            f" (did you mean {near[0]}, written by program {_writer_of(graph, near[0])}?)"
            if near
            else f" (did you mean {near_source[0]}, declared external at "
            f"{graph.positions.where('topics', near_source[0])}?)"
            if near_source
            else ""
        )
        out.append(
            Finding(
                Severity.ERROR,
                graph.where_program(rd.stage, "inputs", rd.input_index, "topic"),
                f"topic {topic} is read by program {rd.stage.name} but written by no program of the topology, "
                f"and it is not declared as an external source",
                f"if producers outside the topology write it, declare it under 'topics:' as "
                f"{topic}: {{external: true, partitions: N}}; otherwise check its spelling{spelling}",
                "unwritten-topic",
            )
        )
    return out


def _writer_of(graph: TopologyGraph, topic: str) -> str:
    writers = [w.stage.name for w in graph.writes.get(topic, [])] + [s.name for s in graph.error_writers.get(topic, [])]
    return writers[0]


def _written_externals(graph: TopologyGraph) -> list[Finding]:
    out: list[Finding] = []
    for topic, spec in graph.topology.topics.items():
        if spec.external and (topic in graph.writes or topic in graph.error_writers):
            out.append(
                Finding(
                    Severity.ERROR,
                    graph.positions.where("topics", topic, "external"),
                    f"topic {topic} is declared external (written from outside the topology), but program "
                    f"{_writer_of(graph, topic)} writes it",
                    f"remove 'external: true' from {topic}, or route the program's output to another topic",
                    "external-written",
                )
            )
    return out


def _unread_externals(graph: TopologyGraph) -> list[Finding]:
    return [
        Finding(
            Severity.WARNING,
            graph.positions.where("topics", topic, "external"),
            f"topic {topic} is declared as an external source, but no program reads it",
            f"read it in a program's 'inputs:', or remove {topic} from 'topics:'",
            "unread-external",
        )
        for topic, spec in graph.topology.topics.items()
        if spec.external and topic not in graph.reads and topic not in graph.writes and topic not in graph.error_writers
    ]


def _declared_types(graph: TopologyGraph, topic: str, spec: TopicSpec, out: list[Finding]) -> dict[str, Type]:
    """The types the declaration gives (those it gives and that parse); a finding for each bad one."""
    types: dict[str, Type] = {}
    for name, text in spec.events.items():
        if text is None:
            continue
        ty, problem = parse_event_type(text)
        if ty is None:
            out.append(
                Finding(
                    Severity.ERROR,
                    graph.positions.where("topics", topic, "events", name),
                    f"topic {topic} declares event {name} with the type {text!r}, which is not an EventScript "
                    f"type: {problem}",
                    "write it as in an 'in' clause, for example \"{string symbol; double price;}\"",
                    "event-type",
                )
            )
        else:
            types[name] = ty
    return types


def _reader_fits(graph: TopologyGraph, spec: TopicSpec, types: dict[str, Type], rd: Read) -> list[Finding]:
    reader, topic = rd.stage, rd.topic
    listed = ", ".join(spec.events)
    where = graph.where_program(reader, "inputs", rd.input_index)
    if rd.config.event is not None:
        if rd.config.event not in spec.events:
            return [
                Finding(
                    Severity.ERROR,
                    graph.where_program(reader, "inputs", rd.input_index, "event"),
                    f"program {reader.name} reads event {rd.config.event} from topic {topic}, but the topic's "
                    f"declaration ({graph.positions.where('topics', topic, 'events')}) lists only {listed}",
                    f"add {rd.config.event} to the topic's 'events:', or read one of the events it lists",
                    "external-event",
                )
            ]
        names = [rd.config.event]
    else:
        names = list(spec.events)
    out: list[Finding] = []
    for name in names:
        declared = reader.inputs.get(name)
        if declared is None:
            out.append(
                Finding(
                    Severity.ERROR,
                    where,
                    f"topic {topic} carries event {name} (its declaration lists {listed}), and program {reader.name} "
                    f"reads the event names from the records, but {reader.path.name} declares no input {name}: "
                    f"each such record would become an $error event",
                    f"declare {name} in {reader.path.name}, or remove it from the topic's 'events:'",
                    "undeclared-input",
                )
            )
            continue
        diff = type_difference(types[name], declared.ty) if name in types else None
        if diff is not None:
            out.append(
                Finding(
                    Severity.ERROR,
                    where,
                    f"type mismatch on topic {topic}: its declaration gives {name} the type {types[name]} "
                    f"({graph.positions.where('topics', topic, 'events', name)}) but program {reader.name} reads it as "
                    f"{declared.ty} ({declared.pos}): {diff.replace('the writer', 'the declaration')}",
                    "declare the same fields, with the same types, in the same order in both",
                    "type",
                )
            )
    return out
