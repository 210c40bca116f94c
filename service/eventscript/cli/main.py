"""``eventscript``: the command line. Each subcommand is a thin wrapper over a host or stage."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..logging_setup import FORMATS, LEVELS, LoggingConfigError, configure, resolve
from . import commands, help_examples

#: What ``eventscript --help`` ends with: where a newcomer starts, among fifteen commands most of
#: which are for Kafka and operations.
FIRST_STEPS = """\
first steps, for a program P.es:
  eventscript check P.es                      errors and warnings, each at file:line:col
  eventscript test --trace T.trace P.es       run it over a timed trace (test --help shows one)
  eventscript playground P.es                 the same in a browser, stepping through time
'eventscript COMMAND --help' tells more of each; the language: docs/language.md.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="eventscript",
        description="EventScript: regular expressions with actions, run as event processors.",
        epilog=FIRST_STEPS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version="eventscript 0.1.0")
    p.add_argument(
        "--log-format",
        choices=FORMATS,
        help="json: one JSON object per line (program, task, "
        "partition, key); text: readable lines (default: $EVENTSCRIPT_LOG_FORMAT, else the "
        "command's own terminal output)",
    )
    p.add_argument(
        "--log-level",
        type=str.upper,
        choices=LEVELS,
        metavar="LEVEL",
        help="DEBUG, INFO (default with --log-format), WARNING, ERROR (default: $EVENTSCRIPT_LOG_LEVEL)",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (help_, setup, _) in commands.COMMANDS.items():
        sp = sub.add_parser(name, help=help_, description=help_)
        setup(sp)
        help_examples.attach(sp, name)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = commands.COMMANDS[args.command][2]
    try:
        chosen = resolve(args.log_format, args.log_level)
    except LoggingConfigError as exc:
        parser.error(str(exc))
    if chosen is not None:
        configure(*chosen)
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
