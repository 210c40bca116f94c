"""``eventscript topology graph``: a topology drawn with Graphviz (the approach of ``tools/graph.py``).

Topics are ellipses, programs boxes labelled with their group clause(s) and delivery guarantee;
an arrow from a topic to a program is an input (labelled with the event name the input gives its
records), from a program to a topic an output (labelled with the events routed there). Error
topics and the arrows to them are dashed.
"""

from __future__ import annotations

from pathlib import Path

from ..tools.graph import balanced_prefix, dot_quoted, write_drawing
from .model import Stage, TopologyGraph


def group_text(st: Stage) -> str:
    """The program's group clauses as written (``group(Reading.sensor)``), or "not grouped"."""
    if not st.grouped:
        return "not grouped"
    shown: list[str] = []
    for ev in st.inputs.values():
        pos = ev.entry.group_pos
        if pos is None:
            continue
        text, _ = balanced_prefix(pos.source.text[pos.offset : pos.offset + 400], "(", ")")
        text = " ".join(text.split())
        if text not in shown:
            shown.append(text)
    return "\n".join(shown) or "grouped"


def _topic_id(topic: str) -> str:
    return dot_quoted("topic:" + topic)


def _program_id(st: Stage) -> str:
    return dot_quoted("program:" + st.name)


def to_dot(graph: TopologyGraph) -> str:
    name = graph.topology.application
    lines = [
        f"digraph {dot_quoted(name)} {{",
        "  rankdir=LR;",
        f"  graph [label={dot_quoted(f'topology {name} ({graph.file.name})')}, labelloc=t, fontname=Helvetica];",
        "  node [fontname=Helvetica];",
        "  edge [fontname=Helvetica, fontsize=10];",
    ]
    errors_only = {t for t in graph.error_writers if t not in graph.writes and t not in graph.reads}
    for topic in graph.all_topics():
        attrs = "shape=ellipse"
        if topic in errors_only:
            attrs += ", style=dashed"
        elif topic in graph.external_topics:
            attrs += ", style=filled, fillcolor=gray92"
        lines.append(f"  {_topic_id(topic)} [label={dot_quoted(topic)}, {attrs}];")
    for st in graph.stages:
        label = f"{st.name}\n{group_text(st)}\n{st.config.guarantee}"
        lines.append(f"  {_program_id(st)} [label={dot_quoted(label)}, shape=box, style=rounded];")
    for st in graph.stages:
        for inp in st.config.inputs:
            what = inp.event or (
                f"header {inp.event_from.header}"
                if inp.event_from and inp.event_from.header
                else f"field {inp.event_from.field}"
                if inp.event_from
                else inp.format
            )
            lines.append(f"  {_topic_id(inp.topic)} -> {_program_id(st)} [label={dot_quoted(what)}];")
        routed: dict[str, list[str]] = {}
        for w in (w for ws in graph.writes.values() for w in ws if w.stage is st):
            routed.setdefault(w.topic, []).append(w.event)
        for topic, events in routed.items():
            lines.append(f"  {_program_id(st)} -> {_topic_id(topic)} [label={dot_quoted(', '.join(events))}];")
        lines.append(f'  {_program_id(st)} -> {_topic_id(st.config.error_topic)} [label="$error", style=dashed];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(graph: TopologyGraph, path: Path) -> int:
    """Write DOT text (``.dot``/``.gv``) or an image drawn by Graphviz (``.svg``/``.png``); without
    ``dot`` the DOT text is written beside the requested file. Returns the exit status."""
    return write_drawing(lambda: to_dot(graph), path, "eventscript topology graph")
