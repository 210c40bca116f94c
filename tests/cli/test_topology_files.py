"""Whatever a topology file holds, every command that reads one answers with one clear message and
exit 2, never a traceback or a hang (issue 27, item 4; the reader is topology/load.py). Run as a
user runs them: the command in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "eventscript.cli.main"]
TRACE = '[2026-01-01 00:00:00]\nS("a")\n'
PROGRAM = "in string S\nout string O\n( S(x) { !>O(x); } )*\n"


def eventscript(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _alias_bomb() -> str:
    """Nine levels of nine aliases: 9**9 values once expanded, a few hundred bytes on disk."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    return "\n".join([*lines, "programs: *a9", ""])


BAD_FILES: dict[str, tuple[bytes, str]] = {
    "binary": (bytes(range(256)) * 4, "this is binary data, not a YAML topology"),
    "latin-1": ("application: caf\xe9\n".encode("latin-1"), "t.yaml:1:17: the topology is not UTF-8 text: byte 0xE9"),
    "deep": (("application: " + "[" * 5000 + "]" * 5000 + "\n").encode(), "nests more than 64 levels deep"),
    "alias bomb": (_alias_bomb().encode(), "aliases (*name) expand to more than 100,000 values"),
    "too large": (b"# " + b"x" * (1 << 20) + b"\n", "larger than 1 MiB"),
    "a program": (
        PROGRAM.encode(),
        "this looks like an EventScript program, not a topology; check it with 'eventscript check t.yaml'",
    ),
}

COMMANDS: dict[str, list[str]] = {
    "topology check": ["topology", "check", "t.yaml"],
    "topology plan": ["topology", "plan", "t.yaml"],
    "topology graph": ["topology", "graph", "t.yaml", "-o", "t.dot"],
    "test": ["test", "--trace", "t.trace", "t.yaml"],
    "run": ["run", "t.yaml"],
    "produce": ["produce", "t.yaml", "--trace", "t.trace"],
    "dev": ["dev", "t.yaml"],
    "backfill": ["backfill", "t.yaml", "--input", "nothing.jsonl"],
    "tail": ["tail", "x", "--topology", "t.yaml"],
}


@pytest.mark.parametrize("kind", BAD_FILES)
def test_a_bad_topology_file_is_one_message_in_topology_check(tmp_path: Path, kind: str) -> None:
    content, message = BAD_FILES[kind]
    (tmp_path / "t.yaml").write_bytes(content)
    result = eventscript("topology", "check", "t.yaml", cwd=tmp_path)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_reading_a_topology_refuses_binary_and_deep_files(tmp_path: Path, command: str) -> None:
    (tmp_path / "t.trace").write_text(TRACE)
    for kind in ("binary", "deep", "alias bomb"):
        content, message = BAD_FILES[kind]
        (tmp_path / "t.yaml").write_bytes(content)
        result = eventscript(*COMMANDS[command], cwd=tmp_path)
        assert result.returncode == 2, (kind, result)
        assert "Traceback" not in result.stderr, (kind, result.stderr)
        assert message in result.stderr, (kind, result.stderr)


TOPOLOGY = """\
application: {application}
programs:
  - name: echo
    source: echo.es
    clock: {clock}
    inputs:
      - topic: words
        event: S
    outputs:
      O: echoed
topics:
  words: {{external: true, partitions: {partitions}}}
"""


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        ({"application": "big trades"}, "t.yaml:1:14: application:", "'big trades' cannot name a Kafka topic"),
        (
            {"partitions": "99999999999999999999"},
            "t.yaml:12:39: topics.words.partitions:",
            "Input should be less than or equal to 2147483647",
        ),
        ({"clock": "sundial"}, "t.yaml:5:12: programs[0].clock:", "Input should be 'wall' or 'record'"),
    ],
)
def test_schema_errors_name_the_line_and_the_key_path(
    tmp_path: Path, change: dict[str, str], where: str, message: str
) -> None:
    (tmp_path / "echo.es").write_text(PROGRAM)
    values = {"application": "demo", "clock": "record", "partitions": "1", **change}
    (tmp_path / "t.yaml").write_text(TOPOLOGY.format(**values))
    result = eventscript("topology", "check", "t.yaml", cwd=tmp_path)
    assert result.returncode == 2, result
    assert f"{where} {message}" in result.stderr, result.stderr


def test_the_same_topology_without_the_change_is_accepted(tmp_path: Path) -> None:
    """The schema test's file is valid as written: only the change makes it fail."""
    (tmp_path / "echo.es").write_text(PROGRAM)
    (tmp_path / "t.yaml").write_text(TOPOLOGY.format(application="demo", clock="record", partitions="1"))
    result = eventscript("topology", "check", "t.yaml", cwd=tmp_path)
    assert result.returncode == 0, result
    assert "t.yaml: ok: 1 program, " in result.stdout


def test_upgrade_plan_places_a_missing_program_at_its_source_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``upgrade plan`` of a topology whose ``source:`` names no file said only ``notfy.es: error:
    cannot read the program``: not which topology, which line, nor what to fix."""
    from eventscript.cli.main import main

    (tmp_path / "p.es").write_text(PROGRAM, encoding="utf-8")
    good = "programs:\n  - name: p\n    source: p.es\n    inputs: [{topic: s, event: S}]\n"
    (tmp_path / "old.yaml").write_text(good, encoding="utf-8")
    (tmp_path / "new.yaml").write_text(good.replace("source: p.es", "source: pp.es"), encoding="utf-8")
    assert main(["upgrade", "plan", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'new.yaml'}:3:13: error: program p: " in err and "cannot read the program" in err
    assert "hint: fix 'source:' (it is relative to the topology file)" in err
