"""The pictures the playground shows: a program's automaton as ``eventscript graph`` draws it
(with, for each state, the node that draws it, so the page can highlight the states keys are
in), and a topology's pipeline as ``eventscript topology graph`` draws it."""

from __future__ import annotations

import json
import shutil
import subprocess
from functools import lru_cache
from typing import Any

from ..automata.compiled import CompiledProgram
from ..tools.graph import DEFAULT_MAX_STATES, explore, to_dot

#: Seconds Graphviz may take for one drawing in the playground (the CLI waits longer).
DOT_SECONDS = 20


def state_id(state: Any) -> str:
    """A state's snapshot form as the page names it (``JSON.stringify`` of the same value)."""
    return json.dumps(state, separators=(",", ":"))


@lru_cache(maxsize=64)
def svg(dot_text: str) -> str | None:
    """Graphviz's SVG for DOT text, or None without a working ``dot`` (the page then shows the
    DOT text). Cached: a run redraws the same programs again and again."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, "-Tsvg"], input=dot_text.encode("utf-8"), capture_output=True, timeout=DOT_SECONDS, check=False
        )
    except (subprocess.TimeoutExpired, OSError):
        return None
    if done.returncode != 0:
        return None
    text = done.stdout.decode("utf-8", "replace")
    start = text.find("<svg")  # drop the XML prolog and doctype: the page inlines the picture
    return text[start:] if start >= 0 else None


def automaton(compiled: CompiledProgram) -> dict[str, Any]:
    """The drawing of a program's automaton and the node (``s<i>``, the title Graphviz gives it
    in the SVG) of each state drawn, by state id."""
    dot = to_dot(compiled)
    ex = explore(compiled, DEFAULT_MAX_STATES)
    machine = compiled.machine
    nodes = {state_id(machine.state_to_json(key)): f"s{i}" for key, i in ex.index.items()}
    return {"svg": svg(dot), "dot": dot, "nodes": nodes, "complete": ex.complete}


def pipeline(graph: Any) -> dict[str, Any]:
    """A topology's pipeline drawing (``topology graph``)."""
    from ..topology.graph import to_dot as topology_dot

    dot = topology_dot(graph)
    return {"svg": svg(dot), "dot": dot}
