"""Developer tools built on a compiled program (drawings of its automaton), kept apart from the
compiler and the engine so that neither pays for them."""
