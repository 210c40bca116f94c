"""The subcommand registry: name → (help, argument setup, runner). Runners import lazily so that
``eventscript check`` does not pay for Kafka or Graphviz imports."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from . import program_cmds, test_cmd

Setup = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]

COMMANDS: dict[str, tuple[str, Setup, Run]] = {
    "check": ("check programs and print their diagnostics", program_cmds.setup_check, program_cmds.run_check),
    "test": ("run programs (a pipeline) over a timed event trace", test_cmd.setup, test_cmd.run),
    "compile": ("compile a program to its JSON state-machine file", program_cmds.setup_compile,
                program_cmds.run_compile),
    "graph": ("draw a program's automaton (svg, png or dot)", program_cmds.setup_graph, program_cmds.run_graph),
}
