"""External functions: resolving ``package.module:attribute`` to a Python callable.

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


def resolve_external(impl: str, search_dirs: list[Path]) -> tuple[Callable[..., Any] | None, str | None]:
    """Import ``package.module:attribute``; returns (callable, None) or (None, reason)."""
    if ":" not in impl:
        return None, (f'{impl!r} does not name a Python callable; write "package.module:attribute"')
    module_name, _, attr = impl.partition(":")
    if not module_name or not attr:
        return None, f'{impl!r} does not name a Python callable; write "package.module:attribute"'
    added = [str(d) for d in search_dirs if str(d) not in sys.path]
    sys.path[:0] = added
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import failure is a resolution failure
        return None, f"cannot import module {module_name!r}: {exc}"
    except SystemExit as exc:  # a module that exits on import would end the command silently
        return None, f"cannot import module {module_name!r}: it called sys.exit({exc.code!r}) while being imported"
    finally:
        for d in added:
            with suppress(ValueError):
                sys.path.remove(d)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            return None, f"module {module_name!r} has no attribute {attr!r}"
        obj = getattr(obj, part)
    if not callable(obj):
        return None, f"{impl!r} is not callable"
    return obj, None
