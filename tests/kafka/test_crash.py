"""Crash test (issue: the Kafka worker). A worker in a subprocess is killed with SIGKILL several
times mid-stream and restarted while a producer keeps writing; afterwards a read_committed reader
sees exactly the outputs of an uninterrupted run over the same records — none lost, none twice,
timer events included.

``clock: record`` makes the run deterministic. The uninterrupted run is computed per input
partition, as the worker's task for that partition sees it: the partition's records in offset
order, time advanced to each record's timestamp. Outputs are keyed by the instance's group key,
so the output topic (same partition count) holds each task's outputs in order.

On a broker that shows aborted transactions to read_committed readers (Tansu 0.6) the reader
also sees the outputs of the transactions the kills aborted; they carry the same ``es-id`` as
the committed copy, so the reader drops repeated ids. The test checks that every dropped record
is an exact copy of a kept one, and that nothing is dropped on a broker that hides aborted data.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka_helpers import Broker, read_many, start_worker, topology, unique, wait_for

from eventscript.automata.compile import compile_source
from eventscript.engine.encoding import encode
from eventscript.engine.engine import Engine
from eventscript.engine.time_provider import SimulatedTimeProvider
from eventscript.kafka import clients, codec
from eventscript.kafka.config import KafkaConfig
from eventscript.kafka.partitioner import key_bytes, partition_of

PROGRAM = """
// Count each key's events; after 30 s (record time) without one, report the key quiet and end.
in {string k; long n;} Tick group(Tick.k)
out {string k; long count; long last;} Count, {string k; long count;} Quiet

{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count, last: t.n}); } )*
elapse[30 seconds]() { !>Quiet({k: group[0], count: count}); }
"""

PARTITIONS = 3
KEYS = 60
RECORDS = 4000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms


def expected_outputs(records: list[Any]) -> dict[int, list[tuple[str, Any, Any]]]:
    """What an uninterrupted task emits for each partition's records."""
    program = compile_source(PROGRAM, name="crash").require()
    out: dict[int, list[tuple[str, Any, Any]]] = {}
    by_partition: dict[int, list[Any]] = {}
    for m in records:
        by_partition.setdefault(m.partition(), []).append(m)
    for p, msgs in by_partition.items():
        lines: list[tuple[str, Any, Any]] = []
        clock = SimulatedTimeProvider()

        def sink(e: Any, lines: list[tuple[str, Any, Any]] = lines) -> None:
            lines.append((e.name, encode(e.value, e.ty), list(e.key)))

        engine = Engine(program, sink, clock)
        for m in sorted(msgs, key=lambda m: m.offset()):
            t = m.timestamp()[1] * 1000
            if t >= clock.now():
                clock.advance_to(t)
            engine.feed_json("Tick", orjson.loads(m.value()))
            clock.run_due()
        out[p] = lines
    return out


def produce(kafka: KafkaConfig, topic: str, stop: threading.Event, rate: float) -> int:
    from confluent_kafka import Producer

    producer = Producer(clients.producer_config(kafka))
    rnd = random.Random(42)
    sent = 0
    start = time.monotonic()
    for i in range(RECORDS):
        k = f"k{rnd.randrange(KEYS)}"
        key = key_bytes((k,), [__import__("eventscript.language.types", fromlist=["STRING"]).STRING])
        assert key is not None
        producer.produce(topic, key=key, value=orjson.dumps({"k": k, "n": i}),
                         partition=partition_of(key, PARTITIONS), timestamp=T0 + i * 250)
        sent += 1
        if i % 50 == 0:
            producer.poll(0)
            behind = start + i / rate - time.monotonic()
            if behind > 0:
                time.sleep(behind)
        if stop.is_set():
            break
    producer.flush(30)
    return sent


@pytest.mark.kafka
@pytest.mark.slow
def test_sigkill_and_restart_lose_and_duplicate_nothing(broker: Broker, tmp_path: Path) -> None:
    name = unique("crash")
    (tmp_path / "crash.es").write_text(PROGRAM)
    topo = topology(broker, tmp_path, [{
        "name": name, "source": "crash.es", "clock": "record", "commit_interval_ms": 50,
        "inputs": [{"topic": f"{name}-in", "event": "Tick"}],
        "outputs": {"default": f"{name}-out"}, "errors": f"{name}-err",
    }], {f"{name}-in": {"partitions": PARTITIONS}})
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap)
    from eventscript.kafka.admin import Admin
    from eventscript.kafka.config import load_topology

    Admin(load_topology(topo)).prepare(load_topology(topo).programs)

    log = tmp_path / "worker.log"
    topo_text = topo.read_text()
    topo.write_text(topo_text.replace("programs:", "health: {port: 0}\nprograms:", 1))
    stop = threading.Event()
    sent: list[int] = []
    producer = threading.Thread(target=lambda: sent.append(produce(kafka, f"{name}-in", stop, rate=60)))
    producer.start()
    rnd = random.Random(7)
    kills = 0
    try:
        worker = start_worker(topo, "-v", log=log)
        # Let it join and produce some output, then kill it at random moments while the producer writes.
        wait_for(lambda: log.exists() and worker.poll() is None and _outputs(broker, f"{name}-out") > 0, 60,
                 what="first outputs")
        while producer.is_alive() and kills < 4:
            # Kill only a worker that is processing: wait for new outputs since its start.
            before = _outputs(broker, f"{name}-out")
            wait_for(lambda before=before: _outputs(broker, f"{name}-out") > before + 20, 60, interval=0.3,
                     what="the restarted worker to make progress")
            time.sleep(rnd.uniform(0.1, 1.0))
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            kills += 1
            worker = start_worker(topo, "-v", log=log)
        producer.join()
        # Let the last worker finish everything, then stop it gracefully.
        in_records = read_many(broker, [f"{name}-in"], idle=0.5, dedupe=False)[f"{name}-in"]
        assert len(in_records) == sent[0] == RECORDS
        want = expected_outputs(in_records)
        total = sum(len(v) for v in want.values())
        wait_for(lambda: _outputs(broker, f"{name}-out") >= total, 180, interval=1.0, what="all outputs")
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0, log.read_text()[-3000:]
    finally:
        stop.set()
        producer.join(30)
        if "worker" in locals() and worker.poll() is None:
            worker.kill()
    assert kills >= 3, "the producer finished before the worker could be killed three times"

    raw = read_many(broker, [f"{name}-out", f"{name}-err"], dedupe=False)
    assert raw[f"{name}-err"] == [], [m.value() for m in raw[f"{name}-err"][:5]]
    kept: dict[bytes, Any] = {}
    got: dict[int, list[tuple[str, Any, Any]]] = {}
    duplicates = 0
    for m in raw[f"{name}-out"]:
        rid = codec.header(m.headers(), codec.HEADER_ID)
        assert rid is not None
        line = (codec.header(m.headers(), codec.HEADER_EVENT).decode(), orjson.loads(m.value()), orjson.loads(m.key()))
        if rid in kept:
            assert kept[rid] == line, f"record {rid!r} appeared twice with different contents"
            duplicates += 1
            continue
        kept[rid] = line
        got.setdefault(m.partition(), []).append(line)
    print(f"kills={kills} outputs={len(kept)} dropped duplicates={duplicates} "
          f"timer outputs={sum(1 for v in kept.values() if v[0] == 'Quiet')}")
    if broker.hides_aborted:
        assert duplicates == 0
    for p in range(PARTITIONS):
        assert got.get(p, []) == want.get(p, []), f"partition {p}: outputs differ from the uninterrupted run"
    assert any(line[0] == "Quiet" for lines in want.values() for line in lines), "no timer event was exercised"


def _outputs(broker: Broker, topic: str) -> int:
    """Distinct output ids so far (cheap enough to poll)."""
    return len(read_many(broker, [topic], idle=0.2, dedupe=True)[topic])
