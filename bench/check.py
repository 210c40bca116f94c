"""How long compiling takes (``eventscript check``: parse, check, lower, automata, every analysis).

Programs, each compiled in-process ``--repeat`` times, round-robin (one round compiles every
program once, so neighbouring programs are measured under the same load):

- the largest complete program of the language document (read at run time from ../shared beside
  the checkout; if absent, the largest conformance program);
- the blow-up program of issue 11, ``.* A() .{k}``, k = 10 (eager DFA, 2,048 states) and 15, 20,
  25 (past the state limit: the eager attempt gives up, the lazy DFA's analyses look at 2,000
  states);
- generated programs (``tests/language/generated_programs.py``, shared with the tests) of 100,
  500 and 1,000 lines: many patterns under ``-``, under ``&``, and loops nested 12 deep.

Reported per program: median and p95 wall milliseconds, and median CPU milliseconds of the
process. Target: at most 100 ms for the 500-line program under ``-`` and for the blow-up program.

``--against DIR`` compares two trees in one run: DIR is another checkout's ``service`` folder (for
example ``git archive 57bb5e0 service | tar -x -C /tmp/base``, then ``--against
/tmp/base/service``). Each tree runs in a child process, alternating round by round, so both see
the same load.

Usage: python bench/check.py [--repeat N] [--only NAME,...] [--cli-repeat N] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT.parent / "shared" / "conformance" / "cases"
TARGET_MS = 100.0
#: The programs the target applies to.
TARGETED = ("difference-500", "blowup-k15", "blowup-k20", "blowup-k25")


def _setup_path(service: Path) -> None:
    sys.path[:0] = [str(service), str(ROOT / "tests"), str(ROOT / "tests" / "language")]


def _normalize(text: str) -> str:
    return " ".join(text.split())


def document_program() -> tuple[str, str]:
    """(description, text) of the language document's largest complete program."""
    conformance = sorted(CASES.glob("*/*.es")) if CASES.exists() else []
    try:
        import langdoc

        doc = langdoc.complete_programs()
    except Exception:  # the document or the test helpers are not there
        doc = []
    if doc:
        largest = max(doc, key=lambda p: p.size)
        return (
            f"the language document's largest complete program (line {largest.line}, {largest.size} chars)",
            largest.text.strip() + "\n",
        )
    if not conformance:
        sys.exit("neither the language document nor the conformance suite is beside the checkout (../shared)")
    biggest = max(conformance, key=lambda c: c.stat().st_size)
    return f"the largest conformance program ({biggest.parent.name})", biggest.read_text(encoding="utf-8")


def programs() -> dict[str, str]:
    import generated_programs as gen

    out = {"document": document_program()[1]}
    for k in (10, 15, 20, 25):
        out[f"blowup-k{k}"] = gen.blowup_program(k)
    for lines, patterns in ((100, 8), (500, 41), (1000, 82)):
        out[f"difference-{lines}"] = gen.difference_program(lines, patterns)
        out[f"intersection-{lines}"] = gen.intersection_program(lines, patterns)
        out[f"nested-{lines}"] = gen.nested_program(lines)
    return out


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))
    return xs[k]


def measure(names: list[str], rounds: int) -> dict[str, dict[str, list[float] | str]]:
    """Compile each program ``rounds`` times, round-robin: wall and CPU milliseconds per run."""
    from eventscript.automata.compile import compile_source
    from eventscript.language.source import SourceFile

    texts = programs()
    info: dict[str, dict[str, list[float] | str]] = {}
    for name in names:
        comp = compile_source(SourceFile(f"{name}.es", texts[name]))
        if comp.diagnostics.errors:
            sys.exit(f"{name} has errors:\n" + comp.diagnostics.render())
        kind = f"{comp.dfa_states} DFA states" if comp.dfa_states is not None else "lazy DFA"
        lines = texts[name].count("\n")
        info[name] = {"kind": f"{lines} lines, {kind}", "wall": [], "cpu": []}
    for name in names:  # warm up
        compile_source(SourceFile(f"{name}.es", texts[name]))
    for _ in range(rounds):
        for name in names:
            src = SourceFile(f"{name}.es", texts[name])
            w, c = time.perf_counter(), time.process_time()
            compile_source(src)
            info[name]["cpu"].append((time.process_time() - c) * 1000.0)  # type: ignore[union-attr]
            info[name]["wall"].append((time.perf_counter() - w) * 1000.0)  # type: ignore[union-attr]
    return info


def cli_wall_ms(text: str, repeat: int) -> list[float]:
    exe = Path(sys.executable).parent / "eventscript"
    which = shutil.which("eventscript")
    cmd = [str(exe)] if exe.exists() else ([which] if which else [sys.executable, "-m", "eventscript.cli.main"])
    with tempfile.TemporaryDirectory(prefix="es-bench-") as tmp:
        file = Path(tmp) / "program.es"
        file.write_text(text, encoding="utf-8")
        out: list[float] = []
        for _ in range(repeat):
            t = time.perf_counter()
            r = subprocess.run([*cmd, "check", str(file)], capture_output=True, text=True)
            out.append((time.perf_counter() - t) * 1000.0)
            if r.returncode != 0:
                sys.exit(f"eventscript check failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return out


def row(name: str, info: dict[str, list[float] | str], label: str = "") -> str:
    wall, cpu = info["wall"], info["cpu"]
    assert isinstance(wall, list) and isinstance(cpu, list)
    target = ""
    if name in TARGETED:
        target = "  (target met)" if statistics.median(wall) <= TARGET_MS else "  (target NOT met)"
    return (
        f"  {name:<17} {label:<7} {info['kind']:<30} median {statistics.median(wall):7.1f} ms  "
        f"p95 {percentile(wall, 0.95):7.1f} ms  CPU median {statistics.median(cpu):7.1f} ms{target}"
    )


def compare(names: list[str], args: argparse.Namespace) -> None:
    """This tree and ``--against``, in child processes alternating round by round."""
    trees = {"this": ROOT / "service", "against": Path(args.against).resolve()}
    merged: dict[str, dict[str, dict[str, list[float] | str]]] = {t: {} for t in trees}
    for _ in range(args.rounds):
        for label, service in trees.items():
            r = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    str(service),
                    "--repeat",
                    str(max(1, args.repeat // args.rounds)),
                    "--only",
                    ",".join(names),
                ],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONHASHSEED": "0"},
            )
            if r.returncode != 0:
                sys.exit(f"the {label} tree failed:\n{r.stderr}")
            for name, info in json.loads(r.stdout).items():
                m = merged[label].setdefault(name, {"kind": info["kind"], "wall": [], "cpu": []})
                m["wall"] += info["wall"]  # type: ignore[operator]
                m["cpu"] += info["cpu"]  # type: ignore[operator]
    print(
        f"compile time, this tree vs {trees['against']}, {args.rounds} alternating rounds, "
        f"{args.repeat} compilations per program and tree:"
    )
    for name in names:
        print(row(name, merged["this"][name], "this"))
        print(row(name, merged["against"][name], "against"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=30, help="compilations of each program")
    ap.add_argument("--only", help="comma-separated program names (default: all)")
    ap.add_argument("--cli-repeat", type=int, default=5, help="runs of the eventscript check command (0: none)")
    ap.add_argument("--against", help="another tree's service folder to compare with, in the same run")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds with --against")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # measure this service folder, print JSON
    args = ap.parse_args()

    _setup_path(Path(args.child) if args.child else ROOT / "service")
    names = list(programs())
    if args.only:
        unknown = sorted(set(args.only.split(",")) - set(names))
        if unknown:
            sys.exit(f"unknown program(s) {', '.join(unknown)}; choose among {', '.join(names)}")
        names = [n for n in names if n in args.only.split(",")]
    if args.child:
        print(json.dumps(measure(names, args.repeat)))
        return
    if args.against:
        compare(names, args)
        return
    load = os.getloadavg()[0]
    info = measure(names, args.repeat)
    print(
        f"compile time (in-process compile_source, full check), {args.repeat} runs of each program, "
        f"round-robin; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after:"
    )
    print(f"  document = {document_program()[0]}")
    for name in names:
        print(row(name, info[name]))
    if args.cli_repeat:
        cli = cli_wall_ms(programs()["document"], args.cli_repeat)
        print(
            f"  CLI 'eventscript check' on the document's program, {args.cli_repeat} runs: median "
            f"{statistics.median(cli):.0f} ms, min {min(cli):.0f} ms (interpreter start-up and imports included)"
        )


if __name__ == "__main__":
    main()
