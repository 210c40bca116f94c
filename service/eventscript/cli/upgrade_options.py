"""The options of ``eventscript upgrade plan`` (``upgrade_cmd`` runs it), apart from what runs it
so that building the parser (``eventscript --help``, any command) imports no compiler."""

from __future__ import annotations

import argparse

from . import help_examples
from .program_options import add_state_limit


def setup(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="upgrade_command", metavar="ACTION")
    sub.required = True
    pl = sub.add_parser(
        "plan",
        help="map the old version's states to the new one's and say what happens to each",
        description="map the old version's automaton states to the new one's and say, for each, "
        "whether an instance found there is carried, restarted or ended, and why. "
        "Exit 0: every state carries; 1: some restart or end; 2: cannot be applied",
    )
    pl.add_argument("old", metavar="OLD", help="the running version: a program, compiled program or topology.yaml")
    pl.add_argument("new", metavar="NEW", help="the version to deploy (the same kind of file)")
    pl.add_argument("--json", action="store_true", help="print the plan as one JSON object (for CI)")
    add_state_limit(pl)
    help_examples.attach(pl, "upgrade plan")
