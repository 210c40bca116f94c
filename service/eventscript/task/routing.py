"""Routing: which partition, and which key group, a group key belongs to.

A key's *routing bytes* are its record key in the program's home key scheme (``keys.py``); the
scheme's partitioner places them on a partition, as the producers of the inputs place their
records. A backfill that runs more tasks than there are partitions splits each partition's keys
into key groups with :func:`key_group`, the one key-group hash of the project (key-split and
key-parallel mode both use it; ``backfill/key_split.batch_groups`` computes the same over a
whole Arrow column).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import mul
from typing import Any

import orjson

from ..language.types import BOOLEAN, LONG, STRING
from ..state.changelog import compact
from ..topology.config import ProgramConfig
from .keys import PARTITIONERS, scheme_for
from .partitioner import key_bytes, value_key_bytes
from .record import Record

#: Entries of the group key → bytes caches before they are emptied: enough for the hot keys;
#: a key out of them costs ~1 µs to encode again, and each entry ~150 bytes (two per key).
KEY_CACHE_SIZE = 16_384
#: Entries of the routing bytes → partition cache before it is emptied: a key out of it costs
#: ~0.5 µs (murmur2 in librdkafka through ctypes, ``native_partitioner``; 1–3 µs in Python); an
#: entry ~100 bytes.
PLACE_CACHE_SIZE = 65_536

#: ``Routing.place``'s mark for routing bytes of a key the task's key filter does not own.
NOT_OWNED = -1

#: The key-group hash: a polynomial of the key's bytes modulo 2^64, then mixed. Stable across
#: processes, independent of the Kafka partitioner's hash (so groups split partitions), and
#: vectorizable over an Arrow column (``backfill/key_split.batch_groups``).
HASH_PRIME, HASH_MIX, HASH_MASK = 0x100000001B3, 0xFF51AFD7ED558CCD, (1 << 64) - 1


#: HASH_PRIME ** i modulo 2^64, as far as the longest key hashed so far needs.
_POWERS: list[int] = [1]


def _powers(n: int) -> list[int]:
    while len(_POWERS) < n:
        _POWERS.append(_POWERS[-1] * HASH_PRIME & HASH_MASK)
    return _POWERS


def key_group(kb: bytes, groups: int) -> int:
    """The key group (of ``groups``) of a record key or a group key's routing bytes."""
    powers = _POWERS if len(kb) <= len(_POWERS) else _powers(len(kb))
    h = sum(map(mul, kb, powers)) & HASH_MASK  # Σ byte_i · prime^i, in C (map stops at the key's end)
    h ^= len(kb)
    h = ((h ^ (h >> 29)) * HASH_MIX) & HASH_MASK
    return (h ^ (h >> 32)) % groups


class KeyFilter:
    """Which group keys a task runs, when it runs only some of those its partition places on it
    (key-split backfill, backfill/key_split.py; a worker's task has none). A record of a key it
    does not own only moves the task's record clock, as it would move it, so every key's timers
    fire at the same record times as in a task that owns every key. The defaults own every key."""

    def owns(self, route: bytes) -> bool:
        """Whether the task runs the instance of the group key with these routing bytes (asked
        once per key while the task's placement cache holds it)."""
        return True

    def passed(self, msg: Record) -> None:
        """Record ``msg``'s group key is not the task's: it only moved the clock."""

    def reports(self, msg: Record | None, forward: bool) -> bool:
        """Whether this task writes the $error record about ``msg`` (it could not be used) or,
        with ``forward``, re-publishes it (its key is another partition's)."""
        return True


class Routing:
    """A task's group keys → store keys, routing bytes, partitions and output record keys, each
    cached where computing it costs more than a lookup."""

    def __init__(
        self, cfg: ProgramConfig, key_types: list[Any] | None, partition: int, partitions: int, one_key: bool
    ) -> None:
        self.partition = partition
        self.partitions = partitions
        self.key_types = key_types
        self.scheme = scheme_for(cfg, key_types)
        #: Group key → routing bytes without a cache, where the key's types allow (else None:
        #: ``route_key`` and its cache).
        self.route = self.scheme.router()
        #: Routing bytes → partition (``place``); read directly by the task's record loop.
        self.placed: dict[bytes, int] = {}
        self.key_filter: KeyFilter | None = None
        self._partition_of = PARTITIONERS[self.scheme.partitioner]
        self._value_key_bytes = value_key_bytes(key_types)
        self._plain_keys = key_types is not None and all(t in (STRING, LONG, BOOLEAN) for t in key_types)
        self._key_cache: dict[tuple[Any, ...], bytes] = {}
        self._route_cache: dict[tuple[Any, ...], bytes] = {}
        self._out_key_none = self.scheme.format == "none"
        self._one_key = one_key

    def key_bytes(self, key: tuple[Any, ...] | None) -> bytes | None:
        """The key's store (and changelog) key: its canonical JSON bytes, compacted (see
        ``state.changelog.compact``: cached orjson output would cost 4 KiB per key)."""
        if key is None:
            return None
        if self._value_key_bytes is not None:  # one string or long: no cache needed
            return self._value_key_bytes(key[0])
        kb = self._key_cache.get(key)
        if kb is None:
            if len(self._key_cache) > KEY_CACHE_SIZE:
                self._key_cache.clear()
            # (a tuple of strings, longs and booleans is its own conformance encoding)
            raw = orjson.dumps(key) if self._plain_keys else key_bytes(key, self.key_types)
            assert raw is not None
            kb = self._key_cache[key] = compact(raw)
        return kb

    def ctx_key_bytes(self) -> Callable[[Any], bytes]:
        """An instance of a grouped program → its store (and changelog) key (``key_bytes``),
        straight from the engine's table key where the group key is one string or long: with
        many keys, no cache holds them all."""
        one = self._value_key_bytes
        if one is not None and self._one_key:
            return lambda ctx: one(ctx.gk)
        key_bytes_of = self.key_bytes
        return lambda ctx: key_bytes_of(ctx.key)  # type: ignore[return-value]

    def route_key(self, key: tuple[Any, ...]) -> bytes:
        """The key's bytes in the home key scheme (what decides its partition)."""
        if self.route is not None:
            return self.route(key)
        rb = self._route_cache.get(key)
        if rb is None:
            if len(self._route_cache) > KEY_CACHE_SIZE:
                self._route_cache.clear()
            rb = self._route_cache[key] = self.scheme.routing_bytes(key)
        return rb

    def place(self, rb: bytes) -> int:
        """The partition of a key's routing bytes, or ``NOT_OWNED`` for a key of this partition
        the key filter does not own (cached: see ``PLACE_CACHE_SIZE``)."""
        placed = self.placed
        if len(placed) >= PLACE_CACHE_SIZE:
            placed.clear()
        p = self._partition_of(rb, self.partitions)
        if p == self.partition and self.key_filter is not None and not self.key_filter.owns(rb):
            p = NOT_OWNED
        placed[rb] = p
        return p

    def set_key_filter(self, key_filter: KeyFilter) -> None:
        self.key_filter = key_filter
        self.placed.clear()

    def ctx_out_key(self, grouped: bool) -> Callable[[Any], bytes | None]:
        """An instance → the record key of its outputs (``out_key`` of its group key), without
        building its key tuple where the key is one value the scheme encodes directly."""
        one = self.scheme.value_router()
        if grouped and not self._out_key_none and one is not None and self._one_key:
            return lambda ctx: one(ctx.gk)
        out_key = self.out_key
        return lambda ctx: out_key(ctx.key)

    def out_key(self, key: tuple[Any, ...] | None) -> bytes | None:
        """The record key of an output or $error record: the group key as the inputs' producers
        write it (none for key: none)."""
        if key is None or self._out_key_none:
            return None
        return self.route_key(key)
