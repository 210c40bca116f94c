"""The group generation read from librdkafka's serialised group metadata (kafka/generation.py),
the owner epoch of changelog records (state/changelog.py, ``EpochFence``). No broker needed."""

from __future__ import annotations

import logging
import struct

import pytest
from confluent_kafka import Consumer

from eventscript.kafka import clients
from eventscript.kafka.config import KafkaConfig
from eventscript.kafka.generation import METADATA_MAGIC, group_generation, owner_epochs, parse_generation


def metadata(generation: int, instance: bytes | None = None) -> bytes:
    """Bytes laid out as rd_kafka_consumer_group_metadata_write (librdkafka src/rdkafka_cgrp.c)
    lays them out: magic, generation (native int32), group id, member id, null flag, instance id."""
    tail = b"\x01" if instance is None else b"\x00" + instance + b"\x00"
    return METADATA_MAGIC + struct.pack("=i", generation) + b"group\x00member-1\x00" + tail


def test_the_generation_is_read_from_the_metadata_layout() -> None:
    assert parse_generation(metadata(17)) == 17
    assert parse_generation(metadata(70_000, b"worker-0")) == 70_000
    assert parse_generation(metadata(-1)) is None  # not a member yet
    assert parse_generation(b"CGMDv3:" + struct.pack("=i", 17)) is None
    assert parse_generation(METADATA_MAGIC + b"\x01") is None


def test_a_consumer_that_has_not_joined_has_no_generation() -> None:
    consumer = Consumer(clients.consumer_config(KafkaConfig(bootstrap_servers="127.0.0.1:1"), "never-joins"))
    try:
        raw = consumer.consumer_group_metadata()
        assert isinstance(raw, bytes) and raw.startswith(METADATA_MAGIC)  # the layout this librdkafka writes
        assert group_generation(consumer, "p") is None
    finally:
        consumer.close()


class _Meta:
    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def consumer_group_metadata(self) -> bytes:
        return self.raw


def test_an_unknown_layout_is_said_once_and_gives_no_epoch(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="eventscript.kafka.worker"):
        assert group_generation(_Meta(b"CGMDv9:\x00\x00\x00\x05g\x00"), "unknown-layout") is None
        assert group_generation(_Meta(b"CGMDv9:\x00\x00\x00\x05g\x00"), "unknown-layout") is None
        assert group_generation(_Meta(metadata(5)), "unknown-layout") == 5
    assert len([r for r in caplog.records if "not fenced" in r.getMessage()]) == 1


def test_only_the_classic_group_protocol_fences(caplog: pytest.LogCaptureFixture) -> None:
    kafka = KafkaConfig(bootstrap_servers="127.0.0.1:1")
    assert owner_epochs("p", clients.consumer_config(kafka, "g"))
    with caplog.at_level(logging.WARNING, logger="eventscript.kafka.worker"):
        assert not owner_epochs("p", clients.consumer_config(kafka, "g", **{"group.protocol": "consumer"}))
    assert "group.protocol is 'consumer'" in caplog.text


def test_the_member_id_is_read_beside_the_generation() -> None:
    from eventscript.kafka.generation import group_member, member_of

    assert group_member(metadata(3, b"worker-0")) == (3, b"member-1")
    assert group_member(metadata(1).replace(b"member-1", b"")) == (1, b"")  # its member id dropped
    assert group_member(b"CGMDv3:" + struct.pack("=i", 3)) is None
    assert group_member(METADATA_MAGIC + struct.pack("=i", 3) + b"group-without-end") is None
    consumer = Consumer(clients.consumer_config(KafkaConfig(bootstrap_servers="127.0.0.1:1"), "never-joins"))
    try:
        generation, member = member_of(consumer) or (0, b"?")
        assert generation < 0 and member == b""  # no member: nothing it commits is fenced
    finally:
        consumer.close()


class _Member:
    """A consumer whose group metadata says it is ``member`` of generation ``generation``."""

    def __init__(self, generation: int, member: bytes) -> None:
        self.meta = metadata(generation).replace(b"member-1", member)

    def consumer_group_metadata(self) -> bytes:
        return self.meta


def test_a_task_assigned_to_another_member_id_is_not_the_consumers_to_commit() -> None:
    from types import SimpleNamespace

    from eventscript.kafka.task_manager import TaskManager

    manager = SimpleNamespace(tasks={0: object()}, assigned_under={0: b"member-a"})
    replaced = TaskManager.member_replaced
    assert not replaced(manager, _Member(4, b"member-a"))  # type: ignore[arg-type]
    assert not replaced(manager, _Member(5, b"member-a"))  # type: ignore[arg-type]  # (a rebalance: the same member)
    assert replaced(manager, _Member(5, b"member-b"))  # type: ignore[arg-type]  # joined again: another member
    assert replaced(manager, _Member(-1, b""))  # type: ignore[arg-type]  # no member now
    assert not replaced(manager, SimpleNamespace())  # type: ignore[arg-type]  # (no metadata to tell: as before)
    manager.assigned_under = {0: None}  # (assigned when the layout was not known)
    assert not replaced(manager, _Member(5, b"member-b"))  # type: ignore[arg-type]


def test_the_generation_and_the_member_come_from_one_reading() -> None:
    from eventscript.kafka.generation import group_member, member_of, read_metadata

    cut_before_member = METADATA_MAGIC + struct.pack("=i", 7) + b"group-without-end"
    assert read_metadata(cut_before_member) == (7, None)
    assert parse_generation(cut_before_member) == 7  # the generation alone is still known
    assert group_member(cut_before_member) is None
    assert read_metadata(metadata(-1)) == (-1, b"member-1")
    assert read_metadata("CGMDv2:text") is None
    consumer = Consumer(clients.consumer_config(KafkaConfig(bootstrap_servers="127.0.0.1:1"), "closed"))
    consumer.close()  # its group metadata now raises: neither reading does
    assert group_generation(consumer, "closed") is None
    assert member_of(consumer) is None
