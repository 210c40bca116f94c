"""The repartition topic's deduplication (``task/copies.py``): copies of one source partition in
offset order (one number per source, as before), and in record-time order with
``es-source-below`` (a partition several upstream tasks write, ``Task._forward_in_time_order``)."""

from __future__ import annotations

import random

import orjson

from eventscript.state.changelog import decode_hwm
from eventscript.task.copies import CopiesSeen, OffsetRuns, Watch

SOURCE = "events:1"


def test_copies_in_offset_order_are_repeats_below_the_last_one_processed() -> None:
    copies = CopiesSeen()
    assert [copies.first_time(SOURCE, o, None) for o in (3, 7, 9)] == [True, True, True]
    assert [copies.first_time(SOURCE, o, None) for o in (3, 7, 9, 10)] == [False, False, False, True]
    assert copies.first_time("events:2", 3, None)  # (each source on its own)


def test_copies_in_record_time_order_are_not_taken_for_repeats() -> None:
    """Offsets 10, 5, 12 in that order (their record times): by offset alone, 5 would be a repeat."""
    copies = CopiesSeen()
    assert [copies.first_time(SOURCE, o, 3) for o in (10, 5, 12)] == [True, True, True]


def test_copies_sent_again_after_the_forwarder_restarted_are_repeats() -> None:
    copies = CopiesSeen()
    for offset, below in [(10, 3), (5, 3), (12, 6), (8, 6)]:
        assert copies.first_time(SOURCE, offset, below)
    # The forwarder restarted from its committed position (4) and sends them again, and more.
    again = [(5, 4), (10, 4), (8, 4), (12, 9), (14, 9), (9, 9)]
    assert [copies.first_time(SOURCE, o, b) for o, b in again] == [False, False, False, False, True, True]


def test_offsets_below_the_bound_are_let_go_and_every_copy_there_is_a_repeat() -> None:
    copies = CopiesSeen()
    for offset in (10, 5, 12):
        copies.first_time(SOURCE, offset, 3)
    assert copies.first_time(SOURCE, 20, 11)  # everything below 11 is re-published before it
    assert copies.seen[SOURCE] == {12, 20}
    assert not copies.first_time(SOURCE, 7, 11)  # (never processed here: another task's record)


def test_a_late_copy_above_the_bound_is_processed() -> None:
    """A record a writer wrote below the watermark after being idle: re-published late, it is
    new, not a repeat (the reader processes it as it comes, as a late record)."""
    copies = CopiesSeen()
    copies.first_time(SOURCE, 10, 9)
    assert copies.first_time(SOURCE, 30, 30)  # (its record time may be below 10's)


def test_the_marks_survive_the_changelog_and_the_old_format_reads() -> None:
    copies = CopiesSeen()
    copies.first_time(SOURCE, 10, 3)
    copies.first_time(SOURCE, 5, 3)
    copies.first_time("plain:0", 7, None)
    raw = copies.encode()
    again = CopiesSeen.decode(raw)
    assert (again.below, again.seen) == ({SOURCE: 3, "plain:0": 8}, {SOURCE: {5, 10}})
    assert not again.first_time(SOURCE, 5, 3)
    assert again.first_time(SOURCE, 6, 3)
    assert decode_hwm(raw) == {SOURCE: 3, "plain:0": 8}  # (what the backfill's hand-over merges)
    old = CopiesSeen.decode(b'{"plain:0": 8}')
    assert (old.below, old.seen) == ({"plain:0": 8}, {})
    assert CopiesSeen.decode(None).below == {}


def test_offsets_are_kept_as_runs_whatever_order_they_come_in() -> None:
    """A record waiting long below a task's position leaves every record processed meanwhile
    noted: they come as runs and are kept (and written at every commit) as a few numbers."""
    rng = random.Random(3)
    for _ in range(200):
        offsets = [rng.randrange(60) for _ in range(rng.randrange(40))]
        runs, plain = OffsetRuns(), set()
        for o in offsets:
            runs.add(o)
            plain.add(o)
            assert list(runs) == sorted(plain)
        assert all((o in runs) == (o in plain) for o in range(-1, 62))
        bound = rng.randrange(62)
        runs.drop_below(bound)
        assert list(runs) == sorted(o for o in plain if o >= bound)
        again = OffsetRuns.decode(orjson.loads(orjson.dumps(runs.encode())))
        assert list(again) == list(runs) and len(again) == len(runs)
    done = CopiesSeen()
    for offset in range(100, 100_100):
        done.done("mid:0", offset)
    assert done.seen["@mid:0"].encode() == [[100, 100_100]]
    assert len(done.encode()) < 40
    assert CopiesSeen.decode(done.encode()).done_before("mid:0", 50_000)
    assert OffsetRuns.decode([[5, 9], 3, [8, 12]]).encode() == [3, [5, 12]]


def test_a_watch_keeps_the_ids_taken_below_the_position_and_the_bounds_leave_it_out() -> None:
    copies = CopiesSeen()
    copies.first_time("plain:0", 7, None)
    copies.watched["mid:0"] = Watch(20_000, {b"w/src:0:1/1": 1, b"w/src:0:2/1": 5})
    raw = copies.encode({"mid:0": 3})
    again = CopiesSeen.decode(raw)
    assert set(again.watched["mid:0"].ids) == {b"w/src:0:1/1"} and again.watched["mid:0"].until == 20_000
    assert decode_hwm(raw) == {"plain:0": 8}  # (what the backfill's hand-over merges)
