"""The input merge of a task (as Kafka Streams' PartitionGroup): its input partitions' buffered
records taken in timestamp order.

Ordering guarantee: within a task, records are processed in timestamp order across the task's
input partitions as far as they have been fetched (ties in the producer's order, ``es-seq``, where
the records carry one, then in the configured topic order, the repartition topic last), and
always in offset order within a partition. A task may wait up to ``max_task_idle_ms`` for a
record from every input partition before merging; a program on record time with markers waits
instead until every source partition has given what comes before a record, or is idle
(``PartitionGroup.order_sources``). Records with an earlier timestamp that arrive after later ones
were processed are processed as they come.

Inputs written by other tasks on record time carry progress markers (``progress.py``): such a
*gated* partition holds its records back until every task writing there has marked progress up to
their timestamps, so the merge releases records in record-time order across every upstream task
(where one upstream task writes the partition, ``InputProgress.own``, its records come in that
order already and wait only for its progress).
Markers never reach the program: ``add`` takes them out as they arrive (a marker speaks of the
records before it, which are buffered by then).

A gated task on several partitions *forwards ahead* (``Task.forward_ahead``): it re-publishes
other tasks' records as soon as its own writers' progress passes them, before its merge waits,
and marks its repartition progress from what it has re-published; its repartition partition is
merged per source partition (``streams.py``), and a record of one of its sources waits for its
other sources' frontiers (as the merge of the other tasks' records waits for their markers).
"""

from __future__ import annotations

import collections
import itertools
import operator
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..state.changelog import Position, tp_name
from ..topology.config import InputConfig
from .copies import CopiesSeen
from .progress import IDLE, InputProgress, read_marker, read_reached
from .record import Record
from .repeats import RepeatGuard, restarted
from .runs import merge_runs
from .streams import SourceStreams, WriterStreams, order_of


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
    #: Other tasks write progress markers here (a topic a program writes, or the repartition topic).
    markers: bool = False
    #: Gated: the progress of every task writing here (None: records go as fetched, today's rule).
    progress: InputProgress | None = None
    #: The latest timestamp (ms; None: none yet) of a record added that moves record time, and
    #: when one was last added (monotonic s): how far an external partition has come, for the
    #: task's own progress. A record that moves no clock (it gives an ``$error``) is no progress:
    #: counted, its timestamp would reach other tasks through the markers and move their clocks
    #: where no record took the backfill's or the tester's (``seen_untimed``). With forwarding
    #: ahead a source's records are told apart as they leave the inbox (``saw``), before any
    #: marker can carry them; otherwise as they are processed, which is before the partition's
    #: frontier can count them (it counts its first buffered record while there is one).
    seen_ms: int | None = None
    seen_at: float = field(default_factory=time.monotonic)
    #: Set when the partition stopped holding time back for being idle, until its next record;
    #: and how many times that happened (for the metrics).
    idled: bool = False
    times_idled: int = 0
    #: Forwarding ahead (``Task.forward_ahead``, a gated task on several partitions). A source
    #: partition's fetched records wait in ``inbox`` until its own writers' progress passes them
    #: (at once when it is not gated); then those of other tasks are re-published and the task's
    #: own go to ``buffer`` (or ``streams``). The inbox of a partition several upstream tasks write
    #: is itself read per record key, so that its records go in record-time order
    #: (``Task._forward_in_time_order``). ``looked_to``: the offset after the last record taken
    #: from the inbox.
    inbox: collections.deque[Record] | WriterStreams | None = None
    looked_to: int | None = None
    #: The records of a gated partition in queues merged in record-time order (``streams.py``):
    #: the repartition partition's per source partition, those of a topic several upstream tasks
    #: write per record key (None: in ``buffer``, in offset order).
    streams: SourceStreams | WriterStreams | None = None
    #: Drops what its writers wrote again (``repeats.py``; None: not gated, or the repartition
    #: partition, whose copies ``copies.py`` tells apart).
    guard: RepeatGuard | None = None

    def pending(self) -> int:
        """Records fetched and not processed yet (buffered, in the inbox or in the streams)."""
        n = len(self.buffer)
        if self.inbox is not None:
            n += len(self.inbox)
        if self.streams is not None:
            n += len(self.streams)
        return n

    def held(self) -> collections.deque[Record] | None:
        """The records waiting in offset order (the inbox, else the buffer), unless kept per key."""
        if isinstance(self.inbox, collections.deque):
            return self.inbox
        return self.buffer if self.streams is None else None

    def head_ms(self) -> int | None:
        """The record time of the next record the merge may take from this partition (None: none)."""
        if self.streams is not None:
            return self.streams.head_ms()
        return self.buffer[0].timestamp()[1] if self.buffer else None

    def republished(self, now: float) -> int | None:
        """With forwarding ahead, the record time before which this source partition has nothing
        more to re-publish (ms; None: not known yet): every record it gave that belongs to another
        task is re-published once its writers' progress passes it (at once, not gated), so only
        the records in the inbox and those still to come count. Records kept for the task itself
        do not: another task waiting on this one never waits on what this one waits for."""
        if self.progress is not None:
            w = self.progress.watermark
            inbox = self.inbox
            if w is None or not inbox:
                return w
            if isinstance(inbox, WriterStreams):
                head = inbox.head_ms()
                return w if head is None else min(w, head)
            return min(w, min(m.timestamp()[1] for m in inbox))  # (one may sit behind a later one)
        if self.inbox is None and self.buffer:
            # Not forwarding ahead: a buffered record is re-published as it is processed, if at
            # all (records wait in the merge with ``max_task_idle_ms``, or before a task that was
            # idle has processed them: ``Task.process``).
            return self.buffer[0].timestamp()[1]
        inbox = self.inbox
        if isinstance(inbox, collections.deque) and inbox:
            # Fetched and not re-published yet (a marker written before ``forward_ahead``: a task
            # with records again after an idle marker, an at-least-once marker after a commit):
            # idle or not, the partition still has these to give.
            return min(m.timestamp()[1] for m in inbox)
        return MAX_FRONTIER if self._idle(now) else self.seen_ms

    def saw(self, ts: int) -> None:
        """A record of timestamp ``ts`` (ms) that moves record time came from this partition."""
        if self.seen_ms is None or ts > self.seen_ms:
            self.seen_ms = ts

    def seen_untimed(self, ts: int, clock_ms: int) -> None:
        """A record of timestamp ``ts`` turned out to move no clock (the task's clock is at
        ``clock_ms``): its timestamp is not the partition's progress. The records before it that
        do move time are processed by now, so the partition has come at most as far as the clock."""
        if self.seen_ms is not None and self.seen_ms == ts and ts > clock_ms:
            self.seen_ms = clock_ms

    def settle_position(self, position: Position) -> None:
        """With forwarding ahead: the position passes every record re-published or processed
        before the first one still waiting."""
        streams, inbox = self.streams, self.inbox
        if isinstance(inbox, WriterStreams):  # (then streams is one too: the records kept)
            waiting = [o for o in (inbox.first_offset(), streams.first_offset() if streams else None) if o is not None]
            to = min(waiting) if waiting else self.looked_to
        elif streams is not None and len(streams):
            to = streams.first_offset()
        elif streams is not None and self.looked_to is None:
            to = streams.taken_to  # (every record it took is processed)
        elif self.buffer:
            to = self.buffer[0].offset()
        elif inbox:
            to = inbox[0].offset()
        else:
            to = self.looked_to
        if to is not None and to > position.get(self.name, -1):
            position[self.name] = to

    def frontier(self, now: float) -> int | None:
        """The record time before which this partition has nothing more to give (ms): its first
        buffered record's or its watermark (gated), else the latest timestamp seen (external);
        None: not known yet. A source partition read to its end with nothing new for its
        ``idle_timeout_ms`` (0 by default: at once, as the merge takes what is fetched) holds
        nothing back (``MAX_FRONTIER``; ``idled`` says it happened)."""
        if self.progress is not None:
            return self._before_head(self.progress.watermark)
        if self.buffer:
            return self.buffer[0].timestamp()[1]
        return self.drained_frontier(now)

    def drained_frontier(self, now: float) -> int | None:
        """An ungated partition's ``frontier`` once its buffered records are taken: it does not
        fall while a ``process`` takes them (``PartitionGroup._merge_sources``)."""
        if isinstance(self.inbox, collections.deque) and self.inbox:  # (not looked at yet)
            return self.inbox[0].timestamp()[1]
        if self._idle(now):
            return MAX_FRONTIER  # caught up and idle: what is not written yet is not waited for
        return self.seen_ms

    def reached(self) -> int | None:
        """How far the task's clock may move on this partition's account without a record (ms;
        None: not known yet): as ``frontier``, but an idle source or writer counts where its
        records took it, not as holding nothing back, so that where a task's clock ends does not
        depend on which of its inputs went idle first (``progress.py``)."""
        if self.progress is not None:
            return self._before_head(self.progress.reached)
        if self.buffer:
            return self.buffer[0].timestamp()[1]
        if self.unwritten_repartition:
            return MAX_FRONTIER
        return self.seen_ms

    @property
    def unwritten_repartition(self) -> bool:
        """The program's repartition partition where no task writes it: ungated (a program on
        one task, or whose every record is on its key's task already: ``topology/keyed.py``).
        Read to its end it holds nothing back; a gated one goes by its writers' progress."""
        return self.config is None and self.progress is None

    def _before_head(self, bound: int | None) -> int | None:
        """A gated partition's ``bound`` (its writers' watermark or reached time), no later than
        its first buffered record's time."""
        head = self.head_ms()
        return min(bound, head) if bound is not None and head is not None else bound

    def _idle(self, now: float) -> bool:
        """A source partition read to its end with nothing new for its ``idle_timeout_ms``
        (noted in ``idled`` and counted in ``times_idled`` once each time)."""
        cfg = self.config
        if cfg is None:
            # The repartition partition of a program on one task (asked only then: with more it is
            # gated): no task writes it, so read to its end it holds nothing back. (Else the task
            # never marks itself idle, and its readers wait on its last record time for good.)
            return self.eof
        if not (self.eof and (now - self.seen_at) * 1000 >= (cfg.idle_timeout_ms or 0)):
            return False
        if not self.idled:
            self.idled = True
            self.times_idled += 1
        return True

    def __post_init__(self) -> None:
        self.name = tp_name(self.topic, self.partition)
        cfg = self.config
        self.needs_key = cfg is not None and cfg.keyed is not False and cfg.key != "none"


#: ``process_run(ip, buffer, n, position)``: process the first ``n`` records of ``ip``'s buffer in
#: offset order, taking each off the buffer, and set ``position[ip.name]`` past the last one taken
#: (also when one raises), as ``PartitionGroup.process`` does record by record.
ProcessRun = Callable[[InputPartition, "collections.deque[Record]", int, Position], None]

#: The frontier of an input that holds nothing back (an idle writer's progress, ``IDLE``).
MAX_FRONTIER = IDLE


def least(times: Iterable[int | None]) -> int | None:
    """The least of the inputs' times (ms), or None as soon as one is not known yet: time waits
    for every input. With no input, ``MAX_FRONTIER``: nothing holds it back."""
    bound = MAX_FRONTIER
    for t in times:
        if t is None:
            return None
        if t < bound:
            bound = t
    return bound


class PartitionGroup:
    """A task's input partitions, their buffers and the position reached in each."""

    def __init__(self, inputs: list[InputPartition]) -> None:
        self.inputs = inputs
        self.by_name = {ip.name: ip for ip in inputs}
        self.by_topic = {ip.topic: ip for ip in inputs}
        #: "topic:partition" → the offset after the last record processed.
        self.position: Position = {}
        self._idle_since: float | None = None
        #: The gated inputs (none: the merge is today's), and the records held back when the
        #: last ``process`` stopped at their watermark.
        self.gated: list[InputPartition] = []
        #: The ungated source partitions whose frontiers bound the merge too (``order_sources``;
        #: none: they go as fetched).
        self.sources: list[InputPartition] = []
        self.held_back = 0
        #: Markers read (for the metrics).
        self.markers_read = 0
        #: Records dropped as written again by their writers (``repeats.py``), since last counted,
        #: and where the guards keep what they watch (the task's, ``remember``).
        self.repeats = 0
        self.memory = CopiesSeen()

    def remember(self, memory: CopiesSeen) -> None:
        """Keep what the guards watch in ``memory`` (the task's ``CopiesSeen``, as loaded)."""
        self.memory = memory
        for ip in self.inputs:
            if ip.guard is not None:
                ip.guard.memory = memory

    def gate(self) -> None:
        """Take note of which inputs are gated (after their ``progress`` is set). A gated
        partition that several upstream tasks write is read per record key (``WriterStreams``):
        their records interleave as their commits landed, not in record-time order. One that only
        one task writes (``InputProgress.own``) is read in offset order, which is its writer's
        record-time order (its clock never goes back), with no merge between writers."""
        self.gated = [ip for ip in self.inputs if ip.progress is not None]
        for ip in self.gated:
            if ip.config is not None and ip.streams is None and len(ip.progress.holders) > 1:  # type: ignore[union-attr]
                ip.streams = WriterStreams()
            if ip.config is not None:
                by_id = not isinstance(ip.streams, WriterStreams)
                ip.guard = RepeatGuard(ip.progress, by_id, ip.name, self.memory)  # type: ignore[arg-type]

    def forward_ahead(self) -> None:
        """The task re-publishes other tasks' records as it fetches them (``Task.forward_ahead``):
        its source partitions' records wait in an inbox, its gated repartition partition's in one
        queue per source partition (set before the first record)."""
        for ip in self.inputs:
            if ip.config is not None:
                ip.inbox = WriterStreams() if isinstance(ip.streams, WriterStreams) else collections.deque()
            elif ip.progress is not None:
                ip.streams = SourceStreams()
        self.order_sources()

    def order_sources(self) -> None:
        """Merge the ungated source partitions in record-time order, as Kafka Streams'
        PartitionGroup does: a record of one source waits until every other source has given (or
        is idle at: read to its end, past its ``idle_timeout_ms``) what comes before it, and a
        source with records buffered is merged by its first one. A program on record time does so
        on any number of tasks (forwarding ahead, a source's record waits so for the other
        sources' frontiers too), so that one task gives the simulated run's order as several do.
        Nothing to merge, nothing to wait for: only where more than one input carries records
        (on one task, the repartition partition carries none)."""
        carrying = [ip for ip in self.inputs if ip.config is not None or ip.progress is not None]
        if len(carrying) > 1:
            self.sources = [ip for ip in carrying if ip.progress is None]

    def watermark(self) -> int | None:
        """The least watermark of the gated inputs: records up to it may be released (None: one
        gated input has not heard from all its writers; MAX_FRONTIER: none is gated)."""
        return least(ip.progress.watermark for ip in self.gated)  # type: ignore[union-attr]

    def _sources_bound(self) -> int | None:
        """Forwarding ahead: the least frontier of the ungated sources with nothing buffered (None:
        one has given nothing yet). A record of one source waits until the others have given (or
        are idle at) what comes before it, as the other tasks' repartition markers wait for their
        sources (``republished``); a source with records buffered is merged by its first one."""
        now = time.monotonic()
        return least(ip.frontier(now) for ip in self.sources if not ip.buffer)

    def frontier(self) -> int | None:
        """The least frontier of the inputs (``InputPartition.frontier``): the record time before
        which the task has nothing more to process."""
        now = time.monotonic()
        return least(ip.frontier(now) for ip in self.inputs)

    def reached(self) -> int | None:
        """The least ``InputPartition.reached`` of the inputs: where the task's clock may move
        without a record (``Task.move_to_progress``)."""
        return least(ip.reached() for ip in self.inputs)

    def sources_reached(self) -> int | None:
        """The least ``InputPartition.reached`` of the inputs that are not the repartition topic:
        how far the records the task re-publishes have come (ms; None: not known yet)."""
        return least(ip.reached() for ip in self.inputs if ip.config is not None)

    def add(self, msg: Record, now: float | None = None) -> bool:
        """Buffer ``msg``; whether it is one of the group's records (all of a task's partitions
        have its partition number, so its topic tells). A progress marker is taken in, not
        buffered: False (the host does not count it as a record consumed). ``now``: when it was
        fetched (monotonic s; None: now), which a host adding a whole poll reads once for all."""
        ip = self.by_topic.get(msg.topic())
        if ip is None:
            return False
        ts = None  # (its record time, once read)
        if ip.markers:
            # A marker has neither key nor value (``Task.write_progress``, ``backfill/markers.py``):
            # a record with a key is none, without reading its value (the queue per key needs
            # its key: read once, ``WriterStreams.put``).
            key = msg.key()
            if key is None and msg.value() is None:
                headers = msg.headers()  # (built anew by each call: read once)
                marker = read_marker(headers)
                if marker is not None:
                    self.markers_read += 1
                    if ip.progress is not None:
                        ip.progress.hear(*marker, read_reached(headers))
                        if ip.guard is not None:
                            # (a restart of a writer whose records go elsewhere: none to drop here)
                            restart = restarted(headers) and ip.progress.holds(marker[0])
                            self.repeats += len(ip.guard.heard(ip.held(), restart, msg.offset()))
                    if not ip.pending():  # everything before it is processed: the position passes it
                        self.position[ip.name] = msg.offset() + 1
                    return False
            guard = ip.guard
            if guard is not None:
                ts = msg.timestamp()[1]
                floor = guard.floor  # (asked only where it may drop: late, or a watch kept)
                if ((floor is not None and ts < floor) or guard.memory.watched) and not guard.admit(msg, ts):
                    self.repeats += 1  # written again (``repeats.py``): taken, and dropped
                    if not ip.pending():
                        self.position[ip.name] = msg.offset() + 1
                    return True
                # (gated: its frontier is its writers' progress, so when records last came and
                # whether it went idle, ``seen_at`` and ``idled``, are never asked: ``_idle`` is
                # for ungated partitions. A clock read costs a record here a tenth of what the
                # markers cost it: issue 21.)
                ip.eof = False
                streams, inbox = ip.streams, ip.inbox
                if inbox is None:
                    if streams is not None:
                        streams.put(msg, ts, key)
                    else:
                        ip.buffer.append(msg)
                elif isinstance(inbox, WriterStreams):
                    inbox.put(msg, ts, key)
                else:
                    inbox.append(msg)
                return True
        ip.seen_at = time.monotonic() if now is None else now
        ip.idled = False
        if ip.inbox is not None:
            ip.inbox.append(msg)  # (``saw`` as it leaves the inbox: ``Task.forward_ahead``)
        elif ip.streams is not None:  # (gated: its progress is its writers', not what it saw)
            ip.streams.append(msg, ts)
        else:
            ip.buffer.append(msg)
            ts = msg.timestamp()[1]
            if ip.seen_ms is None or ts > ip.seen_ms:  # (ip.saw, inlined: once per record fetched)
                ip.seen_ms = ts
        ip.eof = False
        return True

    def mark_eof(self, topic: str, partition: int) -> None:
        ip = self.by_name.get(tp_name(topic, partition))
        if ip is not None:
            ip.eof = True

    def drained(self) -> bool:
        """Every input is at its end with nothing buffered."""
        return all(ip.eof and not ip.pending() for ip in self.inputs)

    def clear(self) -> None:
        """Drop the buffered records and the positions reached (a rewind: they are read again)."""
        for ip in self.inputs:
            ip.eof = False
        self.drop_buffered()
        self.position = {}

    def republished(self) -> int | None:
        """The least ``InputPartition.republished`` of the inputs that are not the repartition
        topic: how far the task has re-published (ms; None: not known yet)."""
        now = time.monotonic()
        return least(ip.republished(now) for ip in self.inputs if ip.config is not None)

    def drop_buffered(self) -> None:
        """Drop the buffered records (fetched before a seek), keeping the end marks."""
        for ip in self.inputs:
            ip.buffer.clear()
            if ip.inbox is not None:
                ip.inbox.clear()
            if ip.streams is not None:
                ip.streams.clear()
        self._forget_progress()

    def _forget_progress(self) -> None:
        """Forget how far the inputs had come (the latest timestamps seen, the markers heard): after
        a rewind the records before them are read again, and a frontier past them would move the
        task's clock (firing its timers) ahead of records still to be processed. The writers are
        heard from again: their markers after the committed positions are read again, and each
        writes its markers anew every ``RESEND_S``."""
        for ip in self.inputs:
            ip.seen_ms = None
            ip.idled = False
            ip.looked_to = None
            if ip.progress is not None:
                ip.progress = InputProgress(ip.progress.writers, own=ip.progress.own)
        self.gate()

    def process(
        self,
        max_idle_ms: int,
        process_one: Callable[[InputPartition, Any], None],
        process_run: ProcessRun | None = None,
    ) -> int:
        """Hand buffered records to ``process_one`` in timestamp order, advancing the position
        past each; returns how many. ``process_run``, if given, takes a run of one partition's
        records in offset order instead (the common case: nothing to merge), in one call."""
        if self.gated or self.sources:
            return self._process_gated(process_one, process_run)
        done = 0
        inputs = self.inputs
        position = self.position
        while True:
            nonempty = [ip for ip in inputs if ip.buffer]
            if len(nonempty) == 1 and (max_idle_ms == 0 or all(ip.eof for ip in inputs if not ip.buffer)):
                # One partition has records: nothing to merge, take them in offset order.
                ip = nonempty[0]
                done += self._process_one_run(ip, ip.buffer, len(ip.buffer), process_one, process_run)
                continue
            best: InputPartition | None = None
            best_ts = 0
            waiting = False
            for ip in inputs:
                if ip.buffer:
                    ts = ip.buffer[0].timestamp()[1]
                    if best is None or ts < best_ts or (ts == best_ts and _before(ip, best)):
                        best, best_ts = ip, ts
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

    def _process_gated(self, process_one: Callable[[InputPartition, Any], None], process_run: ProcessRun | None) -> int:
        """``process`` with gated inputs: records in timestamp order up to the watermark (no idle
        wait: the markers say what may still come); the rest are held back. The records a
        partition several upstream tasks write may release are put in order first, all at once
        (``WriterStreams.release``); when one partition has records to take, they go as a run
        (``process_run``), as an ungated task's do."""
        watermark = self.watermark()
        done = 0
        if watermark is not None:
            bound: int | None = watermark
            if self.sources:
                sources = self._sources_bound()
                bound = None if sources is None else min(sources, watermark)
            if bound is not None:
                for ip in self.inputs:
                    if isinstance(ip.streams, WriterStreams):
                        ip.streams.release(bound)
                if self.sources:
                    done = self._merge_sources(watermark, process_one, process_run)
                elif (run := self._one_run(bound)) is not None:
                    done = self._process_one_run(*run, process_one, process_run)
                else:
                    merged = self._merge_runs(bound, process_one, process_run)
                    done = merged if merged is not None else self._merge_gated(watermark, process_one)
        for ip in self.inputs:
            if ip.inbox is not None or ip.streams is not None:
                ip.settle_position(self.position)
        self.held_back = sum(ip.pending() for ip in self.inputs)
        return done

    def _merge_sources(
        self, watermark: int, process_one: Callable[[InputPartition, Any], None], process_run: ProcessRun | None
    ) -> int:
        """``_process_gated``'s merge with ``sources``: as ``_merge_gated``, record by record, whose
        bound falls as each source is drained to that source's ``drained_frontier``. That bound
        never falls below the least of them, so the records before it go first, merged a run at a
        time (``_merge_runs``: the same order, in bulk); then the rest (mostly the records of that
        least time, if any) record by record. Returns how many."""
        now = time.monotonic()
        early = least(ip.drained_frontier(now) for ip in self.sources)
        merged = None if early is None else self._merge_runs(min(early, watermark), process_one, process_run)
        return (merged or 0) + self._merge_gated(watermark, process_one)

    def _one_run(self, bound: int) -> tuple[InputPartition, collections.deque[Record], int] | None:
        """When at most one input has records before ``bound`` to take, and they are in order in
        one deque: it, that deque and how many (nothing to merge; an empty deque when none has);
        else None."""
        found = None
        for ip in self.inputs:
            streams = ip.streams
            if isinstance(streams, WriterStreams):
                if streams.ready:
                    if found is not None:
                        return None
                    found = (ip, streams.ready, len(streams.ready))
            elif streams is not None:
                if len(streams):
                    return None  # (merged per source partition: the general merge)
            elif ip.buffer:
                buf = ip.buffer
                n = 0
                for m in buf:
                    if m.timestamp()[1] >= bound:
                        break
                    n += 1
                if n:
                    if found is not None:
                        return None
                    found = (ip, buf, n)
        return found if found is not None else (self.inputs[0], collections.deque(), 0)

    def _merge_runs(
        self, bound: int, process_one: Callable[[InputPartition, Any], None], process_run: ProcessRun | None
    ) -> int | None:
        """Take every input's records before ``bound`` and process them merged (``runs.py``),
        an input's consecutive ones as a run when there are ``RUN`` of them; how many. None (and
        nothing taken) when an input's records are not in time order or one is merged per
        source partition: the caller merges record by record."""
        runs: list[list[Record]] = []
        for ip in self.inputs:
            streams = ip.streams
            if isinstance(streams, WriterStreams):
                ready = streams.ready  # (in time order: released below a bound at least this one)
                if not ready or ready[-1].timestamp()[1] < bound:
                    runs.append(list(ready))
                else:
                    runs.append(list(itertools.takewhile(lambda m: m.timestamp()[1] < bound, ready)))
            elif streams is not None:
                if len(streams):
                    return None
                runs.append([])
            else:
                runs.append(list(itertools.takewhile(lambda m: m.timestamp()[1] < bound, ip.buffer)))
        merged = merge_runs(runs)
        if merged is None:
            return None
        for ip, run in zip(self.inputs, runs):
            if isinstance(ip.streams, WriterStreams):
                if len(run) == len(ip.streams.ready):
                    ip.streams.ready.clear()
                else:
                    for _ in run:
                        ip.streams.ready.popleft()
            else:
                for _ in run:
                    ip.buffer.popleft()
        inputs = self.inputs
        scratch: Position = {}  # (the position of a partition read out of offset order: settled after)
        positions = [self.position if ip.streams is None else scratch for ip in inputs]
        owners = [index for index, _ in merged]
        changes = sum(map(operator.ne, owners, itertools.islice(owners, 1, None)))
        if process_run is None or changes * RUN > len(merged):  # (mostly short runs: one by one)
            for index, msg in merged:
                ip = inputs[index]
                process_one(ip, msg)
                positions[index][ip.name] = msg.offset() + 1
            return len(merged)
        for index, group in itertools.groupby(merged, key=operator.itemgetter(0)):
            ip = inputs[index]
            records = [m for _, m in group]
            if len(records) >= RUN:
                process_run(ip, collections.deque(records), len(records), positions[index])
                continue
            for msg in records:
                process_one(ip, msg)
                positions[index][ip.name] = msg.offset() + 1
        return len(merged)

    def _process_one_run(
        self,
        ip: InputPartition,
        buf: collections.deque[Record],
        n: int,
        process_one: Callable[[InputPartition, Any], None],
        process_run: ProcessRun | None,
    ) -> int:
        """Process the first ``n`` records of ``buf`` (``ip``'s), in its order. The position of a
        partition read out of offset order is settled after (``settle_position``), not set past
        the last record processed."""
        if not n:
            return 0
        position = self.position if ip.streams is None else {}
        if process_run is not None:
            process_run(ip, buf, n, position)
            return n
        msg = None
        try:
            for _ in range(n):
                msg = buf.popleft()
                process_one(ip, msg)
        finally:
            if msg is not None:
                position[ip.name] = msg.offset() + 1
        return n

    def _merge_gated(self, watermark: int, process_one: Callable[[InputPartition, Any], None]) -> int:
        """``_process_gated``'s merge of several inputs, record by record: the earliest head first
        (ties by ``es-seq``, then the configured input order, then the order within the input)."""
        done = 0
        inputs = self.inputs
        position = self.position
        while True:
            bound = watermark
            if self.sources:
                sources = self._sources_bound()
                if sources is None:
                    break
                bound = min(sources, watermark)
            best: InputPartition | None = None
            best_key: tuple[int, Any, int, Any] | None = None
            for ip in inputs:
                streams = ip.streams
                if isinstance(streams, WriterStreams):
                    if not streams.ready:
                        continue
                    m = streams.ready[0]
                    k = (m.timestamp()[1], order_of(m), ip.order, NO_SOURCE)
                elif streams is not None:
                    head = streams.head()
                    if head is None:
                        continue
                    k = (head[0], head[1], ip.order, head[2])
                elif ip.buffer:
                    m = ip.buffer[0]
                    k = (m.timestamp()[1], order_of(m), ip.order, NO_SOURCE)
                else:
                    continue
                if best_key is None or k < best_key:
                    best, best_key = ip, k
            if best is None or best_key is None or best_key[0] >= bound:
                break
            if best.streams is not None:
                msg = best.streams.pop(best_key[3])
                process_one(best, msg)  # (its position: settle_position)
            else:
                msg = best.buffer.popleft()
                process_one(best, msg)
                position[best.name] = msg.offset() + 1
            done += 1
        return done


#: The fewest consecutive records of one input that the gated merge hands on as a run
#: (``process_run``): fewer go one by one (a run's set-up costs more than a record).
RUN = 16

#: The tie key of a record that is not a re-published one (``streams.py``).
NO_SOURCE = ("", -1)


def _before(ip: InputPartition, best: InputPartition) -> bool:
    """Whether ``ip``'s first buffered record goes before ``best``'s, of the same record time:
    in the producer's order (``es-seq``; timer firings' outputs in the order the timers were set:
    ``order_of``), else in the configured input order."""
    return (order_of(ip.buffer[0]), ip.order) < (order_of(best.buffer[0]), best.order)
