"""External functions: resolving an implementation's name to a Python callable.

Two forms name one: ``"package.module:attribute"`` (the colon says where the module ends), and the
language document's own, a dotted name such as ``"eslib.systemFuncs.EnvVar"`` (a Java class name
there), read as a module and an attribute of it, the longest module that imports first. The
functions the document's examples name are bundled (``eventscript.eslib``): a declaration copied
from the document resolves to them unless a module of the user's own answers the name first.

The checker resolves them to report a missing one at its declaration; the engine resolves them
again when it loads a compiled program (``engine.engine``), which may run elsewhere.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

#: The first part of the names the document's examples give, and where they are bundled.
DOCUMENT_LIBRARY = "eslib"
BUNDLED_LIBRARY = "eventscript.eslib"

#: What a name of neither form is told.
FORMS = '"package.module:attribute" (or the document\'s dotted "package.module.attribute")'


def implementation_readings(impl: str) -> list[tuple[str, str]]:
    """The (module, attribute path) readings of ``impl``, in the order they are tried: one for
    ``"package.module:attribute"``; for a dotted name, one per place the module may end, the
    longest module first. None (empty): ``impl`` names no callable in either form."""
    if ":" in impl:
        module, _, attr = impl.partition(":")
        return [(module, attr)] if module and attr else []
    parts = impl.split(".")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        return []
    return [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(len(parts) - 1, 0, -1)]


def resolve_external(impl: str, search_dirs: list[Path]) -> tuple[Callable[..., Any] | None, str | None]:
    """Import the callable ``impl`` names; returns (callable, None) or (None, reason). A reading
    whose module does not exist gives way to the next, then to the bundled library's; a module
    that exists but fails to import, or lacks the attribute, is the answer."""
    readings = implementation_readings(impl)
    if not readings:
        return None, f"{impl!r} does not name a Python callable; write {FORMS}"
    bundled = [
        (f"{BUNDLED_LIBRARY}{module[len(DOCUMENT_LIBRARY) :]}", attr)
        for module, attr in readings
        if module == DOCUMENT_LIBRARY or module.startswith(DOCUMENT_LIBRARY + ".")
    ]
    first_problem: str | None = None
    for module_name, attr in readings + bundled:
        fn, problem, missing = _resolve(module_name, attr, impl, search_dirs)
        if fn is not None:
            return fn, None
        if not missing:
            return None, problem
        first_problem = first_problem or problem
    return None, first_problem


def _resolve(
    module_name: str, attr: str, impl: str, search_dirs: list[Path]
) -> tuple[Callable[..., Any] | None, str | None, bool]:
    """(callable, None, False), or (None, reason, whether the module itself does not exist)."""
    added = [str(d) for d in search_dirs if str(d) not in sys.path]
    sys.path[:0] = added
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:  # this module (or a package of it), or one it imports
        missing = exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + "."))
        return None, f"cannot import module {module_name!r}: {exc}", missing
    except Exception as exc:  # any other import failure is a resolution failure
        return None, f"cannot import module {module_name!r}: {exc}", False
    except SystemExit as exc:  # a module that exits on import would end the command silently
        why = f"it called sys.exit({exc.code!r}) while being imported"
        return None, f"cannot import module {module_name!r}: {why}", False
    finally:
        for d in added:
            with suppress(ValueError):
                sys.path.remove(d)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            return None, f"module {module_name!r} has no attribute {attr!r}", False
        obj = getattr(obj, part)
    if not callable(obj):
        return None, f"{impl!r} is not callable", False
    return obj, None, False
