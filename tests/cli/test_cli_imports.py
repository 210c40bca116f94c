"""What a command imports: only what it runs. ``eventscript --help`` loaded the compiler, the
engine, the tester, pydantic and an HTTP client (~0.5 s before the first line), and ``eventscript
test``, run once per conformance case, loaded every other command's machinery too. Each command's
options come from light modules and its runner's module is imported when it runs
(cli/commands.py); the embedding API is loaded on first use (eventscript/__init__.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import eventscript

SERVICE = str(Path(eventscript.__file__).resolve().parent.parent)
CASE = Path(__file__).resolve().parents[1] / "cases" / "accepting-with-timer-way-out"

#: What no command but those that talk to Kafka, to a worker or to Spark needs.
NOT_FOR_LOCAL_COMMANDS = (
    "confluent_kafka",
    "http.client",
    "urllib.request",
    "pyspark",
    "pyarrow",
    "eventscript.explain",
    "eventscript.backfill",
    "eventscript.playground",
    "eventscript.kafka",  # (but its logging filter, for every command: ALLOWED)
    "eventscript.cli.kafka_cmds",
    "eventscript.cli.state_cmds",
)

#: What a command that only compiles (check, compile) needs on top of those: no host at all.
NOT_FOR_THE_COMPILER = (
    *NOT_FOR_LOCAL_COMMANDS,
    "pydantic",
    "rocksdict",
    "eventscript.tester",
    "eventscript.task",
    "eventscript.topology",
    "eventscript.state",
    "eventscript.cli.test_cmd",
)

#: What listing the commands needs on top of those: not even the compiler or the engine.
NOT_FOR_HELP = (
    *NOT_FOR_THE_COMPILER,
    "eventscript.api",
    "eventscript.language",
    "eventscript.automata.compile",
    "eventscript.engine",
    "eventscript.cli.program_cmds",
    "pythonjsonlogger",
    "orjson",
)


def loaded_by(*argv: str) -> list[str]:
    """The modules loaded once ``eventscript ARGV`` has run, in a fresh interpreter."""
    code = (
        "import json, sys\n"
        "from eventscript.cli.main import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={"PYTHONPATH": SERVICE}
    )
    loaded: list[str] = json.loads(proc.stderr.splitlines()[-1])
    assert "eventscript.cli.main" in loaded  # (the tree under test was imported)
    return loaded


#: What every command loads for ``--log-format`` (logging_setup's repeat filter) although its
#: package is Kafka's: its ``__init__`` and that one module.
ALLOWED = {"eventscript.kafka", "eventscript.kafka.logs"}


def unwanted(loaded: list[str], names: tuple[str, ...]) -> list[str]:
    """The modules of ``loaded`` that are one of ``names`` or inside one of them, but ALLOWED."""
    return [m for m in loaded if m not in ALLOWED and any(m == n or m.startswith(n + ".") for n in names)]


def test_help_imports_no_command_s_machinery() -> None:
    assert unwanted(loaded_by("--help"), NOT_FOR_HELP) == []


@pytest.mark.parametrize("command", ["check", "compile"])
def test_the_compiler_s_commands_import_no_host(command: str, tmp_path: Path) -> None:
    argv = [command, str(CASE / "program.es")] + (["-o", str(tmp_path / "p.json")] if command == "compile" else [])
    loaded = loaded_by(*argv)
    assert "eventscript.automata.compile" in loaded  # (the command ran)
    assert unwanted(loaded, NOT_FOR_THE_COMPILER) == []


def test_test_imports_neither_kafka_nor_http_nor_other_commands() -> None:
    loaded = loaded_by("test", "--trace", str(CASE / "input.trace"), str(CASE / "program.es"))
    assert "eventscript.tester.host" in loaded  # (the command ran)
    assert unwanted(loaded, NOT_FOR_LOCAL_COMMANDS) == []


def test_importing_a_submodule_does_not_load_the_embedding_api() -> None:
    code = "import sys, eventscript.task.task; print('eventscript.api' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": SERVICE}
    ).stdout
    assert out.strip() == "False"


def test_the_embedding_api_is_still_the_package_s() -> None:
    from eventscript import Engine, SimulatedTimeProvider, compile_program  # (loaded on first use)

    assert (compile_program.__module__, Engine.__name__, SimulatedTimeProvider.__name__) == (
        "eventscript.api",
        "Engine",
        "SimulatedTimeProvider",
    )
    assert set(eventscript.__all__) <= set(dir(eventscript))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        eventscript.no_such_name  # noqa: B018
