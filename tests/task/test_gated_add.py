"""``PartitionGroup.add`` on a gated partition (issue 21: what the markers cost a reader per
record): its frontier is its writers' progress, so adding a record reads no clock (``seen_at`` is
asked only of ungated partitions, whether they went idle), whether its records wait per key
(``WriterStreams``), in an inbox (forwarding ahead) or in offset order (one writer); and a
record's key is read once, which tells it from a marker (neither key nor value) without reading
its value and is handed on to its queue."""

from __future__ import annotations

import collections

import pytest

from eventscript.task import merge
from eventscript.task.merge import InputPartition, PartitionGroup
from eventscript.task.progress import InputProgress, marker_headers
from eventscript.task.record import PlainRecord
from eventscript.task.streams import WriterStreams
from eventscript.topology.config import InputConfig

T0 = 1_767_225_600_000


def record(offset: int) -> PlainRecord:
    return PlainRecord("mid", 0, offset, T0 + offset, b"k%d" % offset, b"{}")


def group(writers: int, ahead: bool = False) -> tuple[PartitionGroup, InputPartition]:
    """A group of partition "mid:0", gated on ``writers`` upstream tasks (none: ungated)."""
    ip = InputPartition("mid", 0, 0, InputConfig(topic="mid", event="Hit"))
    if writers:
        ip.markers = True
        ip.progress = InputProgress(frozenset(f"up/{w}" for w in range(writers)))
    g = PartitionGroup([ip])
    g.gate()
    if ahead:
        g.forward_ahead()
    return g, ip


@pytest.fixture
def clock_reads(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The reads of the monotonic clock from here on."""
    reads: list[float] = []

    def monotonic() -> float:
        reads.append(1.0)
        return 1.0

    monkeypatch.setattr(merge.time, "monotonic", monotonic)
    return reads


@pytest.mark.parametrize(("writers", "ahead"), [(3, False), (3, True), (1, False), (1, True)])
def test_a_gated_partition_takes_its_records_without_reading_the_clock(
    clock_reads: list[float], writers: int, ahead: bool
) -> None:
    g, ip = group(writers, ahead)
    ip.eof = True
    for offset in range(4):
        assert g.add(record(offset))
    assert not clock_reads
    assert ip.pending() == 4 and not ip.eof and not ip.idled
    held = ip.inbox if ahead else ip.streams if writers > 1 else ip.buffer
    assert held is not None and len(held) == 4
    assert isinstance(held, WriterStreams) == (writers > 1)
    if not isinstance(held, WriterStreams):
        assert isinstance(held, collections.deque) and [m.offset() for m in held] == [0, 1, 2, 3]


def test_an_ungated_partition_notes_when_its_records_came(clock_reads: list[float]) -> None:
    g, ip = group(0)
    assert g.add(record(0)) and g.add(record(1))
    assert len(clock_reads) == 2 and ip.seen_at == 1.0 and ip.seen_ms == T0 + 1


class Counted(PlainRecord):
    """A record that counts the reads of its key and value."""

    __slots__ = ("reads",)

    def __init__(self, offset: int, key: bytes | None, value: bytes | None, headers: object = None) -> None:
        super().__init__("mid", 0, offset, T0 + offset, key, value, headers)  # type: ignore[arg-type]
        self.reads: collections.Counter[str] = collections.Counter()

    def key(self) -> bytes | None:
        self.reads["key"] += 1
        return super().key()

    def value(self) -> bytes | None:
        self.reads["value"] += 1
        return super().value()


@pytest.mark.parametrize("ahead", [False, True])
def test_a_keyed_record_is_told_from_a_marker_by_its_key_read_once(ahead: bool) -> None:
    g, ip = group(3, ahead)
    keyed = [Counted(offset, b"k%d" % (offset % 2), b"{}") for offset in range(6)]  # (keys come again)
    for m in keyed:
        assert g.add(m)
    assert [dict(m.reads) for m in keyed] == [{"key": 1}] * 6
    held = ip.inbox if ahead else ip.streams
    assert isinstance(held, WriterStreams) and len(held) == 6
    assert [m.offset() for m in held.take_below(T0 + 100)] == list(range(6))


def test_a_record_without_a_key_is_one_all_the_same_and_a_marker_is_heard() -> None:
    g, ip = group(3)
    keyless = Counted(0, None, b"{}")
    tombstone = Counted(1, None, None)  # (neither key nor value, and no marker's header)
    assert g.add(keyless) and g.add(tombstone)
    assert ip.streams is not None and len(ip.streams) == 2
    for w in range(3):
        marker = Counted(2 + w, None, None, list(marker_headers("up", w, T0 + 10)))
        assert not g.add(marker)  # (taken in: not a record)
    assert ip.progress is not None and ip.progress.watermark == T0 + 10
    assert len(ip.streams) == 2
