"""What a repeat of a batch holds when a task merges several inputs (issue 20, fault 11).

A batch processed again (at-least-once after a failed commit, a zombie and the task's new owner)
gives each output the id of its cause and rank (task/ids.py). Its bytes are the first copy's only
if the task merges its inputs in the same order; with ``max_task_idle_ms: 0`` the merge takes what
has been fetched, so the order, and with it the values, can differ under the same ids
(docs/worker.md, "Failures and recovery"). These tests pin both sides of that statement.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from eventscript.automata.compile import compile_source
from eventscript.task import codec
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig

from .task_helpers import T0, PlainRecord, build_task, program_config

COUNT = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""


def make_task(store: Path) -> Task:
    """A task reading the same event from two topics, "a" and "b"."""
    cfg = program_config([InputConfig(topic="a", event="Hit"), InputConfig(topic="b", event="Hit")])
    task = build_task(compile_source(COUNT, name="p").require(), cfg, store)
    task.load_from_store()
    return task


def hit(topic: str, ts: int) -> PlainRecord:
    return PlainRecord(topic, 0, 0, ts, orjson.dumps(["k"]), orjson.dumps({"k": "k"}))


def outputs_by_id(task: Task) -> dict[bytes, bytes | None]:
    """The task's outputs since last taken, by their ``es-id``."""
    out = {}
    for r in task.take_outputs():
        if r.topic == "out":
            out[codec.header(r.headers, codec.HEADER_ID)] = r.value
    return out


def run_fetched_together(task: Task, idle_ms: int) -> dict[bytes, bytes | None]:
    """Both records fetched before the merge: processed in timestamp order (b's first)."""
    at_the_end(task, "p-rep")
    task.add(hit("a", T0 + 2))
    task.add(hit("b", T0 + 1))
    at_the_end(task, "a", "b")
    task.process(idle_ms)
    return outputs_by_id(task)


def at_the_end(task: Task, *topics: str) -> None:
    """The fetch reached the end of these inputs' partitions (the worker's end-of-partition signal)."""
    for topic in topics:
        task.mark_eof(topic, 0)


def rewind(task: Task) -> None:
    task.rewind()
    task.resume()
    at_the_end(task, "p-rep")  # nothing is re-published


def test_with_no_idle_wait_a_repeat_can_differ_in_bytes_under_the_same_ids(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    first = run_fetched_together(task, 0)
    rewind(task)  # the commit failed: the same records again, fetched in another order
    task.add(hit("a", T0 + 2))
    task.process(0)  # b's record not fetched yet: a's is merged alone
    task.add(hit("b", T0 + 1))
    task.process(0)  # b's comes late, processed at the current time
    again = outputs_by_id(task)
    task.close()
    assert set(again) == set(first) and len(first) == 2  # the same ids ...
    differ = {i for i in first if first[i] != again[i]}
    assert differ == set(first)  # ... with other counts: n 1 and 2 swap between the two records
    assert sorted(orjson.loads(v)["n"] for v in first.values()) == [1, 2]


def test_a_repeat_merged_with_every_input_buffered_is_byte_identical(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    first = run_fetched_together(task, 60_000)
    rewind(task)
    task.add(hit("a", T0 + 2))
    assert task.process(60_000) == 0  # waits for b (not at its end) instead of merging a alone
    task.add(hit("b", T0 + 1))
    at_the_end(task, "a", "b")
    task.process(60_000)
    again = outputs_by_id(task)
    task.close()
    assert again == first and len(first) == 2
