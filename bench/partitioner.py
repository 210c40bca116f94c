"""CPU per key of the murmur2 partition a task computes for a key new to its cache (issue 26):
librdkafka's partitioner through ctypes (``task/native_partitioner.py``) against the Python
murmur2 it replaced, interleaved rounds in one process, process CPU time. Keys as the worker
benches write them (``k<i>``, 2-7 bytes), canonical JSON keys (``["T<i>","IBM"]``, 14-19 bytes),
and random bytes of 0-64.

Usage: PYTHONPATH=service python bench/partitioner.py [--keys N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "service"))

from eventscript.task.native_partitioner import native_murmur2_partition
from eventscript.task.partitioner import murmur2, python_murmur2_partition


def cpu_per_key(partition: Callable[[bytes, int], int], keys: list[bytes]) -> float:
    start = time.process_time()
    for k in keys:
        partition(k, 3)
    return (time.process_time() - start) / len(keys) * 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    native = native_murmur2_partition(murmur2)
    if native is None:
        sys.exit("librdkafka's partitioner was not found (or disagrees): nothing to compare")
    rnd = random.Random(26)
    sets = {
        "k<i>": [b"k%d" % i for i in range(args.keys)],
        '["T<i>","IBM"]': [b'["T%d","IBM"]' % i for i in range(args.keys)],
        "random 0-64 bytes": [rnd.randbytes(rnd.randrange(65)) for _ in range(args.keys)],
    }
    print(f"{args.keys:,} keys a set, {args.rounds} interleaved rounds; load average {os.getloadavg()}")
    for label, keys in sets.items():
        times: dict[str, list[float]] = {"librdkafka": [], "python": []}
        for r in range(args.rounds):
            order = [("librdkafka", native), ("python", python_murmur2_partition)]
            for name, fn in order if r % 2 else order[::-1]:
                times[name].append(cpu_per_key(fn, keys))
        med = {name: statistics.median(t) for name, t in times.items()}
        print(
            f"  {label:20} librdkafka {med['librdkafka']:6.0f} ns/key  python {med['python']:6.0f} ns/key"
            f"  ({med['python'] / med['librdkafka']:.1f}x; CPU medians)"
        )


if __name__ == "__main__":
    main()
