"""Where the worker's baseline memory goes: what its imports cost, before any record (issue 26).

Run in a fresh process (so nothing was imported before), it imports what ``eventscript run``
imports to run a topology (``eventscript.kafka.config``, ``eventscript.kafka.supervisor``), step by
step, and prints:

- the RSS after each step (``VmRSS``: the Python heap, and the native libraries' resident pages);
- with ``--heap`` instead (tracemalloc inflates the RSS), the Python heap each module's import
  keeps, nested imports subtracted (tracemalloc around ``importlib._bootstrap._load_unlocked``),
  summed by package and, with ``--modules N``, the N largest modules (an estimate: a module's
  allocations made later, at its first use, count for the module then imported).

Why: a module the worker imports for nothing costs every worker its memory for good; the bench
of the whole worker (``bench/worker_peers.py``) prints the RSS at the release, this says where
it comes from. The two measures differ: a native library's pages count in the RSS only.

Usage:
  python bench/worker_memory.py              # RSS after each step
  python bench/worker_memory.py --heap [--modules 30]
"""

from __future__ import annotations

import argparse
import collections
import importlib
import importlib._bootstrap as bootstrap
import sys
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: The steps: the worker's Kafka client and JSON library, then the entry points of ``eventscript run``.
STEPS = ("confluent_kafka", "orjson", "eventscript.kafka.config", "eventscript.kafka.supervisor")


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def traced_imports() -> collections.Counter[str]:
    """Start tracing, and count from now on the heap each module's import keeps (nested imports
    subtracted) by module name."""
    kept: collections.Counter[str] = collections.Counter()
    nested: list[int] = []
    load = bootstrap._load_unlocked  # type: ignore[attr-defined]

    def counted(spec: Any) -> Any:
        start = tracemalloc.get_traced_memory()[0]
        nested.append(0)
        try:
            return load(spec)
        finally:
            inner = nested.pop()
            total = tracemalloc.get_traced_memory()[0] - start
            kept[spec.name] += total - inner
            if nested:
                nested[-1] += total

    tracemalloc.start(1)
    bootstrap._load_unlocked = counted  # type: ignore[attr-defined]
    return kept


def package_of(module: str) -> str:
    """``eventscript.kafka`` for the project's modules, the top-level package for the others."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "eventscript" else parts[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heap", action="store_true", help="the Python heap kept by each import (tracemalloc)")
    ap.add_argument("--modules", type=int, default=0, help="also print the N modules whose import keeps most")
    ap.add_argument("--packages", type=int, default=25, help="print the N packages whose imports keep most")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "service"))
    if not args.heap:
        before = rss_mib()
        print(f"RSS at start {before:.1f} MiB")
        for step in STEPS:
            importlib.import_module(step)
            now = rss_mib()
            print(f"  after {step:32s} {now:6.1f} MiB  (+{now - before:.1f})")
            before = now
        return
    kept = traced_imports()
    for step in STEPS:
        importlib.import_module(step)
    print(f"Python heap kept by these imports: {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MiB; by package:")
    by_package: collections.Counter[str] = collections.Counter()
    for module, size in kept.items():
        by_package[package_of(module)] += size
    for package, size in by_package.most_common(args.packages):
        print(f"  {size / 2**20:6.2f} MiB  {package}")
    if args.modules:
        print("by module:")
        for module, size in kept.most_common(args.modules):
            print(f"  {size / 2**10:7.0f} KiB  {module}")


if __name__ == "__main__":
    main()
