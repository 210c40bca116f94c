"""The records of a partition read in record-time order that a task has done with
(``copies.CopiesSeen.done``), noted as it processes them.

Such a partition (one several upstream tasks write: ``streams.WriterStreams``) is processed out
of offset order, and its position stays before its first record still waiting, so a restart from
a commit would take again the records after the position that the commit's state already has:
the task notes them as done, and skips those noted when it reads them again (``done_before``).

Why after the whole ``process`` rather than record by record: only the records at or past where
the partition's position then stays (its first record still waiting) can be read again, and
most are before it (the position passes them at once); a note per record, and the set it grows
until the next commit trims it, cost a gated task a few percent of its time (issue 21).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterable

from ..state.changelog import Position
from .copies import DONE, CopiesSeen
from .merge import InputPartition, ProcessRun
from .record import Record
from .streams import WriterStreams

ProcessOne = Callable[[InputPartition, Record], None]


class DoneNotes:
    """The records processed in one ``Task.process`` of the partitions ``names``, their offsets
    noted as done at its end (``flush``: read only then, and only if some may be read again)."""

    def __init__(self, copies: CopiesSeen, names: frozenset[str]) -> None:
        self.copies = copies
        self.names = names
        self.processed: dict[str, list[Record]] = {}

    def one(self, process_one: ProcessOne) -> ProcessOne:
        """``process_one``, skipping a record done with before the commit the task restarted
        from and noting the others."""
        # (as ``CopiesSeen.done_before`` looks a record up, without a call of its own: the merge
        # of several inputs hands most records on one by one)
        noted_key, seen, processed = {name: DONE + name for name in self.names}, self.copies.seen, self.processed
        loaded = self.copies.loaded_done  # (only a record below its end may be done with already)

        def noted(ip: InputPartition, msg: Record) -> None:
            key = noted_key.get(ip.name)
            if key is None:
                process_one(ip, msg)
                return
            end = loaded.get(ip.name)
            if end is not None and msg.offset() < end:
                noted_done = seen.get(key)
                if noted_done and msg.offset() in noted_done:
                    return  # (read again after a restart: skipped)
            process_one(ip, msg)
            processed.setdefault(ip.name, []).append(msg)

        return noted

    def run(self, process_run: ProcessRun | None) -> ProcessRun | None:
        """``process_run`` so too: the records done with before are dropped from the run first."""
        if process_run is None:
            return None
        copies, names, processed = self.copies, self.names, self.processed

        def noted(ip: InputPartition, buf: collections.deque[Record], n: int, position: Position) -> None:
            if ip.name not in names:
                process_run(ip, buf, n, position)
                return
            name = ip.name
            run = list(itertools.islice(buf, n))
            # (as ``CopiesSeen.done_before``, looked up once per run: mostly nothing can be done
            # with already, ``CopiesSeen.loaded_done``)
            noted_done = copies.seen.get(DONE + name) if name in copies.loaded_done else None
            if noted_done and any(again := [m.offset() in noted_done for m in run]):
                run = list(itertools.compress(run, [not a for a in again]))  # (read again after a restart: skipped)
                for _ in range(n):
                    buf.popleft()
                buf.extendleft(reversed(run))
                n = len(run)
            left = len(buf)
            try:
                process_run(ip, buf, n, position)
            except BaseException:
                run = run[: left - len(buf) - 1]  # (the one that raised is not done)
                raise
            finally:
                processed.setdefault(name, []).extend(run)

        return noted

    def flush(self, inputs: Iterable[InputPartition]) -> None:
        """Note as done the offsets processed at or past where each partition's position stays."""
        done = self.copies.done
        for ip in inputs:
            records = self.processed.pop(ip.name, None)
            floor = _still_waiting(ip) if records else None
            if records and floor is not None:
                kept = [o for m in records if (o := m.offset()) >= floor]  # (one pass: most are below)
                collections.deque(map(done, itertools.repeat(ip.name), kept), maxlen=0)


def _still_waiting(ip: InputPartition) -> int | None:
    """The least offset of a record of ``ip`` not processed yet (waiting, or released and not
    taken): its position settles at most there (None: nothing waits, it passes every record
    taken)."""
    waiting = [o for o in (_first_offset(ip.inbox), _first_offset(ip.streams)) if o is not None]
    return min(waiting) if waiting else None


def _first_offset(streams: object) -> int | None:
    return streams.first_offset() if isinstance(streams, WriterStreams) else None
