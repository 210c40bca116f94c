"""Where a plan's findings are in the new program's source, for messages that say file:line:col.

The compiled program keeps positions for its markers only (variables and group clauses have
none, and adding them would change its format and fingerprint), so the places come from the
checker's symbols of the source the plan was made from. A compiled ``.json`` program has no source:
its findings are then reported without a place.
"""

from __future__ import annotations

from ..language.checked import CheckedProgram
from ..language.source import Pos


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
