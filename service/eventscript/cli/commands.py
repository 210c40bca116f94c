"""The subcommand registry: name → (help, argument setup, runner). Runners import lazily so that
``eventscript check`` does not pay for Kafka or Graphviz imports."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from . import (
    backfill_cmd,
    export_cmd,
    kafka_cmds,
    playground_cmd,
    program_cmds,
    state_cmds,
    test_cmd,
    topology_cmd,
    upgrade_cmd,
)

Setup = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]

COMMANDS: dict[str, tuple[str, Setup, Run]] = {
    "check": ("check programs and print their diagnostics", program_cmds.setup_check, program_cmds.run_check),
    "test": ("run programs (a pipeline) over a timed event trace", test_cmd.setup, test_cmd.run),
    "compile": (
        "compile a program to its JSON state-machine file",
        program_cmds.setup_compile,
        program_cmds.run_compile,
    ),
    "graph": ("draw a program's automaton (svg, png or dot)", program_cmds.setup_graph, program_cmds.run_graph),
    "run": ("run a topology's programs on Kafka", kafka_cmds.setup_run, kafka_cmds.run_run),
    "dev": (
        "start the embedded broker, create topics, optionally publish a trace, and run",
        kafka_cmds.setup_dev,
        kafka_cmds.run_dev,
    ),
    "produce": ("publish a timed trace to a program's input topics", kafka_cmds.setup_produce, kafka_cmds.run_produce),
    "tail": ("print a topic's records as JSON lines", kafka_cmds.setup_tail, kafka_cmds.run_tail),
    "topology": (
        "check, plan or draw a topology's pipeline (check | plan | graph)",
        topology_cmd.setup,
        topology_cmd.run,
    ),
    "backfill": ("run a program over historical records on PySpark", backfill_cmd.setup, backfill_cmd.run),
    "upgrade": (
        "plan carrying live instances to a new version of a program (plan)",
        upgrade_cmd.setup,
        upgrade_cmd.run,
    ),
    "playground": (
        "a local web app: edit a program, run a trace, watch each key's automaton, step through time",
        playground_cmd.setup,
        playground_cmd.run,
    ),
    "state": (
        "ask a running worker about one key, or dump every instance from the changelog (state dump)",
        state_cmds.setup_state,
        state_cmds.run_state,
    ),
    "reset": (
        "start a program over: committed offsets, internal topics and local state (--dry-run first)",
        state_cmds.setup_reset,
        state_cmds.run_reset,
    ),
    "export": (
        "write a backfill export (JSON lines) from a trace or from Kafka topics",
        export_cmd.setup,
        export_cmd.run,
    ),
}
