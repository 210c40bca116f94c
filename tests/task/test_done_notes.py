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


def test_one_by_one_a_record_done_before_is_skipped_and_the_rest_noted_past_what_waits() -> None:
    copies = CopiesSeen()
    copies.done("mid:0", 5)  # (processed before the commit the task restarted from)
    notes = DoneNotes(copies, frozenset({"mid:0"}))
    processed: list[int] = []
    one = notes.one(lambda ip, msg: processed.append(msg.offset()))
    ip = partition(waiting=[3])
    for offset in (4, 5, 6):
        one(ip, record(offset))
    assert processed == [4, 6]
    notes.flush([ip])
    assert [copies.done_before("mid:0", o) for o in (3, 4, 5, 6)] == [False, True, True, True]


def test_a_run_drops_the_records_done_before_and_notes_nothing_when_nothing_waits() -> None:
    copies = CopiesSeen()
    copies.done("mid:0", 8)
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
    assert [copies.done_before("mid:0", o) for o in (7, 9)] == [False, False]
