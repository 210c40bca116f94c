"""``Engine.feed_many``: the generated ``feed`` turned into a loop over a batch of events.

Hosts often hold many events at once (a trace, the records of a poll, a benchmark's input); a
call of ``feed`` per event costs ~25-30 ns of ~140 ns at 10k keys (issue 11 item 2). The batch
feed is the very source ``CodeGen.feed`` generated, per-input bodies unchanged, inside
``for name, ev in events:``: each ``return`` of the feed ends the event (``continue``) after
evaluating what it returned when that has an effect (``return _unexpected(...)`` reports the
error). The generated feed puts ``return`` only at the start of a line and nowhere else: action
code has no ``return``, event values are parameters, never source.

The loop's global names are hoisted into parameters (``LOAD_FAST`` instead of ``LOAD_GLOBAL``)
by a wrapper that reads them when the batch starts, except those ``keep`` refuses: names the
engine rebinds while events run (the lazy DFA's ``_SIM``, set when its cache thrashes) or
between them (host hooks, the consumer), so a batch sees what a feed call per event would.
"""

from __future__ import annotations

import builtins
import symtable
from collections.abc import Callable

#: The loop function's name in the engine's namespace; ``feed_many`` calls it with the hoisted names.
LOOP = "_feed_loop"


def _as_loop(feed_source: str) -> list[str]:
    """The lines of ``def _feed_loop(events):`` running the body of ``def feed(name, ev):`` per event."""
    lines = feed_source.split("\n")
    assert lines[0] == "def feed(name, ev):", lines[0]
    out = [f"def {LOOP}(events):", "    for name, ev in events:"]
    for line in lines[1:]:
        body = line.lstrip()
        ind = "    " + line[: len(line) - len(body)]
        if body == "return" or body.startswith("return "):
            value = body[len("return") :].strip()
            if value not in ("", "None", "ctx"):  # a call: its effect stays, its result goes
                out.append(ind + value)
            out.append(ind + "continue")
        else:
            out.append("    " + line if line else line)
    return out


def _globals(source: str, name: str) -> list[str]:
    """The global names function ``name`` of ``source`` reads, in a stable order."""
    table = next(t for t in symtable.symtable(source, "<feed_many>", "exec").get_children() if t.get_name() == name)
    return sorted(s.get_name() for s in table.get_symbols() if s.is_global())


def feed_many_source(feed_source: str, keep: Callable[[str], bool]) -> str:
    """``feed_many(events)`` and the loop it calls, from the source of ``feed`` (see the module
    docstring); ``keep(name)``: may the global ``name`` be read once per batch?"""
    loop = _as_loop(feed_source)
    hoisted = [n for n in _globals("\n".join(loop), LOOP) if keep(n) or hasattr(builtins, n)]
    params = "".join(", " + n for n in hoisted)
    loop[0] = f"def {LOOP}(events{params}):"
    return "\n".join([*loop, "", "", "def feed_many(events):", f"    {LOOP}(events{params})"])


__all__ = ["LOOP", "feed_many_source"]
