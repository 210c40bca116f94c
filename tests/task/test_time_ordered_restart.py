"""A task restarted from a commit takes nothing twice from a partition several upstream tasks
write (issue 21). Such a partition is read in record-time order (``Task._forward_in_time_order``),
not offset order: a record of 08:00 at offset 1 goes before one of 08:05 at offset 0 that waits
for the writers' markers, so the position stays at offset 0 while offset 1 is already in the
state. A restart from that commit reads offset 1 again; the task must skip it (``copies.py``,
``done_before``), or its key counts it twice."""

from __future__ import annotations

from pathlib import Path

import orjson

from eventscript.automata.compile import compile_source
from eventscript.task.progress import IDLE, marker_headers
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig
from eventscript.topology.progress import ProgressPlan

from .task_helpers import T0, PlainRecord, build_task, program_config

COUNT = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""

PLAN = ProgressPlan(
    program="p", tasks=2, writers={"mid": frozenset({"w/0", "w/1"})}, marked=frozenset({"mid"}), repartition=True
)


def own_keys(task: Task) -> list[str]:
    """Keys that ``task`` runs itself (none of them re-published)."""
    return [k for i in range(40) if task.routing.place(task.routing.route_key((k := f"k{i}",))) == task.partition]


def task_at(store: Path) -> Task:
    cfg = program_config([InputConfig(topic="mid", event="Hit")])
    task = build_task(compile_source(COUNT, name="p").require(), cfg, store, tasks=2, repartition="p-rep")
    task.load_from_store()
    task.set_progress(PLAN)
    return task


def hit(offset: int, seconds: int, key: str) -> PlainRecord:
    return PlainRecord("mid", 0, offset, T0 + seconds * 1000, orjson.dumps([key]), orjson.dumps({"k": key}))


def marker(topic: str, offset: int, writer: str, progress: int) -> PlainRecord:
    program, _, task = writer.partition("/")
    return PlainRecord(topic, 0, offset, T0, None, None, marker_headers(program, int(task), progress))


def counts(task: Task) -> list[tuple[str, int]]:
    return [(v["k"], v["n"]) for v in (orjson.loads(r.value) for r in task.take_outputs() if r.topic == "out")]


def test_a_restart_from_a_commit_takes_no_record_of_a_time_ordered_partition_twice(tmp_path: Path) -> None:
    task = task_at(tmp_path / "store")
    late, early = own_keys(task)[:2]
    log = [
        hit(0, 300, late),  # w/0's, ahead of w/1
        hit(1, 10, early),  # w/1's
        marker("mid", 2, "w/0", T0 + 400_000),
        marker("mid", 3, "w/1", T0 + 50_000),
    ]
    task.add(marker("p-rep", 0, "p/1", IDLE))
    for rec in log:
        task.add(rec)
    task.process(0)
    assert counts(task) == [(early, 1)]
    assert task.position["mid:0"] == 0  # (offset 0 waits for w/1's progress)
    task.store.write(task.changelog_records(), 1, dict(task.position))  # the commit
    task.close()

    again = task_at(tmp_path / "store")  # restarted from the commit: its inputs read from it again
    again.add(marker("p-rep", 0, "p/1", IDLE))
    for rec in [*log, marker("mid", 4, "w/1", T0 + 400_000)]:
        again.add(rec)
    again.process(0)
    assert counts(again) == [(late, 1)]


def test_a_single_task_reader_restarted_from_a_commit_takes_nothing_twice_either(tmp_path: Path) -> None:
    """One task (nothing re-published): the same per-key merge, the same position."""
    cfg = program_config([InputConfig(topic="mid", event="Hit")])
    plan = ProgressPlan(program="p", tasks=1, writers={"mid": frozenset({"w/0", "w/1"})}, marked=frozenset({"mid"}))

    def single(store: Path) -> Task:
        task = build_task(compile_source(COUNT, name="p").require(), cfg, store)
        task.load_from_store()
        task.set_progress(plan)
        return task

    log = [
        hit(0, 300, "a"),
        hit(1, 10, "b"),
        marker("mid", 2, "w/0", T0 + 400_000),
        marker("mid", 3, "w/1", T0 + 50_000),
    ]
    task = single(tmp_path / "store")
    for rec in log:
        task.add(rec)
    task.process(0)
    assert counts(task) == [("b", 1)]
    assert task.position["mid:0"] == 0
    task.store.write(task.changelog_records(), 1, dict(task.position))
    task.close()

    again = single(tmp_path / "store")
    for rec in [*log, marker("mid", 4, "w/1", T0 + 400_000)]:
        again.add(rec)
    again.process(0)
    assert counts(again) == [("a", 1)]
