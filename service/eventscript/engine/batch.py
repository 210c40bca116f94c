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

Time does not move within a batch (``Engine.feed_many``), so when the engine's clock moves only
when its host moves it (``TimeProvider.moves_by_itself`` false), the wrapper also reads the
clock once and the loop's own calls ``_now()`` (each inline emission's time, an action's
``now()``) read that value: a Python call fewer per emission (issue 26).
"""

from __future__ import annotations

import builtins
import io
import symtable
import tokenize
from collections.abc import Callable

from . import names as N

#: The loop function's name in the engine's namespace; ``feed_many`` calls it with the hoisted names.
LOOP = "_feed_loop"
#: The loop's parameter holding the clock's reading when the batch started (``read_time_once``): a
#: local of the loop, not one of the namespace's names (``names``).
BATCH_TIME = "_bt"


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


def _time_read_once(lines: list[str]) -> bool:
    """Replace each call ``_now()`` of ``lines`` (Python source, changed in place) by the batch's
    reading ``_bt``; whether there was one. Tokens, not text: a string constant of the program
    (``!>Out("_now()")``) stays as it is."""
    tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines)).readline))
    calls = [
        (name.start, close.end)
        for name, opening, close in zip(tokens, tokens[1:], tokens[2:])
        if name.type == tokenize.NAME and name.string == N.NOW and opening.string == "(" and close.string == ")"
    ]
    for (row, start), (_, end) in reversed(calls):  # right to left: earlier columns stay valid
        line = lines[row - 1]
        lines[row - 1] = line[:start] + BATCH_TIME + line[end:]
    return bool(calls)


def feed_many_source(feed_source: str, keep: Callable[[str], bool], read_time_once: bool = False) -> str:
    """``feed_many(events)`` and the loop it calls, from the source of ``feed`` (see the module
    docstring); ``keep(name)``: may the global ``name`` be read once per batch?
    ``read_time_once``: may the clock be read once per batch (it does not move by itself)?"""
    loop = _as_loop(feed_source)
    timed = read_time_once and _time_read_once(loop)
    first, time = (f", {BATCH_TIME}", f", {N.NOW}()") if timed else ("", "")
    loop[0] = f"def {LOOP}(events{first}):"  # (the batch time is no global to hoist)
    hoisted = [n for n in _globals("\n".join(loop), LOOP) if keep(n) or hasattr(builtins, n)]
    params = "".join(", " + n for n in hoisted)
    loop[0] = f"def {LOOP}(events{first}{params}):"
    return "\n".join([*loop, "", "", "def feed_many(events):", f"    {LOOP}(events{time}{params})"])


__all__ = ["BATCH_TIME", "LOOP", "feed_many_source"]
