"""Record keys as users' producers write them, and the partitioners that place them.

A grouped program's instances are keyed by their group key; Kafka places a record by the bytes of
its key. For the worker to find each key's records on the partition of its task — never
re-publishing a record that is already there — it must form key bytes and pick partitions exactly
as the producers of its inputs do. A *key scheme* says how:

- the key **format**: ``string`` — the one component of the group key as plain text (UTF-8;
  numbers and booleans as their JSON text), what every producer writes by hand (``sensor-1``);
  ``json`` — the group key as a compact JSON array (``["T1","IBM"]``), for keys of several
  components; ``bytes`` — the one component as the Java client's serializers write it (UTF-8 for
  a string, 8 bytes big-endian for a long or a double); ``none`` — the producers write no key
  (every record is re-published to the partition of its group key).
- the **partitioner**: ``murmur2`` (the Java client's default, Kafka Streams', and
  librdkafka's ``murmur2_random``) or ``consistent_random`` (librdkafka's default, so every
  confluent-kafka / librdkafka producer's: CRC32 of the key bytes).

A program's *home* scheme is its first input's: it decides the partition (task) of each key, and
the form of the keys of its outputs and ``$error`` records. An input whose records are placed by
another scheme is not co-partitioned with the first; its records are re-published when they are
not on the partition of their key. The local store and the changelog always key instances by
the canonical JSON form (``partitioner.key_bytes``), whatever the format.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import orjson

from ..engine.encoding import encode
from ..language.types import BOOLEAN, DOUBLE, LONG, STRING, Type
from ..topology.config import InputConfig, ProgramConfig, TopologyError
from ..topology.keyed import input_format
from .partitioner import key_bytes as canonical_key_bytes
from .partitioner import murmur2_partition

KeyFormat = Literal["string", "json", "bytes", "none"]
PartitionerName = Literal["murmur2", "consistent_random"]


def crc32_partition(key: bytes, partitions: int) -> int:
    """librdkafka's consistent(_random) partitioner for a non-empty key."""
    return zlib.crc32(key) % partitions


#: Routing bytes → partition, per partitioner; not cached: tasks keep their own cache
#: (``Task._place``), and the few other callers go through :func:`cached_partition`.
PARTITIONERS = {"murmur2": murmur2_partition, "consistent_random": crc32_partition}


@lru_cache(maxsize=65_536)
def cached_partition(partitioner: str, routing: bytes, partitions: int) -> int:
    return PARTITIONERS[partitioner](routing, partitions)


_LONG_BYTES = struct.Struct(">q")


@dataclass(frozen=True)
class KeyScheme:
    format: str
    partitioner: str
    types: tuple[Type, ...]

    def key_bytes(self, key: tuple[Any, ...] | None) -> bytes | None:
        """A group key as a record key in this format (None for ``none``)."""
        if key is None:
            return None
        fmt = self.format
        if fmt == "json":
            return canonical_key_bytes(key, list(self.types))
        if fmt == "none":
            return None
        value, ty = key[0], self.types[0]
        if fmt == "bytes":
            if ty == LONG:
                return struct.pack(">q", value)
            if ty == DOUBLE:
                return struct.pack(">d", value)
            return str(value).encode("utf-8", "surrogatepass")
        text = encode(value, ty)
        return (text if isinstance(text, str) else orjson.dumps(text).decode()).encode("utf-8", "surrogatepass")

    def routing_bytes(self, key: tuple[Any, ...]) -> bytes:
        """The bytes whose hash decides a key's partition (the canonical form when records carry
        no key: the repartition topic is keyed by it)."""
        kb = self.key_bytes(key)
        return kb if kb is not None else canonical_key_bytes(key, list(self.types))  # type: ignore[return-value]

    def value_router(self) -> Callable[[Any], bytes] | None:
        """For a group key of one string or long component in the ``string`` or ``bytes`` format:
        the component's value → its routing bytes (``routing_bytes`` of its one-tuple), without
        a tuple or a cache; None otherwise. Every record computes its key's routing bytes, and
        with many keys no cache holds them all."""
        if len(self.types) != 1 or self.format not in ("string", "bytes"):
            return None
        ty = self.types[0]
        if ty == STRING:
            return lambda value: value.encode("utf-8", "surrogatepass")
        if ty == LONG:
            if self.format == "bytes":
                return _LONG_BYTES.pack
            return lambda value: b"%d" % value
        return None

    def router(self) -> Callable[[tuple[Any, ...]], bytes] | None:
        """A group key → its routing bytes, as ``routing_bytes`` but specialised for the key's
        types and format, for the keys that need no cache (None for the others)."""
        one = self.value_router()
        if one is not None:
            return lambda key: one(key[0])
        if self.format in ("json", "none") and self.types and all(t in (STRING, LONG, BOOLEAN) for t in self.types):
            return orjson.dumps  # a tuple of strings, longs and booleans is its own conformance encoding
        return None

    def partition(self, routing: bytes, partitions: int) -> int:
        return cached_partition(self.partitioner, routing, partitions)


def scheme_for(cfg: ProgramConfig, types: list[Type] | None, inp: InputConfig | None = None) -> KeyScheme:
    """The key scheme of one input of a program (default: its first, the program's home scheme),
    or TopologyError when the format cannot hold the group key."""
    inp = inp or cfg.inputs[0]
    fmt = input_format(inp, types)
    where = f"program {cfg.name}, input {inp.topic}"
    if types is not None and fmt in ("string", "bytes") and len(types) != 1:
        raise TopologyError(
            f"{where}: key: {fmt} holds a group key of one component, but the program's group key "
            f"has {len(types)}; use key: json (a JSON array) or key: none"
        )
    if types is not None and fmt == "bytes" and types[0] not in (STRING, LONG, DOUBLE):
        raise TopologyError(
            f"{where}: key: bytes is defined for string, long and double group keys, not "
            f"{types[0]}; use key: string or key: json"
        )
    return KeyScheme(fmt, inp.partitioner, tuple(types or ()))
