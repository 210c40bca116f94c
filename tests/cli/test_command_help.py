"""Every option of every command says what it does in ``--help`` (a new user's walk found
``dev --health-port`` and ``produce --trace`` bare)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from eventscript.cli.main import build_parser


def _bare_options(parser: argparse.ArgumentParser, command: str) -> Iterator[str]:
    """``command OPTION`` for each option of ``parser`` and its subcommands without a help text."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _bare_options(sub, f"{command} {name}")
        elif action.option_strings and action.help is None:
            yield f"{command} {'/'.join(action.option_strings)}"


def test_every_option_has_help() -> None:
    assert list(_bare_options(build_parser(), "eventscript")) == []


def test_the_walk_covers_subcommands() -> None:
    """The check can fail: an option added bare to a subcommand is found."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.choices["dev"].add_argument("--bare-option")
    assert list(_bare_options(parser, "eventscript")) == ["eventscript dev --bare-option"]
