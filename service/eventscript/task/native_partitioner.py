"""librdkafka's murmur2 partitioner, called through ctypes: the partition of a key in C.

A worker at many keys computes the partition of nearly every record's key afresh (a key seen
once per commit is in no cache), and Kafka's murmur2 in Python costs 1–3 µs a key; no
well-kept PyPI package computes Kafka's murmur2 (``mmh3`` is MurmurHash3, the murmur2
packages are unmaintained or 64-bit). librdkafka, which confluent-kafka already ships, exports
``rd_kafka_msg_partitioner_murmur2`` in its public API (rdkafka.h): the very function its
``murmur2_random`` producers place keyed records with, ignoring its topic and opaque arguments.

The library is looked for beside the confluent-kafka package (its wheels bundle it in
``confluent_kafka.libs``) and then on the system; it is used only when it gives the Java client's
known partitions (``org.apache.kafka.common.utils.UtilsTest``) and the Python function's on a
spread of key lengths, so a missing or different library leaves the Python one in place.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import os
import platform
from collections.abc import Callable
from pathlib import Path

#: Set to 1 to keep the Python partitioner (a comparison, a suspected library difference).
DISABLE_ENV = "EVENTSCRIPT_PYTHON_MURMUR2"

#: Kafka's UtilsTest.testMurmur2 vectors: key → signed 32-bit murmur2.
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}

#: Machines where the call goes without ``argtypes``: their converters (``from_param``, one per
#: argument) take half of a call's ~0.4 µs, paid by nearly every record at many keys (a key new
#: to the task's placement cache). Without them ctypes passes ``None`` as a NULL pointer, bytes
#: as ``char *`` and an int as a C ``int``, which libffi widens to the full register on these
#: ABIs (x86-64, AArch64), so the ``size_t`` length arrives whole (a key is far under 2 GiB).
WIDENING_MACHINES = frozenset({"x86_64", "amd64", "aarch64", "arm64"})

#: The partition counts the check places the vectors on.
_CHECK_PARTITIONS = (1, 3, 7, 12, 1000, 2**31 - 1)


def librdkafka_candidates() -> list[str]:
    """Where librdkafka may be: the copy bundled with the installed confluent-kafka wheel, then
    the system's (found without importing confluent-kafka)."""
    found: list[str] = []
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is not None and spec.origin is not None:
        package = Path(spec.origin).parent
        for folder in (package.parent / "confluent_kafka.libs", package):
            found += sorted(str(p) for p in folder.glob("librdkafka*.so*"))
            found += sorted(str(p) for p in folder.glob("librdkafka*.dylib"))
    system = ctypes.util.find_library("rdkafka")
    if system is not None:
        found.append(system)
    return found


def _load(path: str) -> Callable[[bytes, int], int] | None:
    try:
        lib = ctypes.PyDLL(path)  # the GIL kept: a call of ~100 ns is not worth releasing it
        fn = lib.rd_kafka_msg_partitioner_murmur2
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int32
    if platform.machine().lower() not in WIDENING_MACHINES:
        c = ctypes
        fn.argtypes = [c.c_void_p, c.c_char_p, c.c_size_t, c.c_int32, c.c_void_p, c.c_void_p]

    def partition(key: bytes, partitions: int) -> int:
        p: int = fn(None, key, len(key), partitions, None, None)
        return p

    return partition


def agrees(partition: Callable[[bytes, int], int], reference: Callable[[bytes], int]) -> bool:
    """Whether ``partition`` places the Java client's vectors, and keys of every length up to
    70 bytes, where ``reference`` (an unsigned murmur2) does."""
    keys = list(JAVA_VECTORS) + [bytes(range(n)) for n in range(71)] + [b"k%d" % i for i in range(200)]
    for key in JAVA_VECTORS:
        if reference(key) != JAVA_VECTORS[key] & 0xFFFFFFFF:
            return False
    positive = [(k, reference(k) & 0x7FFFFFFF) for k in keys]
    return all(partition(k, n) == h % n for k, h in positive for n in _CHECK_PARTITIONS)


def native_murmur2_partition(reference: Callable[[bytes], int]) -> Callable[[bytes, int], int] | None:
    """librdkafka's murmur2 partitioner as ``(key bytes, partitions) -> partition``, or None when
    it is not found, is disabled (``EVENTSCRIPT_PYTHON_MURMUR2=1``) or disagrees with
    ``reference`` (the Python murmur2, passed in: this module imports no other)."""
    if os.environ.get(DISABLE_ENV) == "1":
        return None
    for path in librdkafka_candidates():
        partition = _load(path)
        if partition is not None and agrees(partition, reference):
            return partition
    return None
