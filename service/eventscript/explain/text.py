"""Steps as text, for ``eventscript test --explain``: per event, the key, the state before and
after as the markers waited for (with line:col), the actions run, the timers set, the outputs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..engine.encoding import json_line
from ..engine.timeutil import format_time
from .instance import InstanceView
from .recorder import Recording, Step
from .terms import ProgramTerms


def state_text(terms: ProgramTerms, view: InstanceView | None) -> str:
    """``state 1: waits for Closed()@5:5, elapse[5 minutes]@6:5; door_count = 2``."""
    if view is None:
        return "no instance (the event creates it)"
    if view.terminated:
        head = f"state {_state(view.state)}: ended (the instance is released)"
    else:
        waiting = terms.waiting(view.state)
        head = f"state {_state(view.state)}: waits for " + (", ".join(map(str, waiting)) if waiting else "nothing")
        if terms.accepting(view.state):
            head += " (accepting)"
    names = [v.name for v in terms.program.variables]
    shown = [f"{n} = {'unset' if v is None else json_line(v)}" for n, v in zip(names, view.variables)]
    return head + ("; " + ", ".join(shown) if shown else "")


def _state(state: Any) -> str:
    return str(state) if not isinstance(state, list) else "{" + ",".join(map(str, state)) + "}"


def step_lines(recording: Recording, step: Step) -> Iterator[str]:
    terms = recording.recorder.terms[step.stage]
    depth = 0
    parent = step.parent
    while parent is not None:
        depth += 1
        parent = recording.steps[parent].parent
    pad = "  " * depth
    where = f" [{recording.names[step.stage]}]" if len(recording.names) > 1 else ""
    key = f" key {json_line(step.key)}" if step.key is not None else ""
    what = {
        "event": f"{step.name}({json_line(step.value)})",
        "timer": f"timer {step.name}",
        "start": "start (initial actions)",
    }[step.kind]
    yield f"{pad}#{step.index} {_short_time(step)}{where} {what}{key}"
    if step.kind != "start":
        yield f"{pad}  before: {state_text(terms, step.before)}"
    if step.after is None:
        yield f"{pad}  no instance took it"
    else:
        yield f"{pad}  after:  {state_text(terms, step.after)}"
    if step.kind == "event" and step.symbol is None and step.after is not None:
        yield f"{pad}  no transition on it (an unexpected event)"
    for a in step.actions:
        yield f"{pad}  ran {a['text']} @{a['line']}:{a['col']}"
    for t in step.timers:
        yield f"{pad}  timer {t['change']}: {t['marker']} due {format_time(t['deadline'])}"
    for n in step.outputs:
        out = {k: v for k, v in recording.outputs[n].items() if k != "step"}
        yield f"{pad}  emits {json_line(out)}"


def _short_time(step: Step) -> str:
    return format_time(step.time)


def explanation(recording: Recording) -> Iterator[str]:
    """Every step of a recording, in the order they happened."""
    for step in recording.steps:
        yield from step_lines(recording, step)
