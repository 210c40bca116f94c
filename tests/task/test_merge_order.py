"""The gated merge's bulk orderings against the record-by-record merges they stand for (issue 21).

``WriterStreams`` sorts what it releases rather than merging one queue per key, and
``runs.merge_runs`` sorts the runs of several inputs rather than comparing their heads record by
record: both only to cost less. Each must give exactly the order of the merge it replaces, here
written out the plain way (a heap of per-key heads; the least head of the inputs, each time) and
compared on random records with many ties of time and ``es-seq``, some without one, keys with
several records, and keys whose records come out of order (a timer firing after a record of its
time carries no ``es-seq``).
"""

from __future__ import annotations

import collections
import heapq
import random
from typing import Any

import pytest

from eventscript.task import streams as streams_module
from eventscript.task.codec import HEADER_ID, HEADER_SEQ
from eventscript.task.record import PlainRecord
from eventscript.task.runs import merge_runs
from eventscript.task.streams import WriterStreams, origin_of, seq_of

T0 = 1_767_225_600_000


def written(rnd: random.Random, offset: int, ts: int, key: bytes, cause: int) -> PlainRecord:
    headers: list[tuple[str, bytes | None]] = [(HEADER_ID, b"up/src:%d:%d/1" % (rnd.randrange(3), cause))]
    if rnd.random() < 0.7:
        headers.append((HEADER_SEQ, b"%d" % rnd.randrange(5)))
    return PlainRecord("mid", 0, offset, ts, key, b"{}", headers)


def partition(rnd: random.Random, n: int, keys: int, disorder: float) -> list[PlainRecord]:
    """``n`` records of ``keys`` keys, each key's in time order but for a ``disorder`` share, the
    keys interleaved as several writers' commits land, over few distinct times (ties)."""
    clock = {b"k%d" % k: T0 for k in range(keys)}
    out = []
    for offset in range(n):
        key = b"k%d" % rnd.randrange(keys)
        if rnd.random() < disorder:
            ts = clock[key] - rnd.randrange(3)  # (out of its key's order)
        else:
            ts = clock[key] = clock[key] + rnd.randrange(3)
        out.append(written(rnd, offset, ts, key, offset))
    return out


def per_key_merge(records: list[PlainRecord], bound: int) -> list[int]:
    """The offsets a merge of one queue per key takes below ``bound``: the least head by (time,
    es-seq, origin, offset) each time, a key waiting at its first record at or past ``bound``."""
    queues: dict[Any, collections.deque[PlainRecord]] = {}
    for m in records:
        queues.setdefault(m.key(), collections.deque()).append(m)

    def head(q: collections.deque[PlainRecord]) -> tuple[Any, ...]:
        m = q[0]
        return (m.timestamp()[1], seq_of(m), origin_of(m), m.offset())

    heads = [(head(q), k) for k, q in queues.items()]
    heapq.heapify(heads)
    taken = []
    while heads and heads[0][0][0] < bound:
        _, k = heapq.heappop(heads)
        taken.append(queues[k].popleft().offset())
        if queues[k]:
            heapq.heappush(heads, (head(queues[k]), k))
    return taken


@pytest.mark.parametrize("fetch", [60, 7])  # (7: more runs waiting than are kept apart)
@pytest.mark.parametrize("disorder", [0.0, 0.05])
@pytest.mark.parametrize("seed", range(8))
def test_writer_streams_release_in_the_per_key_merges_order(seed: int, disorder: float, fetch: int) -> None:
    rnd = random.Random(seed)
    records = partition(rnd, 300, rnd.choice([5, 40, 1000]), disorder)
    streams = WriterStreams()
    released: list[int] = []
    remaining: list[PlainRecord] = []
    for at in range(0, len(records), fetch):  # (a release after each fetch)
        for m in records[at : at + fetch]:
            assert streams.append(m)
        remaining.extend(records[at : at + fetch])
        bound = T0 + (at // 60) * rnd.randrange(1, 4)
        expected = per_key_merge(remaining, bound)
        got = [m.offset() for m in streams.take_below(bound)]
        assert got == expected
        released.extend(got)
        remaining = [m for m in remaining if m.offset() not in set(got)]
    assert [m.offset() for m in streams.take_below(1 << 62)] == per_key_merge(remaining, 1 << 62)
    assert len(streams) == 0 and streams.first_offset() is None


@pytest.mark.parametrize("peek", [False, True])
@pytest.mark.parametrize("disorder", [0.0, 0.05])
@pytest.mark.parametrize("seed", range(8))
def test_writer_streams_drop_each_repeat_of_a_record_waiting_under_its_key(
    seed: int, disorder: float, peek: bool
) -> None:
    """Copies of records still waiting (a writer's batch written again), appended among later
    records of their keys and of others: each is dropped and noted, whether the keys' records
    were indexed before it came or not, and the rest go in the per-key merge's order. With
    ``peek``, the head is asked for now and then between appends (as the task's merge and
    position do), which puts the records come so far in place before their keys are noted
    (``WriterStreams.unnoted_from``): a copy must still find its original among them."""
    rnd = random.Random(seed)
    records = partition(rnd, 300, rnd.choice([5, 40, 1000]), disorder)
    streams = WriterStreams()
    remaining: list[PlainRecord] = []
    copies = len(records)  # (the copies' offsets: after every original's)
    for at in range(0, len(records), 30):
        for m in records[at : at + 30]:
            assert streams.append(m)
            remaining.append(m)
            if peek and rnd.random() < 0.2:
                first = per_key_merge(remaining, 1 << 62)[0]
                assert streams.head_ms() == next(r.timestamp()[1] for r in remaining if r.offset() == first)
            if rnd.random() < 0.1:
                original = rnd.choice(remaining)
                copy = PlainRecord("mid", 0, copies, original.timestamp()[1], original.key(), b"{}", original.headers())
                copies += 1
                assert not streams.append(copy)
                assert streams.take_repeats() == [copy.offset()]
        bound = T0 + (at // 30) * rnd.randrange(1, 4)
        got = [m.offset() for m in streams.take_below(bound)]
        assert got == per_key_merge(remaining, bound)
        remaining = [m for m in remaining if m.offset() not in set(got)]
    assert copies > len(records)
    assert [m.offset() for m in streams.take_below(1 << 62)] == per_key_merge(remaining, 1 << 62)


@pytest.mark.parametrize("seed", range(12))
def test_writer_streams_find_a_keys_records_put_in_place_before_they_were_noted(seed: int) -> None:
    """Records that come each later than every one before (the common case: noted under their
    keys only when a key is next looked up, ``WriterStreams.unnoted_from``), put in place by a
    look at the head or a release that takes some, then a copy of one still waiting (dropped) or
    a record of its key no later than it (out of its key's order: after it, as the per-key merge
    takes them): each must find its key's records, wherever they wait."""
    rnd = random.Random(seed)
    streams = WriterStreams()
    remaining: list[PlainRecord] = []
    offset, ts, dropped = 0, T0, 0
    for _ in range(40):
        for _ in range(rnd.randrange(1, 12)):  # (each later than every one before)
            ts += 1
            m = written(rnd, offset, ts, b"k%d" % rnd.randrange(30), offset)
            offset += 1
            assert streams.append(m)
            remaining.append(m)
        if remaining and rnd.random() < 0.5:
            first = per_key_merge(remaining, 1 << 62)[0]
            assert streams.head_ms() == next(r.timestamp()[1] for r in remaining if r.offset() == first)
        elif remaining:
            bound = rnd.choice(remaining).timestamp()[1]
            got = [m.offset() for m in streams.take_below(bound)]
            assert got == per_key_merge(remaining, bound)
            remaining = [m for m in remaining if m.offset() not in set(got)]
        if not remaining:
            continue
        original = rnd.choice(remaining)
        if rnd.random() < 0.5:
            copy = PlainRecord("mid", 0, offset, original.timestamp()[1], original.key(), b"{}", original.headers())
            assert not streams.append(copy)
            assert streams.take_repeats() == [offset]
            dropped += 1
        else:
            late = written(rnd, offset, original.timestamp()[1] - rnd.randrange(2), original.key(), offset)
            assert streams.append(late)
            remaining.append(late)
        offset += 1
    assert dropped
    assert [m.offset() for m in streams.take_below(1 << 62)] == per_key_merge(remaining, 1 << 62)


def test_writer_streams_head_and_pop_follow_the_same_order() -> None:
    rnd = random.Random(3)
    records = partition(rnd, 200, 20, 0.05)
    streams = WriterStreams()
    for m in records:
        streams.append(m)
    expected = per_key_merge(records, 1 << 62)
    for offset in expected:
        head = streams.head()
        msg = streams.pop()
        assert head is not None and head[0] == msg.timestamp()[1] and msg.offset() == offset
    assert streams.head() is None


def head_merge(runs: list[list[PlainRecord]]) -> list[tuple[int, int]]:
    """The inputs' records merged record by record: the least head by (time, es-seq, input)."""
    queues = [collections.deque(run) for run in runs]
    out = []
    while any(queues):
        best = min(
            (i for i, q in enumerate(queues) if q), key=lambda i: (queues[i][0].timestamp()[1], seq_of(queues[i][0]), i)
        )
        out.append((best, queues[best].popleft().offset()))
    return out


@pytest.mark.parametrize("seed", range(10))
def test_merge_runs_gives_the_record_by_record_merges_order(seed: int) -> None:
    rnd = random.Random(seed)
    runs = []
    for _ in range(rnd.randrange(2, 5)):
        times = sorted(T0 + rnd.randrange(30) for _ in range(rnd.randrange(0, 40)))
        runs.append([written(rnd, offset, ts, b"k", offset) for offset, ts in enumerate(times)])
    merged = merge_runs(runs)
    assert merged is not None
    assert [(i, m.offset()) for i, m in merged] == head_merge(runs)


def test_merge_runs_leaves_a_run_out_of_time_order_to_the_record_by_record_merge() -> None:
    rnd = random.Random(1)
    late = [written(rnd, 0, T0 + 5, b"k", 0), written(rnd, 1, T0 + 2, b"k", 1)]
    assert merge_runs([late, [written(rnd, 0, T0 + 3, b"k", 2)]]) is None


def parses_counted(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The ids ``streams._origin`` parses from now on, in order."""
    parsed: list[bytes] = []
    real_origin = streams_module._origin

    def counted(raw: bytes, armed: bytes | None = None) -> Any:
        parsed.append(raw)
        return real_origin(raw, armed)

    monkeypatch.setattr(streams_module, "_origin", counted)
    return parsed


@pytest.mark.parametrize("seed", range(6))
def test_a_release_of_records_of_one_time_parses_only_the_ids_of_those_sharing_an_es_seq(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many records of one record time (a writer at a few records a millisecond): released in
    the tie order (``tie_of``: ``es-seq``, then origin, then offset), and only the records that
    share their ``es-seq`` with another have their ``es-id`` parsed for an origin (a parse per
    record cost a reader ~1.2 µs each: ``WriterStreams._order_ties``)."""
    rnd = random.Random(seed)
    seqs: list[int | None] = [s for s in rnd.sample(range(1000), 40) if s != 7]
    for at, seq in ((0, 7), (5, 7), (10, 7), (12, None), (14, None)):  # (of one time: three share one, two carry none)
        seqs.insert(at, seq)
    records = []
    for offset, seq in enumerate(seqs):
        headers: list[tuple[str, bytes | None]] = [(HEADER_ID, b"up/src:%d:%d/1" % (rnd.randrange(3), 99 - offset))]
        if seq is not None:
            headers.append((HEADER_SEQ, b"%d" % seq))
        records.append(PlainRecord("mid", 0, offset, T0 + offset // 15, b"k%d" % offset, b"{}", headers))
    expected = [m.offset() for m in sorted(records, key=lambda m: (m.timestamp()[1], seq_of(m), origin_of(m)))]
    parsed = parses_counted(monkeypatch)
    streams = WriterStreams()
    for m in records:
        assert streams.append(m)
    assert [m.offset() for m in streams.take_below(T0 + 100)] == expected
    shared = collections.Counter((m.timestamp()[1], seq_of(m)) for m in records)
    assert len(parsed) == sum(n for n in shared.values() if n > 1) == 5


#: The es-seqs of ``test_a_release_is_put_in_the_tie_order_whole...``: (the share that carry one,
#: what they are drawn from, the share with no headers at all).
SEQS = {
    "some without": (0.8, range(20), 0.0),
    "every one": (1.0, range(20), 0.0),  # (read in C: ``_tie_seqs``)
    "negative": (1.0, range(-10, 10), 0.0),
    "past the packed ints": (1.0, [*range(5), -(2**39) - 1, 2**39, 2**45], 0.0),  # (compared as pairs)
    "no headers": (1.0, range(20), 0.1),
}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shared", [0.9, 0.2])
@pytest.mark.parametrize("seqs", sorted(SEQS))
def test_a_release_is_put_in_the_tie_order_whole_where_most_records_share_their_time(
    seed: int, shared: float, seqs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where most records released share their record time with another (a writer at ten records
    a millisecond), ``_order_ties`` sorts the whole release once by (time, ``es-seq``) rather
    than each run of one time apart (``_order_run``, what it does where few do): the same order
    either way, the tie order of a sort by ``tie_of``, whatever the es-seqs."""
    rnd = random.Random(seed)
    carry, drawn, bare = SEQS[seqs]
    records, ts = [], T0
    for offset in range(300):
        if rnd.random() > shared:
            ts += 1  # (a time of its own, or the first of a run)
        rid = b"up/src:%d:%d/1" % (rnd.randrange(3), rnd.randrange(50))
        headers: list[tuple[str, bytes | None]] | None = [(HEADER_ID, rid)]
        if rnd.random() < carry:
            headers = [(HEADER_ID, rid), (HEADER_SEQ, b"%d" % rnd.choice(drawn))]
        if rnd.random() < bare:
            headers = None
        records.append(PlainRecord("mid", 0, offset, ts, b"k%d" % offset, b"{}", headers))
    expected = [m.offset() for m in sorted(records, key=lambda m: (m.timestamp()[1], seq_of(m), origin_of(m)))]
    runs: list[int] = []
    real_run = WriterStreams._order_run

    def counted(taken: list[Any], start: int, end: int) -> None:
        runs.append(end - start)
        real_run(taken, start, end)

    monkeypatch.setattr(WriterStreams, "_order_run", staticmethod(counted))
    streams = WriterStreams()
    for m in records:
        assert streams.append(m)
    assert [m.offset() for m in streams.take_below(ts + 1)] == expected
    assert (not runs) == (shared > 0.5)


@pytest.mark.parametrize(
    "headers, seq",
    [
        ([(HEADER_ID, b"a"), (HEADER_SEQ, b"12")], 12),  # (last: a program's outputs carry it so)
        ([(HEADER_SEQ, b"12"), (HEADER_ID, b"a")], 12),
        ([(HEADER_SEQ, b"3"), (HEADER_SEQ, b"x")], 3),  # (the last that is a number)
        ([(HEADER_SEQ, b"3"), (HEADER_SEQ, None)], 3),
        ([(HEADER_SEQ, b"3"), (HEADER_SEQ, b"4")], 4),
        ([(HEADER_ID, b"a")], streams_module.NO_SEQ),
        ([], streams_module.NO_SEQ),
        (None, streams_module.NO_SEQ),
    ],
)
def test_the_es_seq_of_a_tie_is_read_as_the_tie_order_reads_it(headers: Any, seq: int) -> None:
    """``_tie_seq`` (which reads a last ``es-seq`` without looking at the other headers) gives
    ``tie_of``'s ``es-seq``: the last that is a number."""
    msg = PlainRecord("mid", 0, 0, T0, b"k", b"{}", headers)
    assert streams_module._tie_seq(msg) == streams_module.tie_of(msg)[0] == seq


def test_a_keys_records_of_one_time_are_compared_by_es_seq_before_their_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hot key's records of one ms, as they come (``WriterStreams._another``): compared by
    ``es-seq`` and, only where two share one, by their ids' origins (``_tie_before``); the key
    whose records came out of that order is merged per key (a key's records keep their offset
    order), as the record-by-record merge takes them."""
    rnd = random.Random(3)
    seqs = [5, 9, 2, 2, 14, 30]  # (2 after 9: out of order; two of 2: their origins decide)
    records = [
        PlainRecord("mid", 0, i, T0, b"hot", b"{}", [(HEADER_ID, b"up/src:0:%d/1" % (40 - i)), (HEADER_SEQ, b"%d" % s)])
        for i, s in enumerate(seqs)
    ]
    records.insert(1, written(rnd, 99, T0 - 1, b"other", 99))
    parsed = parses_counted(monkeypatch)
    streams = WriterStreams()
    for m in records:
        assert streams.append(m)
    assert streams.disordered == {b"hot"}
    assert parsed == [b"up/src:0:37/1", b"up/src:0:38/1"]  # (only the two of es-seq 2, compared as they came)
    monkeypatch.undo()
    assert [m.offset() for m in streams.take_below(T0 + 1)] == per_key_merge(records, T0 + 1)
