"""The moving parts of a chaos run: the workers (``eventscript run`` processes of one application,
as ``kafka_helpers.start_worker`` starts them) and a steady producer with poison records.

The fleet acts as an orchestrator would: a worker that exits on its own (a fenced exactly-once
worker does, issue 20 fault 8) is started again, and counted.
"""

from __future__ import annotations

import random
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from kafka_helpers import KeyedProducer, start_worker


class Fleet:
    """Worker slots 0-3 of one application: each its own topology file (same application, own
    state directory and so own instance id) and log."""

    def __init__(self, topologies: list[Path], logs: list[Path]) -> None:
        self.topologies = topologies
        self.logs = logs
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * len(topologies)
        #: Slots meant to run (a left worker is not revived).
        self.wanted: set[int] = set()
        self.counts = {"kills": 0, "freezes": 0, "joins": 0, "leaves": 0, "revived": 0}
        #: (slot, exit status, time) of each worker that exited on its own.
        self.exits: list[tuple[int, int, float]] = []

    def mark(self, slot: int, what: str) -> None:
        """A line in the worker's log saying what the harness did to it (``MARK`` lines: the
        log's evidence reads in order, and ``wedged`` splits the log by process)."""
        with self.logs[slot].open("a") as log:
            log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {MARK} {what}\n")

    def start(self, slot: int) -> None:
        self.mark(slot, "started")
        self.procs[slot] = start_worker(self.topologies[slot], "-v", log=self.logs[slot])
        self.wanted.add(slot)

    def revive(self) -> None:
        """Starts again every wanted worker that exited without being told to."""
        for slot in sorted(self.wanted):
            proc = self.procs[slot]
            if proc is not None and proc.poll() is not None:
                self.exits.append((slot, proc.returncode, time.time()))
                self.mark(slot, f"exited by itself with status {proc.returncode}")
                self.counts["revived"] += 1
                self.start(slot)

    def kill(self, slot: int) -> None:
        """kill -9, then a restart at once (the same instance id: static membership)."""
        proc = self.procs[slot]
        assert proc is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.mark(slot, "killed -9")
        self.counts["kills"] += 1
        self.start(slot)

    def freeze(self, slot: int) -> None:
        proc = self.procs[slot]
        assert proc is not None
        proc.send_signal(signal.SIGSTOP)
        self.mark(slot, "frozen (SIGSTOP)")
        self.counts["freezes"] += 1

    def thaw(self, slot: int) -> None:
        proc = self.procs[slot]
        assert proc is not None
        self.mark(slot, "resumed (SIGCONT)")
        proc.send_signal(signal.SIGCONT)

    def join(self, slot: int) -> None:
        self.start(slot)
        self.counts["joins"] += 1

    def leave(self, slot: int) -> None:
        """SIGTERM, as a scale-down does; the worker must exit cleanly."""
        self.wanted.discard(slot)
        proc = self.procs[slot]
        assert proc is not None
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(90)
        assert status == 0, f"worker {slot} left with status {status}: {tail(self.logs[slot])}"
        self.counts["leaves"] += 1

    def assignments(self, slots: list[int] | None = None) -> int:
        """How many times the workers' logs say they were assigned tasks (each rebalance that
        reached a worker, its first join included)."""
        chosen = range(len(self.logs)) if slots is None else slots
        return sum(_count(self.logs[s], "assigned tasks") for s in chosen)

    def running_since_start(self, slot: int) -> bool:
        """Whether the worker's process, since the harness last started it, says it runs (its signal
        handlers are in place: a SIGTERM before that kills a Python process still importing, -15)."""
        text = self.logs[slot].read_text(errors="replace")
        return RUNNING in text[text.rfind(f"{MARK} started") :]

    def stop_all(self) -> list[tuple[int, int]]:
        """SIGTERM to every running worker (SIGCONT first, for a frozen one); their exit statuses.
        A worker started moments ago (the round's last kill, a revival) is first given time to come
        up: what is judged is the orderly stop of a running worker, not of one still importing."""
        self.wanted.clear()
        statuses = []
        for slot, proc in enumerate(self.procs):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                deadline = time.monotonic() + START_TIMEOUT
                while proc.poll() is None and not self.running_since_start(slot) and time.monotonic() < deadline:
                    time.sleep(0.1)
        for proc in self.procs:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
        for slot, proc in enumerate(self.procs):
            if proc is None:
                continue
            try:
                statuses.append((slot, proc.wait(90)))
            except subprocess.TimeoutExpired:
                proc.kill()
                statuses.append((slot, proc.wait(30)))
        return statuses

    def kill_all(self) -> None:
        """Leaves no worker behind (the ``finally`` of a run)."""
        for proc in self.procs:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(30)


#: Marks the harness's own lines in a worker's log.
MARK = "CHAOS:"
#: What a worker logs once it runs, its signal handlers in place (``TopologyRunner.run``), and how
#: long a worker just started is given to say it before it is stopped anyway.
RUNNING = "SIGTERM stops it after the batch"
START_TIMEOUT = 60.0


def wedged(log: Path) -> list[str]:
    """Where a worker's client hit a fatal error (librdkafka's FATAL: the client is unusable)
    and the worker neither rejoined (no later "assigned tasks") nor exited by itself before the
    harness killed or stopped it: it ran on without a consumer. One line of evidence each."""
    found: list[str] = []
    fatal: str | None = None
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        if MARK in line:
            if fatal is not None and "exited by itself" not in line:
                found.append(f"{log.name}: {fatal[:300]} ... then nothing until: {line}")
            fatal = None
        elif " FATAL " in line and fatal is None:
            fatal = line
        elif "assigned tasks" in line:
            fatal = None
    if fatal is not None:
        found.append(f"{log.name}: {fatal[:300]} ... then nothing until the end of the log")
    return found


def _count(log: Path, text: str) -> int:
    return log.read_text(errors="replace").count(text) if log.exists() else 0


def tail(log: Path, chars: int = 3000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else "(no log)"


def log_lines(logs: list[Path], pattern: str) -> list[str]:
    """The lines of the workers' logs matching ``pattern``, prefixed with the log's name."""
    rx = re.compile(pattern)
    return [
        f"{log.name}: {line}"
        for log in logs
        if log.exists()
        for line in log.read_text(errors="replace").splitlines()
        if rx.search(line)
    ]


class PoisonedProducer(KeyedProducer):
    """``KeyedProducer`` at a steady rate until told to stop, with a share of poison records:
    bytes that do not decode as JSON, keyed and placed like a good record of the same key."""

    #: How many rounds of lone keys were sent (chaos_run._lone_keys names them by it).
    lone = 0

    def run_until(
        self, stop: threading.Event, rate: float, keys: int, poison: float, seed: int, step_ms: int = 250
    ) -> None:
        # Timestamps from a day ago (record time runs faster than the wall: ``step_ms`` per
        # record): records older than the topics' retention (7 days) are deleted as soon as a
        # broker checks it, which a restarted broker does at once; records more than an hour in
        # the future are refused (``log.message.timestamp.after.max.ms``).
        t0 = int(time.time() * 1000) - 24 * 3600 * 1000
        rnd = random.Random(seed)
        self.poisoned = 0
        start = time.monotonic()
        i = 0
        while not stop.is_set():
            k = f"k{rnd.randrange(keys)}"
            if rnd.random() < poison:
                self._send_poison(k, rnd, t0 + i * step_ms)
            else:
                self.send(k, {self.field: k, "n": i}, t0 + i * step_ms)
            i += 1
            if i % 10 == 0:
                self.producer.poll(0)
                behind = start + i / rate - time.monotonic()
                if behind > 0:
                    time.sleep(behind)
        self.producer.flush(60)

    def _send_poison(self, key: str, rnd: random.Random, timestamp: int) -> None:
        from eventscript.kafka.partitioner import partition_of

        kb = key.encode()
        value = b"\xff" + rnd.randbytes(rnd.randrange(1, 24))  # never UTF-8, so never JSON
        self.producer.produce(
            self.topic, key=kb, value=value, partition=partition_of(kb, self.partitions), timestamp=timestamp
        )
        self.sent += 1
        self.poisoned += 1

    def start_until(self, stop: threading.Event, **kwargs: Any) -> threading.Thread:
        t = threading.Thread(target=self.run_until, args=(stop,), kwargs=kwargs, daemon=True)
        t.start()
        return t
