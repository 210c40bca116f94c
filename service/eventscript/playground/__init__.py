"""``eventscript playground``: a local web app to write a program, run a trace, watch each key's
automaton and timers, and step through time. The server (``server``) answers a few JSON
requests (``service``) from a static page shipped in ``static/``; it runs programs only through
the compiler and the engine, within ``limits``."""
