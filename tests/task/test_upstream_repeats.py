"""A record another program wrote twice is taken once (issue 21, the killed-midway fridge-alerts
run under at-least-once: an extra ``$error`` for F2).

Under at-least-once a writer task killed before its commit is done again by its next owner, from
its last commit: the records of the lost batch are written a second time, with the same
``es-id``s, at later offsets. A stage downstream that took both copies fed its instance twice
(alert's F2 took its Warm twice, which its automaton refuses: UNEXPECTED_EVENT). The writer marks
its progress only once a batch is committed (``kafka/checkpoint.py``), so the reader releases
neither copy before the repeat is queued beside its original; there, a record whose ``es-id`` is
queued under its key is dropped (``streams.WriterStreams``), and noted as done, so that a restart
from a commit drops it too (``copies.py``)."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from eventscript.automata.compile import compile_source
from eventscript.task.codec import HEADER_ID, header
from eventscript.task.progress import IDLE
from eventscript.task.streams import WriterStreams
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig, load_topology
from eventscript.topology.progress import ProgressPlan

from .pipeline_log import PipelineRun
from .task_helpers import T0, PlainRecord, build_task, program_config
from .test_event_time import TOPOLOGIES, shown, simulated
from .test_event_time import run as run_in_memory
from .test_time_ordered_restart import COUNT, marker, task_at


def written(offset: int, seconds: int, key: str, cause: int) -> PlainRecord:
    """A Hit of ``key`` that writer w wrote on partition 0 of "mid", named by its ``cause``."""
    headers = [(HEADER_ID, f"w/src:0:{cause}/1".encode())]
    return PlainRecord("mid", 0, offset, T0 + seconds * 1000, orjson.dumps([key]), orjson.dumps({"k": key}), headers)


def single_task(store: Path) -> Task:
    """A one-task reader of "mid" (nothing re-published), which two upstream tasks write."""
    cfg = program_config([InputConfig(topic="mid", event="Hit")])
    plan = ProgressPlan(program="p", tasks=1, writers={"mid": frozenset({"w/0", "w/1"})}, marked=frozenset({"mid"}))
    task = build_task(compile_source(COUNT, name="p").require(), cfg, store)
    task.load_from_store()
    task.set_progress(plan)
    return task


def reader(kind: str, store: Path) -> Task:
    """Task 0 of a two-task reader (which re-publishes its sibling's keys ahead), or a one-task one."""
    task = task_at(store) if kind == "forwarding" else single_task(store)
    if kind == "forwarding":
        task.add(marker("p-rep", 0, "p/1", IDLE))  # (its sibling has nothing to re-publish)
    return task


def keys_of(task: Task, partition: int) -> list[str]:
    place = task.routing.place
    return [k for i in range(40) if place(task.routing.route_key((k := f"k{i}",))) == partition]


def outputs(task: Task) -> list[tuple[str, str]]:
    """(topic, key) of each record the task kept: its counts and the copies it re-published."""
    return [(r.topic, orjson.loads(r.value)["k"]) for r in task.take_outputs() if r.value is not None]


#: Writer w/0's Hit of k at 10 s (cause 1), a record of w/1's at 300 s that waits for w/0, then
#: k's Hit again: w/0's next owner did its batch again (the same id); then both writers' markers
#: past 10 s, written after the commit that holds the repeat.
def history(k: str, other: str) -> list[PlainRecord]:
    return [
        written(0, 10, k, 1),
        written(1, 300, other, 2),
        marker("mid", 2, "w/0", T0),  # (the next owner's first marker: its clock at the last commit)
        written(3, 10, k, 1),
        marker("mid", 4, "w/0", T0 + 60_000),
        marker("mid", 5, "w/1", T0 + 60_000),
    ]


@pytest.mark.parametrize("kind", ["forwarding", "single"])
def test_a_record_written_again_by_its_writers_next_owner_is_counted_once(kind: str, tmp_path: Path) -> None:
    task = reader(kind, tmp_path / "store")
    k, other = keys_of(task, 0)[:2]
    for rec in history(k, other):
        task.add(rec)
    task.process(0)
    assert outputs(task) == [("out", k)]  # one count of k (two before: the repeat counted again)
    assert task.position["mid:0"] == 1  # (``other`` waits for w/0's progress)


def test_a_repeat_of_another_tasks_record_is_re_published_once(tmp_path: Path) -> None:
    task = reader("forwarding", tmp_path / "store")
    k, other = keys_of(task, 1)[0], keys_of(task, 0)[0]
    for rec in history(k, other):
        task.add(rec)
    task.process(0)
    assert outputs(task) == [("p-rep", k)]


@pytest.mark.parametrize("kind", ["forwarding", "single"])
def test_a_restart_from_a_commit_drops_the_repeat_without_its_original(kind: str, tmp_path: Path) -> None:
    """The commit's position stays before the record still waiting (offset 1): a restart reads
    the repeat again (offset 3) but not its original (offset 0), so only the note that it was
    done with tells it apart."""
    task = reader(kind, tmp_path / "store")
    k, other = keys_of(task, 0)[:2]
    log = history(k, other)
    for rec in log:
        task.add(rec)
    task.process(0)
    assert outputs(task) == [("out", k)]
    task.store.write(task.changelog_records(), 1, dict(task.position))  # the commit
    task.close()

    again = reader(kind, tmp_path / "store")
    more = [marker("mid", 6, "w/0", T0 + 400_000), marker("mid", 7, "w/1", T0 + 400_000)]
    for rec in [*log[task.position["mid:0"] :], *more]:
        again.add(rec)
    again.process(0)
    assert outputs(again) == [("out", other)]


def test_the_queues_drop_only_a_repeat_of_a_record_still_queued_under_its_key() -> None:
    streams = WriterStreams()
    assert streams.append(written(0, 10, "a", 1))
    assert streams.append(written(1, 10, "b", 1))  # another key: not a repeat, whatever its id
    assert streams.append(written(2, 20, "a", 2))
    assert not streams.append(written(3, 10, "a", 1))
    assert streams.take_repeats() == [3] and streams.take_repeats() == []
    assert [streams.pop().offset() for _ in range(3)] == [0, 1, 2]
    assert streams.append(written(4, 10, "a", 1))  # its original is gone: a checkpoint's writer never does this


def commit(task: Task, markers: bool = True) -> None:
    """An at-least-once worker's commit: the records re-published ahead in the batch, the state
    in the store at the input position, then the markers (``Checkpoint.commit_if_due``; not
    ``markers``: the caller wrote them, in an exactly-once transaction)."""
    task.forward_fetched()
    store_state(task)
    if markers:
        task.write_progress(forward=False)
    task.wants_commit = False


def store_state(task: Task) -> None:
    """The commit's middle step: the task's state in its store at its input position."""
    task.send_changelog = lambda *record: None  # (the state goes to the store only)
    # (the offsets committed before for partitions it has processed nothing of since: a
    # consumer group keeps them, as ``Checkpoint.positions`` does)
    task.store.write(task.changelog_records(), None, {**(task.store.position or {}), **task.position})


def restart(pipeline: PipelineRun, i: int, stores: Path) -> None:
    """Task ``i`` killed and taken on from its last commit (its store, its committed position)."""
    old, _ = pipeline.tasks[i]
    old.close()
    cfg, p = old.cfg, old.partition
    task = build_task(
        old.program,
        cfg,
        stores / f"{cfg.name}-{p}",
        partition=p,
        tasks=old.partitions,
        repartition=old.repartition_topic,
        changelog=old.changelog_topic,
    )
    task.load_from_store()
    task.attach(pipeline.log.send)
    assert old.progress_plan is not None
    task.set_progress(old.progress_plan, commit_markers_first=True)  # (as the Kafka host: `Task.process`)
    committed = task.store.position or {}
    pipeline.tasks[i] = (task, {ip.topic: committed.get(ip.name, 0) for ip in task.inputs})


def states_written(pipeline: PipelineRun, key: bytes) -> list[bytes | None]:
    """The es-ids of the records of ``key`` on fridge-states."""
    parts = pipeline.log.partition_list("fridge-states")
    return [header(r.headers(), HEADER_ID) for part in parts for r in part if r.key() == key]


def kill_when_f2_is_written(pipeline: PipelineRun, rng: random.Random, stores: Path) -> None:
    """fridge-alerts' sample trace published, random turns of its tasks, each committing now and
    then as an at-least-once worker does, until one writes F2's first state: that task is killed
    before its commit and taken on from its last commit."""
    pipeline.publish(TOPOLOGIES / "fridge-alerts" / "sample.trace")
    for _ in range(10_000):
        i = rng.randrange(len(pipeline.tasks))
        task, cursors = pipeline.tasks[i]
        pipeline.step(task, cursors, rng, mark=False)
        if states_written(pipeline, b"F2"):
            restart(pipeline, i, stores)
            return
        if rng.random() < 0.3:
            commit(task)
    raise AssertionError("F2's state was never written")


def test_a_debounce_task_killed_before_its_commit_gives_the_simulated_alerts(tmp_path: Path) -> None:
    """The fridge-alerts pipeline in memory, its tasks committing as an at-least-once worker does
    (markers after the commit): the debounce task that writes F2's first state (Warm) is killed
    before it commits it and taken on from its last commit, and writes it again. Alert gives the
    simulated records with the in-memory run's ids (before: an extra $error, F2's Warm taken
    twice, as in the killed-midway run on Kafka)."""
    path = TOPOLOGIES / "fridge-alerts" / "topology.yaml"
    pipeline = PipelineRun(load_topology(path), path, tmp_path / "run")
    kill_when_f2_is_written(pipeline, random.Random(5), tmp_path / "run")
    pipeline.run(6)  # (no more kills: its markers need no commit)
    assert len(states_written(pipeline, b"F2")) == 2  # its Warm, twice
    got = pipeline.results()
    assert {k: shown(v) for k, v in got.items()} == {k: shown(v) for k, v in simulated(path).items()}
    reference = run_in_memory(path, None, 1, tmp_path / "reference").results()
    assert {k: [x["es-id"] for x in v] for k, v in got.items()} == {
        k: [x["es-id"] for x in v] for k, v in reference.items()
    }
