"""Where a group key belongs: canonical key bytes and Kafka's murmur2 partitioner.

A record belongs to the partition its group key hashes to, exactly as a Java (or
``murmur2_random``) producer would place a record keyed by the canonical key bytes: the group key
as a JSON array in the conformance encoding, e.g. ``["T1","IBM"]``. Records that arrived
elsewhere are re-keyed and re-published to the program's repartition topic.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import orjson

from ..engine.encoding import encode
from ..language.types import LONG, STRING, Type
from .native_partitioner import native_murmur2_partition

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
#: Word count → the unpacker of that many little-endian 32-bit words.
_WORDS: dict[int, Callable[[bytes], tuple[int, ...]]] = {}


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), as an unsigned 32-bit int.
    Every record of a key seen for the first time in a while pays for it, so the 4-byte words
    are read with one ``struct`` call and each round is folded into as few big-int operations
    as it takes (exactness: tests/kafka/test_partitioner.py, against the reference loop)."""
    length = len(data)
    h = 0x9747B28C ^ length
    n4 = length >> 2
    if n4:
        unpack = _WORDS.get(n4)
        if unpack is None:
            unpack = _WORDS[n4] = struct.Struct(f"<{n4}I").unpack_from
        for k in unpack(data):
            k = (k * _M) & _MASK
            h = ((h * _M) ^ ((k ^ (k >> 24)) * _M)) & _MASK
    extra = length & 3
    if extra:
        i = n4 << 2
        if extra == 3:
            h ^= data[i + 2] << 16
        if extra >= 2:
            h ^= data[i + 1] << 8
        h = ((h ^ data[i]) * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    return h ^ (h >> 15)


def python_murmur2_partition(key: bytes, partitions: int) -> int:
    """The partition Java's default partitioner (and librdkafka's murmur2_random) picks, in
    Python: the reference, and the fallback where librdkafka's is not found."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


#: The partition Java's default partitioner (and librdkafka's murmur2_random) picks; not cached
#: (tasks keep their own cache, ``Routing.place``): librdkafka's own partitioner where it is
#: found and agrees with the Java client's vectors (``native_partitioner``), else the Python one.
#: (It was off by default for a while: the fault harness's exactly_once-record failures blamed on
#: it were restores resuming their inputs at librdkafka's own offsets, kafka/task_manager.py; the two
#: agree on 3.5 million keys and partition counts, empty, NUL and non-ASCII keys among them, from
#: four threads at once: tests/kafka/test_partitioner.py checks random keys.)
murmur2_partition: Callable[[bytes, int], int] = native_murmur2_partition(murmur2) or python_murmur2_partition


@lru_cache(maxsize=65_536)
def partition_of(key: bytes, partitions: int) -> int:
    """The partition Java's default partitioner (and librdkafka's murmur2_random) picks."""
    return murmur2_partition(key, partitions)


def key_bytes(key: tuple[Any, ...] | None, types: list[Type] | None) -> bytes | None:
    """Canonical bytes of a group key: a compact JSON array in the conformance encoding."""
    if key is None or types is None:
        return None
    return orjson.dumps([encode(k, t) for k, t in zip(key, types)])


def _string_key_bytes(value: str) -> bytes:
    """``key_bytes((value,), [STRING])``: a printable ASCII string without quote or backslash is
    its own JSON text; any other goes through orjson."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return b'["%s"]' % value.encode()
    return compact_bytes(orjson.dumps((value,)))


def value_key_bytes(types: list[Type] | None) -> Callable[[Any], bytes] | None:
    """For a group key of one string or long: its value → ``key_bytes`` of its one-tuple, in a
    new allocation of its own size (held until the store is written: orjson's output would keep
    a 4 KiB buffer each). None for other keys."""
    if types is None or len(types) != 1:
        return None
    if types[0] == STRING:
        return _string_key_bytes
    if types[0] == LONG:
        return lambda value: b"[%d]" % value
    return None


def compact_bytes(raw: bytes) -> bytes:
    """A copy of ``raw`` in an allocation of its own size (see ``state.changelog.compact``)."""
    return bytes(memoryview(raw))
