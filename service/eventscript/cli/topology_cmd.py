"""``eventscript topology check|plan|graph TOPOLOGY.yaml``: a pipeline's wiring, topics and picture
(its options: ``topology_options``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..automata.compile import DEFAULT_STATE_LIMIT
from ..topology.config import TopologyError
from .wording import counted


def _load(path: str, structure_only: bool):
    from ..topology.model import load_graph

    try:
        return load_graph(path, DEFAULT_STATE_LIMIT, structure_only=structure_only)
    except TopologyError as exc:
        print(str(exc), file=sys.stderr)
        return None


def run(args: argparse.Namespace) -> int:
    # Only 'plan' with a broker needs the deployment's environment (the Kafka address): the
    # others read the topology's structure, and 'check' warns of each variable not set here.
    to_broker = args.topology_command == "plan" and (args.bootstrap_servers or args.apply)
    graph = _load(args.topology, structure_only=not to_broker)
    if graph is None:
        return 2
    return {"check": _check, "plan": _plan, "graph": _graph}[args.topology_command](graph, args)


def _check(graph, args: argparse.Namespace) -> int:
    from ..topology.check import Severity, check

    findings = check(graph)
    errors = [f for f in findings if f.severity is Severity.ERROR]
    warnings = [f for f in findings if f.severity is Severity.WARNING]
    for f in findings:
        if f.severity is Severity.ERROR or not args.quiet:
            print(f.render())
    if errors or (args.strict and warnings):
        strict = "" if errors else " (--strict fails on warnings)"
        print(
            f"{graph.file}: {counted(len(errors), 'error')}, {counted(len(warnings), 'warning')}{strict}",
            file=sys.stderr,
        )
        return 1
    print(
        f"{graph.file}: ok: {counted(len(graph.stages), 'program')}, {counted(len(graph.all_topics()), 'topic')}"
        + (f", {counted(len(warnings), 'warning')}" if warnings else "")
    )
    return 0


#: What a plan printed with wiring errors is worth: the topics of a misspelt link are not those meant.
AS_WRITTEN = "the plan above is of the topology as written; fix them before creating its topics"


def _plan(graph, args: argparse.Namespace) -> int:
    from ..topology.plan import PlanRefused, apply, plan, render

    wiring = _wiring_errors(graph)
    if not args.bootstrap_servers and not args.apply:
        print(render(plan(graph), with_broker=False))
        return _say_wiring_errors(graph, wiring, AS_WRITTEN)
    if args.apply and wiring:
        return _say_wiring_errors(graph, wiring, "--apply created nothing; fix them, then apply again")
    if args.bootstrap_servers:
        graph.topology.use_address(args.bootstrap_servers, "--bootstrap-servers")
    from ..kafka.admin import Admin

    try:
        admin = Admin(graph.topology)
        existing = admin.partition_counts()
        topics = plan(graph, existing)
        print(render(topics, with_broker=True))
        if not args.apply:
            conflict = 1 if any(t.conflict for t in topics) else 0
            return max(conflict, _say_wiring_errors(graph, wiring, AS_WRITTEN))
        created = apply(graph, admin)
    except PlanRefused as exc:
        print(f"{graph.file}: error: {exc}", file=sys.stderr)
        return 1
    except TopologyError as exc:
        print(f"{graph.file}: error: {exc}", file=sys.stderr)
        return 2
    print(f"created {counted(len(created), 'topic')}" + (": " + ", ".join(t.name for t in created) if created else ""))
    return 0


def _wiring_errors(graph) -> list:
    """The errors ``topology check`` finds: a plan for a topology with a misspelt link or a program
    that does not compile lists topics that no deployment of it should create."""
    from ..topology.check import check, errors

    return errors(check(graph))


def _say_wiring_errors(graph, wiring: list, consequence: str) -> int:
    """Print the wiring errors (each at its file:line:col, with its hint) and what they mean for
    the plan; the exit status: 1 with errors, else 0."""
    if not wiring:
        return 0
    summary = (
        f"{graph.file}: {counted(len(wiring), 'error')} in the wiring (above): {consequence} "
        f"('eventscript topology check {graph.file}' shows them with the warnings)"
    )
    print("\n".join([*(finding.render() for finding in wiring), summary]), file=sys.stderr)
    return 1


def _graph(graph, args: argparse.Namespace) -> int:
    """Draw the topology as written, wiring errors and all (the picture helps find a misspelt
    link: it shows as a source), saying so when ``topology check`` would refuse it."""
    from ..topology.graph import render

    status = render(graph, Path(args.output))
    wiring = _wiring_errors(graph)
    if wiring:
        print(
            f"note: {graph.file} has {counted(len(wiring), 'wiring error')} (the first: {wiring[0].where}); "
            f"the picture shows it as written ('eventscript topology check {graph.file}' lists them)",
            file=sys.stderr,
        )
    return status
