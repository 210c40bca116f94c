"""The gated merge of several inputs, a run at a time (``PartitionGroup._process_gated``).

Once a task's gated inputs have released their records up to the watermark, each input's share
is a run in its own order (a partition several upstream tasks write: the merge's order, from
``WriterStreams.release``; any other: offset order), and the merge interleaves them as the
record-by-record merge does: the earliest head first, ties by ``es-seq`` then by the configured
input order. Why a run at a time: the record-by-record merge reads each input's head and its
``es-seq`` header for every record it takes, which cost a task on four inputs about a third of its
time (issue 21). When each run is in time order (the usual case: records are released in time
order), that merge is a stable sort by time of the runs laid end to end in input order, in C,
with only the records of one time from several inputs merged by their ``es-seq``.
"""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Sequence

from .record import Record
from .streams import order_of


def merge_runs(runs: Sequence[Sequence[Record]]) -> list[tuple[int, Record]] | None:
    """The records of ``runs`` (one per input, in the configured input order, each in its own
    order) in the merge's order, each with the index of its run; None when a run is not in time
    order (its head order is not its time order: the caller merges record by record)."""
    records: list[Record] = []
    times: list[int] = []
    owners: list[int] = []
    for i, run in enumerate(runs):
        ts = [m.timestamp()[1] for m in run]
        if any(map(operator.gt, ts, itertools.islice(ts, 1, None))):
            return None
        records.extend(run)
        times.extend(ts)
        owners.extend(itertools.repeat(i, len(run)))
    order = sorted(range(len(records)), key=times.__getitem__)  # (stable: input order, then its own)
    ordered = [times[i] for i in order]
    if any(map(operator.eq, ordered, itertools.islice(ordered, 1, None))):
        _merge_ties(order, ordered, owners, records)
    return [(owners[i], records[i]) for i in order]


def _merge_ties(order: list[int], ordered: list[int], owners: list[int], records: list[Record]) -> None:
    """In ``order`` (indices by time; ``ordered``, their times), merge each run of one time that
    spans several inputs by ``es-seq``, each input's records keeping their order (the input
    order breaks ties: ``heapq.merge`` takes equal keys from earlier iterables first)."""
    n = len(order)
    start = 0
    while start < n:
        ts = ordered[start]
        end = start + 1
        while end < n and ordered[end] == ts:
            end += 1
        group = order[start:end]
        if len({owners[i] for i in group}) > 1:
            by_input: dict[int, list[int]] = {}
            for i in group:
                by_input.setdefault(owners[i], []).append(i)
            parts = [by_input[k] for k in sorted(by_input)]
            order[start:end] = list(heapq.merge(*parts, key=lambda i: order_of(records[i])))
        start = end
