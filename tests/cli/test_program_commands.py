"""``check``, ``graph`` and ``test`` as a new user meets them (issue 27): success is visible, a file of
the wrong kind says which command to use, a helper module that exits is reported, a drawing that
could not be made fails, and edges with different actions are never merged. Each runs the command
in a subprocess, as a user does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "eventscript.cli.main"]
ECHO = "in string S\nout string O\n( S(x) { !>O(x); } )*\n"
TRACE = '[2026-01-01 00:00:00]\nS("a")\n'


def eventscript(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_check_says_ok_for_each_program_that_compiles(tmp_path: Path) -> None:
    (tmp_path / "echo.es").write_text(ECHO)
    (tmp_path / "bad.es").write_text("in string S\nout string O\n( S(x) { !>C(x); } )*\n")
    result = eventscript("check", "echo.es", "bad.es", cwd=tmp_path)
    assert result.returncode == 1
    assert "echo.es: ok\n" in result.stdout
    assert "bad.es: ok" not in result.stdout and "bad.es:3:" in result.stdout


def test_counts_agree_with_their_nouns(tmp_path: Path) -> None:
    """A count agrees with its noun: "ok, 1 warning", "ok: 1 event as expected" (not "1 events")."""
    (tmp_path / "echo.es").write_text(ECHO)
    (tmp_path / "unread.es").write_text("in string S\nout string O\n( S(x) { y = x; !>O(x); } )*\n")
    assert eventscript("check", "unread.es", cwd=tmp_path).stdout.endswith("unread.es: ok, 1 warning\n")
    (tmp_path / "t.trace").write_text(TRACE)
    (tmp_path / "e.jsonl").write_text('{"time": "2026-01-01T00:00:00Z", "event": "O", "value": "a"}\n')
    tested = eventscript("test", "--trace", "t.trace", "echo.es", "--expect", "e.jsonl", cwd=tmp_path)
    assert tested.stdout == "ok: 1 event as expected\n", tested


def test_check_on_a_topology_names_the_topology_command(tmp_path: Path) -> None:
    (tmp_path / "topology.yaml").write_text("programs: []\n")
    result = eventscript("check", "topology.yaml", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    assert lines == [
        "topology.yaml: error: this is a topology, not a program; check it with 'eventscript topology "
        "check topology.yaml' (or run it whole with 'eventscript test --trace TRACE topology.yaml')"
    ]


def test_a_trace_given_as_the_program_says_where_it_goes(tmp_path: Path) -> None:
    """``--trace`` and the program swapped: it was a parse error at the trace's first '['."""
    (tmp_path / "echo.es").write_text(ECHO)
    (tmp_path / "echo.trace").write_text(TRACE)
    result = eventscript("test", "--trace", "echo.es", "echo.trace", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "echo.trace: error: this is a trace, not a program; give a trace after --trace and the programs after it "
        "('eventscript test --trace TRACE PROGRAM... [--expect EXPECTED.jsonl]')"
    ]
    result = eventscript("check", "echo.trace", cwd=tmp_path)
    assert result.returncode == 1 and "echo.trace: error: this is a trace, not a program" in result.stdout


def test_a_helper_module_exiting_on_import_is_a_diagnostic(tmp_path: Path) -> None:
    (tmp_path / "quitter.py").write_text("import sys\nsys.exit(3)\n\ndef f(x):\n    return x\n")
    (tmp_path / "p.es").write_text(
        'function long f(long): "quitter:f"\nin long A\nout long B\n( A(x) { !>B(f(x)); } )*\n'
    )
    result = eventscript("check", "p.es", cwd=tmp_path)
    assert result.returncode == 1, result  # was 3, silently
    assert "cannot import module 'quitter': it called sys.exit(3) while being imported" in result.stdout


def test_a_missing_expect_file_is_one_plain_line(tmp_path: Path) -> None:
    (tmp_path / "echo.es").write_text(ECHO)
    (tmp_path / "echo.trace").write_text(TRACE)
    result = eventscript("test", "--trace", "echo.trace", "echo.es", "--expect", "nosuch.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "nosuch.jsonl: error: cannot read the expected output: No such file or directory"


def test_graph_without_graphviz_fails_and_says_where_the_dot_text_is(tmp_path: Path) -> None:
    (tmp_path / "echo.es").write_text(ECHO)
    (tmp_path / "empty").mkdir()
    result = eventscript(
        "graph", "echo.es", "-o", "x.png", cwd=tmp_path, env={**os.environ, "PATH": str(tmp_path / "empty")}
    )
    assert result.returncode == 1, result
    assert not (tmp_path / "x.png").exists() and (tmp_path / "x.dot").exists()
    assert "Graphviz 'dot' was not found on PATH; wrote the DOT text to x.dot instead of x.png" in result.stderr


LOOKALIKE = """in string A, string B
out string O
( A(x) { !>O("a long text, which differs only at: logout"); }
| B(x) { !>O("a long text, which differs only at: timeout"); }
)*
"""


def _edges(dot: str) -> list[str]:
    return re.findall(r'^  s0 -> s0 \[label="((?:[^"\\]|\\.)*)"', dot, flags=re.MULTILINE)


def test_graph_never_merges_edges_whose_actions_differ(tmp_path: Path) -> None:
    (tmp_path / "p.es").write_text(LOOKALIKE)
    assert eventscript("graph", "p.es", "-o", "short.dot", cwd=tmp_path).returncode == 0
    short = _edges((tmp_path / "short.dot").read_text())
    assert len(short) == 2, short  # one edge per action, though the shortened labels read alike
    assert short[0].split("\\n", 1)[1] == short[1].split("\\n", 1)[1]  # the labels are indeed cut alike
    assert eventscript("graph", "p.es", "-o", "full.dot", "--full-labels", cwd=tmp_path).returncode == 0
    full = _edges((tmp_path / "full.dot").read_text())
    assert len(full) == 2 and any("logout" in e for e in full) and any("timeout" in e for e in full)


def _check_lines(tmp_path: Path, source: str) -> list[str]:
    (tmp_path / "p.es").write_text(source)
    result = eventscript("check", "p.es", cwd=tmp_path)
    assert result.returncode == 1, result
    return [line.strip() for line in result.stdout.splitlines()]


def test_a_number_beyond_a_double_is_a_compile_error(tmp_path: Path) -> None:
    lines = _check_lines(tmp_path, "in double D\nout double O\n( D(d) { !>O(d * 1e400); } )*\n")
    assert lines[0] == "p.es:3:18: error: 1e400 is beyond the range of a double (at most about 1.8e308)"
    assert lines[-1] == "hint: write a smaller number; for Infinity, divide: 1.0 / 0.0"


def test_a_time_marker_without_parentheses_gets_a_hint_that_keeps_its_duration(tmp_path: Path) -> None:
    lines = _check_lines(tmp_path, "in {} A\nout long O\n( A() )* elapse[1 hour] { !>O(1); }\n")
    assert lines[0] == "p.es:3:25: error: expected '(', found '{'"
    assert lines[-1] == "hint: write elapse[1 hour]() or elapse[1 hour](variable)"


def test_an_unclosed_multiplier_is_called_a_multiplier(tmp_path: Path) -> None:
    lines = _check_lines(tmp_path, "in {} A\nout long O\n( A(){3 )\n")
    assert lines[0] == "p.es:3:6: error: this multiplier is not closed"
    assert lines[-1] == "hint: multipliers are written {i}, {i,j} or {i,}"
    assert sum(": error: " in line for line in lines) == 1


def test_a_stage_that_does_not_compile_is_the_only_error_of_topology_check(tmp_path: Path) -> None:
    import shutil

    from conftest import ROOT

    shutil.copytree(ROOT / "topologies" / "big-trades", tmp_path / "bt")
    source = tmp_path / "bt" / "filter.es"
    source.write_text(source.read_text().replace("!>FilteredTrade", "!>FilteredTrad"))
    result = eventscript("topology", "check", "topology.yaml", cwd=tmp_path / "bt")
    assert result.returncode == 1
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert len(errors) == 2, result.stdout  # the stage, and the compiler's own diagnostic under it
    assert "program filter does not compile" in errors[0] and "undeclared output event" in errors[1]
    assert "written by no program" not in result.stdout + result.stderr


def test_a_compiled_program_is_drawn_and_refused_by_check_and_compile_with_what_to_give(tmp_path: Path) -> None:
    """``graph`` read the file ``eventscript compile`` writes as source ("expected '=' or '?' after
    the expression, found ':'") though ``test`` runs it; ``check`` and ``compile`` said the same."""
    (tmp_path / "echo.es").write_text(ECHO)
    assert eventscript("compile", "echo.es", cwd=tmp_path).returncode == 0
    drawn = eventscript("graph", "echo.json", "-o", "echo.dot", cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    assert (tmp_path / "echo.dot").read_text().startswith("digraph")
    for command in ("check", "compile"):
        done = eventscript(command, "echo.json", cwd=tmp_path)
        assert done.returncode == 1
        said = done.stdout + done.stderr
        assert said.startswith("echo.json: error: this is a compiled program, not its source: give the .es file")
        assert "expected '='" not in said


def test_the_commands_a_programmer_uses_say_what_each_argument_is() -> None:
    """``compile --help`` and ``graph --help`` listed a bare PROGRAM (the options' test only
    looks at options)."""
    import argparse

    from eventscript.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    bare = [
        f"{name} {action.metavar or action.dest}"
        for name in ("check", "test", "compile", "graph", "playground")
        for action in sub.choices[name]._actions
        if action.help is None
    ]
    assert bare == []
