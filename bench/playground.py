"""The playground's server-side figures: a check request for the language document's largest
program (what a keystroke costs before the page draws it) and for a topology (its programs and
its YAML), and run requests over 10,000-event traces (parse, run with every step recorded,
drawings, the answer as JSON), one without outputs and one with an output per event. Wall and CPU time,
median of --repeat runs; the browser's share is measured by tests/playground/test_browser.py.

usage: .venv/bin/python bench/playground.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import orjson

from eventscript.engine.encoding import json_line
from eventscript.engine.tuning import configure_gc
from eventscript.playground import examples, service
from eventscript.playground.limits import Limits

LARGEST = "document/unaccompanied-visitor"


def doors_trace(events: int) -> str:
    half = events // 4
    lines = [
        "[2026-01-01 08:00:00]",
        *(f'Opened("d{i}") Closed("d{i}")' for i in range(half)),
        "[2026-01-01 08:01:00]",
        *(f'Opened("d{i}") Closed("d{i}")' for i in range(half)),
    ]
    return "\n".join(lines) + "\n"


COUNTER = """in {string who;} Ping group(Ping.who)
out {string who; long n;} Count

{ n = 0; }
( Ping() { n = n + 1; !>Count({who: group[0], n: n}); } )*
"""


def counter_trace(events: int) -> str:
    """One output per event, over 100 keys."""
    return "[2026-01-01 09:00:00]\n" + "".join(f'Ping("k{i % 100}")\n' for i in range(events))


def timed(fn) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    w, c = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - w) * 1000, (time.process_time() - c) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    configure_gc()  # as the playground's server does (make_server)
    largest = examples.load(LARGEST)
    doors = examples.load("topologies/doors")
    assert largest is not None and doors is not None
    check_body = {"programs": largest["programs"]}
    run_body = {**doors, "trace": doors_trace(10_000)}
    trades = examples.load("topologies/big-trades")
    assert trades is not None
    counter = {"programs": [{"name": "counter.es", "text": COUNTER}], "trace": counter_trace(10_000)}
    cases = {
        f"check {LARGEST} ({len(largest['programs'][0]['text'])} bytes)": lambda: json_line(
            service.check(check_body, Limits())
        ),
        "check topologies/big-trades (two programs and topology.yaml)": lambda: json_line(
            service.check(trades, Limits())
        ),
        "run doors over 10,000 events": lambda: orjson.dumps(service.run(run_body, Limits())),  # as the server answers
        "run a counter over 10,000 events (10,000 outputs)": lambda: orjson.dumps(service.run(counter, Limits())),
    }
    for name, fn in cases.items():
        fn()
        walls, cpus = zip(*(timed(fn) for _ in range(args.repeat)))
        print(
            f"{name}: median wall {statistics.median(walls):.1f} ms, median CPU {statistics.median(cpus):.1f} ms "
            f"(best wall {min(walls):.1f} ms, {args.repeat} runs)"
        )


if __name__ == "__main__":
    main()
