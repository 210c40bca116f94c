"""The backfill's Kafka sink against the session's broker: the worker's records in the program's
topics (or others), in one transaction, and nothing at all when the backfill fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import Broker, read_many, topology, unique
from test_backfill_tasks import PROGRAM, by_key, random_trace, run_tester

from eventscript.backfill.job import run_locally
from eventscript.backfill.kafka_sink import KafkaSink, Transaction
from eventscript.backfill.kafka_source import kafka_plan
from eventscript.backfill.records import OutputRow
from eventscript.backfill.sink import SinkError
from eventscript.cli.main import main
from eventscript.kafka import codec
from eventscript.kafka.admin import Admin
from eventscript.kafka.config import Topology, load_topology
from eventscript.kafka.partitioner import partition_of
from eventscript.kafka.tools import record_to_json

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

PARTITIONS = 2


def program_topology(broker: Broker, tmp: Path, partitions: int = PARTITIONS) -> tuple[Path, Topology]:
    """A topology of one program (``PROGRAM``, record clock) on its own topics, created."""
    name = unique("bf")
    (tmp / "ticks.es").write_text(PROGRAM)
    path = topology(
        broker,
        tmp,
        [
            {
                "name": name,
                "source": "ticks.es",
                "clock": "record",
                "commit_interval_ms": 50,
                "inputs": [{"topic": f"{name}-in", "event": "Tick"}],
                "outputs": {"default": f"{name}-out"},
                "errors": f"{name}-err",
            }
        ],
        {f"{name}-in": {"partitions": partitions}},
    )
    topo = load_topology(path)
    Admin(topo).prepare(topo.programs)
    return path, topo


def publish(topo: Topology, tmp: Path, trace: str) -> None:
    """The trace's records as ``eventscript produce`` publishes them, plus one undecodable record."""
    from confluent_kafka import Producer

    from eventscript.kafka import clients
    from eventscript.kafka.supervisor import compile_programs
    from eventscript.kafka.tools import produce_trace
    from eventscript.tester.trace import read_trace

    cfg = topo.programs[0]
    (tmp / "trace.txt").write_text(trace)
    produce_trace(topo.kafka, cfg, compile_programs(topo, [cfg])[cfg.name], read_trace(tmp / "trace.txt"), PARTITIONS)
    producer = Producer(clients.producer_config(topo.kafka))
    producer.produce(
        cfg.inputs[0].topic, b"not json", b"k1", partition_of(b"k1", PARTITIONS), timestamp=2_000_000_000_000
    )
    producer.flush(10)


def written(m: Any) -> tuple[Any, ...]:
    return (m.topic(), m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1])


def test_the_backfill_writes_the_workers_records_to_the_programs_topics_or_others(
    spark: Any, broker: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, topo = program_topology(broker, tmp_path)
    cfg = topo.programs[0]
    out, err = cfg.output_topic("Count"), cfg.error_topic
    assert out is not None
    trace = random_trace(5, events=150)
    publish(topo, tmp_path, trace)

    assert main(["backfill", str(path), "--no-ui"]) == 0
    said = capsys.readouterr().err
    got = read_many(broker, [out, err], dedupe=False)
    # The worker's task (without Spark) over the same cut gives the same records, byte for byte.
    want = sorted(
        (r.topic(), r.key(), r.value(), tuple(r.headers()), r.timestamp()[1])
        for r in run_locally(kafka_plan(topo, cfg))
    )
    assert sorted(written(m) for m in got[out] + got[err]) == want
    assert f"wrote {len(want)} records in one transaction" in said
    # Placed by key as the worker's producer places them, and per key as the tester says.
    assert all(m.partition() == partition_of(m.key(), PARTITIONS) for m in got[out])
    assert by_key([record_to_json(m) for m in got[out]]) == by_key(run_tester(PROGRAM, trace))
    assert len(got[err]) == 1 and b"not JSON" in got[err][0].value()

    # A live worker (clock: record) over the same records writes the same records again, byte for
    # byte and with the same es-ids: every record of the two topics is there exactly twice.
    from collections import Counter

    from kafka_helpers import run_in_thread

    assert run_in_thread(path, until_idle=2.0) == 0
    both = read_many(broker, [out, err], dedupe=False)
    counts = Counter(written(m) for m in both[out] + both[err])
    assert sorted(counts) == want and set(counts.values()) == {2}, counts.most_common(3)

    # Other topics: --output-topic for one event, default for the rest, --error-topic; and the
    # key-parallel mode, whose records are the same.
    quiet, rest, errors = unique("quiet"), unique("rest"), unique("errors")
    assert (
        main(
            [
                "backfill",
                str(path),
                "--no-ui",
                "--key-groups",
                "3",
                "--output-topic",
                f"Quiet={quiet}",
                "--output-topic",
                f"default={rest}",
                "--error-topic",
                errors,
            ]
        )
        == 0
    )
    other = read_many(broker, [quiet, rest, errors], dedupe=False)
    moved = {quiet: "Quiet", rest: "Count"}
    for topic, event in moved.items():
        assert other[topic] and all(
            codec.header(m.headers(), codec.HEADER_EVENT) == event.encode() for m in other[topic]
        )
    assert sorted(written(m)[1:] for m in other[quiet] + other[rest] + other[errors]) == sorted(w[1:] for w in want)
    capsys.readouterr()


def test_sink_options_that_cannot_work_are_refused_before_spark_starts(
    broker: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = program_topology(broker, tmp_path)
    assert main(["backfill", str(path), "--output-topic", "Alarm=x", "--no-ui"]) == 2
    assert "--output-topic Alarm=...: program" in capsys.readouterr().err
    assert main(["backfill", str(path), "--output", str(tmp_path / "o.jsonl"), "--error-topic", "x", "--no-ui"]) == 2
    assert "give one or the other" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: not EVENT=TOPIC
        main(["backfill", str(path), "--output-topic", "Quiet", "--no-ui"])
    assert "'Quiet': write EVENT=TOPIC" in capsys.readouterr().err


def test_a_failed_backfill_leaves_nothing_in_the_topics(
    spark: Any, broker: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from confluent_kafka import Producer

    from eventscript.kafka import clients

    path, topo = program_topology(broker, tmp_path)
    cfg = topo.programs[0]
    producer = Producer(clients.producer_config(topo.kafka))
    for i, key in enumerate([b"a", b"b", b"c", b"d"]):
        # Every key on both partitions: half of them on a partition the key does not hash to.
        for p in range(PARTITIONS):
            producer.produce(
                cfg.inputs[0].topic, b'{"k": "%s", "n": %d}' % (key, i), key, p, timestamp=1_767_225_600_000 + i
            )
    producer.flush(10)
    assert main(["backfill", str(path), "--no-ui"]) == 1
    assert "on a partition their group key does not hash to" in capsys.readouterr().err
    out = cfg.output_topic("Count")
    assert out is not None
    assert read_many(broker, [out, cfg.error_topic], idle=0.3) == {out: [], cfg.error_topic: []}


def test_a_sink_that_fails_while_committing_aborts_its_transaction(broker: Broker, tmp_path: Path) -> None:
    """A failure after the records were produced (here: the hand-over step refusing) aborts the
    transaction; a broker that hides aborted records then shows none of them (the embedded
    broker shows them to read_committed readers: there only the abort itself is checked)."""
    _, topo = program_topology(broker, tmp_path)
    out = topo.programs[0].output_topic("Count")
    assert out is not None
    rows = [
        OutputRow(0, out, None, b"k%d" % i, b"{}", [(codec.HEADER_ID, b"x/%d" % i)], 1_767_225_600_000)
        for i in range(5)
    ]
    aborted: list[Transaction] = []
    txn_id = unique("txn")

    def refuse(txn: Transaction) -> None:
        aborted.append(txn)
        raise SinkError("refused")

    with KafkaSink(topo.kafka, txn_id, refuse) as sink:
        sink.write_all(rows)
        with pytest.raises(SinkError, match="refused"):
            sink.commit()
    assert sink.count == 5 and aborted and not aborted[0]._open
    if broker.hides_aborted:
        assert read_many(broker, [out], idle=0.3)[out] == []
    # The transactional id is usable again at once: the aborted transaction left nothing open.
    with KafkaSink(topo.kafka, txn_id) as sink:
        sink.write_all(rows[:2])
        sink.commit()
    assert sink.count == 2
