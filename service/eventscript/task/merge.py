"""The input merge of a task (as Kafka Streams' PartitionGroup): its input partitions' buffered
records taken in timestamp order.

Ordering guarantee: within a task, records are processed in timestamp order across the task's
input partitions as far as they have been fetched (ties in the configured topic order, the
repartition topic last), and always in offset order within a partition. A task may wait up to
``max_task_idle_ms`` for a record from every input partition before merging. Records with an
earlier timestamp that arrive after later ones were processed are processed as they come.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..state.changelog import Position, tp_name
from ..topology.config import InputConfig
from .record import Record


@dataclass
class InputPartition:
    topic: str
    partition: int
    order: int
    config: InputConfig | None  # None: the repartition topic
    buffer: collections.deque[Record] = field(default_factory=collections.deque)
    eof: bool = False
    name: str = ""  # "topic:partition"
    #: value, headers → (event name, value), for the topic's input configuration.
    decode: Any = None
    #: For a topic with one fixed event name: the group-key function of that event.
    key_fn: Any = None
    #: Its records' output ids start "program/topic:" (None: the repartition topic, whose records
    #: are named by their original coordinates).
    id_head: bytes | None = None
    #: A grouped program's records of this input must be keyed (an input topic not configured
    #: with ``keyed: false`` nor ``key: none``).
    needs_key: bool = False

    def __post_init__(self) -> None:
        self.name = tp_name(self.topic, self.partition)
        cfg = self.config
        self.needs_key = cfg is not None and cfg.keyed is not False and cfg.key != "none"


class PartitionGroup:
    """A task's input partitions, their buffers and the position reached in each."""

    def __init__(self, inputs: list[InputPartition]) -> None:
        self.inputs = inputs
        self.by_name = {ip.name: ip for ip in inputs}
        self.by_topic = {ip.topic: ip for ip in inputs}
        #: "topic:partition" → the offset after the last record processed.
        self.position: Position = {}
        self._idle_since: float | None = None

    def add(self, msg: Record) -> bool:
        """Buffer ``msg``; whether it is one of the group's (all of a task's partitions have its
        partition number, so its topic tells)."""
        ip = self.by_topic.get(msg.topic())
        if ip is None:
            return False
        ip.buffer.append(msg)
        ip.eof = False
        return True

    def mark_eof(self, topic: str, partition: int) -> None:
        ip = self.by_name.get(tp_name(topic, partition))
        if ip is not None:
            ip.eof = True

    def drained(self) -> bool:
        """Every input is at its end with nothing buffered."""
        return all(ip.eof and not ip.buffer for ip in self.inputs)

    def clear(self) -> None:
        """Drop the buffered records and the positions reached (a rewind: they are read again)."""
        for ip in self.inputs:
            ip.buffer.clear()
            ip.eof = False
        self.position = {}

    def drop_buffered(self) -> None:
        """Drop the buffered records (fetched before a seek), keeping the end marks."""
        for ip in self.inputs:
            ip.buffer.clear()

    def process(self, max_idle_ms: int, process_one: Callable[[InputPartition, Any], None]) -> int:
        """Hand buffered records to ``process_one`` in timestamp order, advancing the position
        past each; returns how many."""
        done = 0
        inputs = self.inputs
        position = self.position
        while True:
            nonempty = [ip for ip in inputs if ip.buffer]
            if len(nonempty) == 1 and (max_idle_ms == 0 or all(ip.eof for ip in inputs if not ip.buffer)):
                # One partition has records: nothing to merge, take them in offset order.
                ip = nonempty[0]
                buf = ip.buffer
                n = len(buf)
                msg = None
                try:
                    for _ in range(n):
                        msg = buf.popleft()
                        process_one(ip, msg)
                finally:
                    if msg is not None:
                        position[ip.name] = msg.offset() + 1
                done += n
                continue
            best: InputPartition | None = None
            best_key: tuple[int, int] | None = None
            waiting = False
            for ip in inputs:
                if ip.buffer:
                    m = ip.buffer[0]
                    k = (m.timestamp()[1], ip.order)
                    if best_key is None or k < best_key:
                        best, best_key = ip, k
                elif not ip.eof:
                    waiting = True
            if best is None:
                break
            if waiting and max_idle_ms > 0:
                now = time.monotonic()
                if self._idle_since is None:
                    self._idle_since = now
                if (now - self._idle_since) * 1000 < max_idle_ms:
                    break
            self._idle_since = None
            msg = best.buffer.popleft()
            process_one(best, msg)
            position[best.name] = msg.offset() + 1
            done += 1
        return done
