"""A topology's YAML checked as ``eventscript topology check`` checks it, for the page's live
diagnostics: the loader's errors (YAML, schema, files) and the wiring findings, each placed at
``topology.yaml:line:col`` with its hint.

A topology is read from files (its programs are named relative to it), so the YAML and the
programs go to a temporary folder as they would sit in the topology's own; the folder's path is
taken out of every message."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .source import Source

if TYPE_CHECKING:
    from ..topology.model import TopologyGraph

TOPOLOGY_FILE = "topology.yaml"

# "topology.yaml:14:13: message" (or an indented line of a schema error listing)
_PLACED = re.compile(rf"^\s*{re.escape(TOPOLOGY_FILE)}:(\d+):(\d+):\s?(.*)$")
_HINT = re.compile(r"^\s*hint:\s?(.*)$")


@contextmanager
def topology_folder(sources: list[Source], yaml_text: str) -> Iterator[Path]:
    """A temporary folder holding ``topology.yaml`` and the programs; removed after."""
    with tempfile.TemporaryDirectory(prefix="eventscript-playground-") as tmp:
        folder = Path(tmp)
        (folder / TOPOLOGY_FILE).write_text(yaml_text, encoding="utf-8")
        for s in sources:  # (a name is a relative path below the folder: source.name_problem)
            (folder / s.name).parent.mkdir(parents=True, exist_ok=True)
            (folder / s.name).write_text(s.text, encoding="utf-8")
        yield folder


def without_folder(text: str, folder: Path) -> str:
    """A message as the user's files would give it: names relative to the topology."""
    return text.replace(str(folder) + "/", "")


def load(folder: Path, resolve_externals: bool, *, structure_only: bool = False) -> TopologyGraph:
    """The topology in ``folder``, its programs compiled (``TopologyError`` for a bad file);
    ``structure_only`` for the live check, as ``topology check`` reads it (``load_graph``)."""
    from ..topology.model import load_graph

    return load_graph(folder / TOPOLOGY_FILE, resolve_externals=resolve_externals, structure_only=structure_only)


def diagnostics(sources: list[Source], yaml_text: str, resolve_externals: bool) -> list[dict[str, Any]]:
    """The topology's errors and warnings as the page shows them (line, col, message, hint), in
    the order ``eventscript topology check`` prints them."""
    from ..topology.check import check
    from ..topology.config import TopologyError

    with topology_folder(sources, yaml_text) as folder:
        try:
            graph = load(folder, resolve_externals, structure_only=True)
        except TopologyError as exc:
            return error_diagnostics(without_folder(str(exc), folder))
        # (Not the programs' own warnings, ``program-warning``: each program's panel shows them in
        # its editor; here, placed in no line of the topology file, they would stand at 1:1.)
        found = [f for f in check(graph) if f.code != "program-warning"]
        return [
            _diagnostic(f.severity.value, without_folder(f.where, folder), without_folder(f.message, folder), f.hint)
            for f in found
        ]


def _diagnostic(severity: str, where: str, message: str, hint: str | None) -> dict[str, Any]:
    placed = _PLACED.match(where + ":")
    line, col = (int(placed.group(1)), int(placed.group(2))) if placed else (1, 1)
    if not placed and where != TOPOLOGY_FILE:
        message = f"{where}: {message}"  # a place in another file (a program): said in the message
    return {
        "severity": severity,
        "line": line,
        "col": col,
        "message": message,
        "hint": hint,
        "where": f"{TOPOLOGY_FILE}:{line}:{col}",
    }


def error_diagnostics(text: str) -> list[dict[str, Any]]:
    """A loader's error message (``TopologyError``) split into placed errors: each line that
    starts with ``topology.yaml:line:col`` is one (a schema error lists one per setting), the
    ``hint:`` lines after it are its hint; a message with no place is one error at 1:1."""
    out: list[dict[str, Any]] = []
    heading: list[str] = []
    for line in text.splitlines():
        placed = _PLACED.match(line)
        hint = _HINT.match(line)
        if placed:
            out.append(_diagnostic("error", f"{TOPOLOGY_FILE}:{placed.group(1)}:{placed.group(2)}", "", None))
            out[-1]["message"] = placed.group(3)
        elif hint and out:
            out[-1]["hint"] = hint.group(1) if out[-1]["hint"] is None else out[-1]["hint"] + "\n" + hint.group(1)
        elif out:
            out[-1]["message"] += "\n" + line
        else:
            heading.append(line)
    intro = "\n".join(heading).removeprefix(f"{TOPOLOGY_FILE}: ").strip()
    if not out:
        return [_diagnostic("error", TOPOLOGY_FILE, intro or "the topology cannot be read", None)]
    if intro:  # "invalid topology:" before a list of settings: said in each
        for d in out:
            d["message"] = f"{intro.rstrip(':')}: {d['message']}"
    return out
