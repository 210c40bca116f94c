"""The consumer group's generation, which the worker writes as the owner epoch of its changelog
records (``es-gen``: state/changelog.py, ``EpochFence``).

Under the classic group protocol the coordinator raises the generation at every rebalance, for
the whole group, so the member that takes a task over from a zombie always has a higher one than
the zombie. confluent-kafka (2.16) gives it only inside ``consumer_group_metadata()``, librdkafka's
serialisation of the member (``rd_kafka_consumer_group_metadata_write``, src/rdkafka_cgrp.c):
``b"CGMDv2:"``, the generation as a native-endian int32, the group id and the member id (each
NUL-terminated), a null flag and the instance id. Under KIP-848's ``consumer`` protocol that
number is the member's own epoch, not comparable between members: there the worker writes no
epoch, and nothing fences a zombie's changelog records under at-least-once (docs/worker.md).
"""

from __future__ import annotations

import logging
import struct
from typing import Any

from confluent_kafka import KafkaException

log = logging.getLogger("eventscript.kafka.worker")

METADATA_MAGIC = b"CGMDv2:"
_GENERATION = struct.Struct("=i")  # librdkafka memcpy()s the int32: native byte order

_warned: set[str] = set()


def read_metadata(meta: Any) -> tuple[int, bytes | None] | None:
    """(generation, member id) in librdkafka's serialised group metadata, the one reader of its
    layout; None when ``meta`` is not of the layout this module knows (a later librdkafka). The
    member id is None when the bytes end before it (the generation alone is known); the
    generation is -1 when the consumer is no member of its group."""
    start = len(METADATA_MAGIC)
    if not isinstance(meta, bytes) or not meta.startswith(METADATA_MAGIC) or len(meta) < start + _GENERATION.size:
        return None
    (generation,) = _GENERATION.unpack_from(meta, start)
    _group, found, rest = meta[start + _GENERATION.size :].partition(b"\0")
    member, found_member, _ = rest.partition(b"\0")
    return int(generation), member if found and found_member else None


def parse_generation(meta: bytes) -> int | None:
    """The generation in librdkafka's serialised group metadata; None when the bytes are not of
    the layout this module knows (a later librdkafka) or the member has none (-1: not joined)."""
    read = read_metadata(meta)
    return read[0] if read is not None and read[0] >= 0 else None


def group_member(meta: Any) -> tuple[int, bytes] | None:
    """(generation, member id) in librdkafka's serialised group metadata
    (``consumer_group_metadata()``), or None for a layout this module does not know. Generation -1
    or an empty member id: the consumer is no member of its group now (its session ended, or the
    coordinator called it unknown, and it has not joined again)."""
    read = read_metadata(meta)
    if read is None or read[1] is None:
        return None
    return read[0], read[1]


def consumer_metadata(consumer: Any) -> Any:
    """The consumer's serialised group metadata now, or None when it cannot give it (closed, or
    no such call)."""
    try:
        return consumer.consumer_group_metadata()
    except (KafkaException, RuntimeError, AttributeError):
        return None


def member_of(consumer: Any) -> tuple[int, bytes] | None:
    """The consumer's ``group_member`` now (None: not known)."""
    return group_member(consumer_metadata(consumer))


def owner_epochs(program: str, consumer_conf: dict[str, Any]) -> bool:
    """Whether the worker's consumer group has a generation that fences zombies: only under the
    classic group protocol (said at start when another is configured)."""
    protocol = str(consumer_conf.get("group.protocol", "classic")).lower()
    if protocol == "classic":
        return True
    log.warning(
        "%s: group.protocol is %r: its member epochs are not one group-wide generation, so changelog records "
        "carry no owner epoch, and under at-least-once a worker frozen past its session (a zombie) can still "
        "send changelog records after its tasks' new owner (docs/worker.md, Failures and recovery); the classic "
        "protocol fences them",
        program,
        protocol,
    )
    return False


def group_generation(consumer: Any, program: str) -> int | None:
    """The consumer's group generation now, or None (not known: no epoch is written). A layout
    this module does not know is said once per program, with what it means."""
    meta = consumer_metadata(consumer)
    if not isinstance(meta, bytes):
        return None
    if not meta.startswith(METADATA_MAGIC) and program not in _warned:
        _warned.add(program)
        log.warning(
            "%s: this librdkafka's group metadata starts %r, not %r: the group generation cannot be read, so "
            "changelog records carry no owner epoch and a zombie worker's late changelog records are not "
            "fenced under at-least-once (kafka/generation.py must learn the new layout)",
            program,
            meta[: len(METADATA_MAGIC)],
            METADATA_MAGIC,
        )
    return parse_generation(meta)
