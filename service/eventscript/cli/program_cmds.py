"""``check``, ``compile`` and ``graph``: the compiler's commands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..automata.compile import DEFAULT_STATE_LIMIT, Compilation, compile_file
from ..language.diagnostics import Severity


def _add_limit(p: argparse.ArgumentParser) -> None:
    p.add_argument("--state-limit", type=int, default=DEFAULT_STATE_LIMIT, metavar="N",
                   help=f"DFA states to build eagerly before switching to the lazy DFA (default {DEFAULT_STATE_LIMIT})")


def compile_or_report(path: str, state_limit: int = DEFAULT_STATE_LIMIT, *, warnings: bool = False,
                      out=None) -> Compilation | None:  # type: ignore[no-untyped-def]
    """Compile a file; print errors (and warnings if asked) to ``out``; None on failure."""
    out = out or sys.stderr
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


def setup_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="EventScript programs")
    p.add_argument("-q", "--quiet", action="store_true", help="print errors only, not warnings")
    _add_limit(p)


def run_check(args: argparse.Namespace) -> int:
    status = 0
    for f in args.files:
        comp = compile_or_report(f, args.state_limit, warnings=not args.quiet, out=sys.stdout)
        if comp is None:
            status = 1
    return status


def setup_compile(p: argparse.ArgumentParser) -> None:
    p.add_argument("program", metavar="PROGRAM")
    p.add_argument("-o", "--output", metavar="FILE.json", help="where to write (default: PROGRAM with .json)")
    _add_limit(p)


def run_compile(args: argparse.Namespace) -> int:
    comp = compile_or_report(args.program, args.state_limit)
    if comp is None or comp.program is None:
        return 1
    out = Path(args.output) if args.output else Path(args.program).with_suffix(".json")
    comp.program.save(out)
    kind = f"{comp.dfa_states} DFA states" if comp.dfa_states is not None else "lazy DFA"
    print(f"{out}: {kind}, {len(comp.program.program.symbols)} symbols", file=sys.stderr)
    return 0


def setup_graph(p: argparse.ArgumentParser) -> None:
    p.add_argument("program", metavar="PROGRAM")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="FILE.svg, FILE.png (drawn with Graphviz) or FILE.dot")
    _add_limit(p)


def run_graph(args: argparse.Namespace) -> int:
    from ..tools.graph import render

    comp = compile_or_report(args.program, args.state_limit)
    if comp is None or comp.program is None:
        return 1
    return render(comp.program, Path(args.output))
