"""Where a plan's findings are in the new program's source, for messages that say file:line:col.

The compiled program keeps positions for its markers only (variables and group clauses have
none, and adding them would change its format and fingerprint), so the places come from the
checker's symbols of the source the plan was made from. A compiled ``.json`` program has no source:
its findings are then reported without a place. A host that keeps only the compiled program (the
worker) finds its source again by the name it was compiled from (:func:`source_places`).
"""

from __future__ import annotations

from ..automata.compiled import CompiledProgram, sha256
from ..language.checked import CheckedProgram
from ..language.checker import check
from ..language.diagnostics import Diagnostics
from ..language.parser import parse
from ..language.source import Pos, SourceFile


class SourcePlaces:
    """Positions in one program's source, looked up by name; None where nothing is known."""

    def __init__(self, checked: CheckedProgram | None = None) -> None:
        self.checked = checked

    def variable(self, name: str) -> Pos | None:
        """The first place the variable is set (the language has no declarations), else its first
        use."""
        for v in self.checked.variables if self.checked else []:
            if v.name == name:
                return v.assigned_at or v.first_pos
        return None

    def group(self, input_name: str | None = None) -> Pos | None:
        """An input's ``group(...)`` clause (``None``: the first input that has one)."""
        for name, event in (self.checked.inputs if self.checked else {}).items():
            if (input_name is None or name == input_name) and event.entry.group_pos is not None:
                return event.entry.group_pos
        return None


def source_places(compiled: CompiledProgram) -> SourcePlaces:
    """The places of the source ``compiled`` was compiled from, read again (parsed and checked: the
    automaton is not needed), so that a worker refusing an upgrade points at the lines to edit as
    ``eventscript upgrade plan`` does. None known when that file is gone or no longer holds the
    text compiled (its sha256): places in another text would point at the wrong lines."""
    if not compiled.source_name or not compiled.source_sha256:
        return SourcePlaces()
    try:
        source = SourceFile.read(compiled.source_name)
    except (OSError, UnicodeDecodeError, ValueError):
        return SourcePlaces()
    if sha256(source.text) != compiled.source_sha256:
        return SourcePlaces()
    diagnostics = Diagnostics()
    checked = check(parse(source, diagnostics), diagnostics, resolve_externals=False)
    return SourcePlaces(None if diagnostics.has_errors else checked)
