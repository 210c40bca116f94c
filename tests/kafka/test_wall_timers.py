"""Wall-clock timers (issue: the Kafka worker): a timer fires on an idle partition with no new
records, and an ``elapse`` timer pending when its worker is killed fires once after the restart
(at once, when it is overdue); the outputs' times are whole milliseconds, with no ``es-time``."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import orjson
import pytest
from kafka_helpers import Broker, KeyedProducer, read_many, start_worker, told, topology, unique, wait_for

PROGRAM = """
in {string k;} Arm group(Arm.k)
out {string k; time armed; time fired;} Fired
( Arm() { armed = now(); } elapse[3 seconds](t) { !>Fired({k: group[0], armed: armed, fired: t}); } )*
"""


def _fired(broker: Broker, topic: str) -> list[dict]:  # type: ignore[type-arg]
    return [orjson.loads(m.value()) for m in read_many(broker, [topic], idle=0.2, dedupe=False)[topic]]


@pytest.mark.kafka
@pytest.mark.slow
def test_wall_clock_timers(broker: Broker, tmp_path: Path) -> None:
    name = unique("wall")
    (tmp_path / "p.es").write_text(PROGRAM)
    topo = topology(
        broker,
        tmp_path,
        [
            {
                "name": name,
                "source": "p.es",
                "clock": "wall",
                "commit_interval_ms": 50,
                "inputs": [{"topic": f"{name}-in", "event": "Arm"}],
                "outputs": {"default": f"{name}-out"},
            }
        ],
        {f"{name}-in": {"partitions": 2}},
    )
    from eventscript.kafka.admin import Admin
    from eventscript.kafka.config import load_topology

    t = load_topology(topo)
    Admin(t).prepare(t.programs)
    changelog = t.changelog_topic(t.programs[0])
    producer = KeyedProducer(broker, f"{name}-in", 2)
    log = tmp_path / "worker.log"
    worker = start_worker(topo, "-v", log=log)
    out = f"{name}-out"
    try:
        # 1. A timer fires on an idle partition: one record, then nothing more on any partition.
        wait_for(lambda: "assigned tasks" in log.read_text() if log.exists() else False, 60, what="assignment")
        producer.send("idle", {"k": "idle"}, int(time.time() * 1000))
        producer.producer.flush(10)
        wait_for(lambda: len(_fired(broker, out)) == 1, 20, what="the idle timer")
        fired = _fired(broker, out)[0]
        assert fired["k"] == "idle"

        # 2. Kill the worker while a timer is pending; restart after its deadline: it fires once.
        n_changelog = len(read_many(broker, [changelog], idle=0.2, dedupe=False)[changelog])
        producer.send("killed", {"k": "killed"}, int(time.time() * 1000))
        producer.producer.flush(10)
        wait_for(
            lambda: len(read_many(broker, [changelog], idle=0.2, dedupe=False)[changelog]) > n_changelog,
            20,
            what="the armed timer to be committed",
        )
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        time.sleep(4)  # the deadline passes while no worker runs
        restarted = time.time()
        worker = start_worker(topo, "-v", log=log)
        wait_for(lambda: len(_fired(broker, out)) == 2, 60, what="the overdue timer after the restart")
        time.sleep(4)  # nothing more may come (it fires once)
        fired = sorted(_fired(broker, out), key=lambda f: f["k"])  # two partitions: no global order
        assert [f["k"] for f in fired] == ["idle", "killed"]
        from eventscript.engine.timeutil import parse_time

        late = fired[1]
        deadline = parse_time(late["armed"]) + 3_000_000
        # It fired at its deadline, as the timer event's time says, once the restarted worker ran.
        assert parse_time(late["fired"]) == deadline
        assert deadline / 1e6 < restarted
        # The worker's wall clock reads whole milliseconds: an output's time is its timestamp,
        # with no es-time header beside it (docs/worker.md, "Time").
        records = read_many(broker, [out], idle=0.2, dedupe=False)[out]
        assert records and all("es-time" not in dict(m.headers() or []) for m in records)
        assert [m.timestamp()[1] * 1000 for m in records] == [
            parse_time(orjson.loads(m.value())["fired"]) for m in records
        ]
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
    except AssertionError as exc:
        raise told(exc, log) from exc
    finally:
        if worker.poll() is None:
            worker.kill()
