"""The worker's per-record path without a broker: one task of the counter program, fed polls of
real ``confluent_kafka.Message`` records, producing through the worker's own ``BatchProducer``
into a real producer that has no broker (its queue only fills), committing every few polls as the
checkpoint does (changelog records, then the store write).

Why: bench/worker_peers.py measures the whole worker against its peers on a broker, where a run
takes half a minute and the machine's load moves every figure; this one isolates the Python
path a record takes through ``Task`` (decode, key, place, feed, output, id, changelog, store) so
that a change to it can be measured in seconds, in CPU time of one thread, and profiled.

Records are those of bench/worker_peers.py (``{"k", "v", "sent"}`` keyed ``k<i>``), keeping only
the keys the task owns of ``--partitions`` (so nothing is re-published). ``--digest`` records every
produce call instead of producing (on record time, so that timestamps do not depend on the wall
clock) and prints a SHA-256 of them: two trees that print the same digest sent the same records
(topic, partition, key, value, headers, timestamp) in the same order.

``--headers`` gives the records the headers of their writer: none (an external producer),
``produce`` (``eventscript produce``: the trace position in ``es-seq``) or ``program`` (another
program's outputs on an intermediate topic: ``es-event``, ``es-program``, ``es-id``, ``es-seq``).

Usage: python bench/task_path.py [--records N] [--keys K] [--order random|zipf] [--rounds R]
                                 [--guarantee at_least_once|exactly_once] [--profile] [--digest]
                                 [--headers none|produce|program]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import gc
import hashlib
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
# This tree's code, unless PYTHONPATH names a tree (a before/after comparison runs one tree's code
# by it: put first, this tree's would run on both sides).
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(BENCH.parent / "service"))
sys.path.insert(0, str(BENCH))

import orjson  # noqa: E402
from confluent_kafka import Message, Producer  # noqa: E402

from eventscript.automata.compile import compile_source  # noqa: E402
from eventscript.engine import tuning  # noqa: E402
from eventscript.engine.tuning import configure_gc  # noqa: E402
from eventscript.kafka.partitioner import partition_of  # noqa: E402
from eventscript.kafka.producer import BatchProducer  # noqa: E402
from eventscript.task.task import Task  # noqa: E402
from eventscript.topology.config import InputConfig, ProgramConfig  # noqa: E402
from key_draw import drawn_keys  # noqa: E402

#: The counter program of bench/worker_peers.py (one count per key, an output per record).
COUNTER = """
in {string k; double v; long sent;} Reading group(Reading.k)
out {string k; long n;} Count
{ n = 0; }
( Reading(r) { n = n + 1; !>Count({k: r.k, n: n}); } )*
"""
#: Records per poll (the worker's ``BATCH``) and polls per commit (a commit per 10,000 records:
#: the worker's at 100k records/s with at-least-once's 1 s interval is one per 100,000, with
#: exactly-once's 100 ms one per 10,000).
POLL = 2_000
POLLS_PER_COMMIT = 5
T0 = 1_767_225_600_000  # ms


def writer_headers(kind: str, i: int) -> list[tuple[str, bytes]] | None:
    """The headers the writer of the ``i``-th record drawn gives it (``--headers``)."""
    if kind == "produce":
        return [("es-seq", b"%d" % i)]
    if kind == "program":
        return [("es-event", b"Reading"), ("es-program", b"up"), ("es-id", b"up/src:0:%d/1" % i), ("es-seq", b"%d" % i)]
    return None


def records(n: int, keys: int, order: str, partitions: int, seed: int = 1, headers: str = "none") -> list[Message]:
    """The task's share of ``n`` records drawn as bench/worker_peers.py draws them: those whose
    key the Java client's murmur2 places on partition 0, with ``headers`` as their writer's."""
    drawn = drawn_keys(n, keys, order, seed)
    mine = {name for name in set(drawn) if partition_of(name.encode(), partitions) == 0}
    out = []
    for i, name in enumerate(drawn):
        if name in mine:
            value = orjson.dumps({"k": name, "v": i * 0.5, "sent": 0})
            out.append(
                Message(
                    topic="in",
                    partition=0,
                    offset=len(out),
                    key=name.encode(),
                    value=value,
                    timestamp=(1, T0 + i),
                    headers=writer_headers(headers, i),
                )
            )
    return out


class Recorder:
    """A producer that records what it is given (``--digest``)."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.count = 0
        self.topics: collections.Counter[str] = collections.Counter()

    def produce(self, topic: str, value: Any, key: Any, partition: int, cb: Any, _: Any, ts: int, headers: Any) -> None:
        self.digest.update(orjson.dumps([topic, partition, key, value, headers, ts], default=_bytes))
        self.count += 1
        self.topics[topic] += 1
        if cb is not None:
            cb(None, _Delivered(topic, partition, self.count))

    def begin_transaction(self) -> None:
        pass


class _Delivered:
    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self._t, self._p, self._o = topic, partition, offset

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o


def _bytes(x: Any) -> Any:
    if isinstance(x, bytes):
        return x.hex()
    raise TypeError(type(x))


def build(store: Path, guarantee: str, partitions: int, clock: str, producer: Any) -> Task:
    cfg = ProgramConfig(
        name="counter",
        source="counter.es",
        clock=clock,
        inputs=[InputConfig(topic="in", event="Reading")],
        outputs={"default": "out"},
        errors="err",
        guarantee=guarantee,
    )
    task = Task(0, compile_source(COUNTER, name="counter").require(), cfg, cfg.inputs, "rep", "chg", partitions, store)
    eos = guarantee == "exactly_once"
    into = _NoTransactions(producer) if eos else producer
    output = BatchProducer("counter", into, eos, "chg", lambda since: producer.poll(0.01))
    task.attach(*output.senders())
    task.load_from_store()
    if hasattr(task, "take_epoch"):  # (a Kafka worker's owner epoch: its changelog records carry it)
        task.take_epoch(1, 0)
    return task


class _NoTransactions:
    """The producer, for ``--guarantee exactly_once``: a producer without a broker cannot begin a
    transaction (librdkafka's transactional calls need one), and what they cost is librdkafka's,
    not the thread's path this bench measures; the worker's path under exactly-once is the rest."""

    def __init__(self, producer: Any) -> None:
        self._producer = producer
        self.produce = producer.produce

    def begin_transaction(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._producer, name)


#: ``engine.tuning.settle_gc``, which the worker calls at each commit (nothing where ``--gc`` is
#: not ``worker``: it acts only in a process ``configure_gc`` tuned; nothing in a tree from before
#: it, measured by PYTHONPATH).
settle_gc = getattr(tuning, "settle_gc", lambda: None)


def run(task: Task, msgs: list[Message]) -> dict[str, float]:
    """Feed ``msgs`` a poll at a time, committing every ``POLLS_PER_COMMIT`` polls and at the
    end; thread CPU seconds per phase."""
    add = task.group.add
    spent = {"add": 0.0, "process": 0.0, "changelog": 0.0, "store": 0.0}
    clock = time.thread_time
    for i in range(0, len(msgs), POLL):
        t0 = clock()
        for m in msgs[i : i + POLL]:
            add(m)
        t1 = clock()
        task.process(0)
        t2 = clock()
        spent["add"] += t1 - t0
        spent["process"] += t2 - t1
        if (i // POLL + 1) % POLLS_PER_COMMIT == 0 or i + POLL >= len(msgs):
            t3 = clock()
            changes = task.changelog_records()
            t4 = clock()
            task.store.write(changes, None, dict(task.position))
            settle_gc()  # (as the worker's commit does: kafka/checkpoint.py)
            spent["changelog"] += t4 - t3
            spent["store"] += clock() - t4
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=300_000, help="records drawn (the task keeps its share)")
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--order", default="random", choices=("random", "zipf"))
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--guarantee", default="at_least_once", choices=("at_least_once", "exactly_once"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile one round and print the top functions")
    ap.add_argument("--digest", action="store_true", help="print a digest of every record sent (record time)")
    ap.add_argument("--headers", default="none", choices=("none", "produce", "program"), help="the writer's headers")
    ap.add_argument(
        "--gc",
        default="worker",
        choices=("worker", "default", "off"),
        help="the collector: the worker's (engine.tuning.configure_gc, as TopologyRunner.run sets, and settle_gc "
        "at each commit), CPython's, off",
    )
    args = ap.parse_args()
    msgs = records(args.records, args.keys, args.order, args.partitions, headers=args.headers)
    if args.gc == "worker":
        configure_gc()  # (after the records are drawn: the worker's start-up objects are frozen so too)
    elif args.gc == "off":
        gc.disable()  # (what the collector costs at most: the worker's settings against none)
    share = f"task 0 of {args.partitions}, headers: {args.headers}"
    print(f"{len(msgs):,} records of {args.records:,} on {args.keys:,} keys ({args.order}), {share}")
    if args.digest:
        with tempfile.TemporaryDirectory() as tmp:
            rec = Recorder()
            run(build(Path(tmp), args.guarantee, args.partitions, "record", rec), msgs)
            print(f"digest {rec.digest.hexdigest()} over {rec.count:,} records sent")
        return
    producer = Producer(
        {
            "bootstrap.servers": "127.0.0.1:9",  # none: records only queue
            "queue.buffering.max.messages": 10_000_000,
            "queue.buffering.max.kbytes": 2_000_000,
            "log_level": 0,
        }
    )
    per_round = []
    phases: dict[str, list[float]] = {}
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            task = build(Path(tmp), args.guarantee, args.partitions, "wall", producer)
            if args.profile and r == 0:
                prof = cProfile.Profile()
                prof.runcall(run, task, msgs)
                pstats.Stats(prof).sort_stats("tottime").print_stats(30)
                task.close()
                continue
            spent = run(task, msgs)
            task.close()
        producer.purge()
        total = sum(spent.values())
        for k, v in spent.items():
            phases.setdefault(k, []).append(v / len(msgs) * 1e6)
        per_round.append(total)
        parts = ", ".join(f"{k} {v / len(msgs) * 1e6:.2f}" for k, v in spent.items())
        print(f"round {r + 1}: {total / len(msgs) * 1e6:.2f} µs CPU/record ({parts})")
    if per_round:
        best = min(per_round) / len(msgs) * 1e6
        med = statistics.median(per_round) / len(msgs) * 1e6
        least = ", ".join(f"{k} {min(v):.2f}" for k, v in phases.items())
        print(f"min {best:.2f} µs/record, median {med:.2f} µs/record: {1e6 / best:,.0f} records per CPU-second")
        print(f"least per phase (µs/record): {least}")


if __name__ == "__main__":
    main()
