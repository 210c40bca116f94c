"""The generated code and the engine agree on the names they share (``engine.names``).

Every function the engine generates (feeds, the batch feed, transitions, timer starts,
classifiers, group keys, the lazy DFA's miss) is recorded for the conformance suite's programs
on each executor (eager, compact, lazy with its cache and simulating), and the global names
each reads must be declared in ``engine.names`` (or be Python builtins) and bound in the engine's
namespace once its feeds exist. A template in ``codegen`` that starts reading a new name
without declaring it fails here, as does a declared name that nothing binds.
"""

from __future__ import annotations

import builtins
import re
import symtable
from pathlib import Path
from unittest import mock

import pytest

from eventscript.automata.compile import compile_file
from eventscript.engine import names as N
from eventscript.engine.codespace import CodeSpace
from eventscript.engine.engine import Engine
from eventscript.engine.time_provider import SimulatedTimeProvider

CASES = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "cases"
PROGRAMS = sorted(CASES.glob("*/program.es")) if CASES.is_dir() else []

EXECUTORS = {
    "eager": {"compact": False},
    "compact": {"compact": True},
    "tracked": {"track_dirty": True},
    "lazy-cache": {"lazy_mode": "cache"},
    "lazy-simulate": {"lazy_mode": "simulate"},
}


def _globals_read(source: str) -> set[str]:
    """The global names read by the functions ``source`` defines (at any depth)."""
    out: set[str] = set()
    stack = list(symtable.symtable(source, "<generated>", "exec").get_children())
    while stack:
        table = stack.pop()
        out |= {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()}
        stack.extend(table.get_children())
    return out


def _generated(path: Path, kind: str) -> tuple[Engine, list[str]]:
    sources: list[str] = []
    define = CodeSpace.define

    def recording(self: CodeSpace, name: str, source: str):  # type: ignore[no-untyped-def]
        sources.append(source)
        return define(self, name, source)

    options = EXECUTORS[kind]
    compiled = compile_file(path, force_lazy=kind.startswith("lazy")).require()
    with mock.patch.object(CodeSpace, "define", recording):
        engine = Engine(compiled, None, SimulatedTimeProvider(), **options)  # type: ignore[arg-type]
        engine.feed_many([])  # (made on its first call)
    return engine, sources


@pytest.mark.skipif(not PROGRAMS, reason="the conformance suite is not beside the checkout")
@pytest.mark.parametrize("kind", sorted(EXECUTORS))
def test_generated_code_reads_only_declared_names(kind: str) -> None:
    seen: set[str] = set()
    for path in PROGRAMS:
        engine, sources = _generated(path, kind)
        assert sources, path
        ns = engine._code.ns
        for source in sources:
            for name in _globals_read(source):
                if hasattr(builtins, name):
                    continue
                assert N.declared(name), f"{path.parent.name} ({kind}): generated code reads undeclared {name!r}"
                assert name in ns, f"{path.parent.name} ({kind}): generated code reads {name!r}, never bound"
                seen.add(name)
    assert seen  # (the check ran over something)


def test_every_fixed_name_is_generated_somewhere() -> None:
    """A declared name no generator writes is dead: the list is the contract, not a wish list.
    (The conformance programs do not reach every template, so this reads the generators.)"""
    engine_dir = Path(N.__file__).parent
    text = "".join((engine_dir / f).read_text() for f in ("codegen.py", "lazy.py"))
    defined = {N.FEED, N.FEED_KEYED, N.FEED_MANY, N.FEED_LOOP, N.MISS}
    unwritten = {
        n for n in N.FIXED - defined if not re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", text)
    }
    assert not unwritten, f"declared in engine.names but in no generated template: {sorted(unwritten)}"


def test_declared_names() -> None:
    assert N.declared("_cget") and N.declared("_e12") and N.declared("_b_length") and N.declared("_K3")
    assert not N.declared("_e") and not N.declared("_cgetx") and not N.declared("ctx")
    assert N.is_output("_e3") and not N.is_output("_err") and not N.is_output("_e")
