""" "Save as test case": what the page runs now, written as a folder that a test runner replays.

A program or a pipeline becomes a conformance case (``program.es`` or ``stage1.es``...,
``input.trace``, ``expected.jsonl``), which ``eventscript test`` replays from its folder
(``case_command``), as the project's conformance runner does. The
conformance format holds one program or a chain, so a topology (several programs wired by topics,
fan-out included) is saved in the layout of the shipped ``topologies/`` folders instead:
``topology.yaml``, its programs, ``sample.trace`` and ``expected.jsonl``, which
``eventscript test --trace sample.trace topology.yaml --expect expected.jsonl`` runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..engine.encoding import json_line
from .limits import Limits
from .service import RequestError, run, sources_of
from .source import Source

_CASE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")

#: The command that replays a saved topology test, run from its folder.
TOPOLOGY_COMMAND = "eventscript test --trace sample.trace topology.yaml --expect expected.jsonl"


def save_case(body: Any, limits: Limits, cases_dir: Path) -> dict[str, Any]:
    """Write the case folder of what the tester emits for the trace now; the answer names the
    folder, its files, its kind (``conformance`` or ``topology``) and the command that runs it."""
    name = body.get("name") if isinstance(body, dict) else None
    if not isinstance(name, str) or not _CASE_NAME.match(name):
        raise RequestError("a case name is lower-case letters, digits and dashes (say 'door-left-open')")
    result = run(body, limits)
    if "error" in result:
        return {"error": result["error"]}
    folder = cases_dir / name
    if folder.exists():
        return {"error": f"{folder}: a case of that name exists; choose another name"}
    sources = sources_of(body, limits)
    expected = "".join(json_line({k: v for k, v in o.items() if k != "step"}) + "\n" for o in result["outputs"])
    trace = body["trace"] if body["trace"].endswith("\n") else body["trace"] + "\n"
    if body.get("topology") is not None:
        files, kind, command = _topology_files(name, sources, body["topology"], trace), "topology", TOPOLOGY_COMMAND
    else:
        command = case_command(len(sources))
        files, kind = _conformance_files(name, sources, trace, command), "conformance"
    files["expected.jsonl"] = expected
    folder.mkdir(parents=True)
    for fname, text in files.items():  # a topology's programs may sit in folders below it
        (folder / fname).parent.mkdir(parents=True, exist_ok=True)
        (folder / fname).write_text(text, encoding="utf-8")
    return {"path": str(folder), "files": sorted(files), "kind": kind, "command": command}


_CHECK_IT = "The expected output is what `eventscript test` emitted when it was saved; check it before relying on it."


def _program_files(count: int) -> list[str]:
    return ["program.es"] if count == 1 else [f"stage{i}.es" for i in range(1, count + 1)]


def case_command(programs: int) -> str:
    """The command that replays a saved conformance case, run from its folder: wherever the
    playground was started (the conformance runner, ``../shared/conformance/run`` from the
    project's folder, is not beside an installed package)."""
    return f"eventscript test --trace input.trace {' '.join(_program_files(programs))} --expect expected.jsonl"


def _conformance_files(name: str, sources: list[Source], trace: str, command: str) -> dict[str, str]:
    files = {fname: s.text for fname, s in zip(_program_files(len(sources)), sources)}
    files["input.trace"] = trace
    files["README.md"] = (
        f"# {name}\n\nA conformance case saved from the EventScript playground. Run it from this folder:\n\n"
        f"```\n{command}\n```\n\n{_CHECK_IT}\n"
    )
    return files


def _topology_files(name: str, sources: list[Source], yaml_text: str, trace: str) -> dict[str, str]:
    files = {s.name: s.text for s in sources}
    files["topology.yaml"] = yaml_text
    files["sample.trace"] = trace
    files["README.md"] = (
        f"# {name}\n\nA topology saved from the EventScript playground, in the layout of the shipped "
        f"`topologies/` folders (a conformance case holds one program or a chain, not a topology). "
        f"Run it from this folder:\n\n```\n{TOPOLOGY_COMMAND}\n```\n\n{_CHECK_IT}\n"
    )
    return files
