"""Checks that keep the structure as docs/ describe it (issue 19): dependencies point one way, and
a package keeps its private names to itself.

Both read the source with ``ast`` (nothing is imported), every import counted wherever it stands
in a module: a function-local import hides a cycle from Python's import system, not from a reader.
The import walk is the one tests/language/test_compile_time.py runs over automata/, for the whole
service.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVICE = Path(__file__).resolve().parents[1] / "service" / "eventscript"

#: Private names read across packages that another helper of issue 19 removes (the engine's
#: façade gives public accessors); each entry must still occur, so the list only shrinks.
KNOWN_PRIVATE_READS: dict[tuple[str, str], str] = {}


def modules() -> Iterator[tuple[str, Path]]:
    """(dotted name relative to the service package, path) of every module."""
    for path in sorted(SERVICE.rglob("*.py")):
        rel = path.relative_to(SERVICE).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        yield ".".join(parts), path


def package_of(module: str) -> str:
    return module.split(".")[0] if "." in module else ""


def without_main_block(tree: ast.Module) -> ast.Module:
    """The module without its ``if __name__ == "__main__":`` block: what a script does when run
    (backfill/submit.py starts the CLI) is no dependency of the module."""
    tree.body = [
        n
        for n in tree.body
        if not (
            isinstance(n, ast.If)
            and isinstance(n.test, ast.Compare)
            and isinstance(n.test.left, ast.Name)
            and n.test.left.id == "__name__"
        )
    ]
    return tree


def imported_modules(module: str, path: Path, known: set[str]) -> set[str]:
    """The service modules ``module`` imports, relative (``from ..engine import x``) or absolute
    (``from eventscript.engine import x``), at any depth of its code."""
    is_package = path.name == "__init__.py"
    here = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(without_main_block(ast.parse(path.read_text(encoding="utf-8")))):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                prefix = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and (node.module == "eventscript" or node.module.startswith("eventscript.")):
                prefix = node.module.removeprefix("eventscript").lstrip(".")
            else:
                continue
            targets = [f"{prefix}.{a.name}".lstrip(".") for a in node.names]
            targets.append(prefix)
        elif isinstance(node, ast.Import):
            targets = [a.name.removeprefix("eventscript.") for a in node.names if a.name.startswith("eventscript.")]
        for t in targets:
            while t and t not in known:  # "pkg.mod.name" → "pkg.mod"
                t = t.rpartition(".")[0]
            if t and t != module:
                found.add(t)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    mods = dict(modules())
    known = set(mods)
    return {m: imported_modules(m, p, known) for m, p in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a path (its first node repeated at its end), or None."""
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for dep in sorted(graph.get(node, ())):
            cycle = visit(dep, (*path, node))
            if cycle is not None:
                return cycle
        done.add(node)
        return None

    for node in sorted(graph):
        cycle = visit(node, ())
        if cycle is not None:
            return cycle
    return None


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package → the other packages its modules import (a package's ``__init__`` aside: it may
    gather its modules' names)."""
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        pkg = package_of(module)
        if not pkg or module == pkg:
            continue
        out.setdefault(pkg, set()).update(package_of(d) for d in deps if package_of(d) not in ("", pkg))
    return out


def test_the_finder_sees_a_cycle_and_a_function_local_import() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    graph = import_graph()
    # backfill/job.py imports source.py inside a function (pyspark loads only when needed)
    assert "backfill.source" in graph["backfill.job"]


def test_no_package_import_cycle() -> None:
    cycle = find_cycle(package_graph(import_graph()))
    assert cycle is None, f"packages import each other in a cycle: {' -> '.join(cycle)}"


def test_no_module_import_cycle() -> None:
    graph = {m: {d for d in deps if d != package_of(m) or "." not in m} for m, deps in import_graph().items()}
    cycle = find_cycle(graph)
    assert cycle is None, f"modules import each other in a cycle: {' -> '.join(cycle)}"


def test_the_task_knows_no_host() -> None:
    """task/ is what every host runs: it imports no host (kafka/, backfill/, tester/, cli/)."""
    hosts = {"kafka", "backfill", "tester", "cli", "playground"}
    assert not package_graph(import_graph()).get("task", set()) & hosts


#: Modules of backfill/ that talk to Kafka themselves (its source, sink and state hand-over, and
#: ``state dump --spark``, which reads a changelog with the restore's rule): they use the worker's
#: client settings and admin (kafka/clients.py, kafka/admin.py) and its changelog reading.
BACKFILL_KAFKA_IO = {
    "backfill.kafka_source",
    "backfill.kafka_sink",
    "backfill.handover",
    "backfill.main",
    "backfill.state_dump",
}


def test_the_backfill_stages_import_only_the_task_from_the_hosts() -> None:
    allowed = {"task", "state", "engine", "topology", "automata", "language", "backfill", ""}
    graph = import_graph()
    wrong = {
        m: sorted(d for d in deps if package_of(d) not in allowed)
        for m, deps in graph.items()
        if package_of(m) == "backfill" and m not in BACKFILL_KAFKA_IO
    }
    assert not {m: d for m, d in wrong.items() if d}


def private_names_defined(path: Path) -> set[str]:
    """The private names a module defines: functions, classes, methods, module and class
    variables, and attributes it assigns on ``self``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("_"):
            names.add(node.value)  # __slots__ entries
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def private_uses(path: Path) -> Iterator[tuple[str, int, str]]:
    """(name, line, how) of each private name a module reads or assigns on something other than
    ``self``/``cls``, or imports from another module."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                yield node.attr, node.lineno, "assigns" if isinstance(node.ctx, ast.Store) else "reads"
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    yield a.name, node.lineno, "imports"


def cross_package_private_uses() -> list[tuple[str, str, int, str]]:
    """(module path, name, line, how): a private name used in one package that only other
    packages define (so the object it is read on belongs to one of them)."""
    by_package: dict[str, set[str]] = {}
    mods = list(modules())
    for module, path in mods:
        by_package.setdefault(package_of(module), set()).update(private_names_defined(path))
    found = []
    for module, path in mods:
        pkg = package_of(module)
        own = by_package.get(pkg, set())
        others = set().union(*(names for p, names in by_package.items() if p != pkg))
        for name, line, how in private_uses(path):
            if name not in own and name in others:
                found.append((str(path.relative_to(SERVICE)), name, line, how))
    return found


def test_the_private_name_check_catches_a_read_across_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "m.py").write_text("class A:\n    def __init__(self):\n        self._secret = 1\n")
    (tmp_path / "b" / "n.py").write_text("def peek(a):\n    return a._secret + a._own\n\nclass B:\n    _own = 0\n")
    monkeypatch.setitem(globals(), "SERVICE", tmp_path)
    assert cross_package_private_uses() == [("b/n.py", "_secret", 2, "reads")]


def test_no_module_uses_another_packages_private_names() -> None:
    found = cross_package_private_uses()
    stale = set(KNOWN_PRIVATE_READS) - {(path, name) for path, name, _, _ in found}
    assert not stale, f"gone: take them off KNOWN_PRIVATE_READS: {sorted(stale)}"
    wrong = [
        f"{path}:{line}: {how} {name}" for path, name, line, how in found if (path, name) not in KNOWN_PRIVATE_READS
    ]
    assert not wrong, "private names of another package (give the package a public accessor):\n" + "\n".join(wrong)


#: Kafka calls that belong to the worker's parts, not to its loop (issue 19): those that commit
#: (kafka/checkpoint.py) and those that make, assign, rewind or restore tasks (kafka/task_manager.py).
COMMIT_CALLS = {"commit", "send_offsets_to_transaction", "commit_transaction", "consumer_group_metadata"}
TASK_CALLS = {"Task", "incremental_assign", "rewind", "Restoration", "Standbys", "seek", "committed"}


def calls_in(path: Path, parts: frozenset[str] = frozenset()) -> set[str]:
    """The names of the functions and methods a module calls (``x.commit(...)`` → ``commit``),
    except the methods it calls on ``parts`` (``self.checkpoint.commit()``, ``manager.rewind()``:
    delegating is not doing)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                on = node.func.value
                receiver = on.attr if isinstance(on, ast.Attribute) else on.id if isinstance(on, ast.Name) else ""
                if receiver not in parts:
                    found.add(node.func.attr)
            elif isinstance(node.func, ast.Name):
                found.add(node.func.id)
    return found


def test_the_worker_loop_leaves_commits_and_tasks_to_its_parts() -> None:
    """kafka/worker.py is the loop that wires the task manager and the checkpoint: it imports
    both, and the calls that commit or manage tasks are made in them, not in the loop."""
    kafka = SERVICE / "kafka"
    assert {"kafka.task_manager", "kafka.checkpoint"} <= import_graph()["kafka.worker"]
    in_loop = calls_in(kafka / "worker.py", frozenset({"checkpoint", "task_manager", "manager"}))
    assert not in_loop & COMMIT_CALLS, f"worker.py commits itself: {sorted(in_loop & COMMIT_CALLS)}"
    assert not in_loop & TASK_CALLS, f"worker.py manages tasks itself: {sorted(in_loop & TASK_CALLS)}"
    assert calls_in(kafka / "checkpoint.py") >= COMMIT_CALLS
    assert calls_in(kafka / "task_manager.py") >= TASK_CALLS
