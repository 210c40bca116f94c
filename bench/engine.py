"""In-process engine throughput on one core, events pre-built (issue: the engine).

Programs are read from the conformance suite beside the checkout (../shared/conformance/cases):

- keypad:       keypad-ambiguous (ungrouped, case clause), random keys 0-9
- big-trades:   stage 2 of three-big-trades-pipeline, grouped by (trader, company), 10,000 keys,
                one trade per key every ~10 minutes of simulated time, so expiration timers are
                set on every event and fire as time passes
- sliding-avg:  sliding-window-average with N = 100
- blow-up:      ``.* A() .{k} { !>Z({}); }`` over random A/B events (issue 11): k = 10 on the eager
                DFA; k = 10 and 12 on the lazy DFA whose transition cache holds them; k = 15, 20,
                25, 80 on the lazy DFA (its cache thrashes and it falls back to simulating every step)
                and with the fallback forced on from the first event; beside them the peer, a
                hand-written ring-buffer loop. The runs are interleaved (one round runs every
                case once), match counts are checked against the loop, and wall and CPU seconds
                and the load average are printed, since the machine may be shared.

Usage: python bench/engine.py [--events N] [--repeat R] [--only NAME] [--default-gc]
Prints events/s (best of R runs) for each. By default the process is set up as the hosts set
it up (engine.tuning.configure_gc); --default-gc measures with CPython's default collector.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "service"))

from eventscript.automata.compile import compile_file, compile_source  # noqa: E402
from eventscript.engine.engine import Engine  # noqa: E402
from eventscript.engine.time_provider import SimulatedTimeProvider  # noqa: E402
from eventscript.engine.timeutil import parse_time  # noqa: E402
from eventscript.engine.tuning import configure_gc  # noqa: E402


def sink():
    """A consumer that keeps nothing (a real host hands events on; keeping 10^6 of them alive
    would measure the garbage collector, not the engine). Keeps a count."""
    last = collections.deque(maxlen=1)
    return last.append


CASES = ROOT.parent / "shared" / "conformance" / "cases"
T0 = parse_time("2026-01-01T00:00:00Z")


def keypad(n: int) -> tuple[Engine, list, SimulatedTimeProvider]:
    prog = compile_file(CASES / "keypad-ambiguous" / "program.es").require()
    clock = SimulatedTimeProvider(T0)
    eng = Engine(prog, sink(), clock)
    eng.start()
    rnd = random.Random(7)
    events = [("Key", rnd.randrange(10)) for _ in range(n)]
    return eng, events, clock


def big_trades(n: int, keys: int = 10_000) -> tuple[Engine, list, SimulatedTimeProvider]:
    prog = compile_file(CASES / "three-big-trades-pipeline" / "stage2.es").require()
    clock = SimulatedTimeProvider(T0)
    eng = Engine(prog, sink(), clock)
    rnd = random.Random(11)
    traders = [(f"T{k % 2000}", f"C{k // 2000}") for k in range(keys)]
    events = []
    # One event per key per "round"; a round spans 10 simulated minutes.
    step = 600_000_000 // keys
    t = T0
    for i in range(n):
        trader, company = traders[i % keys]
        t += step
        events.append((t, ("FilteredTrade", [trader, company, 10_000.0 + rnd.random() * 5000.0, t])))
    return eng, events, clock


def sliding(n: int) -> tuple[Engine, list, SimulatedTimeProvider]:
    prog = compile_file(CASES / "sliding-window-average" / "program.es").require()
    clock = SimulatedTimeProvider(T0)
    eng = Engine(prog, sink(), clock)
    eng.start()
    eng.feed("SetWindowSize", 100)
    rnd = random.Random(3)
    events = [("Raw", rnd.random() * 100.0) for _ in range(n)]
    return eng, events, clock


def run_untimed(eng: Engine, events: list) -> float:
    feed = eng.feed
    t = time.perf_counter()
    for name, value in events:
        feed(name, value)
    return time.perf_counter() - t


def run_timed(eng: Engine, events: list, clock: SimulatedTimeProvider) -> float:
    feed = eng.feed
    advance = clock.advance_to
    t = time.perf_counter()
    for ts, (name, value) in events:
        advance(ts)
        feed(name, value)
    return time.perf_counter() - t


def blow_up_source(k: int) -> str:
    return f"in {{}} A, {{}} B\nout {{}} Z\n.* A() .{{{k}}} {{ !>Z({{}}); }}\n"


def ring_buffer(events: list, k: int) -> int:
    """The peer: emit whenever the event k back was an A, with a ring of the last k events."""
    ring = [False] * k
    i = count = 0
    for name, _ in events:
        if ring[i]:
            count += 1
        ring[i] = name == "A"
        i = i + 1 if i < k - 1 else 0
    return count


#: (label, k, force lazy, lazy mode); mode "dfa": the eager DFA, None: the ring-buffer loop.
BLOW_UP = [
    ("k=10 eager DFA", 10, False, "dfa"),
    ("k=10 lazy DFA (cache holds it)", 10, True, "auto"),
    ("k=12 lazy DFA (cache holds it)", 12, True, "auto"),
    *((f"k={k} lazy DFA (auto)", k, False, "auto") for k in (15, 20, 25, 80)),
    *((f"k={k} fallback forced", k, False, "simulate") for k in (15, 20, 25)),
    *((f"k={k} ring-buffer loop (peer)", k, False, None) for k in (10, 20)),
]


def blow_up(n: int, repeat: int) -> None:
    rnd = random.Random(1)
    events = [("A" if rnd.random() < 0.5 else "B", {}) for _ in range(n)]
    programs = {(k, lazy): compile_source(blow_up_source(k), force_lazy=lazy).require()
                for _, k, lazy, mode in BLOW_UP if mode is not None}
    print(f"\nblow-up .* A() .{{k}} {{ !>Z({{}}); }}: {n:,} random A/B events, interleaved, best of {repeat} "
          f"(load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    best: dict[str, tuple[float, float, str]] = {}
    for _ in range(repeat):
        for label, k, lazy, mode in BLOW_UP:
            if mode is None:
                t, c = time.perf_counter(), time.process_time()
                emitted = ring_buffer(events, k)
                wall, cpu = time.perf_counter() - t, time.process_time() - c
                kind = "loop"
            else:
                prog = programs[(k, lazy)]
                counter = itertools.count()
                eng = Engine(prog, lambda e, c=counter: next(c), SimulatedTimeProvider(T0),
                             lazy_mode=None if mode == "dfa" else mode)
                eng.start()
                feed = eng.feed
                t, c = time.perf_counter(), time.process_time()
                for name, value in events:
                    feed(name, value)
                wall, cpu = time.perf_counter() - t, time.process_time() - c
                emitted = next(counter)
                cache = eng.lazy_cache
                kind = "DFA" if cache is None else ("cache" if cache.enabled else "simulation")
                want = ring_buffer(events, k)
                if emitted != want:
                    raise SystemExit(f"{label}: {emitted} matches, the ring buffer finds {want}")
            if label not in best or wall < best[label][0]:
                best[label] = (wall, cpu, kind)
    for label, (wall, cpu, kind) in best.items():
        print(f"  {label:38s} {n / wall:12,.0f} events/s   wall {wall:6.3f} s  cpu {cpu:6.3f} s  "
              f"(ends on: {kind})")
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only")
    ap.add_argument("--default-gc", action="store_true", help="do not apply the hosts' GC tuning")
    args = ap.parse_args()
    if not args.default_gc:
        configure_gc()
    print(f"engine throughput, one core, best of {args.repeat} runs of {args.events:,} events "
          f"({'default' if args.default_gc else 'host-tuned'} GC)")
    benches = {
        "keypad (ungrouped, case clause)": (keypad, False, 1_000_000),
        "big-trades stage 2 (10,000 keys, timers)": (big_trades, True, 500_000),
        "sliding average (N=100)": (sliding, False, None),
    }
    for name, (make, timed, target) in benches.items():
        if args.only and args.only not in name:
            continue
        if args.only == "blow-up":
            break
        best = float("inf")
        for _ in range(args.repeat):
            eng, events, clock = make(args.events)
            dt = run_timed(eng, events, clock) if timed else run_untimed(eng, events)
            best = min(best, dt)
        rate = args.events / best
        goal = f"  (target {target:,}/s: {'met' if rate >= target else 'NOT met'})" if target else ""
        print(f"{name:45s} {rate:12,.0f} events/s{goal}")
    if not args.only or args.only in "blow-up":
        blow_up(args.events, args.repeat)


if __name__ == "__main__":
    main()
