"""The compiled program: everything the engine needs, without the source.

This is the document's "state-machine file" (§6.1), as versioned JSON instead of XML: the
intermediate form (alphabet, inputs with their case and group clauses, outputs, variables,
action units, time markers) plus the machine (a DFA transition table, or the epsilon-free NFA
that a lazy DFA runs). The Kafka worker and the Spark backfill load this file; they never need
the compiler.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..language import ir
from .machine import Machine, machine_from_json

if TYPE_CHECKING:
    from .marker_copies import StateCopies

FORMAT = "eventscript-compiled"
#: 2: the lazy DFA's NFA shares follow sets between edges; a textual action runs once per transition.
VERSION = 2


@dataclass
class CompiledProgram:
    program: ir.ProgramIR
    machine: Machine
    source_name: str = ""
    source_sha256: str = ""

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def grouped(self) -> bool:
        return self.program.grouped

    @cached_property
    def marker_copies(self) -> StateCopies | None:
        """The marker copies its DFA states wait before (``automata/marker_copies.py``), rebuilt
        the first time they are asked for (what ``explain`` says a state waits for), then kept.
        None where they cannot be told (a lazy DFA, or a failed rebuild), kept too: a state
        endpoint would otherwise rebuild at every request, failing each time."""
        from .marker_copies import marker_copies  # (the compiler's stages: only where asked)

        return marker_copies(self.program, self.machine)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "name": self.program.name,
            "source": {"name": self.source_name, "sha256": self.source_sha256},
            "program": ir.to_json(self.program),
            "machine": self.machine.to_json(),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.dumps(), encoding="utf-8")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompiledProgram:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a compiled EventScript program (missing format marker)")
        version = data.get("version")
        if version != VERSION:
            raise ValueError(
                f"compiled program version {version} is not supported (this engine reads "
                f"version {VERSION}); recompile it with 'eventscript compile'"
            )
        program = ir.from_json(data["program"])
        if not isinstance(program, ir.ProgramIR):
            raise ValueError("compiled program has no program section")
        src = data.get("source") or {}
        return cls(program, machine_from_json(data["machine"]), src.get("name", ""), src.get("sha256", ""))

    @classmethod
    def loads(cls, text: str) -> CompiledProgram:
        return cls.from_json(json.loads(text))

    @classmethod
    def load(cls, path: str | Path) -> CompiledProgram:
        return cls.loads(Path(path).read_text(encoding="utf-8"))


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
