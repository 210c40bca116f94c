"""Upgrading a running program on Apache Kafka (issue 22): a worker runs program v1 over the first
part of a trace and is killed -9; a worker started with v2 over the same state converts v1's
instances as the topology's ``upgrade`` policy says, and is itself killed -9 during the upgrade
(some keys converted and committed, others not yet), then restarted for the rest of the trace.

``clock: record`` makes the runs deterministic. With ``upgrade: carry`` the outputs after the
restart equal the tester's run of the plan (``upgrade_helpers.run_upgraded``: v1 up to the cut,
every instance converted there, v2 onwards); with ``restart`` they equal v2's run over the rest
of the trace from fresh instances; with no policy (``refuse``) the worker stops saying what to do.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import (
    Broker,
    KeyedProducer,
    TopicWatcher,
    program_entry,
    read_json_lines,
    start_worker,
    topology,
    unique,
    wait_for,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "upgrade"))
from upgrade_helpers import compiled, render, run_tester, run_upgraded

from eventscript.upgrade.plan import make_plan

#: After two Ticks a key pairs them, then goes quiet when no third follows within the timeout.
V1 = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long n; long m;} Pair, {string k; long n;} Quiet
( Tick(a) Tick(b) { !>Pair({k: group[0], n: a.n, m: b.n}); }
  ( Tick() | elapse[5 minutes]() { !>Quiet({k: group[0], n: a.n}); } Tick() )
)*
"""
#: A shorter timeout: every state carries, pending timers re-armed from their state's entry.
V2 = V1.replace("5 minutes", "2 minutes")
T0 = 1_767_254_400_000  # 2026-01-01 08:00:00 UTC, in ms
KEYS = [f"k{i}" for i in range(12)]

Item = tuple[str, Any]


def clock(ms: int) -> Item:
    s = ms // 1000
    return ("time", f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}")


def trace() -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(offset ms from 08:00, key) of each Tick before the cut and after it. Before: each key gets
    one to three Ticks, so that at the cut instances wait for their second Tick (no timer), for
    the timeout (a timer, due later in v1 than in v2) or past a pair. After: two more Ticks for
    half the keys, then one Tick of a last key an hour on, which fires every timer left."""
    before = [(i * 7_000 + j * 20_000, k) for i, k in enumerate(KEYS) for j in range(1 + i % 3)]
    after = [(300_000 + i * 40_000 + j * 10_000, k) for i, k in enumerate(KEYS) if i % 2 == 0 for j in range(2)]
    return sorted(before), [*sorted(after), (3_600_000, "last")]


def items(ticks: list[tuple[int, str]], first: int) -> list[Item]:
    out: list[Item] = []
    for n, (at, key) in enumerate(ticks, first):
        out += [clock(T0 % 86_400_000 + at), ("Tick", {"k": key, "n": n})]
    return out


def send(broker: Broker, topic: str, ticks: list[tuple[int, str]], first: int) -> None:
    producer = KeyedProducer(broker, topic, 1)
    for n, (at, key) in enumerate(ticks, first):
        producer.send(key, {"k": key, "n": n}, T0 + at)
    assert producer.producer.flush(30) == 0


def by_key(lines: list[dict[str, Any]]) -> dict[str, list[tuple[str, str, Any]]]:
    out: dict[str, list[tuple[str, str, Any]]] = {}
    for line in lines:
        out.setdefault(line["key"][0], []).append((line["time"], line["event"], line["value"]))
    return out


class Upgrade:
    """One application: its topology files for v1 and v2, its topics, its workers' log."""

    def __init__(self, broker: Broker, tmp: Path) -> None:
        self.broker = broker
        self.tmp = tmp
        self.name = unique("upg")
        self.application = unique("app")
        self.log = tmp / "worker.log"
        (tmp / "v1.es").write_text(V1)
        (tmp / "v2.es").write_text(V2)
        self.input = f"{self.name}-in"
        self.output = f"{self.name}-out"
        self.workers: list[subprocess.Popen[bytes]] = []

    def topology(self, source: str, **settings: Any) -> Path:
        program = program_entry(self.name, "Tick", source, clock="record", commit_interval_ms=50, **settings)
        return topology(
            self.broker,
            self.tmp,
            [program],
            {self.input: {"partitions": 1}},
            file=f"{Path(source).stem}.yaml",
            application=self.application,
        )

    def committed(self, path: Path) -> int:
        """The worker's committed offset on the input (negative: none yet, or the group's
        coordinator not ready to say: a fresh broker loads its coordinators a while)."""
        from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

        from eventscript.kafka.config import load_topology

        topo = load_topology(path)
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": topo.group_id(topo.programs[0])})
        try:
            (tp,) = consumer.committed([TopicPartition(self.input, 0)], timeout=10)
            return int(tp.offset)
        except KafkaException as exc:
            if exc.args[0].retriable() or exc.args[0].code() in (KafkaError.NOT_COORDINATOR, KafkaError._TIMED_OUT):
                return -1
            raise
        finally:
            consumer.close()

    def run_v1(self, before: list[tuple[int, str]]) -> None:
        """v1 over the records before the cut, killed -9 once it has committed all of them."""
        v1 = self.topology("v1.es")
        from eventscript.kafka.admin import Admin
        from eventscript.kafka.config import load_topology

        Admin(load_topology(v1)).prepare(load_topology(v1).programs)
        send(self.broker, self.input, before, 0)
        worker = start_worker(v1, "-v", log=self.log)
        try:
            wait_for(lambda: self.committed(v1) == len(before), 180, interval=0.5, what="v1 committed the cut")
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.wait(30)

    def outputs(self) -> list[dict[str, Any]]:
        return read_json_lines(self.broker, self.output)

    def start(self, path: Path, *args: str) -> subprocess.Popen[bytes]:
        """``eventscript run`` of the topology at ``path`` (with ``args``), logging to the
        application's log; ``kill_left`` kills it if the test ends while it runs."""
        worker = start_worker(path, *args, log=self.log)
        self.workers.append(worker)
        return worker

    def stop(self, worker: subprocess.Popen[bytes]) -> None:
        """Stops ``worker`` as an operator would (SIGTERM): it must exit cleanly within 60 s."""
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0, self.log.read_text()[-3000:]

    def kill_left(self) -> None:
        """Kills (-9) every worker of the test still running: a failed test leaves none behind."""
        for worker in self.workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait(30)


@pytest.mark.kafka
@pytest.mark.slow
def test_carry_after_kill_9_gives_the_tester_run_of_the_plan(broker: Broker, tmp_path: Path) -> None:
    broker.require_real("exactly-once outputs across kill -9")
    before, after = trace()
    old, new = compiled(V1, "p"), compiled(V2, "p")
    plan = make_plan(old, new)
    assert plan.exit_code == 0  # every state carries
    first, rest = items(before, 0), items(after, len(before))
    want, conversions = run_upgraded(plan, render(first + rest), len(first))
    assert {c.verdict for c in conversions} == {"carried"}
    app = Upgrade(broker, tmp_path)
    app.run_v1(before)
    assert by_key(app.outputs()) == by_key(run_tester(old, first))  # v1's outputs up to the cut

    half = len(after) // 2
    send(broker, app.input, after[:half], len(before))
    v2 = app.topology("v2.es", upgrade="carry")
    watcher = TopicWatcher(broker, app.output)
    worker = app.start(v2, "-v")
    try:
        at_cut = len(run_tester(old, first))
        wait_for(lambda: watcher.distinct() > at_cut, 180, what="v2's first outputs")
        # Killed during the upgrade: the keys v2 has met (and those with timers) are converted
        # and committed, the others are still v1's in the store and the changelog.
        worker.send_signal(signal.SIGKILL)
        worker.wait(30)
        send(broker, app.input, after[half:], len(before) + half)
        worker = app.start(v2, "-v")
        wait_for(lambda: watcher.distinct() >= len(want), 180, what="every output of the upgraded run")
        app.stop(worker)
    finally:
        watcher.close()
        app.kill_left()
    got = app.outputs()
    assert by_key(got) == by_key(want)
    assert len(got) == len(want)
    assert any(line["event"] == "Quiet" for line in got[at_cut:]), "no re-armed timer fired"
    log = app.log.read_text()
    assert "instances carried" in log and "(carry)" in log


@pytest.mark.kafka
@pytest.mark.slow
def test_the_default_policy_stops_the_worker_saying_what_to_do(broker: Broker, tmp_path: Path) -> None:
    before, _ = trace()
    app = Upgrade(broker, tmp_path)
    app.run_v1(before)
    worker = app.start(app.topology("v2.es"))
    try:
        assert worker.wait(180) == 1
    finally:
        app.kill_left()
    log = app.log.read_text()
    assert f"program {app.name}: task 0: the stored state was written by version es1-" in log, log[-3000:]
    assert "eventscript upgrade plan OLD NEW" in log and "'upgrade: carry'" in log
    assert len(app.outputs()) == len(run_tester(compiled(V1, "p"), items(before, 0)))  # nothing from v2


@pytest.mark.kafka
@pytest.mark.slow
def test_restart_starts_every_old_instance_afresh(broker: Broker, tmp_path: Path) -> None:
    broker.require_real("exactly-once outputs across kill -9")
    before, after = trace()
    first, rest = items(before, 0), items(after, len(before))
    at_cut = run_tester(compiled(V1, "p"), first)
    want = at_cut + run_tester(compiled(V2, "p"), rest)
    assert len(want) > len(at_cut)  # v2 has outputs of its own
    app = Upgrade(broker, tmp_path)
    app.run_v1(before)
    send(broker, app.input, after, len(before))
    worker = app.start(app.topology("v2.es", upgrade="restart"), "-v")
    watcher = TopicWatcher(broker, app.output)
    try:
        wait_for(lambda: watcher.distinct() >= len(want), 180, what="every output")
        app.stop(worker)
    finally:
        watcher.close()
        app.kill_left()
    assert by_key(app.outputs()) == by_key(want)
    assert "restarted" in app.log.read_text()
