"""``PartitionGroup.add`` on a gated partition (issue 21: what the markers cost a reader per
record): its frontier is its writers' progress, so adding a record reads no clock (``seen_at`` is
asked only of ungated partitions, whether they went idle), whether its records wait per key
(``WriterStreams``), in an inbox (forwarding ahead) or in offset order (one writer)."""

from __future__ import annotations

import collections

import pytest

from eventscript.task import merge
from eventscript.task.merge import InputPartition, PartitionGroup
from eventscript.task.progress import InputProgress
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
