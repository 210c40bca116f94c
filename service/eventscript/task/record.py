"""What a task reads: a ``Record``, the accessors of a confluent-kafka ``Message``.

The task needs only these seven reads of an input record, so every host hands it records of its
own: the worker the consumer's messages, the backfill rows of an Arrow batch
(``backfill/records.ArrowRecord``), the tests small dataclasses. A structural protocol, so none of
them has to inherit from anything.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .codec import Headers


@runtime_checkable
class Record(Protocol):
    """An input record: where it was read (topic, partition, offset), its timestamp as
    ``(type, milliseconds)``, its key, value and headers (each None when absent)."""

    def topic(self) -> str: ...

    def partition(self) -> int: ...

    def offset(self) -> int: ...

    def timestamp(self) -> tuple[int, int]: ...

    def key(self) -> bytes | None: ...

    def value(self) -> bytes | None: ...

    def headers(self) -> Headers | None: ...
