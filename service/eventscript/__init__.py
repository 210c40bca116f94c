"""EventScript: regular expressions with actions, compiled to automata and run as stream processors.

The package is layered, each layer depending only on the ones before it:
language (parse, check, lower) → automata (NFA, DFA, lazy DFA, compiled program) → engine
(instance contexts, timers, actions compiled to Python) → hosts (tester, kafka) → cli.

The embedding API (``from eventscript import compile_program, Engine, SimulatedTimeProvider``,
see ``eventscript.api``) is loaded on first use, not when the package is: the compiler and the
engine cost every process that imports any submodule (the worker, ``eventscript --help``) about
a tenth of a second otherwise.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # type checkers see the API's names as if imported here
    from .api import *  # noqa: F403
    from .api import __all__ as __all__


def __getattr__(name: str) -> Any:
    """The API's names (and ``__all__``) from ``eventscript.api``, imported on the first such
    lookup (PEP 562) and kept here; any other name is missing as usual."""
    if name.startswith("__") and name != "__all__":  # (__path__, __wrapped__...: no API import)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    api = import_module(f"{__name__}.api")
    if name != "__all__" and name not in api.__all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(api, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The package's own names and the API's, as ``help(eventscript)`` and completion list them."""
    return sorted({*globals(), *__getattr__("__all__")})
