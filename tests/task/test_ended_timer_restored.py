"""A timer of an instance that ended since the last commit does not come back from the store
(``TimerIndex.out_of_date``).

A task restored from its store holds its instances there, with an index of their pending timers,
and loads an instance when an event or a due timer needs it. An instance loaded by an event that
ends it is gone from memory; when time passes its stored timer's deadline before the next commit
(which writes its tombstone), the index found it not in memory and loaded the committed snapshot
again: an instance that had ended fired its timer (the random-kills run of fridge-alerts: a fridge
Cold again before its 10 minutes still gave TooWarm).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from eventscript.automata.compile import compile_source
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig

from .task_helpers import T0, PlainRecord, build_task, program_config

WATCH = """
in {string k;} Warm group(Warm.k),
   {string k;} Cold group(Cold.k)
out {string k;} TooWarm
( Warm() ( Cold() | elapse[10 minutes]() { !>TooWarm({k: group[0]}); } Cold() ) )*
"""


def task_at(store: Path) -> Task:
    cfg = program_config([InputConfig(topic="warm", event="Warm"), InputConfig(topic="cold", event="Cold")])
    task = build_task(compile_source(WATCH, name="p").require(), cfg, store)
    task.load_from_store()
    return task


def record(topic: str, offset: int, minutes: int, key: str) -> PlainRecord:
    return PlainRecord(topic, 0, offset, T0 + minutes * 60_000, orjson.dumps([key]), orjson.dumps({"k": key}))


def run(task: Task, records: list[PlainRecord]) -> list[str]:
    for rec in records:
        task.add(rec)
        task.process(0)
        task.fire_timers()
    return [orjson.loads(r.value)["k"] for r in task.take_outputs() if r.topic == "out"]


def test_an_instance_ended_after_a_restore_fires_no_timer_from_the_store(tmp_path: Path) -> None:
    task = task_at(tmp_path / "store")
    assert run(task, [record("warm", 0, 0, "a")]) == []  # a's timer: 10 minutes on
    task.store.write(task.changelog_records(), 1, dict(task.position))  # the commit
    task.close()

    again = task_at(tmp_path / "store")  # a is in the store, its timer in the index
    later = [record("cold", 0, 5, "a"), record("warm", 1, 20, "b"), record("cold", 1, 40, "b")]
    assert run(again, later) == ["b"]  # (before: ["a", "b"], a's stored timer fired at 10)
