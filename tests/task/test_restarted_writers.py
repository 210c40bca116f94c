"""What a restarted upstream task writes again is taken once, also on a partition one task writes
(issue 21: ``task/repeats.py``).

Under at-least-once a writer task killed before its commit is done again by its next owner, which
writes the lost batch's records again with the same ``es-id``s. On a partition several tasks
write, the reader's per-key queues drop such a repeat (``test_upstream_repeats.py``); a partition
one task writes is read in offset order, and took both copies: the reader's instance counted twice.
The next owner's first markers say it restarted; the reader then drops the repeats it holds. A
copy written after its writer marked progress past it (a zombie's, late) is dropped by its time.
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from eventscript.automata.compile import compile_source
from eventscript.task.codec import HEADER_EVENT, HEADER_ID, header
from eventscript.task.progress import IDLE, marker_headers, read_marker
from eventscript.task.repeats import RESTARTED, restarted
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig, load_topology
from eventscript.topology.progress import ProgressPlan

from .pipeline_log import PipelineRun, with_partitions
from .task_helpers import T0, PlainRecord, build_task, program_config
from .test_event_time import TOPOLOGIES, shown, simulated
from .test_time_ordered_restart import COUNT
from .test_upstream_repeats import kill_when_f2_is_written, states_written, written


def one_writer_task(store: Path, kind: str) -> Task:
    """A reader of "mid", which one upstream task (w/0) writes: alone, or task 0 of two (which
    re-publishes its sibling's keys ahead)."""
    cfg = program_config([InputConfig(topic="mid", event="Hit")])
    tasks = 2 if kind == "forwarding" else 1
    plan = ProgressPlan(
        program="p", tasks=tasks, writers={"mid": frozenset({"w/0"})}, marked=frozenset({"mid"}), repartition=tasks > 1
    )
    task = build_task(compile_source(COUNT, name="p").require(), cfg, store, tasks=tasks, repartition="p-rep")
    task.load_from_store()
    task.set_progress(plan)
    if kind == "forwarding":
        task.add(PlainRecord("p-rep", 0, 0, T0, None, None, marker_headers("p", 1, IDLE)))  # (nothing to re-publish)
    return task


def mark(offset: int, seconds: int, again: bool = False) -> PlainRecord:
    """w/0's marker: everything before ``seconds`` written; ``again``: its first after a restart."""
    headers = marker_headers("w", 0, T0 + seconds * 1000)
    if again:
        headers.append(RESTARTED)
    return PlainRecord("mid", 0, offset, T0, None, None, headers)


def own_key(task: Task) -> str:
    return next(k for i in range(40) if task.routing.place(task.routing.route_key((k := f"k{i}",))) == task.partition)


def counts(task: Task) -> list[int]:
    return [orjson.loads(r.value)["n"] for r in task.take_outputs() if r.topic == "out"]


@pytest.mark.parametrize("repeats_first", [False, True])
@pytest.mark.parametrize("kind", ["single", "forwarding"])
def test_a_batch_written_again_after_a_restart_is_counted_once(kind: str, repeats_first: bool, tmp_path: Path) -> None:
    """The old owner's two records, held (its marker after the commit never came), then the new
    owner's copies of them and a new record; its restart marker before the copies, or after them
    (a timer's outputs may go before its first marker)."""
    task = one_writer_task(tmp_path / "store", kind)
    k = own_key(task)
    copies = [written(3, 10, k, 1), written(4, 20, k, 2), written(5, 30, k, 3)]
    restart_mark = mark(2, 0, again=True)
    log = [
        mark(0, 0),
        written(1, 10, k, 1),
        written(2, 20, k, 2),
        *([*copies, restart_mark] if repeats_first else [restart_mark, *copies]),
        mark(6, 60),
    ]
    for rec in log:
        task.add(rec)
    task.process(0)
    assert counts(task) == [1, 2, 3]  # (before: 1, 2, 3, 4, 5)
    assert task.counts["repeats"] == 2


def test_a_second_restart_takes_no_held_record_for_its_own_repeat(tmp_path: Path) -> None:
    """Two restarts of the writer heard while the same records wait: each is compared with the
    others held, not with itself (the random-kills run lost F1's states so)."""
    task = one_writer_task(tmp_path / "store", "single")
    k = own_key(task)
    log = [written(0, 10, k, 1), written(1, 20, k, 2), mark(2, 0, again=True), mark(3, 0, again=True), mark(4, 60)]
    for rec in log:
        task.add(rec)
    task.process(0)
    assert counts(task) == [1, 2]
    assert task.counts["repeats"] == 0


def test_a_reader_restarted_from_a_commit_still_drops_the_copies_of_what_it_took(tmp_path: Path) -> None:
    """The watch after a writer's restart is kept with the reader's commit: restarted from it, the
    reader reads after its position a copy of a record it took before it (the random-kills run
    of windows-alarm took such copies again, late)."""
    task = one_writer_task(tmp_path / "store", "single")
    k = own_key(task)
    log = [mark(0, 0), written(1, 10, k, 1), written(2, 20, k, 2), mark(3, 0, again=True), written(4, 10, k, 1)]
    for rec in [*log, mark(5, 15)]:
        task.add(rec)
    task.process(0)
    assert counts(task) == [1]  # (the copy at 4 dropped; 2 waits for progress past 20 s)
    assert task.position["mid:0"] == 2
    task.store.write(task.changelog_records(), 1, dict(task.position))  # the commit
    task.close()

    again = one_writer_task(tmp_path / "store", "single")
    for rec in [*log[2:], mark(5, 15), mark(6, 60)]:
        again.add(rec)
    again.process(0)
    assert counts(again) == [2]  # (before: 2, then 3 for the copy at 4, taken late)


def test_a_late_copy_is_dropped_and_a_late_error_is_not(tmp_path: Path) -> None:
    """A copy that lands after its writer marked progress past it (a zombie's write) is no new
    record; an ``$error`` record carries its bad record's own time, which may be that early."""
    task = one_writer_task(tmp_path / "store", "single")
    k = own_key(task)
    error = PlainRecord(
        "mid", 0, 4, T0 + 10_000, orjson.dumps([k]), orjson.dumps({"k": k}), [(HEADER_EVENT, b"$error")]
    )
    for rec in [mark(0, 0), written(1, 10, k, 1), mark(2, 60), written(3, 10, k, 1), error, mark(5, 120)]:
        task.add(rec)
    task.process(0)
    assert counts(task) == [1, 2]  # the original, then the $error record (the copy dropped)
    assert task.counts["repeats"] == 1
    assert task.position["mid:0"] == 5  # (the marker at 5 came with the $error record waiting)


def test_a_restarted_task_says_so_on_its_first_markers_only(tmp_path: Path) -> None:
    task = one_writer_task(tmp_path / "store", "single")
    task.progress_plan = ProgressPlan(program="p", tasks=1, outputs={"out": 2})
    task.write_progress(force=True)
    first = task.take_outputs()
    task.write_progress(force=True)
    later = task.take_outputs()
    task.rewind()
    task.resume()
    task.write_progress(force=True)
    rewound = task.take_outputs()
    assert [restarted(r.headers) for r in first] == [True, True]
    assert [restarted(r.headers) for r in later] == [False, False]
    assert [restarted(r.headers) for r in rewound] == [True, True]


def test_a_debounce_task_on_one_partition_killed_before_its_commit_gives_the_simulated_alerts(tmp_path: Path) -> None:
    """fridge-alerts with its source on one partition: one debounce task writes every partition
    of fridge-states, which alert reads in offset order. The debounce task is killed after it
    wrote F2's first state (Warm) and before its commit, and its next owner writes it again:
    alert gives the simulated records (before: F2's Warm taken twice, an extra ``$error``)."""
    path = TOPOLOGIES / "fridge-alerts" / "topology.yaml"
    topo = with_partitions(load_topology(path), {"temperatures": 1})
    pipeline = PipelineRun(topo, path, tmp_path / "run")
    assert [t.cfg.name for t, _ in pipeline.tasks].count("debounce") == 1
    kill_when_f2_is_written(pipeline, random.Random(7), tmp_path / "run")
    pipeline.run(6)
    assert len(states_written(pipeline, b"F2")) >= 2  # its Warm, twice (and what followed)
    assert sum(t.counts.get("repeats", 0) for t, _ in pipeline.tasks if t.cfg.name == "alert") >= 1
    got = pipeline.results()
    assert {k: shown(v) for k, v in got.items()} == {k: shown(v) for k, v in simulated(path).items()}
    ids = [header(r.headers(), HEADER_ID) for part in pipeline.log.partition_list("fridge-alerts") for r in part]
    assert len(ids) == len(set(ids))


def test_nothing_is_taken_for_a_late_write_while_a_writer_is_idle(tmp_path: Path) -> None:
    """An idle writer's next records may be below the others' progress (its clock may move on
    and fire timers before it marks again): while one is idle, no record is late."""
    cfg = program_config([InputConfig(topic="mid", event="Hit")])
    plan = ProgressPlan(program="p", tasks=1, writers={"mid": frozenset({"w/0", "w/1"})}, marked=frozenset({"mid"}))
    task = build_task(compile_source(COUNT, name="p").require(), cfg, tmp_path / "store")
    task.load_from_store()
    task.set_progress(plan)
    k = own_key(task)
    idle = PlainRecord("mid", 0, 1, T0, None, None, marker_headers("w", 1, IDLE, T0 + 5_000))
    for rec in [mark(0, 60), idle, written(2, 10, k, 1), mark(3, 120)]:
        task.add(rec)
    task.process(0)
    assert counts(task) == [1]
    assert task.counts["repeats"] == 0


def test_a_program_on_one_task_marks_itself_idle_once_its_source_is(tmp_path: Path) -> None:
    """Its repartition partition, which no task writes, held its time back for good: its last
    markers were never ``IDLE``, and a reader waited on its last record time (the one-task
    killed-midway run on Kafka timed out waiting for debounce to go idle)."""
    path = TOPOLOGIES / "fridge-alerts" / "topology.yaml"
    pipeline = PipelineRun(with_partitions(load_topology(path), {"temperatures": 1}), path, tmp_path / "run")
    pipeline.publish(path.parent / "sample.trace")
    pipeline.run(3)
    last = {}
    for part in pipeline.log.partition_list("fridge-states"):
        for rec in part:
            found = read_marker(rec.headers())
            if found is not None:
                last[rec.partition()] = found
    assert last == {p: ("debounce/0", IDLE) for p in range(3)}


def test_a_watch_is_written_again_when_the_position_passes_what_it_holds(tmp_path: Path) -> None:
    """A watch keeps with a commit the ids below the committed position, so a commit after the
    reader took held records writes it again, though no id was added since the last one. (The
    random-kills run of big-trades took two copies again, late, after a restart: the store kept
    the watch of a commit made while the originals waited, when it had taken none of them.)"""
    task = one_writer_task(tmp_path / "store", "single")
    k = own_key(task)
    originals = [mark(0, 0), written(1, 10, k, 1), written(2, 20, k, 2), written(3, 30, k, 3), mark(4, 0, again=True)]
    copies = [written(5, 10, k, 1), written(6, 20, k, 2), mark(7, 25)]  # (the new owner's, as far as 25 s)
    for rec in originals:
        task.add(rec)
    task.process(0)
    assert counts(task) == []  # (held: the restarted writer has marked nothing past them)
    task.store.write(task.changelog_records(), 1, dict(task.position))  # a commit while they wait
    for rec in copies:
        task.add(rec)
    task.process(0)
    assert counts(task) == [1, 2]  # (the copies dropped; 3 waits, and so does the watch)
    assert task.position["mid:0"] == 3
    task.store.write(task.changelog_records(), 2, dict(task.position))  # the commit after them
    task.close()

    again = one_writer_task(tmp_path / "store", "single")
    for rec in [*originals[3:], *copies, mark(8, 60)]:
        again.add(rec)
    again.process(0)
    assert counts(again) == [3]  # (before: 3, 4, 5: the copies taken again, late)


def test_a_watch_that_ended_is_kept_until_the_position_passes_the_marker_that_ended_it(tmp_path: Path) -> None:
    """Once its writers' progress passes every record held at a restart, the copies come late and
    a live reader drops them by their time: the watch ends. A reader restarted from a position
    before the copies reads them again before that progress, so the watch is kept (ended) with
    its commits until the position passes the marker that ended it. (The random-kills run of
    sector-divergence: a forwarding task restarted before a copy whose original it had
    re-published before its commit re-published the copy too.)"""
    task = one_writer_task(tmp_path / "store", "forwarding")
    k = own_key(task)
    log = [
        mark(0, 0),
        written(1, 10, k, 1),
        written(2, 20, k, 2),
        mark(3, 0, again=True),
        written(4, 10, k, 1),  # (the new owner's copies)
        written(5, 20, k, 2),
        mark(6, 25),  # (the watch ends here)
    ]
    other = PlainRecord("p-rep", 0, 1, T0, None, None, marker_headers("p", 1, T0 + 15_000))
    for rec in [other, *log]:
        task.add(rec)
    task.process(0)
    assert counts(task) == [1]  # (the copies dropped; 2 waits for the other task past 20 s)
    assert task.position["mid:0"] == 2
    task.store.write(task.changelog_records(), 1, dict(task.position))
    task.close()

    again = one_writer_task(tmp_path / "store", "forwarding")
    for rec in [other, *log[2:], PlainRecord("p-rep", 0, 2, T0, None, None, marker_headers("p", 1, IDLE))]:
        again.add(rec)
    again.process(0)
    assert counts(again) == [2]  # (before: 2, then 3 for the copy at 4, taken again)
