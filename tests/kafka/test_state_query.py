"""One key's state answered from a task's committed store (state/query.py), without a broker.

A real ``Task`` with a real RocksDB store is fed and committed as the worker does
(test_task_recovery.py's helpers); the answer must be the committed state of that key only, in
program terms (the markers waited for with line:col, variables, pending timer), agree with what
the tester's explanation says of the same key after the same records, and never run ahead of
the commit.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import orjson
import pytest
from test_task_recovery import T0, Record, _commit, _feed, _task

from eventscript.automata.compile import compile_source
from eventscript.engine.timeutil import format_time
from eventscript.explain.terms import ProgramTerms
from eventscript.state.query import BadKey, answer_from_store, parse_key, read_committed, store_key

DOORS = """
in {string k; long n;} Opened group(Opened.k), {string k; long n;} Closed group(Closed.k)
out {string k; long opened;} LeftOpen

{ opened = 0; }
( Opened(o) { opened = opened + 1; }
  ( Closed()
  | elapse[5 minutes]() { !>LeftOpen({k: group[0], opened: opened}); } Closed()
  )
)*
"""

COUNTER = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count;} Count
{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count}); } )*
"""

ONCE = """
in {string k; long n;} Tick
out {long n;} First
Tick(t) { !>First({n: t.n}); }
"""

PAIR_KEY = """
in {string site; long room; long n;} Tick group(Tick.site, Tick.room)
out {string site; long count;} Count
{ count = 0; }
( Tick(t) { count = count + 1; } )*
"""


def _doors_task(tmp: Path):
    from eventscript.kafka.config import InputConfig, ProgramConfig
    from eventscript.kafka.task import Task

    cfg = ProgramConfig(
        name="doors",
        source="d.es",
        clock="record",
        inputs=[InputConfig(topic="opened", event="Opened"), InputConfig(topic="closed", event="Closed")],
        outputs={"default": "out"},
        errors="err",
    )
    task = Task(0, compile_source(DOORS, name="doors").require(), cfg, cfg.inputs, "d-rep", "d-changelog", 1, tmp)
    task.load_from_store()
    return task


def _rec(topic: str, offset: int, ms: int, key: str, n: int) -> Record:
    return Record(offset, ms, key, n, topic=topic)


def test_an_open_door_waits_for_closed_or_its_timer(tmp_path: Path) -> None:
    task = _doors_task(tmp_path / "t")
    terms = ProgramTerms(task.program)
    _feed(
        task,
        [
            _rec("opened", 0, T0, "front", 1),
            _rec("opened", 1, T0 + 1000, "back", 2),
            _rec("closed", 0, T0 + 2000, "back", 3),
        ],
    )
    _commit(task)
    front = answer_from_store(terms, task.store, ("front",), 0).to_json()
    assert front["status"] == "present" and front["key"] == ["front"]
    inst = front["instance"]
    waiting = [(m["text"], m["line"], m["col"]) for m in inst["waiting"]]
    lines = DOORS.splitlines()
    for text, line, col in waiting:  # each marker is where the answer says it is
        assert lines[line - 1][col - 1 :].startswith(text.split("[")[0].rstrip("()")), (text, line, col)
    # (both Closed() markers read one symbol: a DFA state cannot tell them apart, explain/terms.py)
    assert {w[0] for w in waiting} == {"Closed()", "elapse[5 minutes]"}
    assert inst["variables"] == [
        {"name": "opened", "type": "long", "value": 1},
        {"name": "o", "type": "{string k; long n;}", "value": {"k": "front", "n": 1}},
    ]
    timer = inst["timer"]
    assert timer["deadline"] == format_time((T0 + 5 * 60_000) * 1000)
    assert timer["marker"]["text"] == "elapse[5 minutes]" and "counted from when" in timer["how"]
    assert inst["origin"] == "opened:0:0"  # the record that created the instance
    assert front["committed"]["position"] == {"opened:0": 2, "closed:0": 1}
    assert front["last_record"] == {"known": True, "record": "opened:0:0", "time": format_time(T0 * 1000)}
    assert front["ended"] is None
    back = answer_from_store(terms, task.store, ("back",), 0).to_json()
    assert back["instance"]["timer"] is None and [m["text"] for m in back["instance"]["waiting"]] == ["Opened(o)"]
    assert back["instance"]["variables"][0]["value"] == 1 and back["instance"]["variables"][1]["value"]["n"] == 2
    assert answer_from_store(terms, task.store, ("nobody",), 0).status == "absent"


def test_the_answer_is_the_committed_state_not_the_batch_in_flight(tmp_path: Path) -> None:
    task = _task(tmp_path / "t", program=COUNTER)
    terms = ProgramTerms(task.program)
    _feed(task, [Record(i, T0 + i, "a", i) for i in range(3)])
    _commit(task)
    _feed(task, [Record(i, T0 + i, "a", i) for i in range(3, 7)])  # processed, not committed
    answer = answer_from_store(terms, task.store, ("a",), 0)
    assert answer.instance is not None and answer.instance["variables"][0]["value"] == 3
    assert answer.committed["position"] == {"in:0": 3}
    assert answer.instance["origin"] is None and "without timers" in answer.instance["origin_why"]
    _commit(task)
    answer = answer_from_store(terms, task.store, ("a",), 0)
    assert answer.instance is not None and answer.instance["variables"][0]["value"] == 7
    assert answer.committed["position"] == {"in:0": 7}


def test_reads_during_commits_are_never_torn(tmp_path: Path) -> None:
    """Key a's count equals the committed offset at every read while commits go on (each record
    counts one): the instance and the position come from one snapshot of the store."""
    task = _task(tmp_path / "t", program=COUNTER)
    terms = ProgramTerms(task.program)
    _feed(task, [Record(0, T0, "a", 0)])
    _commit(task)
    stop = threading.Event()
    seen: list[tuple[int, int]] = []
    failures: list[BaseException] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                a = answer_from_store(terms, task.store, ("a",), 0)
                assert a.instance is not None
                seen.append((a.instance["variables"][0]["value"], a.committed["position"]["in:0"]))
        except BaseException as exc:  # reported by the test's thread
            failures.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(1, 100):
            _feed(task, [Record(i, T0 + i, "a", i)])
            _commit(task)
            before = len(seen)
            deadline = time.monotonic() + 10
            while len(seen) == before and not failures and time.monotonic() < deadline:
                time.sleep(0.0005)  # let the reader in between commits too
    finally:
        stop.set()
        t.join()
    assert not failures, failures
    assert seen and all(count == offset for count, offset in seen)
    assert len({c for c, _ in seen}) > 1  # the reads did see commits go by


def test_an_ungrouped_instance_that_ended_says_so(tmp_path: Path) -> None:
    task = _task(tmp_path / "t", program=ONCE)
    terms = ProgramTerms(task.program)
    _feed(task, [Record(0, T0, "a", 5)])
    _commit(task)
    answer = answer_from_store(terms, task.store, None, 0).to_json()
    assert answer["status"] == "ended" and answer["instance"]["waiting"] == []
    assert answer["instance"]["origin"] == "start"  # an ungrouped program's instance starts with it


def test_the_answer_agrees_with_the_testers_explanation(tmp_path: Path) -> None:
    """The same records through ``eventscript test --explain``'s recorder give the same instance."""
    from eventscript.explain.instance import explain_instance
    from eventscript.language.source import SourceFile
    from eventscript.tester.recording import record_pipeline
    from eventscript.tester.trace import parse_trace

    task = _doors_task(tmp_path / "t")
    _feed(
        task,
        [
            _rec("opened", 0, T0, "front", 1),
            _rec("closed", 0, T0 + 1000, "front", 1),
            _rec("opened", 1, T0 + 2000, "front", 2),
        ],
    )
    _commit(task)
    trace = (
        '[2026-01-01 00:00:00] Opened({k: "front", n: 1}) [00:00:01] Closed({k: "front", n: 1}) '
        '[00:00:02] Opened({k: "front", n: 2})'
    )
    recording = record_pipeline([task.program], parse_trace(SourceFile("<t>", trace)))
    [view] = recording.recorder.live(0)
    terms = ProgramTerms(task.program)
    expected = explain_instance(terms, view)
    got = answer_from_store(terms, task.store, ("front",), 0).instance
    assert got is not None
    assert {k: got[k] for k in expected} == expected


def test_keys_as_people_type_them() -> None:
    counter = compile_source(COUNTER, name="c").require()
    assert parse_key(counter, "front") == ("front",)
    assert parse_key(counter, '["front"]') == ("front",)
    assert parse_key(counter, "42") == ("42",)  # a string key: the text as it is
    assert store_key(counter, ("front",)) == b'["front"]'
    pair = compile_source(PAIR_KEY, name="p").require()
    assert parse_key(pair, '["lab", 3]') == ("lab", 3)
    with pytest.raises(BadKey, match="2 components"):
        parse_key(pair, "lab")
    with pytest.raises(BadKey, match="expected a long"):
        parse_key(pair, '["lab", "three"]')
    with pytest.raises(BadKey, match="give a key"):
        parse_key(counter, None)
    once = compile_source(ONCE, name="o").require()
    with pytest.raises(BadKey, match="not grouped"):
        parse_key(once, "a")
    assert parse_key(once, None) is None


def test_the_store_key_is_the_tasks(tmp_path: Path) -> None:
    """The key the query looks up is the one the task wrote (one string, and two components)."""
    task = _task(tmp_path / "t", program=COUNTER)
    _feed(task, [Record(0, T0, 'we"ird\\', 0)])
    changes = _commit(task)
    assert store_key(task.program, ('we"ird\\',)) in changes
    assert read_committed(task.store, store_key(task.program, ('we"ird\\',))).snapshot is not None
    assert orjson.loads(store_key(task.program, ('we"ird\\',))) == ['we"ird\\']


def test_a_store_never_written_reads_as_empty(tmp_path: Path) -> None:
    task = _task(tmp_path / "t", program=COUNTER)
    read = read_committed(task.store, b'["a"]')
    assert read.snapshot is None and read.position is None
    assert not (tmp_path / "t").exists()  # the read did not create the store


def test_another_thread_never_opens_a_store(tmp_path: Path) -> None:
    """A reader on another thread than the task's reads a store only once its owner opened it
    (two opens of one RocksDB directory race for its lock; the loser could be the worker)."""
    from eventscript.state.query import StoreNotOpen
    from eventscript.state.store import TaskStore

    task = _task(tmp_path / "t", program=COUNTER)
    _feed(task, [Record(0, T0, "a", 0)])
    _commit(task)
    task.close()
    store = TaskStore(tmp_path / "t")  # on disk, not opened
    with pytest.raises(StoreNotOpen):
        read_committed(store, b'["a"]', other_thread=True)
    assert store.opened is None
    assert read_committed(store, b'["a"]').snapshot is not None  # the owner's thread may open it
    assert read_committed(store, b'["a"]', other_thread=True).snapshot is not None
    store.close()
