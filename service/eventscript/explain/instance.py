"""One instance (a key's computation) explained: the markers it waits for, its variables, its
pending timer. Built from an instance-context snapshot, the form every host can produce
(``Engine.snapshot``, the worker's state store, a changelog record)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine.context import ContextSnapshot
from ..engine.context import decode as decode_snapshot
from ..engine.encoding import encode
from ..engine.timeutil import format_time
from ..engine.values import UNSET
from .terms import ProgramTerms


@dataclass(frozen=True)
class InstanceView:
    """What an instance holds, JSON-ready: its state (snapshot form), its variables encoded as
    in outputs (None: not set yet), its pending timer as (deadline, time symbol, sequence), and
    whether it has ended."""

    key: list[Any] | None
    state: Any
    variables: list[Any]
    timer: tuple[int, int, int] | None
    terminated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "state": self.state,
            "vars": self.variables,
            "timer": list(self.timer) if self.timer else None,
            "ended": self.terminated,
        }


def json_value(value: Any, ty: Any) -> Any:
    """A value as the explanation shows it: JSON as the tester writes it, None when unset."""
    if value is UNSET:
        return None
    try:
        return encode(value, ty)
    except (TypeError, ValueError, AttributeError):  # an opaque external value: show what it is
        return repr(value)


def view_of_snapshot(terms: ProgramTerms, snap: ContextSnapshot | bytes) -> InstanceView:
    """The view of a snapshot (decoded, or as the bytes ``Engine.snapshot`` returns)."""
    if isinstance(snap, bytes | bytearray | memoryview):
        snap = decode_snapshot(bytes(snap))
    program = terms.program
    key = None
    if snap.key is not None and program.key_types is not None:
        key = [json_value(k, t) for k, t in zip(snap.key, program.key_types)]
    variables = [json_value(v, var.ty) for v, var in zip(snap.variables, program.variables)]
    return InstanceView(key, snap.state, variables, snap.timer, snap.terminated)


def explain_timer(terms: ProgramTerms, timer: tuple[int, int, int] | None) -> dict[str, Any] | None:
    """A pending timer: the time marker it will deliver, its deadline, and how the deadline was
    set (the marker's kind: ``elapse`` counts from when the instance entered the state,
    ``arrive`` names a time of day or date)."""
    if timer is None:
        return None
    deadline, sym, _seq = timer
    marker = terms.time_marker(sym)
    out: dict[str, Any] = {"deadline": format_time(deadline), "marker": None, "how": None}
    if marker is not None:
        out["marker"] = marker.to_json()
        kind = marker.text.split("[", 1)[0].strip()
        out["how"] = f"{marker.text} at {marker.line}:{marker.col}: " + (
            "counted from when the instance entered its state"
            if kind == "elapse"
            else "the next instant its pattern matches"
        )
    return out


def explain_instance(terms: ProgramTerms, view: InstanceView) -> dict[str, Any]:
    """An instance in program terms: key, state, whether it accepts, the markers it waits for
    (text, line:col), its variables by name and type, and its pending timer."""
    program = terms.program
    return {
        "key": view.key,
        "state": view.state,
        "accepting": terms.accepting(view.state),
        "ended": view.terminated,
        "waiting": [] if view.terminated else [m.to_json() for m in terms.waiting(view.state)],
        "variables": [
            {"name": var.name, "type": str(var.ty), "value": value}
            for var, value in zip(program.variables, view.variables)
        ],
        "timer": explain_timer(terms, view.timer),
    }
