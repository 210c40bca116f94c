"""Output ids: the determinism contract.

Every record a task emits carries an ``es-id``: the program, what caused the emission and its rank
among that cause's emissions. A cause is named by its key's own history only — an input record by
its original coordinates (also when it came through the repartition topic), a timer firing by
the instance's origin and its count of time events, an ungrouped program's start by "start" —
so a rewound, restarted or moved task, and the backfill in any mode, give an output the same id,
and a reader can drop repeats by id. A record another program wrote is named by its own ``es-id``,
not by where it landed: the offsets of a topic many tasks write depend on how their writes
interleave, its ids do not (and a repeat of it, under at-least-once, names the same cause).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine.context import Armed
from . import codec
from .codec import RecordInfo
from .record import Record


def _no_clock() -> int:
    raise RuntimeError("OutputIds.now is not set: a task names timers only with its clock")


class OutputIds:
    """The cause of the current emissions, and the ids it gives them, for one task."""

    def __init__(self, program: str, repartition_topic: str) -> None:
        self.prefix = f"{program}/"
        self.repartition_topic = repartition_topic
        #: The record being processed (for ids and $error context), or None.
        self.msg: Record | None = None
        #: None: the record ``msg`` (named lazily); else a timer firing or the program's start.
        self.cause: str | None = None
        #: Emissions of the current cause so far, and the prefix of their ids (None: none yet).
        self.count = 0
        self.base: bytes | None = None
        #: The id prefix "program/topic:" of the partition of ``msg`` (None: the repartition topic).
        self.head: bytes | None = None
        #: The ``es-id`` and ``es-seq`` headers of ``msg`` (None: it has none), read once per
        #: record as it begins (``codec.cause_headers``), not once per emission.
        self.upstream: bytes | None = None
        self.record_seq: bytes | None = None
        #: The ``es-seq`` of the current cause, which its emissions carry, so that readers
        #: downstream take outputs of one record time in the order the producer gave their causes
        #: (``streams.py``): the record's; None for a timer firing or a start.
        self.seq: bytes | None = None
        #: While a timer fires: what set it (``context.Armed``; None: not named), which a new
        #: timer set by its actions descends from (``armed``) and its outputs carry (``es-armed``).
        self.armed: Armed | None = None
        #: The task's clock (µs), which ``arming`` reads for a timer set as another fires.
        self.now: Callable[[], int] = _no_clock

    def begin_record(self, msg: Record, head: bytes | None, headers: Any) -> None:
        """Emissions from here on are caused by the input record ``msg``, whose headers are
        ``headers`` (``msg.headers()``, which the caller has read)."""
        self.msg = msg
        self.head = head
        self.cause = None
        self.base = None
        if headers:
            self.upstream, self.record_seq, _ = codec.cause_headers(headers)
        else:
            self.upstream = self.record_seq = None
        self.seq = self.record_seq

    def again(self, msg: Record) -> None:
        """The record ``msg`` (the one begun last) causes the emissions again (timers fired
        before or after it, each its own cause); the partition's id prefix is still ``msg``'s."""
        self.msg = msg
        self.cause = None
        self.base = None
        self.seq = self.record_seq

    def begin_timer(self, ctx: Any, armed: Armed | None = None) -> None:
        """Emissions from here on are caused by ctx's time event (``armed``: what set its timer)."""
        self.msg = None
        self.cause = f"{ctx.origin}~{ctx.fires}"
        self.base = None
        self.seq = None
        self.armed = armed

    def begin_start(self) -> None:
        """Emissions from here on come from an ungrouped program's initial actions."""
        self.msg = None
        self.cause = "start"
        self.base = None
        self.seq = None
        self.armed = None

    def arming(self) -> Armed:
        """What sets a timer now (``Engine.arm_of``), in the order the tester sets timers, as
        the ``es-armed`` header says it, "time,kind,seq,cause": by when (a record's time, or the
        deadline of the timer firing, in µs: ``now``), timer firings (kind 0) before the records
        (1) of their instant, then by the record's ``es-seq`` (-1: none) and its cause's name
        (the merge's order); a timer set as one fires takes the seq and cause of what set that
        one (after its instant and kind, the order its parent had among the timers of its own)."""
        m = self.msg
        if m is not None:
            seq = self.record_seq
            if seq is None or not seq.isdigit():
                seq = b"-1"
            cause = self.upstream or self.record_cause().encode()
            return b"%d,1,%s,%s" % (m.timestamp()[1] * 1000, seq, cause)
        parent = self.armed
        if parent is None:
            return b"%d,0,-1,%s" % (self.now(), (self.cause or "start").encode())
        return b"%d,0,%s" % (self.now(), parent.split(b",", 2)[2])

    def armed_header(self) -> bytes | None:
        """The ``es-armed`` header of the current cause's emissions: a timer firing's, what set
        it (None: a record, a start, or a timer not named)."""
        return None if self.msg is not None else self.armed

    def next_bytes(self) -> bytes:
        """The id of the next emission of the current cause."""
        base = self.base
        if base is not None:
            n = self.count = self.count + 1
            return base + b"%d" % n
        self.count = 1  # a new cause's first emission
        cause = self.cause
        m = self.msg
        if cause is None and m is not None and self.head is not None and not self.upstream:
            # An input record (not a re-published one): "program/topic:" is the partition's own.
            base = b"%s%d:%d/" % (self.head, m.partition(), m.offset())  # (one allocation, not two)
        else:
            base = f"{self.prefix}{cause if cause is not None else self.record_cause()}/".encode()
        self.base = base
        return base + b"1"

    def next(self) -> str:
        return self.next_bytes().decode()

    def origin(self) -> str:
        """The current cause's name, fixed for the rest of the record (an instance's origin)."""
        if self.cause is None:  # the record's coordinates, kept for its outputs' ids too
            self.cause = self.record_cause()
        return self.cause

    def record_cause(self) -> str:
        """The original coordinates of the record being processed, "topic:partition:offset"."""
        m = self.msg
        if m is None:
            return self.cause or "start"
        upstream = self.upstream
        if upstream:
            return upstream.decode()
        if m.topic() == self.repartition_topic:
            source = codec.header(m.headers(), codec.HEADER_SOURCE)
            if source is not None:
                return source.decode()
        return f"{m.topic()}:{m.partition()}:{m.offset()}"

    def source_info(self) -> RecordInfo | None:
        """The record an $error is about, as it was first written (a re-published copy is
        described by its original's coordinates, key and headers)."""
        m = self.msg
        if m is None:
            return None
        headers = m.headers()
        if m.topic() == self.repartition_topic and headers:
            source = codec.header(headers, codec.HEADER_SOURCE)
            if source is not None:
                topic, part, off = source.decode().rsplit(":", 2)
                key = m.key()
                original = [(k, v) for k, v in headers if k not in codec.REPUBLISH_HEADERS]
                for k, v in headers:
                    if k == codec.HEADER_SOURCE_KEY:
                        key = v
                return RecordInfo(topic, int(part), int(off), m.timestamp()[1], key, original or None, m.value())
        return RecordInfo(m.topic(), m.partition(), m.offset(), m.timestamp()[1], m.key(), headers, m.value())
