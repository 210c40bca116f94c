"""The subcommand registry: name → (help, argument setup, runner).

Building the parser runs every command's setup (``eventscript --help`` lists them all), so the
setups come from modules that import only argparse and light helpers: a ``*_options`` module
beside a command whose module imports its machinery at the top (the compiler, the tester, the
topology's pydantic settings), else the command's own module, whose runners import what they
need inside. Each runner's module is imported when its command runs (:func:`_runner`), so that
``eventscript check`` does not pay for the tester, Kafka, HTTP or pydantic, nor ``--help`` for
any of them (tests/cli/test_cli_imports.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import import_module

from . import (
    backfill_cmd,
    export_cmd,
    kafka_options,
    playground_cmd,
    program_options,
    state_options,
    test_options,
    topology_options,
    upgrade_options,
)

Setup = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]


def _runner(module: str, function: str) -> Run:
    """The runner ``function`` of ``eventscript.cli.<module>``, imported when the command runs."""

    def run(args: argparse.Namespace) -> int:
        command: Run = getattr(import_module(f"{__package__}.{module}"), function)
        return command(args)

    return run


COMMANDS: dict[str, tuple[str, Setup, Run]] = {
    "check": (
        "check programs and print their diagnostics",
        program_options.setup_check,
        _runner("program_cmds", "run_check"),
    ),
    "test": ("run programs (a pipeline) over a timed event trace", test_options.setup, _runner("test_cmd", "run")),
    "compile": (
        "compile a program to its JSON state-machine file",
        program_options.setup_compile,
        _runner("program_cmds", "run_compile"),
    ),
    "graph": (
        "draw a program's automaton (svg, png or dot)",
        program_options.setup_graph,
        _runner("program_cmds", "run_graph"),
    ),
    "run": ("run a topology's programs on Kafka", kafka_options.setup_run, _runner("kafka_cmds", "run_run")),
    "dev": (
        "start the embedded broker, create topics, optionally publish a trace, and run",
        kafka_options.setup_dev,
        _runner("kafka_cmds", "run_dev"),
    ),
    "produce": (
        "publish a timed trace to a program's input topics",
        kafka_options.setup_produce,
        _runner("kafka_cmds", "run_produce"),
    ),
    "tail": ("print a topic's records as JSON lines", kafka_options.setup_tail, _runner("kafka_cmds", "run_tail")),
    "topology": (
        "check, plan or draw a topology's pipeline (check | plan | graph)",
        topology_options.setup,
        _runner("topology_cmd", "run"),
    ),
    "backfill": (
        "run a program over historical records on PySpark",
        backfill_cmd.setup,
        _runner("backfill_cmd", "run"),
    ),
    "upgrade": (
        "plan carrying live instances to a new version of a program (plan)",
        upgrade_options.setup,
        _runner("upgrade_cmd", "run"),
    ),
    "playground": (
        "a local web app: edit a program, run a trace, watch each key's automaton, step through time",
        playground_cmd.setup,
        _runner("playground_cmd", "run"),
    ),
    "state": (
        "ask a running worker about one key, or dump every instance from the changelog (state dump)",
        state_options.setup_state,
        _runner("state_cmds", "run_state"),
    ),
    "reset": (
        "start a program over: committed offsets, internal topics and local state (--dry-run first)",
        state_options.setup_reset,
        _runner("state_cmds", "run_reset"),
    ),
    "export": (
        "write a backfill export (JSON lines) from a trace or from Kafka topics",
        export_cmd.setup,
        _runner("export_cmd", "run"),
    ),
}
