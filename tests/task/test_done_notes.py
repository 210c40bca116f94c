"""``DoneNotes`` (task/noting.py): what a task processes of a partition read in record-time order
is noted as done at the end of its ``process``, and a record done with before the commit the task
restarted from is skipped, whether the merge hands records on one by one or as a run."""

from __future__ import annotations

import collections

from eventscript.task.copies import CopiesSeen
from eventscript.task.merge import InputPartition
from eventscript.task.noting import DoneNotes
from eventscript.task.record import PlainRecord
from eventscript.task.streams import WriterStreams
from eventscript.topology.config import InputConfig

T0 = 1_767_225_600_000


def record(offset: int) -> PlainRecord:
    return PlainRecord("mid", 0, offset, T0 + offset, b"k", b"{}")


def partition(waiting: list[int]) -> InputPartition:
    """Partition "mid:0", read in record-time order, with the records at ``waiting`` still waiting."""
    ip = InputPartition("mid", 0, 0, InputConfig(topic="mid", event="Hit"))
    ip.streams = WriterStreams()
    for offset in waiting:
        ip.streams.append(record(offset))
    return ip


def loaded(*done: int) -> CopiesSeen:
    """What a task restarted from a commit loads: ``done`` noted before it."""
    before = CopiesSeen()
    for offset in done:
        before.done("mid:0", offset)
    return restarted(before)


def restarted(copies: CopiesSeen) -> CopiesSeen:
    """What a task restarted from a commit of ``copies`` loads."""
    return CopiesSeen.decode(copies.encode())


def test_one_by_one_a_record_done_before_is_skipped_and_the_rest_noted_past_what_waits() -> None:
    copies = loaded(5)  # (processed before the commit the task restarted from)
    notes = DoneNotes(copies, frozenset({"mid:0"}))
    processed: list[int] = []
    one = notes.one(lambda ip, msg: processed.append(msg.offset()))
    ip = partition(waiting=[3])
    for offset in (4, 5, 6):
        one(ip, record(offset))
    assert processed == [4, 6]
    notes.flush([ip])
    again = restarted(copies)
    assert [again.done_before("mid:0", o) for o in (3, 4, 5, 6)] == [False, True, True, True]


def test_a_run_drops_the_records_done_before_and_notes_nothing_when_nothing_waits() -> None:
    copies = loaded(8)
    notes = DoneNotes(copies, frozenset({"mid:0"}))
    processed: list[int] = []

    def take(ip: InputPartition, buf: collections.deque[PlainRecord], n: int, position: dict[str, int]) -> None:
        processed.extend(buf.popleft().offset() for _ in range(n))

    run = notes.run(take)
    assert run is not None
    buf = collections.deque(record(o) for o in (7, 8, 9))
    ip = partition(waiting=[])
    run(ip, buf, 3, {})
    assert processed == [7, 9] and not buf
    notes.flush([ip])  # nothing waits: the position passes them all, none needs noting
    again = restarted(copies)
    assert [again.done_before("mid:0", o) for o in (7, 9)] == [False, False]


def test_only_a_record_below_the_last_one_noted_before_the_load_is_looked_up() -> None:
    """A task reads each record once between loads: what it notes itself is of records it will
    not read again, so a record past every offset noted when it loaded is not looked up (it
    cost each record of such a partition a look-up: issue 21), and once its position passes
    them, none is."""
    copies = loaded(5, 6, 9)
    assert copies.loaded_done == {"mid:0": 10}
    assert [copies.done_before("mid:0", o) for o in (4, 5, 6, 9, 10)] == [False, True, True, True, False]
    copies.done("mid:0", 12)  # (taken in this run of the task: not read again before a load)
    assert not copies.done_before("mid:0", 12)
    assert restarted(copies).done_before("mid:0", 12)
    copies.settle("mid:0", 8)
    assert copies.done_before("mid:0", 9) and copies.loaded_done == {"mid:0": 10}
    copies.settle("mid:0", 10)
    assert copies.loaded_done == {} and not copies.done_before("mid:0", 9)
