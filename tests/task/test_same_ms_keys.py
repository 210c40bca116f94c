"""A hot key's several records of one ms waiting in a ``WriterStreams`` (ten records a ms, Zipf
keys: issue 21's bench, ``event_time.py --per-ms 10``).

Such a key's records are told apart by their ids (``WriterStreams._same_ms``) without indexing
every key's records waiting: the repeat of any of them is still dropped, the one of a record
taken no longer is, and one that comes before the key's last in the tie order still makes the key
merged per key. The release is the per-key merge's, as ``test_merge_order.py`` checks it.
"""

from __future__ import annotations

import random

import pytest

from eventscript.task.codec import HEADER_ID, HEADER_SEQ
from eventscript.task.record import PlainRecord
from eventscript.task.streams import WriterStreams

from .test_merge_order import T0, per_key_merge


def record(offset: int, ts: int, key: bytes, seq: int, cause: int | None = None) -> PlainRecord:
    cause = offset if cause is None else cause
    headers: list[tuple[str, bytes | None]] = [(HEADER_ID, b"up/src:0:%d/1" % cause), (HEADER_SEQ, b"%d" % seq)]
    return PlainRecord("mid", 0, offset, ts, key, b"{}", headers)


def copy_of(original: PlainRecord, offset: int) -> PlainRecord:
    """The same record written again by its writer (same time, key and headers), at ``offset``."""
    return PlainRecord("mid", 0, offset, original.timestamp()[1], original.key(), b"{}", original.headers())


def hot_key_of_one_ms() -> list[PlainRecord]:
    """Four records of key "hot" at T0 in the tie order (es-seq rising), between other keys'."""
    out = []
    for i in range(4):
        out.append(record(2 * i, T0, b"hot", 10 * i))
        out.append(record(2 * i + 1, T0, b"k%d" % i, 10 * i + 5))
    return out


@pytest.mark.parametrize("which", [0, 1, 2, 3])
def test_the_repeat_of_any_of_a_hot_keys_records_of_one_ms_is_dropped_without_indexing(which: int) -> None:
    """The copy of the first, a middle or the last of the key's records of that ms is found among
    them, and no key's records are indexed for it (``indexed`` stays False: the cheap path)."""
    records = hot_key_of_one_ms()
    streams = WriterStreams()
    for m in records:
        assert streams.append(m)
    assert not streams.indexed
    copy = copy_of(records[2 * which], 100)
    assert not streams.append(copy)
    assert streams.take_repeats() == [100]
    assert not streams.indexed
    assert [m.offset() for m in streams.take_below(T0 + 1)] == per_key_merge(records, T0 + 1)


def test_a_record_taken_one_by_one_is_no_longer_among_those_waiting() -> None:
    """After ``pop`` took the key's first record of the ms, its copy is not dropped here (it waits
    no longer: the repeat guard's floor is for such), while a copy of one still waiting is."""
    records = hot_key_of_one_ms()
    streams = WriterStreams()
    for m in records:
        streams.append(m)
    assert streams.pop().offset() == 0  # (the hot key's first: es-seq 0)
    assert streams.append(copy_of(records[0], 100))
    assert not streams.append(copy_of(records[4], 101))
    assert streams.take_repeats() == [101]


def test_a_record_of_the_ms_before_its_keys_last_in_the_tie_order_makes_the_key_merged_per_key() -> None:
    records = [record(0, T0, b"hot", 5), record(1, T0, b"hot", 9), record(2, T0, b"hot", 2)]
    streams = WriterStreams()
    for m in records:
        assert streams.append(m)
    assert streams.disordered == {b"hot"}
    assert [m.offset() for m in streams.take_below(T0 + 1)] == per_key_merge(records, T0 + 1) == [0, 1, 2]


@pytest.mark.parametrize("seed", range(10))
def test_hot_keys_at_ten_records_a_ms_release_in_the_per_key_merges_order(seed: int) -> None:
    """Zipf-like keys, ten records a ms, landed as three writers' batches (a writer's records
    after the others' later ones), copies of waiting records among them and records taken one by
    one now and then: each copy is dropped, the rest go in the per-key merge's order."""
    rnd = random.Random(seed)
    keys = [b"k%d" % min(int(rnd.paretovariate(1.1)), 50) for _ in range(600)]
    by_writer: list[list[tuple[int, bytes, int]]] = [[], [], []]
    for i, key in enumerate(keys):
        by_writer[int(key[1:]) % 3].append((T0 + i // 10, key, i))
    landed = []
    for start in range(0, 60, 10):  # (batches of 10 ms, writer w's shifted by w ms)
        for w in range(3):
            landed.extend(r for r in by_writer[w] if start + w <= r[0] - T0 < start + w + 10)
    landed.extend(r for w in range(3) for r in by_writer[w] if r[0] - T0 >= 60 + w or r[0] - T0 < w)
    streams = WriterStreams()
    remaining: list[PlainRecord] = []
    offset = 0
    for n, (ts, key, seq) in enumerate(landed):
        m = record(offset, ts, key, seq)
        offset += 1
        assert streams.append(m)
        remaining.append(m)
        if rnd.random() < 0.05:
            original = rnd.choice(remaining)
            assert not streams.append(copy_of(original, offset))
            assert streams.take_repeats() == [offset]
            offset += 1
        if n % 50 == 49:
            if rnd.random() < 0.3 and remaining:
                expected = per_key_merge(remaining, 1 << 62)[0]
                assert streams.pop().offset() == expected
                remaining = [r for r in remaining if r.offset() != expected]
            bound = ts - rnd.randrange(5)
            got = [m.offset() for m in streams.take_below(bound)]
            assert got == per_key_merge(remaining, bound)
            remaining = [r for r in remaining if r.offset() not in set(got)]
            # (what tells a hot key's records of one ms apart holds no record taken: memory)
            assert all(streams.last.get(key) is entry[0] for key, entry in streams.same.items())
    assert [m.offset() for m in streams.take_below(1 << 62)] == per_key_merge(remaining, 1 << 62)
