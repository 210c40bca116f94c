"""A run of one partition's records through ``Task._process_run`` (the common case inline, a
run's lookups made once) sends what ``_process_one`` record by record sends: the same outputs,
``$error`` records, re-published records, changelog records and positions, byte for byte and in
order (issue 26: the determinism contract holds on the fast path).

Records are drawn with every kind the run hands back to ``_process_one``: ticks, values that are
not JSON or not the event's type, no value, no key, headers, keys another task runs, timestamps
past year 9999, and late records; the programs emit on each record and on timers (record time:
timers fire as records move the clock, so ids start again mid-run), and end or retire instances."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from count_programs import COUNT_QUIET
from eventscript.automata.compile import compile_source
from eventscript.kafka.partitioner import partition_of
from eventscript.task import codec
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig

from .task_helpers import T0, PlainRecord, build_task, program_config

TASKS = 3
#: Emits on each record, ends a key at its fifth record (a later one starts it again), and
#: reports a key quiet after 30 s of record time (timers firing inside a run).
ENDING = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count; long last;} Count, {string k; long count;} Quiet

{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count, last: t.n}); } ){5}
| ( Tick(t) { count = count + 1; } )* elapse[30 seconds]() { !>Quiet({k: group[0], count: count}); }
"""

#: Instances that retire (back where a fresh one starts) every second record: one created and
#: retired between two commits leaves nothing to write (``Task._on_terminate``).
PAIRS = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long n;} Pair

( Tick() Tick(t) { !>Pair({k: t.k, n: t.n}); } )*
"""


def draw(rnd: random.Random, n: int) -> list[PlainRecord]:
    """``n`` records of topic "in", partition 0, of every kind (see the module docstring)."""
    keys = [f"k{i}" for i in range(12)]
    out = []
    ts = T0
    for offset in range(n):
        ts += rnd.choice([0, 1, 500, 5_000, 40_000])
        at = ts - 60_000 if rnd.random() < 0.05 else ts  # a late record now and then
        key = rnd.choice(keys)
        value: bytes | None = orjson.dumps({"k": key, "n": offset})
        record_key: bytes | None = key.encode()
        headers = None
        kind = rnd.random()
        if kind < 0.03:
            value = b"{not json"
        elif kind < 0.06:
            value = orjson.dumps({"k": 5, "n": "x"})
        elif kind < 0.08:
            value = None
        elif kind < 0.10:
            record_key = None
        elif kind < 0.13:
            headers = [(codec.HEADER_TICK, b"1")]
        elif kind < 0.16:
            headers = [("trace", b"abc")]
        elif kind < 0.17:
            at = 1 << 62  # past year 9999
        out.append(PlainRecord("in", 0, offset, at, record_key, value, headers))
    return out


def same_wall(headers: Any) -> Any:
    """The headers with the wall-clock time an instance's tombstone notes (``state.keyinfo``) made
    one: the only part of a record that depends on when it was made."""
    return [(k, re.sub(rb'"wall":\d+', b'"wall":0', v)) for k, v in headers] if headers else headers


def run(source: str, records: list[PlainRecord], store: Path, per_record: bool, polls: list[int]) -> list[Any]:
    """Everything task 0 of ``TASKS`` sends for ``records``, fed in polls of the given sizes with a
    commit after each: outputs, errors, re-published and changelog records, then the positions."""
    cfg = program_config([InputConfig(topic="in", event="Tick")], "record")
    task: Task = build_task(compile_source(source, name="p").require(), cfg, store, tasks=TASKS)
    if per_record:
        task._process_run = None  # type: ignore[assignment,method-assign]  # Task.process: record by record
    task.load_from_store()
    sent: list[Any] = []
    i = 0
    for size in polls:
        for msg in records[i : i + size]:
            task.add(msg)
        i += size
        task.process(0)
        task.changelog_records()
        sent += [(r.topic, r.partition, r.key, r.value, same_wall(r.headers), r.timestamp) for r in task.take_outputs()]
        sent.append(dict(task.position))
    task.close()
    return sent


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("source", [COUNT_QUIET, ENDING, PAIRS], ids=["count-quiet", "ending", "pairs"])
def test_a_run_sends_what_record_by_record_sends(tmp_path: Path, source: str, seed: int) -> None:
    rnd = random.Random(seed)
    records = draw(rnd, 400)
    polls = []
    left = len(records)
    while left:
        polls.append(min(left, rnd.choice([1, 7, 50, 200])))
        left -= polls[-1]
    want = run(source, records, tmp_path / "one", True, polls)
    got = run(source, records, tmp_path / "run", False, polls)
    assert got == want
    kinds = {r[0] for r in want if isinstance(r, tuple)}
    assert {"out", "err", "p-rep", "p-changelog"} <= kinds  # every path was taken


def test_most_keys_belong_to_other_tasks() -> None:
    """(The draw re-publishes: most of its keys are placed on other tasks than 0.)"""
    placed = [partition_of(f"k{i}".encode(), TASKS) for i in range(12)]
    assert 0 < placed.count(0) < len(placed)
