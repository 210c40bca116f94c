"""The options of ``eventscript test`` (``test_cmd`` runs it), apart from what runs it so that
building the parser (``eventscript --help``, any command) imports no tester."""

from __future__ import annotations

import argparse

from .program_options import add_state_limit

#: What ``eventscript test --help`` ends with: the two files a newcomer writes, by example (the
#: options alone said "the timed event trace" and "expected JSON lines"), and the exit statuses.
EPILOG = """\
a trace (--trace): a [timestamp] first, then events Name(value), side by side or one a line:
  [2026-01-01 08:00:00]                  // the run starts (UTC)
  Opened("front") Opened({door: "back"}) // a structure's fields in order, or by name in braces
  [08:01:00] Closed("back")              // later that day: the timers due by then fire first
  [08:10:00]                             // a timer fires only if the trace reaches its time

expected output (--expect): the lines a run prints, one JSON object a line (write them by
running without --expect, and check them):
  {"time": "2026-01-01T08:05:00Z", "event": "LeftOpen", "value": {"door": "front"}}

exit status: 0 ran (and matched --expect), 1 the output differs from --expect, 2 a program,
trace or expected file has errors. The formats: docs/language.md, section 10.
"""


def setup(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument(
        "--trace", required=True, metavar="FILE", help="the timed event trace (its form: below), or JSON lines"
    )
    p.add_argument(
        "programs",
        nargs="+",
        metavar="PROGRAM",
        help="one program, or the stages of a pipeline in order: source files, or the JSON files "
        "'eventscript compile' writes; or one topology file (TOPOLOGY.yaml) to run whole",
    )
    p.add_argument(
        "--expect",
        metavar="FILE",
        help="expected JSON lines (below): compare, print each difference with its line, and exit 1",
    )
    p.add_argument(
        "-W",
        "--warnings",
        action="store_true",
        help="also print compiler warnings (for a topology: its programs' and its wiring's, as "
        "'eventscript topology check' prints them)",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="print each event's step: the key, the state before and after as the markers waited "
        "for (line:col), the actions run, the timers set and the outputs",
    )
    add_state_limit(p)
