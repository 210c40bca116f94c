"""``eventscript playground`` refuses what it cannot open before it listens, saying where: a
topology's ``source:`` naming a missing program is placed at its ``topology.yaml:line:col`` (it was
"cannot read filtr.es", with no place), and a port beyond 65535 is a usage error."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

CLI = [sys.executable, "-m", "eventscript.cli.main"]


def test_a_topology_naming_a_missing_program_is_refused_at_its_source_line(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "topologies" / "big-trades", tmp_path / "bt")
    topology = tmp_path / "bt" / "topology.yaml"
    text = topology.read_text()
    line = text[: text.index("source: filter.es")].count("\n") + 1
    col = text.splitlines()[line - 1].index("filter.es") + 1
    topology.write_text(text.replace("source: filter.es", "source: filtr.es"))
    done = subprocess.run(
        [*CLI, "playground", "bt/topology.yaml", "--port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"eventscript playground: bt/topology.yaml:{line}:{col}: error: cannot read the program bt/filtr.es: "
        "No such file or directory; fix 'source:' (it is relative to the topology file)\n"
    )


def test_a_port_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "playground", "--port", "70000"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "argument --port: a port is 0 to 65535, got 70000" in done.stderr


def _guide_commands() -> list[tuple[str, str]]:
    """(folder, command) of each line of docs/playground.md's first block, as a user types them
    from the checkout's root (a ``cd`` line moves the following ones)."""
    text = (ROOT / "docs" / "playground.md").read_text(encoding="utf-8")
    block = re.search(r"^```\n(.*?)^```$", text, re.S | re.M).group(1)  # type: ignore[union-attr]
    folder, out = ".", []
    for line in block.splitlines():
        line = line.split("  #", 1)[0].strip()
        if line.startswith("cd "):
            folder = line[3:]
        elif line.startswith("eventscript playground"):
            out.append((folder, line))
    return out


def test_the_guides_playground_commands_open_as_shown(tmp_path: Path) -> None:
    commands = _guide_commands()
    assert len(commands) >= 4, commands
    work = tmp_path / "checkout"
    shutil.copytree(ROOT / "topologies", work / "topologies")
    for folder, command in commands:
        proc = subprocess.Popen(
            [*CLI, *shlex.split(command)[1:], "--port", "0"],
            cwd=work / folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            first = proc.stdout.readline()  # type: ignore[union-attr]
            assert first.startswith("EventScript playground on http://127.0.0.1:"), (command, first, proc.stderr.read())  # type: ignore[union-attr]
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_a_trace_given_as_a_program_is_refused_with_the_command_that_opens_it(tmp_path: Path) -> None:
    """``playground p.es p.trace`` said the playground opens program sources "(.es) or one topology
    file; compiled programs have no text to show": no word on where a trace goes."""
    (tmp_path / "p.es").write_text("in long A\nout long B\n( A(x) { !>B(x); } )*\n")
    (tmp_path / "p.trace").write_text("[2026-01-01 00:00:00] A(1)\n")
    done = subprocess.run(
        [*CLI, "playground", "p.es", "p.trace", "--port", "0"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr == (
        "eventscript playground: p.trace: a trace goes after --trace: eventscript playground p.es --trace p.trace\n"
    )
