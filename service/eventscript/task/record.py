"""What a task reads: a ``Record``, the accessors of a confluent-kafka ``Message``.

The task needs only these seven reads of an input record. The worker hands it the consumer's
messages as they are; every host that builds records itself — the tester's simulated topics, the
backfill's rows of an Arrow batch, the tests — builds a ``PlainRecord``. ``Record`` is a
structural protocol, so a ``Message`` needs no wrapper.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

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


#: confluent-kafka's TIMESTAMP_CREATE_TIME: what ``Message.timestamp()`` reports for a
#: producer's time, the type of every record a host builds.
CREATE_TIME = 1


class PlainRecord:
    """A ``Record`` held in plain fields, for a host that builds its records itself (the one
    class of them: the tester, the backfill and the tests build this one). ``ts_ms``: the record
    time in milliseconds; ``headers`` None when it has none, as a ``Message`` reports it. Two are
    equal when every field is (a test compares what a host wrote)."""

    __slots__ = ("_headers", "_key", "_offset", "_partition", "_topic", "_ts", "_value")

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        ts_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None = None,
    ) -> None:
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._ts = ts_ms
        self._key = key
        self._value = value
        self._headers = headers

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return (CREATE_TIME, self._ts)

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> Headers | None:
        return self._headers

    def fields(self) -> tuple[str, int, int, int, bytes | None, bytes | None, Headers | None]:
        """(topic, partition, offset, time in ms, key, value, headers): the constructor's arguments."""
        return (self._topic, self._partition, self._offset, self._ts, self._key, self._value, self._headers)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, PlainRecord) and self.fields() == other.fields()

    __hash__ = None  # type: ignore[assignment]  # (equal by value, and mutable headers)

    def __repr__(self) -> str:
        return f"PlainRecord{self.fields()!r}"
