"""``check``, ``compile`` and ``graph``: the compiler's commands (their options: ``program_options``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..api import looks_compiled
from ..automata.compile import DEFAULT_STATE_LIMIT, Compilation, compile_file
from ..automata.compiled import CompiledProgram
from ..language.diagnostics import Severity
from .wording import counted


def compile_or_report(
    path: str, state_limit: int = DEFAULT_STATE_LIMIT, *, warnings: bool = False, out=None
) -> Compilation | None:
    """Compile a file; print errors (and warnings if asked) to ``out``; None on failure."""
    out = out or sys.stderr
    if Path(path).suffix.lower() in (".yaml", ".yml"):
        print(
            f"{path}: error: this is a topology, not a program; check it with 'eventscript topology check "
            f"{path}' (or run it whole with 'eventscript test --trace TRACE {path}')",
            file=out,
        )
        return None
    suffix = Path(path).suffix.lower()
    if suffix in (".trace", ".jsonl"):
        kind = "a trace" if suffix == ".trace" else "JSON lines (a trace as tail prints it, or expected output)"
        print(
            f"{path}: error: this is {kind}, not a program; give a trace after --trace "
            f"and the programs after it ('eventscript test --trace TRACE PROGRAM... [--expect EXPECTED.jsonl]')",
            file=out,
        )
        return None
    if _is_compiled(path):
        print(
            f"{path}: error: this is a compiled program, not its source: give the .es file it was compiled "
            "from ('eventscript test' and 'eventscript graph' take this one as it is)",
            file=out,
        )
        return None
    try:
        comp = compile_file(path, state_limit=state_limit)
    except OSError as exc:
        print(f"{path}: error: cannot read the program: {exc.strerror or exc}", file=out)
        return None
    except UnicodeDecodeError:
        print(f"{path}: error: the program is not UTF-8 text", file=out)
        return None
    for d in comp.diagnostics.sorted():
        if d.severity is Severity.ERROR or warnings:
            print(d.render(), file=out)
    if warnings:
        for note in comp.notes:
            print(f"{path}: note: {note}", file=out)
    return comp if comp.ok else None


def _is_compiled(path: str) -> bool:
    """Whether ``path`` holds what ``eventscript compile`` writes (read as source, its JSON said
    "expected '=' or '?' after the expression, found ':'")."""
    try:
        return looks_compiled(path, Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False  # compiling says what is wrong


def load_or_report(
    path: str, state_limit: int = DEFAULT_STATE_LIMIT, *, warnings: bool = False, out=None
) -> CompiledProgram | None:
    """A program from source, or from the JSON file ``eventscript compile`` writes (told apart by
    content, see :func:`looks_compiled`); errors are printed to ``out``; None on failure."""
    out = out or sys.stderr
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = None  # compile_or_report says what is wrong
    if text is None or not looks_compiled(path, text):
        comp = compile_or_report(path, state_limit, warnings=warnings, out=out)
        return None if comp is None else comp.program
    try:
        return CompiledProgram.loads(text)
    except RecursionError:
        problem = "it nests too deeply"
    except Exception as exc:  # a damaged file can fail anywhere in the loader: say so, no traceback
        problem = f"{type(exc).__name__}: {exc}"
    print(f"{path}: error: not a valid compiled program ({problem}); recompile it with 'eventscript compile'", file=out)
    return None


def run_check(args: argparse.Namespace) -> int:
    """Diagnostics of each file, then one ``FILE: ok`` line per program that compiles (as ``topology
    check`` does), so that success is visible and not mistaken for a command that did nothing."""
    status = 0
    for f in args.files:
        comp = compile_or_report(f, args.state_limit, warnings=not args.quiet, out=sys.stdout)
        if comp is None:
            status = 1
        elif not args.quiet:
            print(f"{f}: ok{_warning_counts(comp)}")
    return status


def _warning_counts(comp: Compilation) -> str:
    """``, 2 warnings, 1 warning accepted`` after ``ok``: the warnings shown, and those an allow
    comment accepted (not shown, but not silently gone either)."""
    warned = sum(1 for d in comp.diagnostics.sorted() if d.severity is not Severity.ERROR)
    shown = f", {counted(warned, 'warning')}" if warned else ""
    return shown + (f", {counted(comp.accepted, 'warning')} accepted" if comp.accepted else "")


def run_compile(args: argparse.Namespace) -> int:
    comp = compile_or_report(args.program, args.state_limit)
    if comp is None or comp.program is None:
        return 1
    out = Path(args.output) if args.output else Path(args.program).with_suffix(".json")
    try:
        comp.program.save(out)
    except OSError as exc:  # no such directory (not created: a typo should not make directories), ...
        hint = "; create the directory first" if not out.parent.is_dir() else ""
        print(f"{out}: error: cannot write the compiled program: {exc.strerror or exc}{hint}", file=sys.stderr)
        return 1
    kind = f"{comp.dfa_states} DFA states" if comp.dfa_states is not None else "lazy DFA"
    print(f"{out}: {kind}, {len(comp.program.program.symbols)} symbols", file=sys.stderr)
    return 0


def run_graph(args: argparse.Namespace) -> int:
    from ..tools.graph import render

    program = load_or_report(args.program, args.state_limit)
    if program is None:
        return 1
    return render(program, Path(args.output), full_labels=args.full_labels)
