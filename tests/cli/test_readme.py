"""The README's snippets run as written (issue 27): the Python blocks (their output compared with
the ``text`` block after them), the commands of the big-trades walk-through, and ``make run``
without the system packages only the tests need."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

README = ROOT / "README.md"
CLI = [sys.executable, "-m", "eventscript.cli.main"]
#: Commands of the walk-through that need a broker; `dev` on this topology is tests/cli/test_dev_session.py's.
NEEDS_KAFKA = ("eventscript dev ", "eventscript run ", "eventscript produce ", "eventscript tail ")


def _blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M)]


def _python_with_output() -> list[tuple[str, str | None]]:
    blocks = _blocks(README.read_text(encoding="utf-8"))
    out = []
    for i, (lang, body) in enumerate(blocks):
        if lang == "python":
            following = blocks[i + 1] if i + 1 < len(blocks) else None
            out.append((body, following[1] if following and following[0] == "text" else None))
    return out


def test_the_readme_has_a_python_snippet_with_its_output() -> None:
    snippets = _python_with_output()
    assert snippets and all(expected for _, expected in snippets)


@pytest.mark.parametrize(("code", "expected"), _python_with_output())
def test_python_snippets_print_what_the_readme_shows(tmp_path: Path, code: str, expected: str | None) -> None:
    (tmp_path / "snippet.py").write_text(code)
    done = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected


def test_the_door_example_prints_what_the_readme_says(tmp_path: Path) -> None:
    """ "What it is": the first program, over the trace given in the text, prints the line shown."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## What it is") : text.index("This repository has:")]
    program = _blocks(section)[0][1]
    trace = re.search(r"Over the trace `([^`]*)`", section.replace("\n", " "), re.S).group(1)  # type: ignore[union-attr]
    shown = re.search(r"`eventscript test` prints\s*`([^`]*)`", section).group(1)  # type: ignore[union-attr]
    (tmp_path / "door.es").write_text(program)
    (tmp_path / "door.trace").write_text(trace)
    done = subprocess.run(
        [*CLI, "test", "--trace", "door.trace", "door.es"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == shown


def test_the_door_topology_checks_and_tests_as_the_readme_says(tmp_path: Path) -> None:
    """The README's topology for the first program (``dev`` on it, and its wall-clock note without
    ``clock: record``, are tests/cli/test_dev_session.py's)."""
    text = README.read_text(encoding="utf-8")
    first = text[text.index("## What it is") : text.index("This repository has:")]
    own = text[text.index("Your own program gets a topology") : text.index("## Documentation")]
    (tmp_path / "doors.es").write_text(_blocks(first)[0][1])
    trace = re.search(r"Over the trace `([^`]*)`", first.replace("\n", " "), re.S).group(1)  # type: ignore[union-attr]
    (tmp_path / "doors.trace").write_text(trace)
    [(lang, topology)] = _blocks(own)
    assert lang == "yaml"
    (tmp_path / "topology.yaml").write_text(topology)
    checked = subprocess.run([*CLI, "topology", "check", "topology.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [*CLI, "test", "--trace", "doors.trace", "topology.yaml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert tested.returncode == 0, tested.stderr
    assert tested.stdout == (
        '{"time": "2026-01-01T08:05:00.000000Z", "event": "LeftOpen", "value": {"door": "front"}, '
        '"key": ["front"], "program": "left-open", "topic": "alerts"}\n'
    )


def _walkthrough() -> tuple[str, list[str]]:
    """The folder the walk-through cds into and its eventscript commands, comments removed."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## From one program to a pipeline") : text.index("## Documentation")]
    folder, commands = "", []
    for _, body in _blocks(section):
        for line in body.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("cd "):
                folder = line[3:]
            elif line.startswith("eventscript ") and not line.startswith(NEEDS_KAFKA):
                commands.append(line)
    return folder, commands


def test_the_walkthrough_commands_succeed(tmp_path: Path) -> None:
    folder, commands = _walkthrough()
    assert folder == "topologies/big-trades" and len(commands) >= 6, commands
    work = tmp_path / "walk"
    shutil.copytree(ROOT / folder, work)
    for command in commands:
        done = subprocess.run([*CLI, *shlex.split(command)[1:]], cwd=work, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr, command


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_run_installs_the_package_and_the_broker_only() -> None:
    done = subprocess.run(["make", "-n", "-B", "run"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "eventscript dev topologies/sensors/topology.yaml" in done.stdout
    assert "pip install" in done.stdout and "'.[broker]'" in done.stdout
    for heavy in ("install-system-deps", "install-helm", "apt-get", "[dev]"):
        assert heavy not in done.stdout, heavy


def test_the_first_program_s_test_loop_runs_as_written(tmp_path: Path) -> None:
    """ "Your first program and its test": the trace block and each command, in order, as a newcomer
    copies them (the README had no trace file nor an --expect step to copy)."""
    text = README.read_text(encoding="utf-8")
    first = text[text.index("## What it is") : text.index("This repository has:")]
    section = text[text.index("## Your first program and its test") : text.index("## Commands")]
    (tmp_path / "doors.es").write_text(_blocks(first)[0][1])
    [(trace_lang, trace), (_, commands)] = _blocks(section)
    assert trace_lang == "text"
    (tmp_path / "doors.trace").write_text(trace)
    outputs = []
    for line in commands.splitlines():
        command = shlex.split(line.split("  #", 1)[0])
        assert command[0] == "eventscript", line
        into = command.index(">") if ">" in command else None
        args = command[1:into]
        done = subprocess.run([*CLI, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        if into is not None:
            (tmp_path / command[into + 1]).write_text(done.stdout)
        outputs.append(done.stdout)
    assert '"event": "LeftOpen"' in outputs[1]
    assert outputs[2] == "ok: 1 event as expected\n"
