"""``eventscript upgrade plan OLD NEW``: what an upgrade does to live instances, before deploying it.

OLD and NEW are two programs (sources or compiled JSON) or two topologies (``.yaml``), whose
programs are paired by name. Exit 0 when every state carries, 1 when some instance would restart
or end (or a program is added or removed), 2 when the upgrade cannot be applied or a file cannot
be read. Its options: ``upgrade_options``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..api import looks_compiled
from .program_cmds import compile_or_report, load_or_report

if TYPE_CHECKING:
    from ..automata.compiled import CompiledProgram
    from ..upgrade.places import SourcePlaces
    from ..upgrade.plan import Plan


def _is_topology(path: str) -> bool:
    return Path(path).suffix in (".yaml", ".yml")


def _programs(path: str, state_limit: int) -> dict[str, str] | None:
    """Program name → source path: the topology's programs, or the one program."""
    if not _is_topology(path):
        return {Path(path).stem: path}
    from ..topology.config import TopologyError, load_topology
    from .topology_args import report_unreadable_programs

    try:
        topology = load_topology(path)
    except TopologyError as exc:
        print(str(exc), file=sys.stderr)
        return None
    if report_unreadable_programs(topology, path, sys.stderr):  # at the topology's 'source:', as topology check does
        return None
    return {cfg.name: str(topology.source_path(cfg)) for cfg in topology.programs}


def _load(path: str, state_limit: int) -> tuple[CompiledProgram, SourcePlaces] | None:
    """A program and the places of its source's names (none for a compiled ``.json`` program),
    so that the plan's problems can point at the line to edit; None (reported) on failure."""
    from ..upgrade.places import SourcePlaces

    try:
        compiled = looks_compiled(path, Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        compiled = False  # compile_or_report says what is wrong
    if compiled:
        program = load_or_report(path, state_limit)
        return None if program is None else (program, SourcePlaces())
    comp = compile_or_report(path, state_limit)
    if comp is None or comp.program is None:
        return None
    return comp.program, SourcePlaces(comp.checked)


#: The ``upgrade:`` setting each exit status of a program's plan calls for (docs/operations.md,
#: "Apply it"): the plan printed only its exit status, and the guide said to set the policy "as it says".
_POLICY = {
    0: "set 'upgrade: carry' for {program} in the new topology: every instance goes on",
    1: "'upgrade: carry' for {program} applies the plan above (restarted instances start afresh at their "
    "key's next event); 'upgrade: restart' drops them all; or reprocess",
    2: "the plan cannot be applied to {program}: deploy it as a new application, or reprocess "
    "(docs/operations.md, 'Which way')",
}


def _policy_advice(plan: Plan, name: str | None) -> str:
    """The ``upgrade:`` setting the plan calls for, for program ``name`` (None: two program files)."""
    if plan.old_fingerprint == plan.new_fingerprint:
        return "nothing: the stored state is the new program's own (no 'upgrade:' setting needed)"
    return _POLICY[plan.exit_code].format(program=f"program {name}" if name else "the program")


def run(args: argparse.Namespace) -> int:
    from ..upgrade.plan import make_plan
    from ..upgrade.report import as_json, render

    if _is_topology(args.old) != _is_topology(args.new):
        print(f"{args.new}: error: compare a topology with a topology, or a program with a program", file=sys.stderr)
        return 2
    olds, news = _programs(args.old, args.state_limit), _programs(args.new, args.state_limit)
    if olds is None or news is None:
        return 2
    if not _is_topology(args.old):  # two programs: one pair, whatever their file names
        olds, news = {"program": next(iter(olds.values()))}, {"program": next(iter(news.values()))}
    plans = {}
    missing: dict[str, str] = {}
    for name in sorted(olds.keys() | news.keys()):
        if name not in news:
            missing[name] = "removed: its instances are dropped"
            continue
        if name not in olds:
            missing[name] = "added: no state to carry"
            continue
        old, new = load_or_report(olds[name], args.state_limit), _load(news[name], args.state_limit)
        if old is None or new is None:
            return 2
        plans[name] = make_plan(old, new[0], places=new[1])
    result = as_json(plans, missing)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for name, plan in plans.items():
            label = f"{olds[name]} -> {news[name]}" + (f" (program {name})" if _is_topology(args.old) else "")
            print(render(plan, label))
            print(f"  what to do: {_policy_advice(plan, name if _is_topology(args.old) else None)}")
        for name, what in missing.items():
            print(f"program {name}: {what}")
    return int(result["exit"])
