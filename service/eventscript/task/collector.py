"""Where a task's records go: outputs, ``$error`` records, re-published records and the
changelog records of a commit (as Kafka Streams' RecordCollector).

A task sends every record through two functions: ``send`` (one record) and ``send_changelog``
(a commit's changelog records, the last one's delivery giving the offset the store reaches). A
host attaches its own (the worker produces straight into its transaction); a task not attached
keeps its records in ``outbox`` for the host to take (the backfill, the tests), and a dry run
(``backfill/key_parallel``) drops them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..state.changelog import framed_batch
from .codec import Headers

#: send(topic, partition or -1, key, value, headers, timestamp ms, is_changelog).
Send = Callable[[str, int, bytes | None, bytes | None, Headers, int, bool], None]


class SendChangelog(Protocol):
    """send_changelog(topic, partition, {key: value or None}, frame, timestamp ms, key_headers):
    a record ``key_headers`` (by key, optional) gives headers of its own is sent as it is, with them
    (a tombstone: the commit's ``es-pos`` and ``es-gen``, and its ``es-key``, ``state.keyinfo``);
    every other one without headers, its value after ``frame`` (the commit's position and epoch,
    ``state.changelog.batch_frame``: a header costs the producer more than the bytes)."""

    def __call__(
        self,
        topic: str,
        partition: int,
        records: dict[bytes, bytes | None],
        frame: bytes,
        ts: int,
        key_headers: dict[bytes, Headers] | None = None,
        /,
    ) -> None: ...


@dataclass(slots=True)
class OutRecord:
    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int  # ms
    changelog: bool = False  # a state write: its offset moves the store checkpoint


class RecordCollector:
    """The default destination of a task's records: kept in ``outbox`` until taken."""

    def __init__(self) -> None:
        self.outbox: list[OutRecord] = []

    def send(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        ts: int,
        changelog: bool,
    ) -> None:
        self.outbox.append(OutRecord(topic, None if partition < 0 else partition, key, value, headers, ts, changelog))

    def take(self) -> list[OutRecord]:
        """The records kept so far, no longer kept."""
        out, self.outbox = self.outbox, []
        return out


def drop(
    topic: str, partition: int, key: bytes | None, value: bytes | None, headers: Headers, ts: int, changelog: bool
) -> None:
    """A dry run's ``send``: the records go nowhere."""


def changelog_through(send: Send) -> SendChangelog:
    """A ``send_changelog`` that sends each record through ``send``, the last as the one whose
    delivery moves the store checkpoint (the default; the worker loops in one call)."""

    def send_each(
        topic: str,
        partition: int,
        records: dict[bytes, bytes | None],
        frame: bytes,
        ts: int,
        key_headers: dict[bytes, Headers] | None = None,
        /,
    ) -> None:
        batch = framed_batch(records, frame, key_headers)
        last = len(batch) - 1
        for i, (k, v, h) in enumerate(batch):
            send(topic, partition, k, v, h or [], ts, i == last)

    return send_each
