"""The plan for people (one block per program) and for CI (``--json``)."""

from __future__ import annotations

from typing import Any

from ..language import ir
from ..language.diagnostics import Diagnostic, Severity
from .plan import CARRIED, Plan, Problem, StatePlan


def render(plan: Plan, label: str) -> str:
    """Text: the fingerprints, the variables, the markers that changed, then each old state."""
    lines = [
        f"{label}: {plan.old_fingerprint} -> {plan.new_fingerprint}"
        + (" (the same machine)" if plan.old_fingerprint == plan.new_fingerprint else "")
    ]
    for problem in plan.problems:
        lines.extend(_problem_lines(problem))
    for v in plan.variables:
        if v.how == "carried":
            continue
        what = {
            "promoted": "carried, long made double",
            "initial": f"new, initial value {v.value!r}",
            "unset": "new, unset until an action sets it",
        }[v.how]
        at = "" if v.pos is None else f" at {v.pos}"
        lines.append(f"  variable {v.name}{at} ({v.type}): {what}")
    lines.extend(f"  variable {name}: dropped (not in the new program)" for name in plan.dropped_variables)
    for m in plan.markers:
        if m["change"] == "removed":
            lines.append(f"  marker {m['old']}: removed")
        elif m["change"] == "added":
            lines.append(f"  marker {m['new']}: added")
        elif m["change"] == "changed":
            lines.append(f"  marker {m['old']}: now {m['new']}")
    for sp in plan.states:
        lines.extend(_state_lines(plan, sp))
    counts = plan.counts()
    lines.append(
        f"  {len(plan.states)} states: {counts['carried']} carried, {counts['restarted']} restarted, "
        f"{counts['ended']} ended (exit {plan.exit_code})"
    )
    return "\n".join(lines)


def _problem_lines(problem: Problem) -> list[str]:
    """``file:line:col: error: ...`` with the source line and a caret, as the compiler's errors
    are shown, when the new program's source says where; the message alone otherwise."""
    if problem.pos is None:
        return [f"  error: {problem.message}"]
    return ["  " + line for line in Diagnostic(Severity.ERROR, problem.pos, problem.message).render().split("\n")]


def _state_lines(plan: Plan, sp: StatePlan) -> list[str]:
    before = "; ".join(sp.waits_before) or "nothing"
    if sp.already_ended:
        return [f"  state {sp.old_state}: ended already ({sp.reason})"]
    if sp.verdict == CARRIED:
        after = "; ".join(sp.waits_after) or "nothing"
        out = [
            f"  state {sp.old_state}: carried to state {sp.new_state}",
            f"      waits for {before}" + ("" if after == before else f"\n      now waits for {after}"),
        ]
        for pending, rules in sp.rearm.items():
            for r in rules:
                name = _time_marker(plan.new.program, r.symbol)
                how = {
                    "keep": "keeps its pending deadline",
                    "entry": f"due {_duration(r.amount_us)} after the state was entered",
                    "now": f"armed at the upgrade, due {_duration(r.amount_us)} later",
                }[r.how]
                cause = "" if pending is None else f" (pending: {_time_marker(plan.old.program, pending)})"
                out.append(f"      timer {name}{cause}: {how}")
        return out
    return [f"  state {sp.old_state}: {sp.verdict}: {sp.reason}", f"      waits for {before}"]


def _time_marker(p: ir.ProgramIR, symbol: int) -> str:
    marker = p.symbols[symbol].marker
    if marker is None:
        return p.symbols[symbol].name
    m = p.markers[marker]
    return f"{m.text} at {m.file}:{m.line}:{m.col}"


def _duration(us: int) -> str:
    for unit, size in (("hours", 3_600_000_000), ("minutes", 60_000_000), ("seconds", 1_000_000)):
        if us and us % size == 0:
            return f"{us // size} {unit}"
    return f"{us / 1_000_000:g} seconds"


def as_json(plans: dict[str, Plan], missing: dict[str, str]) -> dict[str, Any]:
    """Every program's plan, and the programs only one side has; ``exit`` is the worst."""
    codes = [p.exit_code for p in plans.values()] + [1 for _ in missing]
    return {
        "exit": max(codes, default=0),
        "programs": {name: p.to_json() for name, p in plans.items()},
        "unpaired": missing,
    }
