"""``eventscript state dump`` and ``eventscript reset`` against a broker (issue 23).

- the dump, read from the changelog without running the program, equals what the worker's
  stores hold after a run (every instance, in program terms), and shows ended keys' tombstones;
- reset to the earliest offsets, then a second run, gives the same outputs as the first run;
- reset is refused while the group has members, and --dry-run changes nothing.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from kafka_helpers import Broker, read_many, run_in_thread, topology, unique, wait_for

from eventscript.cli.main import main
from eventscript.explain.terms import ProgramTerms
from eventscript.kafka import clients
from eventscript.kafka.config import KafkaConfig, load_topology
from eventscript.kafka.partitioner import partition_of
from eventscript.state.query import explain_snapshot
from eventscript.state.store import TaskStore

#: A door left open for 5 minutes of record time alerts; a closed door's instance ends.
PROGRAM = """
in {string k; long n;} Opened group(Opened.k), {string k; long n;} Closed group(Closed.k)
out {string k; long n;} LeftOpen
Opened(o) ( Closed() | elapse[5 minutes]() { !>LeftOpen(o); } Closed() )
"""
PARTITIONS = 2
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, ms


class _AnyInt:
    def __eq__(self, other: object) -> bool:
        return type(other) is int

    def __repr__(self) -> str:
        return "<any int>"


ANY_N = _AnyInt()


def _setup(broker: Broker, tmp_path: Path) -> tuple[str, Path]:
    name = unique("stt")
    (tmp_path / "p.es").write_text(PROGRAM)
    topo = topology(
        broker,
        tmp_path,
        [
            {
                "name": name,
                "source": "p.es",
                "clock": "record",
                "inputs": [
                    {"topic": f"{name}-opened", "event": "Opened"},
                    {"topic": f"{name}-closed", "event": "Closed"},
                ],
                "outputs": {"default": f"{name}-out"},
            }
        ],
        {f"{name}-opened": {"partitions": PARTITIONS}, f"{name}-closed": {"partitions": PARTITIONS}},
    )
    from eventscript.kafka.admin import Admin

    t = load_topology(topo)
    Admin(t).prepare(t.programs)
    return name, topo


def _send(broker: Broker, records: list[tuple[str, str, int]]) -> None:
    """(topic, key, ms after T0) records, keyed by the door, in order."""
    p = Producer(clients.producer_config(KafkaConfig(bootstrap_servers=broker.bootstrap)))
    for i, (topic, k, ms) in enumerate(records):
        p.produce(
            topic,
            key=k.encode(),
            value=orjson.dumps({"k": k, "n": i}),
            partition=partition_of(k.encode(), PARTITIONS),
            timestamp=T0 + ms,
        )
    p.flush(30)


def _doors(name: str) -> list[tuple[str, str, int]]:
    o, c = f"{name}-opened", f"{name}-closed"
    return [
        (o, "front", 0),
        (o, "back", 1_000),
        (o, "side", 2_000),
        (c, "back", 3_000),
        (o, "garage", 4_000),
        # record time moves past front's and side's deadlines (5 min): both alert, then wait for Closed
        (o, "attic", 400_000),
        (c, "side", 401_000),
        (o, "cellar", 402_000),
        (o, "porch", 402_000),
    ]


@pytest.mark.kafka
def test_state_dump_equals_what_the_workers_hold(broker: Broker, tmp_path: Path, capsys) -> None:
    name, topo = _setup(broker, tmp_path)
    doors = _doors(name)
    ending = [r for r in doors if r[0].endswith("-closed")]
    # First the doors opening (committed: in the changelog), then, in a second run, back and side
    # closing: their instances end, leaving tombstones (an instance created and ended between two
    # commits leaves nothing: test_ended_instances.py).
    _send(broker, [r for r in doors if r not in ending])
    assert run_in_thread(topo, until_idle=1.0) == 0
    _send(broker, [(topic, k, 500_000) for topic, k, _ in ending])
    assert run_in_thread(topo, until_idle=1.0) == 0
    t = load_topology(topo)
    cfg = t.program(name)
    from eventscript.kafka.supervisor import compile_programs

    program = compile_programs(t, [cfg])[name]
    terms = ProgramTerms(program)
    held = {}
    for p in range(PARTITIONS):
        store = TaskStore(t.state_path(cfg) / f"task-{p}")
        for kb, raw in store.instances():
            held[tuple(orjson.loads(kb))] = (p, explain_snapshot(terms, raw))
        store.close()
    assert {k[0] for k in held} == {"front", "garage", "attic", "cellar", "porch"}  # back and side ended

    out = tmp_path / "dump.jsonl"
    assert main(["state", "dump", str(topo), "--program", name, "--output", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    present = {tuple(r["key"]): (r["task"], r["instance"]) for r in rows if r["status"] == "present"}
    assert present == held
    ended = {r["key"][0] for r in rows if r["status"] == "ended"}
    assert ended == {"back", "side"}  # their tombstones, still in the changelog
    for (k,), (_, inst) in present.items():  # (record time is per task: which timers fired depends on placement)
        texts = {m["text"] for m in inst["waiting"]}
        assert "Closed()" in texts and ("elapse[5 minutes]" in texts) == (inst["timer"] is not None), (k, inst)
        assert inst["variables"] == [{"name": "o", "type": "{string k; long n;}", "value": {"k": k, "n": ANY_N}}]
    assert all(r["committed"]["position"] and r["program"] == name for r in rows)
    assert "instance(s)" in capsys.readouterr().err

    parquet = tmp_path / "dump.parquet"
    assert main(["state", "dump", str(topo), "--program", name, "--output", str(parquet)]) == 0
    import pyarrow.parquet as pq

    table = pq.read_table(parquet).to_pylist()
    assert sorted((json.loads(r["key"])[0], r["status"]) for r in table) == sorted(
        (r["key"][0], r["status"]) for r in rows
    )


def _outputs(broker: Broker, topic: str) -> list[tuple[bytes | None, bytes, tuple]]:
    """Every output record (repeats included), as key, value and headers."""
    return [(m.key(), m.value(), tuple(m.headers() or ())) for m in read_many(broker, [topic], dedupe=False)[topic]]


@pytest.mark.kafka
def test_reset_to_earliest_then_rerun_gives_the_same_outputs(broker: Broker, tmp_path: Path, capsys) -> None:
    name, topo = _setup(broker, tmp_path)
    _send(broker, _doors(name))
    assert run_in_thread(topo, until_idle=1.0) == 0
    first = _outputs(broker, f"{name}-out")
    assert first  # at least one door alerted (which ones depends on the tasks' record times)

    assert main(["reset", str(topo), "--program", name, "--to-earliest", "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert f"commit {name}-opened:0 -> offset 0 (earliest)" in said and "dry run" in said
    assert (tmp_path / "state" / name).exists()  # the dry run changed nothing

    # The stopped worker, a static member (as deployed), stays in the group until its session
    # times out: --wait waits for the group to empty rather than refusing at once.
    assert main(["reset", str(topo), "--program", name, "--to-earliest", "--wait", "60"]) == 0, capsys.readouterr().err
    said = capsys.readouterr().out
    assert f"deleted topic {t_changelog(topo, name)}" in said
    assert not (tmp_path / "state" / name).exists()
    assert run_in_thread(topo, until_idle=1.0) == 0
    both = _outputs(broker, f"{name}-out")
    assert both[len(first) :] == first  # the same records again: keys, values and ids


def t_changelog(topo: Path, name: str) -> str:
    t = load_topology(topo)
    return t.changelog_topic(t.program(name))


@pytest.mark.kafka
def test_reset_is_refused_while_the_group_has_members(broker: Broker, tmp_path: Path, capsys) -> None:
    from eventscript.kafka.supervisor import TopologyRunner

    name, topo = _setup(broker, tmp_path)
    _send(broker, _doors(name)[:2])
    runner = TopologyRunner(load_topology(topo))
    runner.prepare()
    thread = threading.Thread(target=runner.run, kwargs={"install_signals": False}, daemon=True)
    thread.start()
    try:
        wait_for(runner.ready, timeout=60, what="the worker to join and restore")
        assert main(["reset", str(topo), "--program", name]) == 2
        err = capsys.readouterr().err
        assert "stop every worker" in err and "--wait" in err
        if broker.real:  # Tansu lists no members
            assert "static: group.instance.id" in err and "session.timeout.ms: 3 s" in err, err
        assert main(["reset", str(topo), "--program", name, "--wait", "1"]) == 2  # a running worker stays
        assert "stop every worker" in capsys.readouterr().err
    finally:
        runner.stop()
        thread.join(60)
    assert (tmp_path / "state" / name).exists()  # refused: nothing deleted


@pytest.mark.kafka
def test_reset_plans_from_a_datetime_and_from_offsets(broker: Broker, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from eventscript.kafka.reset import ResetRefused, parse_offsets, plan_reset

    name, topo = _setup(broker, tmp_path)
    o = f"{name}-opened"
    _send(broker, [(o, "front", 0), (o, "front", 10_000), (o, "front", 20_000)])
    t = load_topology(topo)
    cfg = t.program(name)
    p = partition_of(b"front", PARTITIONS)
    when = datetime.fromtimestamp((T0 + 5_000) / 1000, UTC)
    if broker.kind == "tansu":  # Tansu 0.6 answers offset 0 to every lookup by time: refused, not followed
        with pytest.raises(ResetRefused, match="does not look records up by time"):
            plan_reset(t, cfg, to_datetime=when)
    else:
        plan = plan_reset(t, cfg, to_datetime=when)
        assert plan.offsets[(o, p)][0] == 1  # the first record at or after T
        other = next(q for q in range(PARTITIONS) if q != p)
        assert plan.offsets[(o, other)][0] == 0  # an empty partition: its end
        plan = plan_reset(t, cfg, to_datetime=datetime.fromtimestamp((T0 + 60_000) / 1000, UTC))
        assert plan.offsets[(o, p)][0] == 3 and "the end" in plan.offsets[(o, p)][1]
    plan = plan_reset(t, cfg, to_offsets=parse_offsets([f"{o}:{p}=2"]))
    assert plan.offsets[(o, p)] == (2, "as given") and plan.offsets[(f"{name}-closed", 0)] == (0, "earliest")
    with pytest.raises(ResetRefused, match="not a partition"):
        plan_reset(t, cfg, to_offsets={(o, 7): 1})
    with pytest.raises(Exception, match="TOPIC:PARTITION=OFFSET"):
        parse_offsets(["nonsense"])


@pytest.mark.kafka
@pytest.mark.spark
def test_state_dump_on_spark_equals_the_one_process_dump(broker: Broker, spark, tmp_path: Path, capsys) -> None:
    from eventscript.backfill.state_dump import dump_on_spark
    from eventscript.kafka.supervisor import compile_programs

    name, topo = _setup(broker, tmp_path)
    doors = _doors(name)
    _send(broker, doors[:5])
    assert run_in_thread(topo, until_idle=1.0) == 0
    _send(broker, doors[5:])
    assert run_in_thread(topo, until_idle=1.0) == 0
    out = tmp_path / "dump.jsonl"
    assert main(["state", "dump", str(topo), "--program", name, "--output", str(out)]) == 0
    rows = sorted(
        (r["task"], r["key"], r["status"], r["changelog_offset"], r["instance"], r["ended"], r["last_record"])
        for r in map(json.loads, out.read_text().splitlines())
    )
    t = load_topology(topo)
    cfg = t.program(name)
    program = compile_programs(t, [cfg])[name]
    assert dump_on_spark(spark, t, cfg, program, tmp_path / "dump.parquet") == len(rows)
    got = sorted(
        (
            r["task"],
            json.loads(r["key"]),
            r["status"],
            r["changelog_offset"],
            json.loads(r["instance"]) if r["instance"] else None,
            json.loads(r["ended"]) if r["ended"] else None,
            json.loads(r["last_record"]),
        )
        for r in (row.asDict() for row in spark.read.parquet(str(tmp_path / "dump.parquet")).collect())
    )
    assert got == rows and rows
    # The changelog was read by the backfill's data source, over a plan of one slice per partition.
    from eventscript.backfill.state_dump import changelog_plan

    plan = changelog_plan(t, cfg, t.changelog_topic(cfg), PARTITIONS)
    assert [(s.partition, [(r.topic, r.partition) for r in s.ranges]) for s in plan.slices] == [
        (p, [(t.changelog_topic(cfg), p)]) for p in range(PARTITIONS)
    ]
    assert sum(r.end - r.start for s in plan.slices for r in s.ranges) >= len(rows)
    assert main(["state", "dump", str(topo), "--program", name, "--spark", "local[1]"]) == 2
    assert "--output DIR.parquet" in capsys.readouterr().err
