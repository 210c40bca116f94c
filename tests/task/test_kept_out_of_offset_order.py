"""A task's own records of a partition several upstream tasks write are kept in record-time order
(``Task._forward_in_time_order`` hands them to ``WriterStreams.append`` as ``take_below`` gives
them: ``WriterStreams.keep``), not in offset order: the partition's position must stay before the least offset still
waiting, not the first one kept. Found by tests/kafka/test_pipeline_kills.py (sensors,
at-least-once, 20 copies side by side, seed 23): site-alarm's task 2 kept sensor-events:2's
offset 231 (09:53:39) before offset 230 (14:14:05), committed position 231 with 230 waiting, was
killed, and its next owner never took offset 230: a SiteAlarm was lost."""

from __future__ import annotations

import random

import pytest

from eventscript.task.merge import InputPartition
from eventscript.task.record import PlainRecord
from eventscript.task.streams import WriterStreams
from eventscript.topology.config import InputConfig

T0 = 1_772_445_000_000


def record(offset: int, ms: int, key: bytes) -> PlainRecord:
    return PlainRecord("sensor-events", 2, offset, T0 + ms, key, b"{}")


def kept_in_record_time_order() -> WriterStreams:
    """Offsets 231 then 219 then 230, as ``take_below`` orders them by record time."""
    kept = WriterStreams()
    for msg in (record(231, 0, b"A/s2-c112"), record(219, 200_000, b"A/s2-c101"), record(230, 900_000, b"A/s1-c130")):
        kept.keep(msg)
    return kept


def test_the_least_offset_waiting_is_the_least_not_the_first_kept() -> None:
    kept = kept_in_record_time_order()
    assert kept.first_offset() == 219
    kept.release(T0 + 100_000)  # (231 released, ready: 219 and 230 wait in place)
    assert [m.offset() for m in kept.ready] == [231]
    assert kept.first_offset() == 219
    kept.ready.clear()
    assert kept.first_offset() == 219


def test_the_position_stays_before_a_record_kept_after_a_later_offset() -> None:
    ip = InputPartition("sensor-events", 2, 0, InputConfig(topic="sensor-events", event="Overheat"))
    ip.inbox = WriterStreams()  # (nothing left in it: every record taken is re-published or kept)
    ip.streams = kept_in_record_time_order()
    ip.looked_to = 242
    position = {"sensor-events:2": 214}
    ip.settle_position(position)
    assert position["sensor-events:2"] == 219


@pytest.mark.parametrize("seed", range(20))
def test_the_least_offset_waiting_follows_records_kept_and_taken(seed: int) -> None:
    """``waiting_offset`` (a heap of the offsets waiting while records come out of offset order,
    those taken dropped as they reach its top, rebuilt when mostly taken) against every record
    waiting looked at: a task's own records kept in record-time order (``keep``: their offsets
    out of order, as several writers' commits land them), released at random bounds, sometimes
    all at once (which ends the out-of-order stretch), over enough records to rebuild the heap."""
    rnd = random.Random(seed)
    streams = WriterStreams()
    waiting: dict[int, int] = {}  # offset → record time (ms)
    used: set[int] = set()  # (each offset is read once: kept once)
    fetched = 0  # offsets fetched so far: each record kept is one of the last few hundred
    clock = 0
    for _ in range(400):
        for _ in range(rnd.randrange(1, 40)):
            clock += rnd.randrange(0, 3)
            fetched += rnd.randrange(1, 4)
            offset = fetched - rnd.randrange(0, 300) if rnd.random() < 0.7 else fetched
            if offset in used or offset < 0:
                continue
            assert streams.keep(record(offset, clock, b"k%d" % offset))
            waiting[offset] = clock
            used.add(offset)
        assert streams.waiting_offset() == (min(waiting) if waiting else None)
        bound = clock + 1 if rnd.random() < 0.1 else clock - rnd.randrange(0, 20)
        taken = streams.take_below(T0 + bound)
        assert sorted(m.offset() for m in taken) == sorted(o for o, ms in waiting.items() if ms < bound)
        for m in taken:
            del waiting[m.offset()]
        assert streams.waiting_offset() == (min(waiting) if waiting else None)
