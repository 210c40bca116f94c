"""A run of one partition's records through ``Task._process_run`` (the common case inline, a
run's lookups made once) sends what ``_process_one`` record by record sends: the same outputs,
``$error`` records, re-published records, changelog records and positions, byte for byte and in
order (issue 26: the determinism contract holds on the fast path).

Records are drawn with every kind the run hands back to ``_process_one``: ticks, values that are
not JSON or not the event's type, no value, no key, keys another task runs, timestamps past year
9999, and late records; and with the headers the run reads itself: ``eventscript produce``'s
(``es-seq``), another program's outputs' (``es-event``, ``es-program``, ``es-id``, ``es-seq``, an
``es-time``), a producer's own beside them, and ones a reader could get wrong (an ``es-seq`` that
is no number or has no value, two of a name, an empty ``es-id``, a tick after an ``es-seq``). The
programs emit on each record and on timers (record time: timers fire as records move the clock,
so ids start again mid-run), and end or retire instances."""

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
from eventscript.task.record import Record
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
        else:
            headers = writer_headers(rnd, kind, offset)
        out.append(PlainRecord("in", 0, offset, at, record_key, value, headers))
    return out


def writer_headers(rnd: random.Random, kind: float, offset: int) -> codec.Headers | None:
    """The headers of a record's writer, for ``kind`` in [0.17, 1) (see the module docstring)."""
    seq = b"%d" % offset
    upstream = b"up/src:%d:%d/1" % (rnd.randrange(2), rnd.randrange(40))  # (repeats: a record again)
    if kind < 0.27:
        return [(codec.HEADER_SEQ, seq)]  # eventscript produce
    if kind < 0.37:
        program = [(codec.HEADER_EVENT, b"Tick"), (codec.HEADER_PROGRAM, b"up"), (codec.HEADER_ID, upstream)]
        if rnd.random() < 0.3:
            program.append((codec.HEADER_TIME, b"%d" % (offset * 1000 + 7)))
        return [*program, (codec.HEADER_SEQ, seq)]  # another program's output
    if kind < 0.40:
        return [("trace", b"abc"), (codec.HEADER_SEQ, seq), ("ce_type", b"Other")]
    if kind < 0.42:
        return [(codec.HEADER_SEQ, rnd.choice([b"x1", b"", b"-3", b"1e3"]))]  # not a sequence number
    if kind < 0.43:
        return [(codec.HEADER_SEQ, None)]
    if kind < 0.45:
        return [(codec.HEADER_SEQ, seq), (codec.HEADER_ID, upstream), (codec.HEADER_SEQ, b"0"), (codec.HEADER_ID, b"x")]
    if kind < 0.46:
        return [(codec.HEADER_ID, b""), (codec.HEADER_SEQ, seq)]
    if kind < 0.47:
        return [(codec.HEADER_SEQ, seq), (codec.HEADER_TICK, b"1")]
    return None


def same_wall(headers: Any) -> Any:
    """The headers with the wall-clock time an instance's tombstone notes (``state.keyinfo``) made
    one: the only part of a record that depends on when it was made."""
    if not headers:
        return headers
    return [(k, v if v is None else re.sub(rb'"wall":\d+', b'"wall":0', v)) for k, v in headers]


def run(
    source: str,
    records: list[PlainRecord],
    store: Path,
    per_record: bool,
    polls: list[int],
    inp: InputConfig | None = None,
) -> list[Any]:
    """Everything task 0 of ``TASKS`` sends for ``records``, fed in polls of the given sizes with a
    commit after each: outputs, errors, re-published and changelog records, then the positions.
    ``inp``: the input (default: topic "in" of Tick events)."""
    cfg = program_config([inp or InputConfig(topic="in", event="Tick")], "record")
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


#: Two events on one input topic whose records name their event (``event_from``).
NAMED = """
in {string k; long n;} Tick group(Tick.k), {string k; long n;} Tock group(Tock.k)
out {string k; long count; long last;} Count, {string k; long count;} Quiet

{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count, last: t.n}); }
| Tock(t) { count = count + 10; }
)* elapse[30 seconds]() { !>Quiet({k: group[0], count: count}); }
"""


@pytest.mark.parametrize("seed", range(6))
def test_a_run_of_records_that_name_their_event_sends_what_record_by_record_sends(tmp_path: Path, seed: int) -> None:
    """An input with ``event_from: {header: es-event}`` takes the run too (issue 26: before, every
    such record went through ``_process_one``): each record's name, also one the program does not
    declare or none, its key function looked up by that name."""
    rnd = random.Random(seed)
    records = []
    for rec in draw(rnd, 400):
        name = rnd.choice([b"Tick", b"Tick", b"Tock", b"Nope", None])
        headers = [*(rec.headers() or [])]
        if name is not None:
            headers.insert(0, (codec.HEADER_EVENT, name))
        ts, key, value = rec.timestamp()[1], rec.key(), rec.value()
        records.append(PlainRecord("in", 0, rec.offset(), ts, key, value, headers or None))
    polls = [rnd.choice([1, 7, 50, 200]) for _ in range(12)]
    inp = InputConfig(topic="in", event_from={"header": "es-event"})
    want = run(NAMED, records, tmp_path / "one", True, polls, inp)
    taken: list[int] = []
    real = Task._process_one

    def counted(self: Task, ip: Any, msg: Record) -> None:
        taken.append(msg.offset())
        real(self, ip, msg)

    Task._process_one = counted  # type: ignore[method-assign]
    try:
        got = run(NAMED, records, tmp_path / "run", False, polls, inp)
    finally:
        Task._process_one = real  # type: ignore[method-assign]
    assert got == want
    kinds = {r[0] for r in want if isinstance(r, tuple)}
    assert {"out", "err", "p-rep", "p-changelog"} <= kinds  # every path was taken
    # (most keys are other tasks', and a fifth of the names undeclared: those go one by one)
    assert len(records) - len(taken) >= 30, "the named records of the task's own keys did not take the run"


def test_most_keys_belong_to_other_tasks() -> None:
    """(The draw re-publishes: most of its keys are placed on other tasks than 0.)"""
    placed = [partition_of(f"k{i}".encode(), TASKS) for i in range(12)]
    assert 0 < placed.count(0) < len(placed)


def test_the_run_takes_records_with_their_writers_headers_itself(tmp_path: Path) -> None:
    """Records of ``eventscript produce`` and of another program (and with a producer's own
    headers beside) are processed by the run, not handed to ``_process_one``; ticks are."""
    rnd = random.Random(7)
    mine = [k for k in (f"k{i}" for i in range(12)) if partition_of(k.encode(), TASKS) == 0]
    records = []
    for offset in range(300):
        key = rnd.choice(mine)
        kind = rnd.choice([0.2, 0.3, 0.38, 0.41, 0.425, 0.44, 0.455, 0.5])  # (every kind but a tick)
        headers = writer_headers(rnd, kind, offset)
        value = orjson.dumps({"k": key, "n": offset})
        records.append(PlainRecord("in", 0, offset, T0 + offset, key.encode(), value, headers))
    ticks = [PlainRecord("in", 0, 300, T0 + 300, None, b"", [(codec.HEADER_SEQ, b"1"), (codec.HEADER_TICK, b"1")])]
    cfg = program_config([InputConfig(topic="in", event="Tick")], "record")
    task = build_task(compile_source(COUNT_QUIET, name="p").require(), cfg, tmp_path, tasks=TASKS)
    task.load_from_store()
    handed: list[Record] = []
    one = task._process_one

    def process_one(ip: Any, msg: Record) -> None:
        handed.append(msg)
        one(ip, msg)

    task._process_one = process_one  # type: ignore[method-assign]
    for msg in records + ticks:
        task.add(msg)
    assert task.process(0) == len(records) + len(ticks)
    assert handed == ticks
    outputs = [r for r in task.take_outputs() if r.topic == "out"]
    assert len(outputs) == len(records)


@pytest.mark.parametrize("seed", range(20))
def test_a_records_headers_are_read_in_one_pass_as_one_by_one(seed: int) -> None:
    """``codec.cause_headers`` reads what ``codec.header`` reads of each name (the first)."""
    rnd = random.Random(seed)
    names = [codec.HEADER_ID, codec.HEADER_SEQ, codec.HEADER_TICK, codec.HEADER_EVENT, "trace"]
    headers = [(rnd.choice(names), rnd.choice([None, b"", b"1", b"x"])) for _ in range(rnd.randrange(1, 7))]
    tick = codec.header(headers, codec.HEADER_TICK) is not None
    want = (codec.header(headers, codec.HEADER_ID), codec.header(headers, codec.HEADER_SEQ), tick)
    assert codec.cause_headers(headers) == want
