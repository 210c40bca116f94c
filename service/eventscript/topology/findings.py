"""What ``topology check`` reports: a finding (where, what, what to do) and type comparisons.

Kept apart from ``check`` so that each group of checks (links between programs in ``check``,
sources fed from outside in ``sources``) can report findings the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..language.diagnostics import Diagnostic, Omitted, Severity
from ..language.types import StructType, Type

__all__ = ["Finding", "Severity", "program_diagnostic", "type_difference"]


@dataclass(frozen=True)
class Finding:
    """One problem of a topology: like a compiler diagnostic, but placed by ``file:line:col`` text
    (a place in the topology file, which is not program source)."""

    severity: Severity
    where: str
    message: str
    hint: str | None = None
    #: A short stable name for the kind of problem (tests and tooling match on it; printed after
    #: the first line of the message, as ``[code]``, so that a user can look it up in the docs).
    code: str = ""
    #: Lines quoting the place under the message (a program's source line and a caret).
    quote: tuple[str, ...] = ()
    #: A program's warning's own code (``never-ends``: what an allow comment in the program names),
    #: printed after the finding's: ``[program-warning: never-ends]``.
    program_code: str = ""

    def render(self) -> str:
        first, newline, rest = self.message.partition("\n")
        codes = ": ".join(c for c in (self.code, self.program_code) if c)
        tag = f" [{codes}]" if codes else ""
        lines = [f"{self.where}: {self.severity.value}: {first}{tag}{newline}{rest}", *self.quote]
        if self.hint:
            lines.append(f"    hint: {self.hint}")
        return "\n".join(lines)


def program_diagnostic(program: str, d: Diagnostic | Omitted, code: str) -> Finding:
    """A program's compiler diagnostic as a finding of the topology: at its ``file:line:col`` in
    the program, with the source line, caret and hint ``eventscript check`` shows, and the name of
    the program in the topology (several programs may share one file)."""
    message = f"program {program}: {d.message}"
    if isinstance(d, Omitted):
        return Finding(d.severity, d.source_name, message, code=code)
    return Finding(d.severity, str(d.pos), message, d.hint, code, tuple(d.quote()), d.code)


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
