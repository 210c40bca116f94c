"""The measuring instruments of issue 26 measure what they say: the realistic program's engine
and hand-written loop agree match for match (so the bench races equals), its ablations emit the
same matches, and the worker race finds the start of a contender's work after a group join."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from eventscript.task.progress import read_marker

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str) -> ModuleType:
    """A bench script as a module under a name of its own (``engine`` alone could be taken:
    tests/engine is a namespace package on the tests' path)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    return module


bench_engine = bench_module("engine")
worker_peers = bench_module("worker_peers")
task_path = bench_module("task_path")


@pytest.mark.parametrize("order", ["random", "zipf"])
def test_realistic_engine_and_loop_emit_the_same_matches(order: str) -> None:
    events = bench_engine.realistic_events(20_000, 300, order, seed=3)
    matches = bench_engine.check_realistic(events)  # raises when values, keys or order differ
    assert matches > 100  # the program matches often enough to be a race of equals


def test_the_check_fails_when_the_loop_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    events = bench_engine.realistic_events(5_000, 50, "random", seed=4)
    honest = bench_engine.loop_realistic

    def drops_one(evs: list, out: object) -> dict:
        got: list = []
        states = honest(evs, got.append)
        for rec in got[1:]:
            out(rec)  # type: ignore[operator]
        return states

    monkeypatch.setattr(bench_engine, "loop_realistic", drops_one)
    with pytest.raises(SystemExit, match="matches"):
        bench_engine.check_realistic(events)


def test_every_contender_and_ablation_counts_the_same_matches() -> None:
    events = bench_engine.realistic_events(10_000, 200, "zipf", seed=5)
    want = bench_engine.check_realistic(events)
    for who in ("feed", "feed_many", "loop"):
        assert bench_engine.run_realistic(who, events, 1_000)[2] == want, who
    for variant in bench_engine.REALISTIC:
        got = bench_engine.run_realistic("feed", bench_engine.ablated_events(variant, events), 1_000, variant)[2]
        assert got == want, variant


def samples_of(spans: list[tuple[int, float]]) -> list[tuple[float, float, int]]:
    """(count of 50 ms samples, CPU seconds in each) → the race's samples, outputs left at 0."""
    out, t = [], 0.0
    for count, used in spans:
        for _ in range(count):
            t += worker_peers.SAMPLE_SECONDS
            out.append((round(t, 3), used, 0))
    return out


def test_work_starts_after_the_group_join_despite_stray_ticks() -> None:
    join = [(8, 0.0), (1, 0.01)] * 11  # 99 samples: quiet, with a 10 ms tick now and then
    work = [(30, 0.04), (3, 0.0), (30, 0.04)]  # working, with a short wait (a transaction) inside
    samples = samples_of(join + work)
    assert worker_peers.work_start(samples, first_out=samples[-1][0]) == pytest.approx(99 * 0.05)


def test_work_starts_at_the_release_when_there_is_no_join() -> None:
    samples = samples_of([(40, 0.04)])
    assert worker_peers.work_start(samples, first_out=1.0) == pytest.approx(0.0)


def test_the_task_path_bench_keeps_its_tasks_records_and_sends_what_the_worker_sends(tmp_path: Path) -> None:
    from eventscript.kafka.partitioner import partition_of

    msgs = task_path.records(3_000, 400, "random", 3, seed=7)
    assert 0 < len(msgs) < 3_000 and all(partition_of(m.key(), 3) == 0 for m in msgs)

    def sent(records: list) -> tuple[str, dict[str, int]]:
        rec = task_path.Recorder()
        task = task_path.build(tmp_path / f"s{len(list(tmp_path.iterdir()))}", "at_least_once", 3, "record", rec)
        task_path.run(task, records)
        task.close()
        return rec.digest.hexdigest(), dict(rec.topics)

    digest, topics = sent(msgs)
    assert topics["out"] == len(msgs)  # a count per record
    assert topics["chg"] >= len({m.key() for m in msgs})  # a snapshot per key changed (one commit here)
    assert sent(msgs)[0] == digest  # the digest is the same records' ...
    changed = list(msgs)
    first = changed[0]
    later = (1, first.timestamp()[1] + 1)  # record time: its output's timestamp is a millisecond later
    changed[0] = type(first)(
        topic=first.topic(), partition=0, offset=0, key=first.key(), value=first.value(), timestamp=later
    )
    assert sent(changed)[0] != digest  # ... and another's when one record sent differs


def test_the_race_tells_librdkafka_and_rocksdb_threads_from_python_ones() -> None:
    """``thread_split`` sums a process's CPU by thread name (librdkafka's ``rdk:...`` by role,
    RocksDB's ``rocksdb:...``, the rest Python's): two threads named as theirs burn 0.3 s each."""
    import ctypes
    import os
    import threading
    import time

    libc = ctypes.CDLL(None)
    burnt, finish = threading.Barrier(3), threading.Event()

    def burn(name: bytes) -> None:
        libc.prctl(15, name, 0, 0, 0)  # PR_SET_NAME: the thread's comm, as librdkafka names its own
        end = time.thread_time() + 0.3
        while time.thread_time() < end:
            pass
        burnt.wait()
        finish.wait()  # (alive while measured: the split reads live threads)

    threads = [threading.Thread(target=burn, args=(n,)) for n in (b"rdk:broker1", b"rocksdb:low0")]
    for t in threads:
        t.start()
    burnt.wait()
    try:
        split = worker_peers.thread_split({}, worker_peers.threads_of(os.getpid()))
        whole = worker_peers.proc_cpu(os.getpid())
    finally:
        finish.set()
        for t in threads:
            t.join()
    assert split["rdk:broker"] >= 0.25 and split["rocksdb"] >= 0.25
    assert split["python-top"] > 0  # (this test's own thread: imports, the bench modules)
    assert sum(split.values()) <= whole + 0.05


event_time = bench_module("event_time")


@pytest.mark.parametrize("order", ["random", "zipf"])
def test_the_landing_of_the_markers_bench_is_the_writers_commits(order: str) -> None:
    """``event_time.py --landing batches`` lays records out as three out-of-phase writers' commits
    land: every record once, each key one writer's, each writer's records in time order, each
    batch followed by its writer's marker whose progress passes them all and no record of that
    writer landing later; some records land behind later ones (else it measures the ordered case)."""
    recs = event_time.records(3_000, 500, 1, order, batch_ms=100)
    records = [m for m in recs if not event_time.is_marker(m)]
    assert sorted(m.timestamp()[1] for m in records) == [event_time.T0 + i for i in range(3_000)]
    assert [m.offset() for m in recs] == list(range(len(recs)))
    writer_of_key: dict[bytes, int] = {}
    last_of: dict[int, int] = {}
    marked: dict[int, int] = {}
    behind = 0
    top = -1
    for m in recs:
        ts = m.timestamp()[1]
        if event_time.is_marker(m):
            marker = read_marker(m.headers())
            assert marker is not None
            writer, progress = marker
            w = int(writer.rsplit("/", 1)[1])
            assert progress > last_of.get(w, -1)
            marked[w] = progress
            continue
        w = event_time.writer_of(orjson.loads(m.value())["k"])
        assert writer_of_key.setdefault(m.key(), w) == w
        assert ts > last_of.get(w, -1) and ts >= marked.get(w, -1)
        last_of[w] = ts
        behind += ts < top
        top = max(top, ts)
    assert behind > len(records) // 4
    assert set(marked) == set(range(event_time.WRITERS))


def test_the_markers_bench_gives_the_same_outputs_however_the_records_land(tmp_path: Path) -> None:
    """Its gated task counts per key as the ordered run does, whether the records land in time
    order or as the writers' commits: the bench times the same work both ways."""

    def counts(recs: list[Any]) -> dict[bytes | None, list[bytes | None]]:
        task = event_time.make_task(tmp_path / str(len(list(tmp_path.iterdir()))), True, 1)
        out: dict[bytes | None, list[bytes | None]] = {}

        def send(topic: str, partition: int, key: bytes | None, value: bytes | None, *rest: Any) -> None:
            out.setdefault(key, []).append(value)

        task.attach(send)
        recs, landed, _ = event_time.fed(recs, True)
        for at in range(0, len(recs), event_time.FETCH):
            for m in recs[at : at + event_time.FETCH]:
                task.add(m)
            task.process(0)
        if not landed:
            event_time.mark(task, ["mid"], {"mid": len(recs)}, recs[-1].timestamp()[1] + 1)
            task.process(0)
        assert task.held_back == 0
        task.close()
        return out

    ordered = counts(event_time.records(5_000, 300, 1, "zipf"))
    landed = counts(event_time.records(5_000, 300, 1, "zipf", batch_ms=100))
    assert ordered == landed and sum(map(len, ordered.values())) == 5_000


def test_the_emission_bench_times_what_the_generated_code_does() -> None:
    """bench/emit_cost.py's ``emitted`` copies the generated emission (``CodeGen.emit_by_key``):
    ``object.__new__`` of ``Emitted``, the six slots in place, ``now()``, the consumer. If the
    generated line changes, the bench must follow it."""
    from eventscript.automata.compile import compile_source
    from eventscript.engine.engine import Engine
    from eventscript.engine.time_provider import SimulatedTimeProvider

    emit_cost = bench_module("emit_cost")
    program = compile_source(bench_engine.REALISTIC["full"], name="realistic").require()
    generated = Engine(program, lambda e: None, SimulatedTimeProvider(0))._feed_source
    assert (
        "_m = _NEWE(_EM); _m.program = _PN; _m.name = 'Match'; _m.value = [v[0][0], v[0][2], v[1][1]]; "
        "_m.ty = _OT0; _m.time = _now(); _m.key = (gk,); _C(_m)" in generated
    )
    got: list[Any] = []
    emit_cost.variants(3, got.append)["emitted"]()
    assert [(e.program, e.name, e.value, e.time, e.key) for e in got] == [("p", "Match", ["k", 3, 1.5], 0, ("k",))] * 3
