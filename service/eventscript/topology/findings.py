"""What ``topology check`` reports: a finding (where, what, what to do) and type comparisons.

Kept apart from ``check`` so that each group of checks (links between programs in ``check``,
sources fed from outside in ``sources``) can report findings the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..language.diagnostics import Severity
from ..language.types import StructType, Type

__all__ = ["Finding", "Severity", "type_difference"]


@dataclass(frozen=True)
class Finding:
    """One problem of a topology: like a compiler diagnostic, but placed by ``file:line:col`` text
    (a place in the topology file, which is not program source)."""

    severity: Severity
    where: str
    message: str
    hint: str | None = None
    #: A short stable name for the kind of problem (tests and tooling match on it).
    code: str = ""

    def render(self) -> str:
        text = f"{self.where}: {self.severity.value}: {self.message}"
        return text + (f"\n    hint: {self.hint}" if self.hint else "")


def type_difference(a: Type, b: Type) -> str | None:
    """Where two event types differ, in words; None when they are equal."""
    if a == b:
        return None
    if isinstance(a, StructType) and isinstance(b, StructType):
        for k, (fa, fb) in enumerate(zip(a.fields, b.fields), 1):
            if fa != fb:
                return f"field {k} is '{fa[1]} {fa[0]}' in the writer but '{fb[1]} {fb[0]}' in the reader"
        if len(a.fields) > len(b.fields):
            n, t = a.fields[len(b.fields)]
            return f"the writer has an extra field {len(b.fields) + 1} '{t} {n}'"
        n, t = b.fields[len(a.fields)]
        return f"the reader expects a field {len(a.fields) + 1} '{t} {n}' the writer does not have"
    return f"the writer's type is {a} but the reader's is {b}"
