"""The options of ``eventscript topology check|plan|graph`` (``topology_cmd`` runs them), apart
from what runs them so that building the parser (``eventscript --help``, any command) imports
neither the compiler nor the topology's settings (pydantic)."""

from __future__ import annotations

import argparse

from . import help_examples


def setup(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="topology_command", metavar="ACTION")
    sub.required = True
    c = sub.add_parser(
        "check",
        help="compile every program and check every link (no broker needed)",
        description="compile every program and check every link (no broker needed)",
    )
    c.add_argument("topology", metavar="TOPOLOGY.yaml")
    c.add_argument("-q", "--quiet", action="store_true", help="print errors only, not warnings")
    c.add_argument("--strict", action="store_true", help="fail on warnings too")
    pl = sub.add_parser(
        "plan",
        help="list the topics the topology needs, and what exists when a broker is given",
        description="list the topics the topology needs (inputs, outputs, errors, repartition, "
        "changelog); with --bootstrap-servers or --apply, compare with the broker",
    )
    pl.add_argument("topology", metavar="TOPOLOGY.yaml")
    pl.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="compare with this broker (default: none)")
    pl.add_argument(
        "--apply",
        action="store_true",
        help="create the missing topics through the admin API (never changes existing topics)",
    )
    g = sub.add_parser(
        "graph",
        help="draw the topology: topics and programs (svg, png or dot)",
        description="draw the topology: topics and programs (svg, png or dot)",
    )
    g.add_argument("topology", metavar="TOPOLOGY.yaml")
    g.add_argument("-o", "--output", required=True, metavar="FILE", help="FILE.svg, FILE.png or FILE.dot")
    for action, parser in (("check", c), ("plan", pl), ("graph", g)):
        help_examples.attach(parser, f"topology {action}")
