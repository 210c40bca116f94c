"""How long ``eventscript check`` takes on the largest complete program of the language document.

The program is found at run time among the document's complete programs (the document is read
from ../shared/seeds beside the checkout and never copied here; see tests/language/langdoc.py).
If the document is absent, the largest conformance program is used instead.

- in-process: ``compile_source`` with everything ``check`` does (parse, check, lower, automata,
  every analysis), repeated; median and p95 in milliseconds. Target: under 50 ms.
- for reference, the wall time of the command ``eventscript check FILE`` in a subprocess
  (interpreter start-up and imports included).

Usage: python bench/check.py [--repeat N] [--cli-repeat N] [--file PROGRAM.es]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "service"), str(ROOT / "tests"), str(ROOT / "tests" / "language")]

from eventscript.automata.compile import compile_source  # noqa: E402
from eventscript.language.source import SourceFile  # noqa: E402

CASES = ROOT.parent / "shared" / "conformance" / "cases"
TARGET_MS = 50.0


def _normalize(text: str) -> str:
    return " ".join(text.split())


def pick_program(explicit: str | None) -> tuple[str, str, Path | None]:
    """(description, program text, a file holding exactly that program if there is one)."""
    if explicit:
        p = Path(explicit)
        return str(p), p.read_text(encoding="utf-8"), p
    conformance = sorted(CASES.glob("*/*.es")) if CASES.exists() else []
    try:
        import langdoc

        doc = langdoc.complete_programs()
    except Exception:  # the document or the test helpers are not there
        doc = []
    if doc:
        largest = max(doc, key=lambda p: p.size)
        text = largest.text.strip() + "\n"
        same = [c for c in conformance if _normalize(c.read_text(encoding="utf-8")) == _normalize(text)]
        where = f"the largest complete program of the language document (line {largest.line}, {largest.size} chars)"
        return where, text, (same[0] if same else None)
    if not conformance:
        sys.exit("neither the language document nor the conformance suite is beside the checkout (../shared)")
    biggest = max(conformance, key=lambda c: c.stat().st_size)
    return f"the largest conformance program ({biggest.parent.name})", biggest.read_text(encoding="utf-8"), biggest


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))
    return xs[k]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=300, help="in-process compilations to time")
    ap.add_argument("--cli-repeat", type=int, default=7, help="runs of the eventscript check command")
    ap.add_argument("--file", help="time this program instead")
    args = ap.parse_args()

    what, text, file = pick_program(args.file)
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if file is None:
        tmp = tempfile.TemporaryDirectory(prefix="es-bench-")
        file = Path(tmp.name) / "program.es"
        file.write_text(text, encoding="utf-8")

    source = SourceFile(str(file), text, path=file)
    comp = compile_source(source)
    if comp.diagnostics.errors:
        sys.exit("the program has errors:\n" + comp.diagnostics.render())
    for _ in range(10):  # warm up
        compile_source(SourceFile(str(file), text, path=file))
    times: list[float] = []
    for _ in range(args.repeat):
        src = SourceFile(str(file), text, path=file)
        t = time.perf_counter()
        compile_source(src)
        times.append((time.perf_counter() - t) * 1000.0)
    median, p95 = statistics.median(times), percentile(times, 0.95)

    exe = Path(sys.executable).parent / "eventscript"
    cmd = [str(exe)] if exe.exists() else ([shutil.which("eventscript")] if shutil.which("eventscript") else
                                           [sys.executable, "-m", "eventscript.cli.main"])
    cli: list[float] = []
    for _ in range(args.cli_repeat):
        t = time.perf_counter()
        r = subprocess.run([*cmd, "check", str(file)], capture_output=True, text=True)  # type: ignore[list-item]
        cli.append((time.perf_counter() - t) * 1000.0)
        if r.returncode != 0:
            sys.exit(f"eventscript check failed ({r.returncode}):\n{r.stdout}{r.stderr}")

    kind = f"{comp.dfa_states} DFA states" if comp.dfa_states is not None else "lazy DFA"
    print(f"eventscript check: {what}")
    print(f"  file: {file}  ({len(text)} chars, {text.count(chr(10))} lines, {kind}, "
          f"{len(comp.diagnostics.warnings)} warning(s))")
    print(f"  in-process compile_source (full check), {args.repeat} runs: median {median:.2f} ms, "
          f"p95 {p95:.2f} ms, min {min(times):.2f} ms  (target {TARGET_MS:.0f} ms: "
          f"{'met' if p95 < TARGET_MS else 'NOT met'})")
    print(f"  CLI wall time, {args.cli_repeat} runs: median {statistics.median(cli):.0f} ms, "
          f"min {min(cli):.0f} ms  (interpreter start-up and imports included)")
    print(f"  command: {' '.join(str(c) for c in cmd)} check {file}")
    if tmp is not None:
        print("  (the program was written to a temporary file, removed on exit)")
        tmp.cleanup()


if __name__ == "__main__":
    main()
