"""The guides' example programs are real (a new user copies them first): every ``eventscript``
block of the docs compiles without errors, and every worked example — programs, then a trace,
then the JSON lines ``eventscript test`` prints — prints exactly those lines.

A block that needs a file beside it gets it from the guide itself: a ``text`` block opening with
``// file NAME`` is written as NAME (an ``#include``), and a ``python`` block after a program
that declares ``"module:attribute"`` functions is written as that module.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ROOT

CLI = [sys.executable, "-m", "eventscript.cli.main"]
GUIDES = ("docs/language.md", "docs/playground.md", "docs/operations.md", "docs/topologies.md", "docs/worker.md")
#: "The trace `...` gives": a trace written in the prose instead of a block of its own.
INLINE_TRACE = re.compile(r"[Tt]he trace\s+`([^`]+)`")
#: "`eventscript test --trace door.trace door.es` prints": the file names the example uses.
COMMAND = re.compile(r"`eventscript test --trace (\S+) ([^`]+)`")


@dataclass(frozen=True)
class Block:
    guide: str
    line: int  # of the opening fence
    lang: str
    body: str
    prose_before: str  # the text between the previous block and this one

    @property
    def where(self) -> str:
        return f"{self.guide}:{self.line}"

    @property
    def is_output(self) -> bool:
        lines = self.body.splitlines()
        return self.lang == "text" and bool(lines) and all(line.startswith('{"time"') for line in lines)


def _blocks(guide: str) -> list[Block]:
    text = (ROOT / guide).read_text(encoding="utf-8")
    out, end = [], 0
    for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M):
        line = text.count("\n", 0, m.start()) + 1
        out.append(Block(guide, line, m.group(1), m.group(2), text[end : m.start()]))
        end = m.end()
    return out


def _programs() -> list[Block]:
    return [b for g in GUIDES for b in _blocks(g) if b.lang == "eventscript"]


def _write_companions(block: Block, folder: Path) -> None:
    """The included files and Python modules ``block`` needs, from the same guide."""
    blocks = _blocks(block.guide)
    for b in blocks:
        first = b.body.split("\n", 1)[0]
        if b.lang == "text" and first.startswith("// file "):
            (folder / first.removeprefix("// file ").strip()).write_text(b.body, encoding="utf-8")
    modules = re.findall(r':\s*"([\w.]+):\w+"', block.body)
    after = [b for b in blocks if b.line > block.line and b.lang == "python"]
    for module in modules:
        assert after, f"{block.where}: declares module {module} but no python block follows it"
        (folder / f"{module}.py").write_text(after[0].body, encoding="utf-8")


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(cwd), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_language_guide_has_programs_and_worked_examples() -> None:
    assert len(_programs()) >= 15
    assert len(_worked_examples()) >= 3


@pytest.mark.parametrize("block", _programs(), ids=lambda b: b.where)
def test_every_program_in_the_guides_compiles(tmp_path: Path, block: Block) -> None:
    _write_companions(block, tmp_path)
    (tmp_path / "example.es").write_text(block.body, encoding="utf-8")
    done = _cli(["check", "example.es"], tmp_path)
    assert done.returncode == 0, f"{block.where}:\n{done.stdout}{done.stderr}"


@dataclass(frozen=True)
class WorkedExample:
    programs: list[Block]
    trace: str
    output: Block


def _worked_examples() -> list[WorkedExample]:
    """Each output block, the trace before it (a text block, or one in the prose) and the program
    before that (a pipeline: the program blocks right before it, with no text between them)."""
    out = []
    blocks = _blocks("docs/language.md")
    for i, b in enumerate(blocks):
        if not b.is_output:
            continue
        inline = INLINE_TRACE.search(b.prose_before)
        j = i - 1
        if inline:
            trace = inline.group(1)
        else:
            assert blocks[j].lang == "text", f"{b.where}: no trace before this output"
            trace, j = blocks[j].body, j - 1
        programs: list[Block] = []
        while j >= 0 and blocks[j].lang == "eventscript":
            programs.insert(0, blocks[j])
            if blocks[j].prose_before.strip():  # a pipeline's stages follow each other with no text between
                break
            j -= 1
        assert programs, f"{b.where}: no program before this output"
        out.append(WorkedExample(programs, trace, b))
    return out


@pytest.mark.parametrize("example", _worked_examples(), ids=lambda e: e.output.where)
def test_worked_examples_print_what_the_guide_shows(tmp_path: Path, example: WorkedExample) -> None:
    """Run as the guide's command says (its file names appear in $error lines), or, when the
    guide gives none, as ``eventscript test --trace example.trace program.es``."""
    command = COMMAND.search(example.output.prose_before)
    trace_name, names = ("example.trace", [f"stage{k + 1}.es" for k in range(len(example.programs))])
    if command:
        trace_name, names = command.group(1), command.group(2).split()
    elif len(names) == 1:
        names = ["program.es"]
    assert len(names) == len(example.programs), f"{example.output.where}: {names} for {len(example.programs)} programs"
    for program, name in zip(example.programs, names, strict=True):
        _write_companions(program, tmp_path)
        (tmp_path / name).write_text(program.body, encoding="utf-8")
    (tmp_path / trace_name).write_text(example.trace, encoding="utf-8")
    done = _cli(["test", "--trace", trace_name, *names], tmp_path)
    assert done.returncode == 0, f"{example.output.where}:\n{done.stderr}"
    assert done.stdout == example.output.body, example.output.where


def _shown_sessions() -> list[Block]:
    """The guides' blocks that show a command and what it prints: ``$ eventscript ...`` then its
    output, ``...`` standing for lines left out."""
    return [b for g in GUIDES for b in _blocks(g) if b.body.startswith("$ eventscript ")]


def test_the_guides_show_a_session() -> None:
    assert _shown_sessions(), "no '$ eventscript ...' block left: the test below checks nothing"


@pytest.mark.parametrize("block", _shown_sessions(), ids=lambda b: b.where)
def test_a_shown_session_prints_what_the_guide_shows(block: Block) -> None:
    """The playground guide's ``test --explain`` example had drifted from what the command prints
    (markers it no longer lists): each run of shown lines must be printed as shown, in order."""
    command, *shown = block.body.splitlines()
    done = _cli(command.removeprefix("$ eventscript ").split(), ROOT)
    assert done.returncode == 0, f"{block.where}:\n{done.stderr}"
    printed = done.stdout.splitlines()
    at = 0
    for part in "\n".join(shown).split("\n...\n"):
        lines = part.splitlines()
        starts = [i for i in range(at, len(printed)) if printed[i : i + len(lines)] == lines]
        assert starts, f"{block.where}: not printed (after line {at}):\n{part}\nprinted:\n{done.stdout}"
        at = starts[0] + len(lines)
