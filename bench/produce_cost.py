"""What a changelog record's headers cost librdkafka's ``produce`` (issue 26): the worker sends
one changelog record per changed key at each commit, and every record of a commit has the same
``es-pos`` and ``es-gen``. Sent as headers, each record's call converts a header list; sent in
front of the value (``state.changelog.batch_frame``), it costs a bytes concatenation. Measured
here alone, the variants interleaved, thread CPU per record (ns), least and median of
``--rounds``, into a real producer without a broker (its queue only fills; purged after each
variant):

- ``two headers``: the form before the frame (``es-pos``, ``es-gen``: one list shared by the
  commit's records, as the worker passed it);
- ``one header``: ``es-pos`` alone (a host without an owner epoch);
- ``frame``: the value after the batch frame, no headers (the worker's form now);
- ``bare``: the value alone, no headers (what a plain loop sends).

Values are 60 bytes, keys ``key000123``, one partition, positional arguments as the worker's
producer calls ``produce``.

Usage: python bench/produce_cost.py [--records N] [--rounds R]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))

from confluent_kafka import Producer

from eventscript.state.changelog import HEADER_EPOCH, HEADER_POSITION, batch_frame

POSITION = b'{"in:0":123456,"in:1":98765}'
EPOCH = b"12"


def variants(producer: Producer, n: int) -> dict[str, Callable[[], None]]:
    records = [(b"key%06d" % i, b"v" * 60) for i in range(n)]
    produce = producer.produce

    def two_headers() -> None:
        h = [(HEADER_POSITION, POSITION), (HEADER_EPOCH, EPOCH)]
        for k, v in records:
            produce("t", v, k, 0, None, None, 0, h)

    def one_header() -> None:
        h = [(HEADER_POSITION, POSITION)]
        for k, v in records:
            produce("t", v, k, 0, None, None, 0, h)

    def frame() -> None:
        head = batch_frame(POSITION, EPOCH)
        for k, v in records:
            produce("t", head + v, k, 0, None, None, 0, None)

    def bare() -> None:
        for k, v in records:
            produce("t", v, k, 0, None, None, 0, None)

    return {"two headers": two_headers, "one header": one_header, "frame": frame, "bare": bare}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    producer = Producer(
        {
            "bootstrap.servers": "127.0.0.1:1",  # (nothing listens: records stay queued)
            "queue.buffering.max.messages": 10_000_000,
            "queue.buffering.max.kbytes": 2_000_000,
            "linger.ms": 100_000,
            "log_level": 0,
        }
    )
    runs = variants(producer, args.records)
    ns: dict[str, list[float]] = collections.defaultdict(list)
    order = list(runs)
    for r in range(args.rounds):
        for name in order[r % len(order) :] + order[: r % len(order)]:
            t = time.thread_time()
            runs[name]()
            ns[name].append((time.thread_time() - t) / args.records * 1e9)
            producer.purge(in_queue=True)
            producer.poll(0)
    for name in order:
        print(f"{name:12s} least {min(ns[name]):6.0f} ns   median {statistics.median(ns[name]):6.0f} ns")


if __name__ == "__main__":
    main()
