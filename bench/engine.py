"""In-process engine throughput on one core, events pre-built (issue: the engine).

Programs are read from the conformance suite beside the checkout (../shared/conformance/cases):

- keypad:       keypad-ambiguous (ungrouped, case clause), random keys 0-9
- big-trades:   stage 2 of three-big-trades-pipeline, grouped by (trader, company), 10,000 keys in
                random order, one trade per key every ~10 minutes of simulated time on average, so expiration timers are
                set on every event and fire as time passes
- sliding-avg:  sliding-window-average with N = 100
- blow-up:      ``.* A() .{k} { !>Z({}); }`` over random A/B events (issue 11): k = 10 on the eager
                DFA; k = 10 and 12 on the lazy DFA whose transition cache holds them; k = 15, 20,
                25, 80 on the lazy DFA (its cache thrashes and it falls back to simulating every step)
                and with the fallback forced on from the first event; beside them the peer, a
                hand-written ring-buffer loop. The runs are interleaved (one round runs every
                case once), match counts are checked against the loop, and wall and CPU seconds
                and the load average are printed, since the machine may be shared.

- grouped:      per-key ``A B+ C`` (issue 11 item 2) beside a hand-written dict-of-states loop doing
                the same job (emitting a record per match; match counts checked): "abc" emits the key
                (no variables; the loop keeps one int per key), "count" also counts the Bs (one
                variable; the loop keeps a [state, n] list per key). Keys in uniformly random order
                and Zipf-distributed (s = 1.1), 1k/10k/100k/1M keys (--keys), interleaved rounds,
                wall and CPU seconds; then snapshots/s and restores/s of the engine's instances, and
                bytes per key (RSS delta and tracemalloc, each in a fresh process, --memory-keys).
                ``--batch [N]`` adds a row per input timing ``Engine.feed_many`` over batches of N
                events (default: all in one call) beside the per-event ``feed`` and the loop, all
                three in each round, in an order that rotates; best and median wall, median CPU.
- realistic:    per-symbol ``Large Up+ Down`` as users write it (issue 26): structure events, a case
                clause classifying them, group(Trade.sym), marker variables and an emit of a structure,
                ``.* - ( .* Large(a) Up()+ Down(d) { !>Match({...}); } )``, on 10,000 keys
                (--realistic-keys) in random and Zipf order, fed per event and by ``feed_many``
                beside a hand-written dict-of-states loop (the same Match values, checked untimed
                first; match counts checked on every run); interleaved rounds, wall and CPU seconds.
                ``--ablate`` adds the program with one feature taken away at a time (REALISTIC);
                ``--contexts`` the engine of contexts the Kafka worker holds (``track_dirty``), also
                with ``Engine.creates_late`` ("late").

Usage: python bench/engine.py [--events N] [--repeat R] [--only NAME] [--default-gc] [--keys K,K,...]
       [--memory-keys N] [--batch [N]] [--realistic-keys K] [--ablate] [--contexts]
Prints events/s (best of R runs) for each. By default the process is set up as the hosts set
it up (engine.tuning.configure_gc); --default-gc measures with CPython's default collector.
"""

from __future__ import annotations

import argparse
import collections
import gc
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    for _ in range(n):
        trader, company = traders[rnd.randrange(keys)]
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
    programs = {
        (k, lazy): compile_source(blow_up_source(k), force_lazy=lazy).require()
        for _, k, lazy, mode in BLOW_UP
        if mode is not None
    }
    print(
        f"\nblow-up .* A() .{{k}} {{ !>Z({{}}); }}: {n:,} random A/B events, interleaved, best of {repeat} "
        f"(load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )
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
                eng = Engine(
                    prog,
                    lambda e, c=counter: next(c),
                    SimulatedTimeProvider(T0),
                    lazy_mode=None if mode == "dfa" else mode,
                )
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
        print(f"  {label:38s} {n / wall:12,.0f} events/s   wall {wall:6.3f} s  cpu {cpu:6.3f} s  (ends on: {kind})")
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


# -- grouped programs beside a hand-written dict-of-states loop (issue 11 items 2 and 4) -------

#: Per-key ``A B+ C``: "abc" emits the key at each match (no variables); "count" also counts the
#: Bs of the match in a variable. The events of one run are ("A" | "B" | "C", key).
GROUPED = {
    "abc": "in string A group(A), string B group(B), string C group(C)\nout string Z\n"
    "( .* A() B()+ C() { !>Z(group[0]); } )*\n",
    "count": "in string A group(A), string B group(B), string C group(C)\nout {string key; long n;} Z\n"
    "( .* A() { n = 0; } ( B() { n = n + 1; } )+ C() { !>Z({key: group[0], n: n}); } )*\n",
}


def loop_abc(events: list, out: Callable[[Any], None]) -> dict:
    """The peer of "abc": one int per key (0 start, 1 after A, 2 after A B+)."""
    states: dict[str, int] = {}
    get = states.get
    for name, key in events:
        s = get(key, 0)
        if name == "A":
            states[key] = 1
        elif name == "B":
            states[key] = 2 if s else 0
        else:
            if s == 2:
                out(("Z", key, key))
            states[key] = 0
    return states


def loop_count(events: list, out: Callable[[Any], None]) -> dict:
    """The peer of "count": a two-item list [state, n] per key, as a hand-written job keeps."""
    states: dict[str, list] = {}
    get = states.get
    for name, key in events:
        st = get(key)
        if st is None:
            st = states[key] = [0, 0]
        if name == "A":
            st[0] = 1
            st[1] = 0
        elif name == "B":
            if st[0]:
                st[0] = 2
                st[1] += 1
            else:
                st[0] = 0
        else:
            if st[0] == 2:
                out(("Z", [key, st[1]], key))
            st[0] = 0
    return states


LOOPS = {"abc": loop_abc, "count": loop_count}


def grouped_events(n: int, keys: int, order: str, seed: int = 5) -> list[tuple[str, str]]:
    """n events over ``keys`` keys: uniformly random keys, or Zipf-distributed (s = 1.1) ones
    whose ranks are shuffled over the keys. Names: A 30%, B 40%, C 30%."""
    rnd = random.Random(seed)
    names = rnd.choices(("A", "B", "C"), weights=(3, 4, 3), k=n)
    pool = [f"user-{i:07d}" for i in range(keys)]
    if order == "random":
        picked = [pool[rnd.randrange(keys)] for _ in range(n)]
    else:
        rnd.shuffle(pool)
        cum = list(itertools.accumulate(1.0 / (r**ZIPF_S) for r in range(1, keys + 1)))
        picked = rnd.choices(pool, cum_weights=cum, k=n)
    return list(zip(names, picked))


ZIPF_S = 1.1


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def grouped_engine(kind: str) -> tuple[Engine, list]:
    prog = compile_source(GROUPED[kind], name=kind).require()
    got: list = []
    counter = collections.deque(maxlen=1)

    def consumer(e: Any) -> None:
        counter.append(e)
        got.append(1)

    return Engine(prog, consumer, SimulatedTimeProvider(T0)), got


def run_grouped_engine(kind: str, events: list) -> tuple[float, float, int, Engine]:
    eng, got = grouped_engine(kind)
    feed = eng.feed
    t, c = time.perf_counter(), time.process_time()
    for name, key in events:
        feed(name, key)
    return time.perf_counter() - t, time.process_time() - c, len(got), eng


def run_grouped_batched(kind: str, batches: list[list]) -> tuple[float, float, int, Engine]:
    """``run_grouped_engine`` with ``Engine.feed_many``, one call per batch (cut before timing)."""
    eng, got = grouped_engine(kind)
    feed_many = eng.feed_many
    t, c = time.perf_counter(), time.process_time()
    for batch in batches:
        feed_many(batch)
    return time.perf_counter() - t, time.process_time() - c, len(got), eng


def run_grouped_loop(kind: str, events: list) -> tuple[float, float, int]:
    got: list = []
    counter = collections.deque(maxlen=1)

    def out(rec: Any) -> None:
        counter.append(rec)
        got.append(1)

    loop = LOOPS[kind]
    t, c = time.perf_counter(), time.process_time()
    loop(events, out)
    return time.perf_counter() - t, time.process_time() - c, len(got)


def memory_probe(who: str, kind: str, keys: int) -> None:
    """Bytes per key held by the engine's instances or the loop's states, one event (an A) per
    key: by RSS delta in this fresh process and by tracemalloc in a second pass. Prints JSON."""
    events = [("A", f"user-{i:07d}") for i in range(keys)]
    result = {}
    for how in ("rss", "tracemalloc"):
        if how == "tracemalloc":
            tracemalloc.start()
        gc.collect()
        before = rss_bytes() if how == "rss" else tracemalloc.get_traced_memory()[0]
        if who == "engine":
            eng, _ = grouped_engine(kind)
            feed = eng.feed
            for name, key in events:
                feed(name, key)
            held: Any = eng
        else:
            held = LOOPS[kind](events, lambda rec: None)
        gc.collect()
        after = rss_bytes() if how == "rss" else tracemalloc.get_traced_memory()[0]
        result[how] = (after - before) / keys
        del held
        if how == "tracemalloc":
            tracemalloc.stop()
    print(json.dumps(result))


def bytes_per_key(who: str, kind: str, keys: int) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--memory-probe", f"{who}:{kind}:{keys}"]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def snapshot_rates(eng: Engine) -> tuple[float, float, int]:
    """Snapshots/s over every instance of ``eng``, then restores/s of them into a fresh engine."""
    contexts = list(eng.contexts.values())
    snapshot = eng.snapshot
    t = time.perf_counter()
    snaps = [snapshot(ctx) for ctx in contexts]
    snap_s = time.perf_counter() - t
    fresh = Engine(eng.compiled, lambda e: None, SimulatedTimeProvider(T0))
    restore = fresh.restore
    t = time.perf_counter()
    for data in snaps:
        restore(data)
    restore_s = time.perf_counter() - t
    if fresh.instance_count != len(contexts):
        raise SystemExit(f"restored {fresh.instance_count} instances of {len(contexts)}")
    return len(snaps) / snap_s, len(snaps) / restore_s, sum(map(len, snaps)) // max(1, len(snaps))


def grouped(n: int, repeat: int, key_counts: list[int], memory_keys: int, batch: int | None = None) -> None:
    """The grouped programs beside the loop, per event (``feed``) and, with ``batch``, also by
    ``feed_many`` over batches of that many events (0: all in one call); one round runs the
    engine(s) and the loop once per input, in an order that rotates between rounds."""
    how = "" if batch is None else f", feed_many batches of {batch or n:,} events"
    print(
        f"\ngrouped A B+ C beside a dict-of-states loop: {n:,} events, interleaved rounds, best and median of "
        f"{repeat}{how} (load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )
    inputs = {(keys, order): grouped_events(n, keys, order) for keys in key_counts for order in ("random", "zipf")}
    runs: dict[tuple, list[tuple[float, float]]] = collections.defaultdict(list)
    snaps: dict[tuple, tuple[float, float, int]] = {}
    whos = ["feed", "loop"] if batch is None else ["feed", "feed_many", "loop"]
    for r in range(repeat):
        for (keys, order), events in inputs.items():
            size = batch or n
            batches = [events[i : i + size] for i in range(0, n, size)] if batch is not None else []
            for kind in GROUPED:
                counts = {}
                for who in whos[r % len(whos) :] + whos[: r % len(whos)]:
                    if who == "loop":
                        w, c, counts[who] = run_grouped_loop(kind, events)
                    elif who == "feed_many":
                        w, c, counts[who], _ = run_grouped_batched(kind, batches)
                    else:
                        w, c, counts[who], eng = run_grouped_engine(kind, events)
                        rates = snapshot_rates(eng)
                        snaps[(kind, keys, order)] = max(snaps.get((kind, keys, order), rates), rates)
                        del eng
                    runs[(kind, keys, order, who)].append((w, c))
                if len(set(counts.values())) != 1:
                    raise SystemExit(f"{kind}, {keys} keys {order}: match counts differ: {counts}")
    print(
        f"  {'program':6s} {'keys':>9s} {'order':6s} {'engine':9s} {'ev/s best':>11s} {'ev/s med':>11s} "
        f"{'cpu s med':>9s} {'loop ev/s med':>13s} {'cpu s med':>9s} {'ratio best':>10s} {'med':>5s} {'(cpu med)':>9s} "
        f"{'snapshots/s':>12s} {'restores/s':>11s} {'bytes':>6s}"
    )
    for keys, order in inputs:
        for kind in GROUPED:
            loop = runs[(kind, keys, order, "loop")]
            lw, lc = statistics.median(w for w, _ in loop), statistics.median(c for _, c in loop)
            lbest = min(w for w, _ in loop)
            sr, rr, size = snaps[(kind, keys, order)]
            for who in whos[:-1]:
                mine = runs[(kind, keys, order, who)]
                ew, ec = statistics.median(w for w, _ in mine), statistics.median(c for _, c in mine)
                ebest = min(w for w, _ in mine)
                print(
                    f"  {kind:6s} {keys:9,d} {order:6s} {who:9s} {n / ebest:11,.0f} {n / ew:11,.0f} {ec:9.3f} "
                    f"{n / lw:13,.0f} {lc:9.3f} {lbest / ebest:10.2f} {lw / ew:5.2f} {lc / ec:9.2f} "
                    f"{sr:12,.0f} {rr:11,.0f} {size:6d}"
                )
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if memory_keys:
        print(f"\nbytes per key, {memory_keys:,} keys (one A each), each measured in a fresh process:")
        for kind in GROUPED:
            eng_m, loop_m = bytes_per_key("engine", kind, memory_keys), bytes_per_key("loop", kind, memory_keys)
            print(
                f"  {kind:6s} engine: RSS {eng_m['rss']:6.0f}  tracemalloc {eng_m['tracemalloc']:6.0f}   "
                f"loop: RSS {loop_m['rss']:6.0f}  tracemalloc {loop_m['tracemalloc']:6.0f}   "
                f"ratio (RSS) {eng_m['rss'] / loop_m['rss']:.2f}"
            )


# -- a realistic grouped program beside a hand-written loop (issue 26) ---------------------------

#: Per-symbol ``Large Up+ Down`` written as users write it: structure events, a case clause
#: classifying them, a key expression, marker variables and an emit of a structure. The
#: ablations (``--only realistic --ablate``) take one feature away at a time, on the same keys
#: and with the same matches, to show what each costs.
REALISTIC = {
    "full": """in {string sym; double price; long vol;} Trade group(Trade.sym)
  case { Trade.vol > 900 ? Large : Trade.price > 50.0 ? Up : Down }
out {string sym; long vol; double price;} Match
.* - ( .* Large(a) Up()+ Down(d) { !>Match({sym: a.sym, vol: a.vol, price: d.price}); } )
""",
    # the emit builds no structure: one field of one marker variable
    "emit a field": """in {string sym; double price; long vol;} Trade group(Trade.sym)
  case { Trade.vol > 900 ? Large : Trade.price > 50.0 ? Up : Down }
out string Match
.* - ( .* Large(a) Up()+ Down() { !>Match(a.sym); } )
""",
    # no marker variables: the emit reads the group key
    "no markers": """in {string sym; double price; long vol;} Trade group(Trade.sym)
  case { Trade.vol > 900 ? Large : Trade.price > 50.0 ? Up : Down }
out string Match
.* - ( .* Large() Up()+ Down() { !>Match(group[0]); } )
""",
    # no case clause: three structure inputs, classified before the run (untimed)
    "no case": """in {string sym; double price; long vol;} Large group(Large.sym),
   {string sym; double price; long vol;} Up group(Up.sym),
   {string sym; double price; long vol;} Down group(Down.sym)
out string Match
.* - ( .* Large() Up()+ Down() { !>Match(group[0]); } )
""",
    # no structure: name-only string events keyed by their value (the grouped "abc" shape)
    "no structure": """in string Large group(Large), string Up group(Up), string Down group(Down)
out string Match
.* - ( .* Large() Up()+ Down() { !>Match(group[0]); } )
""",
}


def classify(value: list) -> str:
    """The case clause of REALISTIC["full"], for the ablations that take it away."""
    return "Large" if value[2] > 900 else "Up" if value[1] > 50.0 else "Down"


def realistic_events(n: int, keys: int, order: str, seed: int = 13) -> list[tuple[str, list]]:
    """n ``Trade`` events over ``keys`` symbols (uniformly random or Zipf order, as
    ``grouped_events``), as the engine holds a structure (a list in declared field order:
    sym, price, vol); volume uniform in 1..1000 (10% Large), price uniform in 0..100."""
    rnd = random.Random(seed)
    pool = [f"SYM{i:06d}" for i in range(keys)]
    if order == "random":
        picked = [pool[rnd.randrange(keys)] for _ in range(n)]
    else:
        rnd.shuffle(pool)
        cum = list(itertools.accumulate(1.0 / (r**ZIPF_S) for r in range(1, keys + 1)))
        picked = rnd.choices(pool, cum_weights=cum, k=n)
    return [("Trade", [sym, round(rnd.random() * 100.0, 2), rnd.randint(1, 1000)]) for sym in picked]


def ablated_events(variant: str, events: list) -> list:
    """The same events as the ablation ``variant`` takes them (classified, or names only)."""
    if variant == "no case":
        return [(classify(v), v) for _, v in events]
    if variant == "no structure":
        return [(classify(v), v[0]) for _, v in events]
    return events


def loop_realistic(events: list, out: Callable[[Any], None]) -> dict:
    """The peer: a dict of [state, Large event] per symbol, the case clause as an if chain, the
    same Match structure (a list: sym, vol, price) emitted with its key."""
    states: dict[str, list] = {}
    get = states.get
    for _name, v in events:
        sym = v[0]
        st = get(sym)
        if st is None:
            st = states[sym] = [0, None]
        if v[2] > 900:
            st[0] = 1
            st[1] = v
        elif v[1] > 50.0:
            st[0] = 2 if st[0] else 0
        else:
            if st[0] == 2:
                a = st[1]
                out(("Match", [a[0], a[2], v[1]], (sym,)))
            st[0] = 0
    return states


def realistic_engine(variant: str = "full", track_dirty: bool = False) -> tuple[Engine, list]:
    """The engine of a REALISTIC program; ``track_dirty``: with a context per key, changed
    instances tracked, as the Kafka worker holds it (a compact engine otherwise)."""
    prog = compile_source(REALISTIC[variant], name="realistic").require()
    got: list = []
    counter = collections.deque(maxlen=1)

    def consumer(e: Any) -> None:
        counter.append(e)
        got.append(1)

    return Engine(prog, consumer, SimulatedTimeProvider(T0), track_dirty=track_dirty), got


def check_realistic(events: list) -> int:
    """Untimed: the engine's Match values and keys equal the loop's, in order; returns the count."""
    prog = compile_source(REALISTIC["full"], name="realistic").require()
    mine: list = []
    eng = Engine(prog, lambda e: mine.append(("Match", e.value, e.key)), SimulatedTimeProvider(T0))
    eng.feed_many(events)
    theirs: list = []
    loop_realistic(events, theirs.append)
    if mine != theirs:
        diff = next(
            i for i, (a, b) in enumerate(zip(mine + [None] * len(theirs), theirs + [None] * len(mine))) if a != b
        )
        raise SystemExit(
            f"realistic: the engine emits {len(mine)} matches, the loop {len(theirs)}; first difference at match {diff}"
        )
    return len(mine)


def timed(fn: Callable[[], int]) -> tuple[float, float, int]:
    gc.collect()  # every contender starts with no garbage left by the one before
    t, c = time.perf_counter(), time.process_time()
    got = fn()
    return time.perf_counter() - t, time.process_time() - c, got


def run_realistic(who: str, events: list, batch: int, variant: str = "full") -> tuple[float, float, int]:
    """Wall, CPU seconds and matches of one contender over ``events`` (batches cut untimed)."""
    if who == "loop":
        got: list = []
        counter = collections.deque(maxlen=1)

        def out(rec: Any) -> None:
            counter.append(rec)
            got.append(1)

        w, c, _ = timed(lambda: len(loop_realistic(events, out)))
        return w, c, len(got)
    eng, hits = realistic_engine(variant, track_dirty="contexts" in who)
    eng.creates_late = who.startswith("late")
    if who.endswith("feed_many"):
        batches = [events[i : i + batch] for i in range(0, len(events), batch)]
        feed_many = eng.feed_many

        def go() -> int:
            for b in batches:
                feed_many(b)
            return 0
    else:
        feed = eng.feed

        def go() -> int:
            for name, value in events:
                feed(name, value)
            return 0

    w, c, _ = timed(go)
    return w, c, len(hits)


def realistic(n: int, repeat: int, keys: int, batch: int | None, ablate: bool, contexts: bool = False) -> None:
    """The realistic program fed per event (``feed``) and by ``feed_many``, beside the loop, on
    random and Zipf key orders; one round runs each contender once per input, in a rotating
    order. With ``ablate``, also the ablations of REALISTIC fed per event; with ``contexts``,
    also the engine of contexts the worker holds (``track_dirty``; its changed set is not drained),
    and ("late") the same with ``Engine.creates_late``."""
    size = batch or n
    print(
        f"\nrealistic program (structure events, case clause, group(Trade.sym), marker variables, emit of a "
        f"structure) beside a dict-of-states loop: {n:,} events, {keys:,} keys, interleaved rounds, best and "
        f"median of {repeat}, feed_many in batches of {size:,} (load average before: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )
    inputs = {order: realistic_events(n, keys, order) for order in ("random", "zipf")}
    matches = {order: check_realistic(events) for order, events in inputs.items()}
    if ablate:
        variants = {order: {v: ablated_events(v, events) for v in REALISTIC} for order, events in inputs.items()}
    # The pre-built inputs live through the whole run, as a host's do not: out of the cyclic
    # collector's sight, so that its full collections, which would walk every event list, land
    # on no contender by chance.
    gc.collect()
    gc.freeze()
    whos = ["feed", "feed_many", "loop"] + (
        ["contexts feed", "contexts feed_many", "late contexts feed_many"] if contexts else []
    )
    if ablate:
        whos += [f"feed: {v}" for v in REALISTIC if v != "full"]
    runs: dict[tuple[str, str], list[tuple[float, float]]] = collections.defaultdict(list)
    for r in range(repeat):
        for order, events in inputs.items():
            for who in whos[r % len(whos) :] + whos[: r % len(whos)]:
                if who.startswith("feed: "):
                    variant = who[6:]
                    w, c, got = run_realistic("feed", variants[order][variant], size, variant)
                else:
                    w, c, got = run_realistic(who, events, size)
                if got != matches[order]:
                    raise SystemExit(f"realistic {order}, {who}: {got:,} matches, the loop {matches[order]:,}")
                runs[(order, who)].append((w, c))
    print(
        f"  {'order':6s} {'contender':22s} {'matches':>8s} {'ev/s best':>11s} {'ev/CPU-s best':>13s} "
        f"{'cpu s best':>10s} {'cpu s med':>9s} {'x loop (CPU best)':>17s} {'(CPU med)':>9s} {'(wall best)':>11s}"
    )
    for order in inputs:
        loop = runs[(order, "loop")]
        lbest = min(w for w, _ in loop)
        lcpu, lcmed = min(c for _, c in loop), statistics.median(c for _, c in loop)
        for who in whos:
            mine = runs[(order, who)]
            best, cbest, cmed = min(w for w, _ in mine), min(c for _, c in mine), statistics.median(c for _, c in mine)
            print(
                f"  {order:6s} {who:22s} {matches[order]:8,d} {n / best:11,.0f} {n / cbest:13,.0f} "
                f"{cbest:10.3f} {cmed:9.3f} {lcpu / cbest:17.2f} {lcmed / cmed:9.2f} {lbest / best:11.2f}"
            )
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only")
    ap.add_argument("--default-gc", action="store_true", help="do not apply the hosts' GC tuning")
    ap.add_argument(
        "--keys", default="1000,10000,100000,1000000", help="key counts of the grouped comparison (comma-separated)"
    )
    ap.add_argument(
        "--memory-keys", type=int, default=1_000_000, help="keys of the bytes-per-key measurement (0: skip it)"
    )
    ap.add_argument(
        "--batch",
        type=int,
        nargs="?",
        const=0,
        help="grouped: also time Engine.feed_many over batches of this many events (none: all in one)",
    )
    ap.add_argument("--realistic-keys", type=int, default=10_000, help="keys of the realistic program")
    ap.add_argument(
        "--ablate", action="store_true", help="realistic: also time the program with one feature taken away at a time"
    )
    ap.add_argument(
        "--contexts",
        action="store_true",
        help="realistic: also time the engine of contexts (track_dirty, as the worker)",
    )
    ap.add_argument("--memory-probe", help=argparse.SUPPRESS)  # engine|loop:kind:keys, in a child process
    args = ap.parse_args()
    if args.memory_probe:
        who, kind, keys = args.memory_probe.split(":")
        memory_probe(who, kind, int(keys))
        return
    if not args.default_gc:
        configure_gc()
    print(
        f"engine throughput, one core, best of {args.repeat} runs of {args.events:,} events "
        f"({'default' if args.default_gc else 'host-tuned'} GC)"
    )
    benches = {
        "keypad (ungrouped, case clause)": (keypad, False, 1_000_000),
        "big-trades stage 2 (10,000 keys, timers)": (big_trades, True, 500_000),
        "sliding average (N=100)": (sliding, False, None),
    }
    for name, (make, timed, target) in benches.items():
        if args.only and args.only not in name:
            continue
        if args.only in ("blow-up", "grouped", "realistic"):
            break
        best = float("inf")
        for _ in range(args.repeat):
            eng, events, clock = make(args.events)
            dt = run_timed(eng, events, clock) if timed else run_untimed(eng, events)
            best = min(best, dt)
        rate = args.events / best
        goal = f"  (target {target:,}/s: {'met' if rate >= target else 'NOT met'})" if target else ""
        print(f"{name:45s} {rate:12,.0f} events/s{goal}")
    if not args.only or args.only in "grouped":
        grouped(args.events, args.repeat, [int(k) for k in args.keys.split(",")], args.memory_keys, args.batch)
    if not args.only or args.only in "realistic":
        realistic(args.events, args.repeat, args.realistic_keys, args.batch, args.ablate, args.contexts)
    if not args.only or args.only in "blow-up":
        blow_up(args.events, args.repeat)


if __name__ == "__main__":
    main()
