"""Digests of all the code the engine generates, per conformance program and executor.

For engine refactorings that must not change the hot path: run it under two trees and diff.
Equal output means every generated function (feeds, batch feed, transitions, timer starts,
classifiers, group keys, the lazy DFA's miss) has the same name and text in both, so their
per-event cost is the same whatever the benchmark's noise on a loaded machine.

Usage (the tree is the one on PYTHONPATH; cases from ../shared/conformance beside this checkout):
    PYTHONPATH=/tmp/base/service python bench/generated_code.py > /tmp/before.txt
    PYTHONPATH=$PWD/service python bench/generated_code.py > /tmp/after.txt
    diff /tmp/before.txt /tmp/after.txt
"""

from __future__ import annotations

import builtins
import hashlib
import sys
from pathlib import Path
from typing import Any

CASES = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "cases"
KINDS: dict[str, dict[str, Any]] = {
    "eager": {"compact": False},
    "compact": {"compact": True},
    "tracked": {"track_dirty": True},
    "lazy": {"lazy_mode": "cache"},
    "simulate": {"lazy_mode": "simulate"},
}


def main() -> None:
    recorded: list[tuple[str, str]] = []
    original = builtins.compile

    def recording(source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        if isinstance(filename, str) and filename.startswith("<eventscript"):
            recorded.append((filename, source))
        return original(source, filename, mode, *args, **kwargs)

    builtins.compile = recording  # (the engine compiles its generated code with the builtin)
    from eventscript.automata.compile import compile_file
    from eventscript.engine.engine import Engine
    from eventscript.engine.time_provider import SimulatedTimeProvider

    total = 0
    for path in sorted(CASES.glob("*/program.es")):
        for kind, options in KINDS.items():
            recorded.clear()
            compiled = compile_file(path, force_lazy=kind in ("lazy", "simulate")).require()
            engine = Engine(compiled, None, SimulatedTimeProvider(), **options)
            engine.feed_many([])  # (made on its first call)
            total += len(recorded)
            digest = hashlib.sha256(repr(sorted(recorded)).encode()).hexdigest()[:16]
            print(path.parent.name, kind, len(recorded), digest)
    print(f"{total} generated functions", file=sys.stderr)


if __name__ == "__main__":
    main()
