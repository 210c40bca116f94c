"""The state limit a compile uses unless told otherwise, in a module of its own: the modules
``compile.py`` imports read it without an import cycle, and the command line shows it in its
options without importing the automata (``eventscript --help`` imports no compiler)."""

#: The DFA's state limit a compile uses unless told otherwise (past it: a lazy DFA).
DEFAULT_STATE_LIMIT = 40_000
