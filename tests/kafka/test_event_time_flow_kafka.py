"""Event time keeps moving on Apache Kafka while input keeps flowing (issue 21, the fault found
after the merge): a record-clock program on three partitions whose group key is not its input
records' key, so its tasks exchange records through the repartition topic and wait on each
other's markers there. With each task's marker held back by its own waiting records, the tasks
crawled one record time per marker round trip while the producer kept writing; now the outputs
keep up with the input."""

from __future__ import annotations

import random
import signal
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka_helpers import TopicWatcher, start_worker, told, topology, unique, wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

#: One instance per site; the records are keyed by sensor: every record of another task's site
#: crosses the repartition topic.
PROGRAM = """\
in {string sensor; string site; long n;} Reading group(Reading.site)
out {string site; long n;} Seen
( Reading(r) { !>Seen({site: group[0], n: r.n}); } )*
"""

PARTITIONS = 3
COUNT = 2000
RATE = 100.0  # records per second: the producer writes for about 20 s, from when the worker holds its tasks


def produce(bootstrap: str, topic: str, stop: threading.Event, sent: list[int]) -> None:
    """``COUNT`` readings of 30 sensors on 6 sites, a quarter of a second of record time apart,
    keyed by sensor, at ``RATE`` per second."""
    import time

    from confluent_kafka import Producer

    from eventscript.kafka import clients
    from eventscript.kafka.config import KafkaConfig
    from eventscript.kafka.partitioner import partition_of

    producer = Producer(clients.producer_config(KafkaConfig(bootstrap_servers=bootstrap)))
    rng = random.Random(3)
    start = time.monotonic()
    t0 = 1_767_225_600_000
    for i in range(COUNT):
        if stop.is_set():
            break
        sensor = rng.randrange(30)
        key = f"s{sensor}".encode()
        value = {"sensor": f"s{sensor}", "site": f"site{sensor % 6}", "n": i}
        producer.produce(
            topic, key=key, value=orjson.dumps(value), partition=partition_of(key, PARTITIONS), timestamp=t0 + i * 250
        )
        sent[0] = i + 1
        if i % 20 == 0:
            producer.poll(0)
            ahead = start + i / RATE - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    producer.flush(30)


def test_outputs_keep_up_with_continuous_input_through_the_repartition_topic(broker: Any, tmp_path: Path) -> None:
    name = unique("flow")
    (tmp_path / "p.es").write_text(PROGRAM)
    program = {
        "name": name,
        "source": "p.es",
        "clock": "record",
        "inputs": [{"topic": f"{name}-in", "event": "Reading"}],
        "outputs": {"default": f"{name}-out"},
        "errors": f"{name}-err",
    }
    path = topology(
        broker,
        tmp_path,
        [program],
        {f"{name}-in": {"partitions": PARTITIONS, "external": True}, f"{name}-out": {"partitions": PARTITIONS}},
        event_time_markers=True,
    )
    from eventscript.kafka.admin import Admin
    from eventscript.kafka.config import load_topology

    topo = load_topology(path)
    Admin(topo).prepare(topo.programs)
    stop = threading.Event()
    sent = [0]
    writer = threading.Thread(target=produce, args=(broker.bootstrap, f"{name}-in", stop, sent), daemon=True)
    watcher = TopicWatcher(broker, f"{name}-out")
    log = tmp_path / "worker.log"
    worker = start_worker(path, "-v", log=log)
    try:
        # (the producer starts once the worker holds every task: a start slowed by a loaded
        # machine is not counted against the worker's pace)
        wait_for(lambda: log.exists() and "assigned tasks [0, 1, 2]" in log.read_text(), 120, what="the tasks")
        writer.start()
        # Half the input out while the producer still writes (it writes for about 20 s; before
        # the fix the tasks had given about one output per marker round trip by then).
        wait_for(lambda: watcher.distinct() >= COUNT // 2 or not writer.is_alive(), 120, what="outputs")
        assert writer.is_alive(), (
            f"the producer finished ({sent[0]} records) with {watcher.distinct()} outputs out: the tasks "
            "fell behind their input\n" + (tmp_path / "worker.log").read_text()[-3000:]
        )
        wait_for(lambda: not writer.is_alive(), 120, what="the producer")
        wait_for(lambda: watcher.distinct() >= COUNT, 120, what="every output")
    except AssertionError as exc:
        raise told(exc, log) from exc
    finally:
        stop.set()
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)
        watcher.close()
        if writer.ident is not None:  # started
            writer.join(30)
    assert watcher.distinct() == COUNT
