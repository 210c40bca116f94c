"""A gated partition that only one upstream task writes (``ProgressPlan.placed``,
``keyed.writes_own_partition``): read in offset order, its watermark its own writer's progress
while that writer is not idle, every writer's when it is (issue 21: the markers' cost)."""

from __future__ import annotations

from pathlib import Path

from eventscript.automata.compile import compile_source
from eventscript.kafka.config import load_topology
from eventscript.kafka.supervisor import compile_programs
from eventscript.task.progress import IDLE, InputProgress, marker_headers
from eventscript.topology.config import InputConfig
from eventscript.topology.progress import ProgressPlan, progress_plan, topology_partitions

from .task_helpers import PlainRecord, build_task, program_config

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"

COUNT = """
in {string k;} Hit group(Hit.k)
out {string k; long n;} Count
{ n = 0; }
( Hit() { n = n + 1; !>Count({k: group[0], n: n}); } )*
"""


def plans(name: str) -> dict[str, ProgressPlan]:
    topo = load_topology(TOPOLOGIES / name / "topology.yaml")
    programs = {n: c.program for n, c in compile_programs(topo, list(topo.programs)).items()}
    return {c.name: progress_plan(topo, c, topology_partitions(topo), programs) for c in topo.programs}


def test_a_topic_each_writer_task_writes_its_own_partition_of_is_placed() -> None:
    alert = plans("fridge-alerts")["alert"]  # (debounce, grouped by fridge, 3 tasks, 3 partitions)
    assert alert.placed == {"fridge-states"} and len(alert.writers["fridge-states"]) == 3
    assert alert.owners_of("fridge-states", 1) == {"debounce/1"}
    # sensors: sensor-events has 4 partitions, its writer 3 tasks; big-trades: an ungrouped writer
    # (its outputs placed by their ids); sector-divergence: the reader re-publishes (not placed there)
    assert not plans("sensors")["site-alarm"].placed
    assert not plans("big-trades")["three-big-trades"].placed
    assert not plans("sector-divergence")["sector-breakout"].placed


def record(offset: int, key: str, ts: int) -> PlainRecord:
    headers = [("es-event", b"Hit"), ("es-id", b"up/src:0:%d/1" % offset), ("es-seq", b"%d" % offset)]
    return PlainRecord("mid", 0, offset, ts, b'"%s"' % key.encode(), b'{"k": "%s"}' % key.encode(), headers)


def marker(offset: int, writer: int, progress: int) -> PlainRecord:
    return PlainRecord("mid", 0, offset, progress, None, None, marker_headers("up", writer, progress))


def test_a_placed_partition_follows_its_own_writer_in_offset_order(tmp_path: Path) -> None:
    cfg = program_config([InputConfig(topic="mid", event="Hit")], name="down")
    task = build_task(compile_source(COUNT, name="down").require(), cfg, tmp_path / "s")
    task.load_from_store()
    writers = frozenset({"up/0", "up/1", "up/2"})
    task.set_progress(
        ProgressPlan("down", 1, writers={"mid": writers}, marked=frozenset({"mid"}), placed=frozenset({"mid"}))
    )
    (ip,) = [ip for ip in task.inputs if ip.config is not None]
    assert ip.streams is None and ip.progress is not None and ip.progress.own == {"up/0"}
    for i, (key, ts) in enumerate([("a", 10), ("b", 20), ("a", 30)]):
        task.add(record(i, key, ts))
    task.add(marker(3, 1, 5))
    task.add(marker(4, 2, 5))
    task.add(marker(5, 0, 25))  # (its own writer past the first two: the others, behind, hold nothing)
    task.process(0)
    assert task.counts["processed"] == 2 and task.held_back == 1
    task.add(marker(6, 0, 40))
    task.process(0)
    assert task.counts["processed"] == 3 and task.held_back == 0
    outs = [(o.key, o.value) for o in task.take_outputs() if o.topic == "out"]
    assert outs == [(b"a", b'{"k":"a","n":1}'), (b"b", b'{"k":"b","n":1}'), (b"a", b'{"k":"a","n":2}')]


def test_an_idle_own_writer_holds_time_back_while_another_writer_is_not_idle() -> None:
    """Idle on its own writer's account alone, the partition would hold nothing back, and the
    readers after this one would move past what that writer has when it wakes."""
    progress = InputProgress(frozenset({"up/0", "up/1"}), own=frozenset({"up/0"}))
    progress.hear("up/1", 10)
    progress.hear("up/0", 50)
    assert progress.watermark == 50 and progress.reached == 50
    progress.hear("up/0", IDLE)
    assert progress.watermark == 50  # (not IDLE: up/1 is not idle)
    progress.hear("up/1", IDLE)
    assert progress.watermark == IDLE


def test_what_keeps_a_writer_off_its_own_partition() -> None:
    """``keyed.writes_own_partition``'s refusals, each alone on fridge-alerts' debounce (which
    writes fridge-states to its own partitions as shipped)."""
    from eventscript.topology.keyed import writes_own_partition

    topo = load_topology(TOPOLOGIES / "fridge-alerts" / "topology.yaml")
    debounce = next(c for c in topo.programs if c.name == "debounce")
    program = compile_programs(topo, [debounce])["debounce"].program
    counts = topology_partitions(topo)
    assert writes_own_partition(debounce, program, "fridge-states", counts)
    # Another partition count than its tasks: task t's keys land on other partitions.
    six = lambda t: 6 if t == "fridge-states" else counts(t)  # noqa: E731
    assert not writes_own_partition(debounce, program, "fridge-states", six)
    # Its error topic: an $error about a record that reached no instance is keyed as that record.
    assert debounce.error_topic is not None
    assert not writes_own_partition(debounce, program, debounce.error_topic, counts)
    # Records without keys (placed by their ids), and a writer not compiled (nothing proved).
    keyless = debounce.model_copy(update={"inputs": [debounce.inputs[0].model_copy(update={"key": "none"})]})
    assert not writes_own_partition(keyless, program, "fridge-states", counts)
    assert not writes_own_partition(debounce, None, "fridge-states", counts)
