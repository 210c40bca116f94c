"""EventScript: regular expressions with actions, compiled to automata and run as stream processors.

The package is layered, each layer depending only on the ones before it:
language (parse, check, lower) → automata (NFA, DFA, lazy DFA, compiled program) → engine
(instance contexts, timers, actions compiled to Python) → hosts (tester, kafka) → cli.
"""

__version__ = "0.1.0"

from .api import *  # noqa: F403
from .api import __all__  # noqa: F401
