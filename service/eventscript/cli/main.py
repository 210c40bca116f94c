"""``eventscript``: the command line. Each subcommand is a thin wrapper over a host or stage."""

from __future__ import annotations

import argparse
import difflib
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


class CommandParser(argparse.ArgumentParser):
    """The parser of ``eventscript`` and of each of its commands (``add_subparsers`` makes its
    subparsers of its own class), which knows which command a parse chose and how to refuse
    arguments that command does not take."""

    def chosen(self, args: argparse.Namespace) -> CommandParser:
        """The parser of the command ``args`` chose (``eventscript topology plan``'s for
        ``topology plan``): the one whose usage and options an error about its arguments shows."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                sub = action.choices.get(str(getattr(args, action.dest, "")))
                if isinstance(sub, CommandParser):
                    return sub.chosen(args)
        return self

    def unrecognized(self, extras: list[str]) -> str:
        """The usage error for arguments this command does not take, with the option each
        misspelt one is closest to. argparse's own error named none and showed the top-level
        usage, not the command's: ``eventscript reset t.yaml --dryrun`` said nothing of ``--dry-run``."""
        options = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
        hints = {}
        for extra in extras:
            name = extra.split("=", 1)[0]
            close = difflib.get_close_matches(name, options, n=1, cutoff=0.6) if name.startswith("-") else []
            if close:
                hints[name] = f"did you mean {close[0]}?"
        said = [hint if len(hints) == 1 else f"{name}: {hint}" for name, hint in hints.items()]
        return (
            f"unrecognized arguments: {' '.join(extras)}"
            + (f" ({'; '.join(said)})" if said else "")
            + f"; '{self.prog} --help' lists its options"
        )


def build_parser() -> CommandParser:
    p = CommandParser(
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
    args, extras = parser.parse_known_args(argv)
    if extras:
        command = parser.chosen(args)
        command.error(command.unrecognized(extras))
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
