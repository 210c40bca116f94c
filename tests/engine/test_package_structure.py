"""The structure of the engine and checker packages stays as issue 19 left it.

- ``engine/`` and ``language/`` have no import cycle among their modules (``graphlib`` finds one);
- the executors and the code space do not import the façade (``engine.py``), and the checker's
  stage modules do not import ``checker.py``, which composes them;
- no module outside ``engine/`` reads or assigns a private name of an engine (``engine._x``,
  ``self.engine._x``): hosts use the public accessors (``changed``, ``forget_change``,
  ``input_key_function``, ``report_error``, ...).
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

SERVICE = Path(__file__).resolve().parents[2] / "service" / "eventscript"


def package_imports(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (relative imports of level 1)."""
    modules = {p.stem for p in package.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in package.glob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps.update(a.name for a in node.names if a.name in modules)
        graph[path.stem] = deps
    return graph


@pytest.mark.parametrize("package", ["engine", "language"])
def test_no_import_cycle(package: str) -> None:
    graph = package_imports(SERVICE / package)
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle in {package}/: {' -> '.join(exc.args[1])}")


def test_parts_do_not_import_what_composes_them() -> None:
    engine = package_imports(SERVICE / "engine")
    for part in ("eager", "lazy", "executor", "codespace", "names", "runtime_errors", "codegen"):
        assert "engine" not in engine[part], f"engine/{part}.py imports the façade engine.py"
    language = package_imports(SERVICE / "language")
    stages = [m for m in language if m.startswith(("check_", "type_")) or m in ("checked", "checker_state")]
    assert len(stages) >= 7
    for stage in stages:
        assert "checker" not in language[stage], f"language/{stage}.py imports checker.py, which composes it"


def _reads_engine_private(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of each ``<...>engine._name`` in the tree (``engine`` a name or an attribute)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if name in ("engine", "eng", "_engine"):
                found.append((node.lineno, node.attr))
    return sorted(found)


def test_no_host_reads_an_engines_private_names() -> None:
    offenders = []
    for path in sorted(SERVICE.rglob("*.py")):
        if path.parent.name == "engine":
            continue
        for line, name in _reads_engine_private(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(f"{path.relative_to(SERVICE)}:{line}: engine.{name}")
    assert not offenders, "hosts read engine internals (use its public accessors):\n" + "\n".join(offenders)


def test_the_private_name_check_finds_what_it_looks_for() -> None:
    tree = ast.parse("self.engine._inputs['A'].key\nengine._error(None, 6, 'x')\nengine.feed('A', 1)\n")
    assert _reads_engine_private(tree) == [(1, "_inputs"), (2, "_error")]
