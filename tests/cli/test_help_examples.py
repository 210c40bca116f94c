"""What a newcomer reads in ``--help``: ``eventscript --help`` ends with first steps,
``eventscript test --help`` with the two files a newcomer writes, by example, and the exit statuses
(its options said only "the timed event trace" and "expected JSON lines"), ``eventscript check
--help`` with how to accept a warning that is meant. The examples are real: the trace runs the
shipped doors program and prints the expected line shown; the allow comment accepts the warning."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from conftest import ROOT
from eventscript.cli.main import build_parser, main
from eventscript.cli.test_options import EPILOG

DOORS = ROOT / "topologies" / "doors" / "left_open.es"


def _example(header: str) -> str:
    """The indented lines under the epilog's paragraph that starts with ``header``."""
    paragraph = next(p for p in EPILOG.split("\n\n") if p.startswith(header))
    return "\n".join(line.strip() for line in paragraph.splitlines() if line.startswith("  ")) + "\n"


def test_the_help_shows_both_formats_and_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["test", "--help"])
    out = capsys.readouterr().out
    assert "[2026-01-01 08:00:00]                  // the run starts (UTC)" in out  # kept as written
    assert "exit status: 0 ran (and matched --expect), 1 the output differs" in out


def test_the_helps_trace_gives_the_helps_expected_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.trace").write_text(_example("a trace"), encoding="utf-8")
    (tmp_path / "e.jsonl").write_text(_example("expected output"), encoding="utf-8")
    args = ["test", "--trace", str(tmp_path / "t.trace"), str(DOORS), "--expect", str(tmp_path / "e.jsonl")]
    assert main(args) == 0, capsys.readouterr()
    assert "ok: 1 event as expected" in capsys.readouterr().out


def test_check_help_shows_how_to_accept_a_warning_and_it_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The never-ends warning's hint says only to end the expression; the way to keep a warning
    that is meant was in the language guide alone. The help's comment, put on the line the
    warning points at, accepts it."""
    from eventscript.cli.program_options import CHECK_EPILOG

    [comment] = [line.strip() for line in CHECK_EPILOG.splitlines() if "eventscript: allow" in line]
    source = DOORS.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(source) if line.startswith("( Opened()"))  # where never-ends points
    source[at] += "   " + comment
    (tmp_path / "doors.es").write_text("\n".join(source) + "\n", encoding="utf-8")
    assert main(["check", str(tmp_path / "doors.es")]) == 0
    assert capsys.readouterr().out.endswith("doors.es: ok, 1 warning accepted\n")
    assert "exit status: 0 every program compiles" in CHECK_EPILOG


def test_the_main_help_ends_with_first_steps_that_parse(capsys: pytest.CaptureFixture[str]) -> None:
    """``eventscript --help`` listed fifteen commands, most for Kafka, with no word on where to start."""
    from eventscript.cli.main import FIRST_STEPS

    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    assert "first steps, for a program P.es:" in capsys.readouterr().out
    steps = [line.split("  ", 2)[1].split() for line in FIRST_STEPS.splitlines() if line.startswith("  eventscript ")]
    assert [s[1] for s in steps] == ["check", "test", "playground"]
    for step in steps:
        build_parser().parse_args(step[1:])  # each is a command line the parser takes


#: The commands a first deployment and its operation use, whose help listed options only.
OPERATOR_COMMANDS = [
    "topology",
    "topology check",
    "topology plan",
    "topology graph",
    "dev",
    "run",
    "tail",
    "state",
    "reset",
    "upgrade",
    "upgrade plan",
    "backfill",
    "produce",
    "export",
]


@pytest.mark.parametrize("command", OPERATOR_COMMANDS)
def test_an_operators_command_ends_its_help_with_examples_that_parse(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new user's walk to a pipeline found these helps with no command line to copy; each now
    shows some, of the command itself, and every one is a command line the parser takes."""
    with pytest.raises(SystemExit):
        build_parser().parse_args([*command.split(), "--help"])
    out = capsys.readouterr().out
    examples = [
        line.strip() for line in out.split("\nexample", 1)[-1].splitlines() if line.startswith("  eventscript ")
    ]
    assert any(line.startswith(f"eventscript {command} ") for line in examples), out
    for line in examples:
        build_parser().parse_args(shlex.split(line)[1:])
