"""The fingerprint of a compiled program: what its machine does, not how its text looks.

Two compilations of one program whose text differs only in comments, spaces or line breaks get
the same fingerprint; any change a running instance could notice (a marker, an action, a type, a
duration, the state numbering) gives another. It is the SHA-256 of a canonical JSON of the
intermediate form and the machine with every text position removed: marker and action texts,
lines, columns and file names go, and the positions that order action units (token indexes)
become ranks: only their relative order breaks ties between paths. A marker's ``order`` plays no
part in the machine (and a wildcard's is a character offset, a comment away from another value),
so it goes too. Time symbols are named after their
position (``elapse@8:5``), so that name is reduced to its kind.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import weakref
from typing import Any

from ..automata.compiled import CompiledProgram
from ..language import ir

#: Bumped when what the fingerprint covers changes (old snapshots then meet "another version").
SCHEME = 1


def fingerprint(compiled: CompiledProgram) -> str:
    """``es1-`` and the first 32 hex digits of the SHA-256 of the program's canonical form."""
    text = json.dumps(canonical(compiled), separators=(",", ":"), sort_keys=True, default=str)
    return f"es{SCHEME}-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


#: id of a compiled program → (a weak reference to it, its fingerprint). By id: a compiled program
#: is a dataclass compared by value, so it cannot be a key itself.
_FINGERPRINTS: dict[int, tuple[weakref.ref[CompiledProgram], str]] = {}


def fingerprint_of(compiled: CompiledProgram) -> str:
    """The program's fingerprint, computed once per compiled program (a worker's tasks share one)."""
    known = _FINGERPRINTS.get(id(compiled))
    if known is not None and known[0]() is compiled:
        return known[1]
    fp = fingerprint(compiled)
    key = id(compiled)
    _FINGERPRINTS[key] = (weakref.ref(compiled, lambda _: _FINGERPRINTS.pop(key, None)), fp)
    return fp


def canonical(compiled: CompiledProgram) -> dict[str, Any]:
    """The machine-relevant parts of a compiled program as JSON-compatible data."""
    p = compiled.program
    ranks = _unit_ranks(p)
    markers = [dataclasses.replace(m, text="", line=0, col=0, file="", order=0) for m in p.markers]
    units = [dataclasses.replace(u, text="", line=0, col=0, file="", order=ranks[u.index]) for u in p.units]
    symbols = [dataclasses.replace(s, name=s.name.split("@")[0]) if s.kind == "time" else s for s in p.symbols]
    program = dataclasses.replace(p, name="", markers=markers, units=units, symbols=symbols)
    machine = compiled.machine.to_json()
    if "occurrences" in machine:  # a lazy DFA's occurrence table repeats the units' orders
        machine["occurrences"] = [[unit, ranks[unit], copy] for unit, _, copy in machine["occurrences"]]
    return {"program": _without_written_orders(ir.to_json(program)), "machine": machine}


def _without_written_orders(x: Any) -> Any:
    """The JSON form with each structure builder's written order (``ir.Build.order``) left out:
    it decides only which of the fields' ``$error`` events comes first, never what an instance
    holds, so a program compiled before builders kept it has the same fingerprint (its state is
    read as its own after an upgrade of EventScript, not refused)."""
    if isinstance(x, list):
        if len(x) == 4 and x[0] == ir.Build.TAG and isinstance(x[3], list):
            return [x[0], x[1], _without_written_orders(x[2])]
        return [_without_written_orders(v) for v in x]
    if isinstance(x, dict):
        return {k: _without_written_orders(v) for k, v in x.items()}
    return x


def _unit_ranks(p: ir.ProgramIR) -> dict[int, int]:
    """Each action unit's rank in program-text order."""
    return {u.index: rank for rank, u in enumerate(sorted(p.units, key=lambda u: (u.order, u.index)))}
