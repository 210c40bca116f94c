"""From the intermediate form to automata: Thompson NFA, epsilon elimination, DFA, lazy DFA."""
