"""What a reader downstream needs of a backfill's topics (issue 21, ``task/progress.py``): the
records in record-time order, and progress markers after them.

A worker on record time marks its progress on every topic it writes that another program reads,
and a reader on record time holds records back until every writing task has marked its progress
past them. A backfill writes such a topic too (the program's topics, in one transaction), so it
ends as the worker's tasks do when their inputs are read to their ends: for every task p of the
program (its input partitions) a marker on every partition of every such topic, after every
record, in the same transaction. The reader then has every record of p before the marker.

Order: a worker task writes its outputs in record-time order. A worker reading them needs only
each key's records in order: it takes them per record key (``task/streams.py``) and re-publishes
other tasks' keys in record-time order too (``Task._forward_in_time_order``). But a backfill of
the reader takes a partition in offset order. The backfill's records come task after task
(partition mode) or key group after key group (key-split and key-parallel modes), so on the
topics another program reads they are written in record-time order (``reading_order``: ties
as a reader takes them, by ``es-seq``, then by the es-id's cause), held in memory meanwhile; per
key, that is the order the backfill gave them.

Which marker: without a hand-over, nothing follows the backfill under p's name, so p is *idle*
(``IDLE``, holding nothing back) and has reached its final record clock (``es-reached``), as a
worker task whose inputs are all idle says; the reader releases everything and its clock moves
as far as every writer's clock has. With a hand-over (``--handover``) the program's workers
resume at the cut as the same writers, with p's record clock: p's progress is that clock (every
later record of p has a timestamp at least this), so a reader keeps waiting for the workers'
markers and merges what they write in record-time order too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ..task.progress import IDLE, marker_headers
from ..task.streams import Origin, origin_of, seq_of
from ..topology.config import ProgramConfig, Topology
from ..topology.progress import progress_plan

#: A record to produce: (topic, partition, key, value, headers, timestamp ms).
MarkerRecord = tuple[str, int | None, bytes | None, bytes | None, list[tuple[str, bytes | None]], int]


def final_markers(
    topo: Topology,
    cfg: ProgramConfig,
    tasks: int,
    clocks: Mapping[int, int],
    partitions_of: Callable[[str], int],
    handover: bool,
) -> list[MarkerRecord]:
    """The markers of program ``cfg``'s ``tasks`` tasks after a backfill: ``clocks`` is each
    task's final record clock (ms; a task missing there had no record: its marker holds nothing
    back and says nothing of its clock), ``partitions_of`` a topic's partition count on the
    broker. None when no program on record time waits on the program's topics."""
    plan = progress_plan(topo, cfg, partitions_of)
    out: list[MarkerRecord] = []
    for p in range(tasks):
        clock = clocks.get(p)
        if handover and clock is not None:
            headers = marker_headers(cfg.name, p, clock)
        else:
            headers = marker_headers(cfg.name, p, IDLE, clock)
        ts = clock if clock is not None else 0
        for topic, partitions in plan.outputs.items():
            out.extend((topic, q, None, None, list(headers), ts) for q in range(partitions))
    return out


def read_topics(topo: Topology, cfg: ProgramConfig) -> set[str]:
    """The topics program ``cfg`` writes that a program of the topology reads: the sink writes
    them in record-time order (``reading_order``), whatever clock their readers run on."""
    read = {i.topic for p in topo.programs for i in p.inputs}
    return {*cfg.outputs.values(), cfg.error_topic} & read


class _Headers:
    """A record's headers behind the ``Record`` accessor ``task/streams.py`` reads."""

    __slots__ = ("_headers",)

    def __init__(self, headers: Any) -> None:
        self._headers = headers

    def headers(self) -> Any:
        return self._headers


def _reading_key(rec: MarkerRecord) -> tuple[int, int, Origin]:
    view = _Headers(rec[4])
    return rec[5], seq_of(view), origin_of(view)  # type: ignore[arg-type]


def reading_order(records: Iterable[MarkerRecord], topics: set[str]) -> Iterator[MarkerRecord]:
    """``records`` with those of ``topics`` in record-time order (ties by ``es-seq``, then by the
    es-id's cause, as a reader takes them), after the others (kept in memory until the end)."""
    held: list[MarkerRecord] = []
    for rec in records:
        if rec[0] in topics:
            held.append(rec)
        else:
            yield rec
    held.sort(key=_reading_key)
    yield from held
