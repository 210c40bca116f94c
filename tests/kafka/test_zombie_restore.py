"""A zombie's rejoin restores its tasks while their new owner commits (the exactly-once duplicate
of test_outages' zombie test, 2026-11-27: a key's instance of long ago back in a later restore).

Worker A owns the task; its group consumer is held back (zombie_restore_worker.py) and A is frozen
past its session timeout while B takes the task over. Resumed, A fires a timer that came due,
its commit is refused, and it takes its tasks again to restore them while still held: it reads the
committed offsets, B commits two more records of key k, and A's restore then reads the changelog
to its end, B's new records included -- not covered by the offsets it read, so skipped. A is then
let go, loses the task, and is given it back when B stops: its restore goes on from its store. The
store must not have passed over B's records (kafka/restore.py): k's next count is B's plus one.
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
    outputs_by_key,
    program_entry,
    read_many,
    start_worker,
    unique,
    wait_for,
    worker_topologies,
)

ZOMBIE_WORKER = Path(__file__).with_name("zombie_restore_worker.py")

#: Key t's Quiet comes 10 s of wall time after A took its Stop (said by Stopped): due while A
#: is frozen, so that A's commit after it resumes is the one refused. A Quiet fired before A is
#: frozen leaves A nothing to commit (CI, 2026-11-28, with 4 s: A's restore never began). Key k
#: only counts.
QUIET_AFTER_S = 10
PROGRAM = f"""
in {{string k; long n;}} Tick group(Tick.k)
in {{string k;}} Stop group(Stop.k)
out {{string k; long count; long last;}} Count, {{string k; long count;}} Quiet, {{string k;}} Stopped

{{ count = 0; }}
( Tick(t) {{ count = count + 1; !>Count({{k: t.k, count: count, last: t.n}}); }} )*
Stop(s) {{ !>Stopped({{k: s.k}}); }} elapse[{QUIET_AFTER_S} seconds]() {{ !>Quiet({{k: group[0], count: count}}); }}
"""


def _outputs(broker: Broker, topic: str) -> list[tuple[str, dict[str, object]]]:
    from eventscript.kafka import codec

    records = read_many(broker, [topic], dedupe=False, snapshot=True)[topic]
    return [(codec.header(m.headers(), codec.HEADER_EVENT).decode(), orjson.loads(m.value())) for m in records]


def _after(log: Path, marker: str) -> str:
    """The log from the last ``marker`` on ('' before it is there)."""
    text = log.read_text()
    return text[text.rfind(marker) :] if marker in text else ""


@pytest.mark.kafka
@pytest.mark.slow
def test_a_zombies_restore_while_the_owner_commits_leaves_a_store_that_restores_right(
    broker: Broker, tmp_path: Path
) -> None:
    broker.require_real("a zombie fenced by the group generation")
    name = unique("zrestore")
    (tmp_path / "p.es").write_text(PROGRAM)
    program = program_entry(name, "Tick", clock="wall", guarantee="exactly_once", commit_interval_ms=1)
    program["inputs"].append({"topic": f"{name}-stop", "event": "Stop"})
    topics = {f"{name}-in": {"partitions": 1}, f"{name}-stop": {"partitions": 1}}
    topos = worker_topologies(broker, tmp_path, [program], topics, ["a", "b"])
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    out = f"{name}-out"
    ticks, stops = KeyedProducer(broker, f"{name}-in", 1), KeyedProducer(broker, f"{name}-stop", 1)
    t0 = 1_767_225_600_000

    def tick(key: str, n: int) -> None:
        ticks.send(key, {"k": key, "n": n}, t0 + n)
        ticks.producer.flush(30)

    def counted(n: int) -> bool:
        return any(e == "Count" and v["last"] == n for e, v in _outputs(broker, out))

    a = subprocess.Popen(
        [sys.executable, str(ZOMBIE_WORKER), "run", str(topos[0]), "-v"],
        stdout=open(log_a, "ab"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    b = None
    try:
        wait_for(lambda: "task 0: changelog from offset" in log_a.read_text(), 60, what="A to own task 0")
        tick("k", 0)
        tick("t", 1)
        stops.send("t", {"k": "t"}, t0 + 2)
        stops.producer.flush(30)
        wait_for(lambda: counted(0) and counted(1), 60, what="A's committed Counts")
        wait_for(lambda: any(e == "Stopped" for e, _ in _outputs(broker, out)), 60, what="A's Stop")
        a.send_signal(signal.SIGUSR1)
        wait_for(lambda: "zombie hold in effect" in log_a.read_text(), 30, what="A's consumer to be held")
        a.send_signal(signal.SIGSTOP)  # t's Quiet comes due while A is frozen
        assert not any(e == "Quiet" for e, _ in _outputs(broker, out)), (
            f"A fired t's Quiet before it was frozen: the test needs more than {QUIET_AFTER_S} s here"
        )
        b = start_worker(topos[1], "-v", log=log_b)
        wait_for(lambda: any(e == "Quiet" for e, _ in _outputs(broker, out)), 90, what="B to own the task")
        a.send_signal(signal.SIGCONT)  # A fires t's Quiet too; its commit is refused; it restores
        wait_for(lambda: "zombie restore: committed offsets read" in log_a.read_text(), 60, what="A's restore to begin")
        tick("k", 2)  # B commits these while A's restore waits
        tick("k", 3)
        wait_for(lambda: counted(3), 60, what="B's committed Counts")
        a.send_signal(signal.SIGUSR2)  # A's restore reads the changelog, B's new records in it
        wait_for(
            lambda: "task 0: changelog from offset" in _after(log_a, "zombie restore: going on"),
            60,
            what="A's restore to end",
        )
        a.send_signal(signal.SIGUSR2)  # A's consumer hears of the lost assignment
        wait_for(lambda: "assigned tasks" in _after(log_a, "zombie hold released"), 60, what="A to rejoin")
        b.send_signal(signal.SIGTERM)  # the task goes back to A, restored from A's store
        assert b.wait(60) in (0, 130), log_b.read_text()[-3000:]
        wait_for(
            lambda: "task 0: changelog from offset" in _after(log_a, "zombie hold released"),
            90,
            what="A's restore of the task given back",
        )
        tick("k", 4)
        wait_for(lambda: counted(4), 60, what="A's Count of k's next record")
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}\n--- A's log:\n{log_a.read_text()[-6000:]}\n--- B's log:\n"
            f"{log_b.read_text()[-3000:] if log_b.exists() else '(not started)'}"
        ) from exc
    finally:
        for w in (a, b):
            if w is not None and w.poll() is None:
                w.send_signal(signal.SIGCONT)
                w.kill()
                w.wait()
    raw = read_many(broker, [out], dedupe=False)[out]
    got, _ = outputs_by_key(raw)
    counts = [(v["last"], v["count"]) for e, v, _ in got[orjson.dumps(["k"]).decode()] if e == "Count"]
    assert counts == [(0, 1), (2, 2), (3, 3), (4, 4)], (
        f"k's counts {counts}\n--- A's log:\n{_after(log_a, 'zombie hold armed')[-5000:]}"
    )
