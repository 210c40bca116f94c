"""What ``run`` and ``dev`` tell a user while they work (issue 27): where the state goes, a line when
the workers are ready, the outputs as they come (``dev --follow``), and a summary when they stop.

Kept in the command-line layer: the worker counts what it does in its Prometheus metrics
(``kafka/metrics.py``) and says whether it is ready; this module only reads those.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, TextIO

#: How often the ready notice and the follower look again.
POLL_SECONDS = 0.1
#: After the workers stop, how long the follower may take to print what they committed last.
DRAIN_SECONDS = 5.0


def use_state_dir(topo: Any, chosen: str | None) -> tuple[Path, bool]:
    """Point every program's state at ``chosen``, or at a fresh temporary folder: the embedded
    broker starts empty each run, and state kept from an earlier run (the shipped topologies'
    default state_dir) would describe records that no longer exist. Returns the folder and
    whether it is temporary (removed at the end)."""
    if chosen is not None:
        path, temporary = Path(chosen).resolve(), False
    else:
        path, temporary = Path(tempfile.mkdtemp(prefix="eventscript-dev-")), True
    topo.state_dir = str(path)
    for cfg in topo.programs:
        cfg.state_dir = None
    return path, temporary


def remove_state_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


class ReadyNotice:
    """Prints one line once every worker of ``runner`` is ready (has its tasks and restored them)."""

    def __init__(self, runner: Any, line: str, out: TextIO = sys.stderr) -> None:
        self._runner = runner
        self._line = line
        self._out = out
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._wait, name="ready-notice", daemon=True)

    def __enter__(self) -> ReadyNotice:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _wait(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            if self._runner.ready():
                print(self._line, file=self._out, flush=True)
                return


def wall_clock_notice(topo: Any, runner: Any) -> str | None:
    """What ``dev --trace`` tells a user whose programs have timers on the wall clock (the default
    ``clock``): their timers fire in real time from the start of the run, not at the trace's
    times, so a five-minute ``elapse`` shows nothing in a short run although ``eventscript test``
    printed its output. None when no program is in that case."""
    timed = [w.cfg for w in runner.workers if w.cfg.clock == "wall" and w.program.program.timers]
    if not timed:
        return None
    where = ", ".join(f"{cfg.name} ({topo.where_of(cfg)})" for cfg in timed)
    runs, their, program = ("runs", "its", "program") if len(timed) == 1 else ("run", "their", "programs")
    return (
        f"note: {where} {runs} on the wall clock (clock: wall, the default): {their} timers fire in "
        "real time from now, not at the trace's times, so the output can differ from 'eventscript test'; "
        f"to replay the trace's time as the tester does, add 'clock: record' to the {program} in the topology"
    )


def summary(runner: Any) -> str:
    """Records in and out of each program, from the worker's own counters. Records in (and
    processed) count a trace's ticks and the progress markers of record-time stages with the
    events: they once read "68 events processed" after "published 17 events"."""
    registry = runner.metrics.registry
    parts = []
    for w in runner.workers:

        def count(kind: str, name: str = w.cfg.name) -> int:
            value = registry.get_sample_value("eventscript_records_total", {"program": name, "kind": kind})
            return int(value or 0)

        parts.append(
            f"  {w.cfg.name}: {count('consumed')} records in (events, ticks and progress markers), "
            f"{count('processed')} processed, "
            f"{count('produced')} records written (outputs, $error, changelog, repartition), "
            f"{count('errors')} $error"
        )
    return "\n".join(["stopped:", *parts])


def output_topics(topo: Any) -> list[str]:
    """Every program's output and error topics, each once, in topology order."""
    topics: list[str] = []
    for cfg in topo.programs:
        for t in [*dict.fromkeys(cfg.outputs.values()), cfg.error_topic]:
            if t not in topics:
                topics.append(t)
    return topics


def followed_line(m: Any) -> str | None:
    """The JSON line ``dev --follow`` prints for record ``m``; None for a progress marker or a
    trace's tick, which are no program's events (they printed as events named null on every
    topic a later stage reads; ``eventscript tail`` leaves them out too)."""
    import orjson

    from ..task import codec
    from ..topology.headers import HEADER_PROGRESS, HEADER_TICK

    headers = m.headers()
    if codec.header(headers, HEADER_PROGRESS) is not None or codec.header(headers, HEADER_TICK) is not None:
        return None
    return orjson.dumps({"topic": m.topic(), **codec.record_to_json(m)}).decode() + "\n"


class Follower:
    """Prints the records of ``topics`` as JSON lines while they are written (``dev --follow``):
    committed records only (read_committed), each once, with the topic it is in."""

    def __init__(self, kafka: Any, topics: list[str], out: TextIO = sys.stdout) -> None:
        self._kafka = kafka
        self._topics = topics
        self._out = out
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="follow", daemon=True)
        self.printed = 0

    def __enter__(self) -> Follower:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

        from ..kafka import clients, codec

        consumer = Consumer(clients.consumer_config(self._kafka, f"eventscript-follow-{time.time_ns()}"))
        try:
            parts = [
                TopicPartition(t, p, OFFSET_BEGINNING)
                for t in self._topics
                for p in sorted(consumer.list_topics(t, timeout=10).topics[t].partitions)
            ]
            consumer.assign(parts)
            seen: set[bytes] = set()
            at_end: set[tuple[str, int]] = set()
            deadline = None
            while True:
                stopping = self._stop.is_set()
                if stopping and deadline is None:
                    deadline = time.monotonic() + DRAIN_SECONDS
                    # An end seen before the stop says nothing of records committed just before
                    # it: read every partition to its end again (a seek fetches anew and reports
                    # the end once more), so the last outputs are never cut off.
                    at_end.clear()
                    for tp in consumer.position(parts):
                        if tp.offset >= 0:
                            consumer.seek(tp)
                for m in consumer.consume(500, POLL_SECONDS):
                    err = m.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            at_end.add((str(m.topic()), int(m.partition() or 0)))
                        continue
                    at_end.discard((str(m.topic()), int(m.partition() or 0)))
                    line = followed_line(m)
                    if line is None:
                        continue
                    rid = codec.header(m.headers(), codec.HEADER_ID)
                    if rid is not None:
                        if rid in seen:
                            continue
                        seen.add(rid)
                    self._out.write(line)
                    self._out.flush()
                    self.printed += 1
                if deadline is not None and (len(at_end) == len(parts) or time.monotonic() > deadline):
                    return  # drained what was committed before the stop
        finally:
            consumer.close()
