"""The options of ``check``, ``compile`` and ``graph`` (``program_cmds`` runs them), apart from
what runs them so that building the parser (``eventscript --help``, any command) imports no
compiler."""

from __future__ import annotations

import argparse

from ..automata.limits import DEFAULT_STATE_LIMIT
from .arguments import positive_int


def add_state_limit(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state-limit",
        type=positive_int,
        default=DEFAULT_STATE_LIMIT,
        metavar="N",
        help=f"DFA states to build eagerly before switching to the lazy DFA (default {DEFAULT_STATE_LIMIT})",
    )


#: What ``eventscript check --help`` ends with: how to keep a warning that is meant (no warning's
#: hint says so, and a grouped program on a fixed set of keys draws never-ends by design).
CHECK_EPILOG = """\
a warning that is meant: accept it with a comment at the end of the line it points at, or alone
on the line before, naming the code printed after its message; the text before is the reason:
  // a fixed set of doors: eventscript: allow never-ends
check then says 'ok, 1 warning accepted' (docs/language.md, section 9.2.1).

exit status: 0 every program compiles (with warnings or not), 1 a program has errors or cannot
be read.
"""


def setup_check(p: argparse.ArgumentParser) -> None:
    p.epilog = CHECK_EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("files", nargs="+", metavar="FILE", help="EventScript programs")
    p.add_argument("-q", "--quiet", action="store_true", help="print errors only, not warnings")
    add_state_limit(p)


def setup_compile(p: argparse.ArgumentParser) -> None:
    p.add_argument("program", metavar="PROGRAM", help="the EventScript source file (PROGRAM.es)")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE.json",
        help="where to write (default: PROGRAM with .json); its directory must exist",
    )
    add_state_limit(p)


def setup_graph(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "program", metavar="PROGRAM", help="the EventScript source file, or the JSON file 'eventscript compile' writes"
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="FILE.svg, FILE.png (drawn with Graphviz) or FILE.dot"
    )
    p.add_argument(
        "--full-labels",
        action="store_true",
        help="draw action blocks as the compiled program keeps them, up to 60 characters (default: shortened to 40)",
    )
    add_state_limit(p)
