"""A zombie's commit is fenced even when its batch processed no input (issue 20, fault 2).

Worker A processes a key's record and commits; it is then frozen (SIGSTOP) past its session
timeout, with the key's wall-clock timer due while it is frozen. Worker B takes the task, restores
the key and fires the overdue timer. A resumes: its timer is overdue too, it fires it and commits.
Its commit must fail with the group's fencing error (the batch carries offsets and the consumer's
generation), and A must drop its tasks and rejoin: a ``read_committed`` reader sees the timer's
output once. The issue's review found that the old code went back to its last commit on
ILLEGAL_GENERATION, fired the timer again and committed a transaction with no offsets, which
nothing fenced.

A's consumer may also notice its lost session as soon as it resumes and drop the task before the
second commit (the old code passed some runs so). A runs as ``zombie_worker.py``, whose consumer
is held back from the moment before the freeze until A commits or gives its partitions up: the
commit always comes first, and the old code (6353945 with the fault 2 fix reverted) shows the
duplicate Quiet every time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from kafka_helpers import (
    ROOT,
    Broker,
    KeyedProducer,
    program_entry,
    read_many,
    start_worker,
    told,
    topology,
    unique,
    wait_for,
)

ZOMBIE_WORKER = Path(__file__).with_name("zombie_worker.py")

#: Quiet after 4 s of wall time: due while A is frozen (B needs A's 3 s session timeout and a
#: restore before it owns the task).
PROGRAM = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count;} Count, {string k; long count;} Quiet

{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count}); } )*
elapse[4 seconds]() { !>Quiet({k: group[0], count: count}); }
"""


def _start_zombie(topo: Path, log: Path) -> subprocess.Popen[bytes]:
    """``eventscript run -v`` through zombie_worker.py (SIGUSR1 holds its consumer back)."""
    return subprocess.Popen(
        [sys.executable, str(ZOMBIE_WORKER), "run", str(topo), "-v"],
        stdout=open(log, "ab"),
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _outputs(broker: Broker, topic: str) -> list[tuple[str, dict[str, object]]]:
    from eventscript.kafka import codec

    records = read_many(broker, [topic], dedupe=False, snapshot=True)[topic]
    return [(codec.header(m.headers(), codec.HEADER_EVENT).decode(), orjson.loads(m.value())) for m in records]


@pytest.mark.kafka
@pytest.mark.slow
def test_zombie_commit_after_timer_is_fenced(broker: Broker, tmp_path: Path) -> None:
    broker.require_real("a zombie fenced by the group generation")
    name = unique("zombie")
    (tmp_path / "p.es").write_text(PROGRAM)
    app = unique("app")
    program = program_entry(name, "Tick", clock="wall", guarantee="exactly_once", commit_interval_ms=1)
    topics = {f"{name}-in": {"partitions": 1}}
    topos = [
        topology(broker, tmp_path, [program], topics, file=f"{w}.yaml", application=app, state=f"state-{w}")
        for w in ("a", "b")
    ]
    from eventscript.kafka.admin import Admin
    from eventscript.kafka.config import load_topology

    Admin(load_topology(topos[0])).prepare(load_topology(topos[0]).programs)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    out = f"{name}-out"
    a = _start_zombie(topos[0], logs[0])
    b = None
    try:
        wait_for(lambda: "assigned tasks [0]" in logs[0].read_text(), 60, what="A to own task 0")
        producer = KeyedProducer(broker, f"{name}-in", 1)
        producer.send("k", {"k": "k", "n": 0}, 1_767_225_600_000)
        producer.producer.flush(30)
        wait_for(lambda: [e for e, _ in _outputs(broker, out)] == ["Count"], 60, what="A's committed Count")
        a.send_signal(signal.SIGUSR1)  # A's consumer hears nothing more until A commits or rejoins
        wait_for(lambda: "zombie hold in effect" in logs[0].read_text(), 30, what="A's consumer to be held")
        a.send_signal(signal.SIGSTOP)  # the timer is due in 4 s, while A is frozen
        b = start_worker(topos[1], "-v", log=logs[1])
        wait_for(
            lambda: [e for e, _ in _outputs(broker, out)] == ["Count", "Quiet"],
            90,
            what="B to fire the overdue timer and commit",
        )
        a.send_signal(signal.SIGCONT)  # A fires its overdue timer too, and commits
        wait_for(lambda: "zombie hold released" in logs[0].read_text(), 60, what="A to commit or give its tasks up")
        held = logs[0].read_text().rpartition("zombie hold armed")[2].partition("zombie hold released")[0]
        assert "assignment lost" not in held, "A heard of its lost assignment while held"
        wait_for(
            lambda: (
                "assigned tasks" in logs[0].read_text().rpartition("zombie hold released")[2] or a.poll() is not None
            ),
            60,
            what="A to rejoin the group",
        )
        for w in (a, b):
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        # (0, or 130 since `run` says a signal stopped it: kafka_cmds._run_and_report)
        assert a.wait(60) in (0, 130), logs[0].read_text()[-3000:]
        assert b.wait(60) in (0, 130), logs[1].read_text()[-3000:]
    except AssertionError as exc:
        raise told(exc, *logs) from exc
    finally:
        for w in (a, b):
            if w is not None and w.poll() is None:
                w.kill()
                w.wait()
    events = _outputs(broker, out)
    assert events == [("Count", {"k": "k", "count": 1}), ("Quiet", {"k": "k", "count": 1})], (
        f"a read_committed reader saw {events}\n--- A's log:\n{logs[0].read_text()[-4000:]}"
    )
