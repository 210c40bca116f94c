"""The records of a gated repartition partition, one queue per source partition.

The tasks of a program re-publish each other's records as soon as they fetch them
(``Task.forward_ahead``), so a repartition partition interleaves several source partitions in
fetch order, not in record-time order: a record of 08:00 from one source may follow one of 08:05
from another. Each source partition's records come in its own order (its offsets), so the merge
takes them as Kafka Streams' PartitionGroup takes partitions: the earliest head first. Taking
each source's records in offset order also keeps the repartition topic's deduplication by source
offset (``Task._from_repartition``) right. Ties between sources go by source topic and partition,
so that which of two records of one time comes first does not depend on fetch order.
"""

from __future__ import annotations

import collections

from . import codec
from .record import Record


def _source_of(msg: Record) -> tuple[str, int]:
    """The re-published record's source partition (topic, partition), from its header."""
    raw = codec.header(msg.headers(), codec.HEADER_SOURCE)
    if raw is None:
        return "", -1
    head = raw.decode().rpartition(":")[0]  # "topic:partition:offset"
    topic, _, partition = head.rpartition(":")
    return topic, int(partition)


class SourceStreams:
    """Records of one partition split by source partition, each queue in offset order."""

    def __init__(self) -> None:
        self.queues: dict[tuple[str, int], collections.deque[Record]] = {}
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def append(self, msg: Record) -> None:
        source = _source_of(msg)
        queue = self.queues.get(source)
        if queue is None:
            queue = self.queues[source] = collections.deque()
        queue.append(msg)
        self.count += 1

    def head(self) -> tuple[int, tuple[str, int]] | None:
        """The earliest head's (record time ms, source); None when empty."""
        best: tuple[int, tuple[str, int]] | None = None
        for source, queue in self.queues.items():
            if queue:
                k = (queue[0].timestamp()[1], source)
                if best is None or k < best:
                    best = k
        return best

    def pop(self, source: tuple[str, int]) -> Record:
        self.count -= 1
        return self.queues[source].popleft()

    def first_offset(self) -> int | None:
        """The least offset still queued (None: none): the partition's position stays before it."""
        offsets = [queue[0].offset() for queue in self.queues.values() if queue]
        return min(offsets) if offsets else None

    def clear(self) -> None:
        self.queues.clear()
        self.count = 0
