"""Where a group key belongs: canonical key bytes and Kafka's murmur2 partitioner.

A record belongs to the partition its group key hashes to, exactly as a Java (or
``murmur2_random``) producer would place a record keyed by the canonical key bytes: the group key
as a JSON array in the conformance encoding, e.g. ``["T1","IBM"]``. Records that arrived
elsewhere are re-keyed and re-published to the program's repartition topic.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import orjson

from ..engine.encoding import encode
from ..language.types import Type

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), as an unsigned 32-bit int."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    extra = length & 3
    if extra == 3:
        h ^= data[n4 + 2] << 16
    if extra >= 2:
        h ^= data[n4 + 1] << 8
    if extra >= 1:
        h ^= data[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


@lru_cache(maxsize=65_536)
def partition_of(key: bytes, partitions: int) -> int:
    """The partition Java's default partitioner (and librdkafka's murmur2_random) picks."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def key_bytes(key: tuple[Any, ...] | None, types: list[Type] | None) -> bytes | None:
    """Canonical bytes of a group key: a compact JSON array in the conformance encoding."""
    if key is None or types is None:
        return None
    return orjson.dumps([encode(k, t) for k, t in zip(key, types)])
