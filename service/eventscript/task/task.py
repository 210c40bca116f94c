"""A task: partition p of every input topic of a program (plus its repartition and changelog
partitions), the instances whose group keys hash to p, and their timers.

As in Kafka Streams, a task is the unit of ownership: it has its own engine (one instance
context per group key), its own clock, its own local store; a rebalance moves whole tasks.

Ordering guarantee: within a task, records are processed in timestamp order across the task's
input partitions as far as they have been fetched (ties in the configured topic order, the
repartition topic last), and always in offset order within a partition. A task may wait up to
``max_task_idle_ms`` for a record from every input partition before merging. Records with an
earlier timestamp that arrive after later ones were processed are processed as they come
(record time never moves backwards: such a record is processed at the current record time).
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from ..automata.compiled import CompiledProgram
from ..engine.encoding import DecodeError, decoder_for, encode, encoder_for, json_line
from ..engine.engine import Engine
from ..engine.events import ERROR_EVENT, Emitted, ErrorCode
from ..engine.time_provider import SimulatedTimeProvider, TimeProvider, WallClockTimeProvider, timer_info
from ..engine.timeutil import MAX_TIME
from ..language.types import BOOLEAN, LONG, STRING
from ..state.cache import CacheBudget, InstanceCache
from ..state.changelog import (
    CLOCK_KEY,
    HWM_KEY,
    SEQ_KEY,
    SINGLE_KEY,
    Position,
    compact,
    decode_clock,
    decode_hwm,
    decode_int,
    position_header,
    tp_name,
)
from ..state.store import TaskStore
from ..state.timers import TimerIndex
from ..topology.config import InputConfig, ProgramConfig
from . import codec
from .codec import BadRecord, Headers, RecordInfo
from .keys import PARTITIONERS, scheme_for
from .partitioner import key_bytes, value_key_bytes

log = logging.getLogger("eventscript.kafka.task")

#: Entries of the task's group key → bytes caches before they are emptied: enough for the hot keys;
#: a key out of them costs ~1 µs to encode again, and each entry ~150 bytes (two per key).
KEY_CACHE_SIZE = 16_384
#: Entries of the task's routing bytes → partition cache before it is emptied: a key out of it
#: costs ~0.5 µs (murmur2 in Python); an entry ~100 bytes.
PLACE_CACHE_SIZE = 65_536


@dataclass(slots=True)
class OutRecord:
    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int  # ms
    changelog: bool = False  # a state write: its offset moves the store checkpoint


@dataclass
class InputPartition:
    topic: str
    partition: int
    order: int
    config: InputConfig | None  # None: the repartition topic
    buffer: collections.deque[Any] = field(default_factory=collections.deque)
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


#: ``Task._placed``'s mark for routing bytes of a key the task's key filter does not own.
NOT_OWNED = -1


class KeyFilter:
    """Which group keys a task runs, when it runs only some of those its partition places on it
    (key-split backfill, backfill/key_split.py; a worker's task has none). A record of a key it
    does not own only moves the task's record clock, as it would move it, so every key's timers
    fire at the same record times as in a task that owns every key. The defaults own every key."""

    def owns(self, route: bytes) -> bool:
        """Whether the task runs the instance of the group key with these routing bytes (asked
        once per key while the task's placement cache holds it)."""
        return True

    def passed(self, msg: Any) -> None:
        """Record ``msg``'s group key is not the task's: it only moved the clock."""

    def reports(self, msg: Any, forward: bool) -> bool:
        """Whether this task writes the $error record about ``msg`` (it could not be used) or,
        with ``forward``, re-publishes it (its key is another partition's)."""
        return True


class Task:
    def __init__(self, partition: int, program: CompiledProgram, cfg: ProgramConfig, inputs: list[InputConfig],
                 repartition_topic: str, changelog_topic: str, partitions: int, store_path: Path) -> None:
        self.partition = partition
        self.cfg = cfg
        self.program = program
        self.partitions = partitions
        self.repartition_topic = repartition_topic
        self.changelog_topic = changelog_topic
        self.inputs = [InputPartition(c.topic, partition, i, c) for i, c in enumerate(inputs)]
        self.inputs.append(InputPartition(repartition_topic, partition, len(inputs), None))
        self.by_name = {ip.name: ip for ip in self.inputs}
        self.by_topic = {ip.topic: ip for ip in self.inputs}
        self.by_topic_cfg = {c.topic: c for c in inputs}
        self.clock: TimeProvider = (SimulatedTimeProvider() if cfg.clock == "record" else WallClockTimeProvider())
        self.engine = Engine(program, self._consume, self.clock, name=cfg.name, tz=ZoneInfo(cfg.timezone),
                             track_dirty=True)
        self.grouped = program.grouped
        self.key_types = program.program.key_types
        self.input_types = {i.name: i.ty for i in program.program.inputs}
        self.decoders = {i.name: decoder_for(i.ty) for i in program.program.inputs}
        #: The store of record of the task's instances; the engine's contexts are a bounded cache
        #: of them (state/cache.py), and the store's timer index backs the clock's timer queue.
        self.store = TaskStore(store_path)
        self.timer_index = TimerIndex(self.store, self.engine)
        self.cache = InstanceCache(self.engine, self.store, self.timer_index,
                                   CacheBudget(cfg.name, cfg.state.cache_mib, cfg.state.cache_instances),
                                   self._key_bytes)
        #: The timer sequence number as last persisted (task state, like the record clock).
        self._seq_saved = 0
        self.position: Position = {}
        self.hwm: dict[str, int] = {}
        self.hwm_dirty = False
        #: Where the task's records go: send(topic, partition or -1, key, value, headers, timestamp ms,
        #: is_changelog). The worker produces them straight into its current transaction.
        self.send: Callable[[str, int, bytes | None, bytes | None, Headers, int, bool], None] = self._queue
        #: Where a commit's changelog records go: send_changelog(topic, partition, {key: value or
        #: None}, headers, timestamp ms), the last one's delivery report giving the changelog
        #: offset the store reaches. By default through ``send``; the worker's loops in one call.
        self.send_changelog: Callable[[str, int, dict[bytes, bytes | None], Headers, int], None] = \
            self._send_each
        self.outbox: list[OutRecord] = []
        self.restored = False
        self.started = False
        #: Which group keys the task runs (``set_key_filter``; None: every key placed on it).
        self.key_filter: KeyFilter | None = None
        #: With a key filter: topic → offset → record time (ms) the clock moves to before that
        #: record (``clock_moves``) or instead of processing it (``stand_ins``: a record that
        #: stands for records of other keys). Checked only while a key filter is set.
        self.clock_moves: dict[str, dict[int, int]] = {}
        self.stand_ins: dict[str, dict[int, int]] = {}
        #: Whether an input record's group key is placed (another partition's: re-published;
        #: not the key filter's: only the clock moves).
        self._check_place = partitions > 1
        self._msg: Any = None  # the record being processed (for $error context), or None
        #: What caused the current emissions (see ``_next_id_bytes``): None for the record being
        #: processed (named lazily, from ``_msg``), else a timer firing or the program's start.
        self._cause: str | None = None
        #: Emissions of the current cause so far, and the prefix of their ids (None: none yet).
        self._src_count = 0
        self._id_base: bytes | None = None
        #: The id prefix of the partition of the record being processed (``InputPartition.id_head``).
        self._id_head: bytes | None = None
        self._idle_since: float | None = None
        #: Group key → canonical bytes (store and changelog keys) and → routing bytes (the key in
        #: the program's home key scheme, which places it: kafka/keys.py).
        self._key_cache: dict[tuple[Any, ...], bytes] = {}
        self._route_cache: dict[tuple[Any, ...], bytes] = {}
        self._plain_keys = self.key_types is not None and all(t in (STRING, LONG, BOOLEAN) for t in self.key_types)
        self.scheme = scheme_for(cfg, self.key_types)
        #: Group key → routing bytes without a cache, where the key's types allow (else None:
        #: ``_route_key`` and its cache); routing bytes → partition, in a cache of the task's own
        #: (``_place``).
        self._route = self.scheme.router()
        self._value_key_bytes = value_key_bytes(self.key_types)
        self._ctx_key_bytes = self._ctx_key_bytes_fn()
        self._partition_of = PARTITIONERS[self.scheme.partitioner]
        self._placed: dict[bytes, int] = {}
        self._out_key_none = self.scheme.format == "none"
        self._id_prefix = f"{cfg.name}/"
        self.record_clock = cfg.clock == "record"
        #: The record clock as last persisted (it is task state: see changelog_records).
        self._clock_saved = 0
        #: Counts since the worker last collected them (consumed, processed, outputs, errors, ...).
        self.counts: collections.Counter[str] = collections.Counter()
        for out in program.program.outputs:
            topic = cfg.output_topic(out.name)
            if topic is not None:
                self.engine.set_output_handler(out.name, self._output_handler(out.name, out.ty, topic))
        #: Whether the program can fire timers: only then is an instance's origin ever read
        #: (``_begin_timer``), so only then does a new instance carry one.
        self._timed = bool(program.program.timers)
        self.store.timed = self._timed
        #: Instances created since the changelog records were last drained (by id): never
        #: persisted, so one that ends before the next drain costs nothing at commit (see
        #: ``_on_terminate``). ``_creating``: the record being fed is creating its key's instance.
        self._fresh: dict[int, Any] = {}
        self._creating = False
        self.engine.origin_of = self._on_create
        self.engine.on_terminate = self._on_terminate
        self.engine.before_timer = self._begin_timer
        self._decoders = {id(c): self._input_decoder(c) for c in inputs}
        for ip in self.inputs:
            if ip.config is not None:
                ip.id_head = f"{self._id_prefix}{ip.topic}:".encode()
                ip.decode = self._decoders[id(ip.config)]
                if ip.config.event is not None and self.grouped:
                    ip.key_fn = self.engine._inputs[ip.config.event].key

    def _send_each(self, topic: str, partition: int, records: dict[bytes, bytes | None], headers: Headers,
                   ts: int) -> None:
        """The default ``send_changelog``: each record through ``send``, the last as the one whose
        delivery moves the store checkpoint."""
        send = self.send
        last = len(records) - 1
        for i, (k, v) in enumerate(records.items()):
            send(topic, partition, k, v, headers, ts, i == last)

    def _queue(self, topic: str, partition: int, key: bytes | None, value: bytes | None, headers: Headers,
               ts: int, changelog: bool) -> None:
        """The default ``send`` (a task not attached to a worker): keep the records."""
        self.outbox.append(OutRecord(topic, None if partition < 0 else partition, key, value, headers, ts, changelog))

    # -- restore ------------------------------------------------------------------------------

    def load_from_store(self) -> None:
        """Go back to the committed state in the local store: the task state (repartition
        high-water marks; the record clock, which moves back with the rest, as records read again
        must be processed at the times they had the first time; the timer sequence) and, for an
        ungrouped program, its instance. The instances of a grouped program stay in the store
        until a record (``Engine.loader``) or a due timer (the timer index) needs them."""
        self.engine.clear()
        self._fresh.clear()
        self._creating = False
        timers = self.clock.timers
        timers.clear()  # the task's own clock: drop the cancelled entries too
        self.hwm = decode_hwm(self.store.get(HWM_KEY))
        if self.record_clock:
            clock = self.clock
            assert isinstance(clock, SimulatedTimeProvider)
            self._clock_saved = decode_clock(self.store.get(CLOCK_KEY))
            clock.set_now(self._clock_saved)
        raw_seq = self.store.get(SEQ_KEY)
        self._seq_saved = decode_int(raw_seq) if raw_seq is not None else self.store.next_index_seq()
        timers.next_seq = self._seq_saved
        if self.grouped:
            self.timer_index.reset(timers)
            self.cache.reset()
        else:
            raw = self.store.get(SINGLE_KEY)
            if raw is not None:
                self.engine.restore(raw)
                self.started = True
        self.restored = True
        log.info("%s task %d: committed state loaded (instances are loaded from the store as needed)",
                 self.cfg.name, self.partition)

    def start_wall_clock(self) -> None:
        """An ungrouped program on the wall clock starts when its task does."""
        if not self.grouped and not self.started and self.partition == 0 and self.cfg.clock == "wall":
            self.clock.refresh()  # type: ignore[attr-defined]
            self._begin_start()
            self.engine.start()
            self.started = True

    # -- the engine's consumer -----------------------------------------------------------------

    def _next_id(self) -> str:
        return self._next_id_bytes().decode()

    def _output_handler(self, name: str, ty: Any, topic: str) -> Callable[[Any, Any], None]:
        """What the engine calls for each emission of one output event: encode and send."""
        encode_value = encoder_for(ty)
        dumps = orjson.dumps
        ev_header = (codec.HEADER_EVENT, name.encode())
        prog_header = (codec.HEADER_PROGRAM, self.cfg.name.encode())
        now = self.clock.now
        key_of = self._ctx_out_key()
        next_id = self._next_id_bytes

        def handler(ctx: Any, value: Any) -> None:
            t = now()
            headers = [ev_header, prog_header, (codec.HEADER_ID, next_id())]
            if t % 1000:
                headers.append((codec.HEADER_TIME, str(t).encode()))  # sub-millisecond emission time
            try:
                data = dumps(encode_value(value))
            except TypeError:  # a lone surrogate in an object value (from an external function)
                data = json_line(encode_value(value)).encode()
            self.send(topic, -1, key_of(ctx), data, headers, t // 1000, False)

        return handler

    def _next_id_bytes(self) -> bytes:
        """A deterministic id for an emitted record: the program, what caused it and its rank
        among that cause's emissions. A cause is named by the key's own history only — an input
        record by its original coordinates (also when it came through the repartition topic), a
        timer firing by the instance's origin and its count of time events — so a rewound,
        restarted or moved task, and the backfill in any mode, give an output the same id."""
        base = self._id_base
        if base is not None:
            n = self._src_count = self._src_count + 1
            return base + b"%d" % n
        self._src_count = 1  # a new cause's first emission
        cause = self._cause
        m = self._msg
        if cause is None and m is not None and self._id_head is not None:
            # An input record (not a re-published one): "program/topic:" is the partition's own.
            base = self._id_head + b"%d:%d/" % (m.partition(), m.offset())
        else:
            base = f"{self._id_prefix}{cause if cause is not None else self._record_cause()}/".encode()
        self._id_base = base
        return base + b"1"

    def _input_decoder(self, cfg: InputConfig) -> Callable[[bytes | None, Headers | None], tuple[str, Any]]:
        """Record value and headers → (event name, value) for one input topic (or BadRecord)."""
        if cfg.format == "json" and cfg.event is not None and cfg.event in self.decoders:
            name = cfg.event
            decode_value = self.decoders[name]
            loads = orjson.loads

            def fixed(value: bytes | None, headers: Headers | None) -> tuple[str, Any]:
                if value is None:
                    raise BadRecord(ErrorCode.BAD_INPUT_VALUE, "the record has no value")
                try:
                    return name, decode_value(loads(value))
                except orjson.JSONDecodeError as exc:
                    raise BadRecord(ErrorCode.BAD_INPUT_VALUE, f"the value is not JSON: {exc}") from None
                except DecodeError as exc:
                    raise BadRecord(ErrorCode.BAD_INPUT_VALUE, f"{name}: {exc}") from None

            return fixed
        input_types, decoders = self.input_types, self.decoders
        return lambda value, headers: codec.decode_record(cfg, value, headers, input_types, decoders)

    def _begin_record(self, msg: Any) -> None:
        """Emissions from here on are caused by the input record ``msg``."""
        self._msg = msg
        self._cause = None
        self._id_base = None

    def _begin_timer(self, ctx: Any) -> None:
        """Emissions from here on are caused by ctx's time event (the engine calls this)."""
        self._msg = None
        self._cause = f"{ctx.origin}~{ctx.fires}"
        self._id_base = None

    def _begin_start(self) -> None:
        """Emissions from here on come from an ungrouped program's initial actions."""
        self._msg = None
        self._cause = "start"
        self._id_base = None

    def _on_create(self) -> str | None:
        """``Engine.origin_of``, called as the record being fed creates its key's instance: note
        the creation, and name the instance's origin (for the ids of its timers' outputs; None,
        so no side object per instance, for a program without timers)."""
        self._creating = True
        if not self._timed:
            return None
        cause = self._cause
        if cause is None:  # the record's coordinates, kept for its outputs' ids too
            cause = self._cause = self._record_cause()
        return cause

    def _on_terminate(self, ctx: Any) -> None:
        """``Engine.on_terminate``: an instance ended (terminated or retired) and was released.
        One created since the last drain was never written to the changelog nor the store: it
        leaves nothing to persist — no tombstone, no store delete, no cache bookkeeping — so it
        is taken out of the engine's changed instances. Any other needs its tombstone."""
        if self._creating or (self._fresh and self._fresh.pop(id(ctx), None) is not None):
            dirty = self.engine.dirty
            if dirty is not None:
                dirty.pop(id(ctx), None)
            return
        self.cache.ended_instance(ctx)

    def _record_cause(self) -> str:
        """The original coordinates of the record being processed, "topic:partition:offset"."""
        m = self._msg
        if m is None:
            return self._cause or "start"
        if m.topic() == self.repartition_topic:
            source = codec.header(m.headers(), codec.HEADER_SOURCE)
            if source is not None:
                return source.decode()
        return f"{m.topic()}:{m.partition()}:{m.offset()}"

    def _source_info(self) -> RecordInfo | None:
        """The record an $error is about, as it was first written (a re-published copy is
        described by its original's coordinates, key and headers)."""
        m = self._msg
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

    def _key_bytes(self, key: tuple[Any, ...] | None) -> bytes | None:
        """The key's store (and changelog) key: its canonical JSON bytes, compacted (see
        ``state.changelog.compact``: cached orjson output would cost 4 KiB per key)."""
        if key is None:
            return None
        if self._value_key_bytes is not None:  # one string or long: no cache needed
            return self._value_key_bytes(key[0])
        kb = self._key_cache.get(key)
        if kb is None:
            if len(self._key_cache) > KEY_CACHE_SIZE:
                self._key_cache.clear()
            # (a tuple of strings, longs and booleans is its own conformance encoding)
            raw = orjson.dumps(key) if self._plain_keys else key_bytes(key, self.key_types)
            assert raw is not None
            kb = self._key_cache[key] = compact(raw)
        return kb

    def _ctx_key_bytes_fn(self) -> Callable[[Any], bytes]:
        """An instance of a grouped program → its store (and changelog) key (``_key_bytes``),
        straight from the engine's table key where the group key is one string or long: with
        many keys, no cache holds them all."""
        one = self._value_key_bytes
        if one is not None and self.engine.one_key:
            return lambda ctx: one(ctx.gk)
        key_bytes_of = self._key_bytes
        return lambda ctx: key_bytes_of(ctx.key)  # type: ignore[no-any-return]

    def _route_key(self, key: tuple[Any, ...]) -> bytes:
        """The key's bytes in the home key scheme (what decides its partition)."""
        if self._route is not None:
            return self._route(key)
        rb = self._route_cache.get(key)
        if rb is None:
            if len(self._route_cache) > KEY_CACHE_SIZE:
                self._route_cache.clear()
            rb = self._route_cache[key] = self.scheme.routing_bytes(key)
        return rb

    def _place(self, rb: bytes) -> int:
        """The partition of a key's routing bytes, or ``NOT_OWNED`` for a key of this partition
        the key filter does not own (cached: see ``PLACE_CACHE_SIZE``)."""
        placed = self._placed
        if len(placed) >= PLACE_CACHE_SIZE:
            placed.clear()
        p = self._partition_of(rb, self.partitions)
        if p == self.partition and self.key_filter is not None and not self.key_filter.owns(rb):
            p = NOT_OWNED
        placed[rb] = p
        return p

    def set_key_filter(self, key_filter: KeyFilter) -> None:
        """Run only the group keys ``key_filter`` owns (set once, before the first record): the
        check rides on the placement of each record's key, which is cached per key, so a task
        without a filter pays nothing for it."""
        self.key_filter = key_filter
        self._check_place = True
        self._placed.clear()

    def move_clock(self, ts: int) -> int:
        """Record clock: move to ``ts`` (ms) as a record of that timestamp would, firing the
        timers due by then (a key-split task: where the other keys' records take it)."""
        return self._advance(ts)

    def _ctx_out_key(self) -> Callable[[Any], bytes | None]:
        """An instance → the record key of its outputs (``_out_key`` of its group key), without
        building its key tuple where the key is one value the scheme encodes directly."""
        one = self.scheme.value_router()
        if self.grouped and not self._out_key_none and one is not None and self.engine.one_key:
            return lambda ctx: one(ctx.gk)
        out_key = self._out_key
        return lambda ctx: out_key(ctx.key)

    def _out_key(self, key: tuple[Any, ...] | None) -> bytes | None:
        """The record key of an output or $error record: the group key as the inputs' producers
        write it (none for key: none)."""
        if key is None or self._out_key_none:
            return None
        return self._route_key(key)

    def _consume(self, e: Emitted) -> None:
        key = self._out_key(e.key)
        ts = e.time // 1000
        if e.name == ERROR_EVENT:
            key_json = [encode(k, t) for k, t in zip(e.key, self.key_types or [])] if e.key is not None else None
            source = self._source_info()
            if e.key is None and source is not None:
                key = source.key  # about a record that reached no instance: keyed as that record
            value = codec.emitted_error_value(e, source, key_json)
            self.send(self.cfg.error_topic, -1, key, value, codec.output_headers(e, self.cfg.name, self._next_id()),
                      ts, False)
            self.counts["errors"] += 1
            return
        # Outputs with a topic have their own handler (_output_handler); the others are dropped
        # (the worker warns about them at start).

    def _error_record(self, code: int, message: str) -> None:
        """An $error record about the input record being processed (it could not be used)."""
        if self.key_filter is not None and not self.key_filter.reports(self._msg, False):
            return
        source = self._source_info()
        assert source is not None
        now = self.clock.now()
        value = codec.error_value(self.cfg.name, code, message, now, source)
        e = Emitted(self.cfg.name, ERROR_EVENT, [code, message], None, now, None)  # type: ignore[arg-type]
        self.send(self.cfg.error_topic, -1, source.key, value, codec.output_headers(e, self.cfg.name, self._next_id()),
                  source.timestamp or now // 1000, False)
        self.counts["errors"] += 1

    # -- processing -------------------------------------------------------------------------------

    def add(self, msg: Any) -> None:
        ip = self.by_topic.get(msg.topic())  # all of a task's partitions have its partition number
        if ip is None:
            return
        ip.buffer.append(msg)
        ip.eof = False

    def mark_eof(self, topic: str, partition: int) -> None:
        ip = self.by_name.get(tp_name(topic, partition))
        if ip is not None:
            ip.eof = True


    def process(self, max_idle_ms: int) -> int:
        """Process buffered records in timestamp order; returns how many were processed."""
        if not self.restored:
            return 0
        done = 0
        inputs = self.inputs
        # (chosen once per call: a task without a key filter pays nothing for the filter's path)
        process_one = self._process_one if self.key_filter is None else self._filtered_one
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
                        self.position[ip.name] = msg.offset() + 1
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
            self.position[best.name] = msg.offset() + 1
            done += 1
        self.counts["processed"] += done
        return done

    def _filtered_one(self, ip: InputPartition, msg: Any) -> None:
        """``_process_one`` with a key filter: first the clock moves the other keys' records
        make before this one (``clock_moves``, ``stand_ins``)."""
        moves = self.clock_moves.get(ip.topic)
        if moves:
            target = moves.pop(msg.offset(), None)
            if target is not None:
                self._advance(target)
        stand_ins = self.stand_ins and self.stand_ins.get(ip.topic)  # (none with one input)
        if stand_ins:
            target = stand_ins.pop(msg.offset(), None)
            if target is not None:
                self._advance(target)
                return
        self._process_one(ip, msg)

    def _pass_by(self, msg: Any) -> None:
        """A record of a group key the key filter does not own: only the clock moves, as the
        record moves it (timers due by its timestamp fire, and those set due then)."""
        if self.record_clock:
            if self._advance(msg.timestamp()[1]):
                self._begin_record(msg)
            clock = self.clock
            if clock.timers.due(clock.now()):
                clock.run_due()
                self._begin_record(msg)
        else:
            self.clock.refresh()  # type: ignore[attr-defined]
        self.key_filter.passed(msg)  # type: ignore[union-attr]

    def _process_one(self, ip: InputPartition, msg: Any) -> None:
        """Process one record. The caller advances the task's position past it."""
        headers = msg.headers()
        self._msg = msg  # the record being processed (_begin_record, inlined)
        self._id_head = ip.id_head
        self._cause = None
        self._id_base = None
        if self.record_clock and msg.timestamp()[1] * 1000 > MAX_TIME:
            self._error_record(ErrorCode.BAD_INPUT_VALUE, f"the record timestamp {msg.timestamp()[1]} ms is past "
                                                          f"year 9999: record time cannot move there")
            return
        if headers and codec.header(headers, codec.HEADER_TICK) is not None:
            self._advance(msg.timestamp()[1])
            return
        cfg = ip.config
        if cfg is None:
            cfg = self._from_repartition(msg, headers)
            if cfg is None:
                return
        try:
            name, value = (ip.decode if ip.config is not None else self._decoders[id(cfg)])(msg.value(), headers)
        except BadRecord as exc:
            self._error_record(exc.code, exc.message)
            return
        engine = self.engine
        if self.grouped:
            if ip.needs_key and msg.key() is None:
                self._error_record(ErrorCode.BAD_INPUT_VALUE,
                                   "the record has no key; this input's records must be keyed "
                                   "(set keyed: false in the topology to accept unkeyed records)")
                return
            key_fn = ip.key_fn
            key = key_fn(None, value) if key_fn is not None else engine.group_key(name, value)
            if key is None:  # an event name the program does not declare
                if self.key_filter is None or self.key_filter.reports(msg, False):
                    engine.feed(name, value)
                return
            if ip.config is not None and self._check_place:
                route = self._route
                rb = route(key) if route is not None else self._route_key(key)
                target = self._placed.get(rb)
                if target is None:
                    target = self._place(rb)
                if target != self.partition:
                    if target == NOT_OWNED:
                        self._pass_by(msg)
                    else:
                        self._forward(msg, cfg, target, rb)
                    return
            if self.record_clock:
                if self._advance(msg.timestamp()[1]):
                    self._begin_record(msg)  # timers fired first, each its own cause
            else:
                self.clock.refresh()  # type: ignore[attr-defined]
            ctx = None
            try:
                ctx = engine.feed_keyed(name, value, key)
            finally:  # (also when it raised: a later ending must not pass for this creation's)
                if self._creating:  # this record created the key's instance (_on_create)
                    self._creating = False
                    if ctx is not None and not ctx.terminated:
                        self._fresh[id(ctx)] = ctx
        else:
            if ip.config is not None and cfg.keyed and msg.key() is None:
                self._error_record(ErrorCode.BAD_INPUT_VALUE, "the record has no key; this input's records must "
                                                              "be keyed")
                return
            if ip.config is not None and self.partition != 0:
                self._forward(msg, cfg, 0, msg.key())
                return
            if self.record_clock:
                if self._advance(msg.timestamp()[1]):
                    self._begin_record(msg)
            else:
                self.clock.refresh()  # type: ignore[attr-defined]
            if not self.started:
                self._begin_start()
                engine.start()
                self.started = True
                self._begin_record(msg)
            engine.feed(name, value)
        if self.record_clock:
            clock = self.clock
            if clock.timers.due(clock.now()):
                clock.run_due()  # timers set due now fire at once, as in the tester
                self._begin_record(msg)

    def _from_repartition(self, msg: Any, headers: Headers | None) -> InputConfig | None:
        """The input configuration of a re-published record, or None when it is a copy already
        processed (deduplicated by its source coordinates) or cannot be used."""
        source = codec.header(headers, codec.HEADER_SOURCE)
        origin = codec.header(headers, codec.HEADER_INPUT)
        if source is not None:
            src_tp, _, src_off = source.decode().rpartition(":")
            if int(src_off) < self.hwm.get(src_tp, 0):
                return None  # already processed (a re-sent copy)
            self.hwm[src_tp] = int(src_off) + 1
            self.hwm_dirty = True
        cfg = self.by_topic_cfg.get(origin.decode()) if origin is not None else None
        if cfg is None:
            self._error_record(ErrorCode.BAD_INPUT_VALUE, "repartitioned record of an unknown input topic")
        return cfg

    def _forward(self, msg: Any, cfg: InputConfig, target: int, kb: bytes | None) -> None:
        """Re-publish a record whose group key belongs to another task, keyed by that key."""
        if self.key_filter is not None and not self.key_filter.reports(msg, True):
            return
        headers = list(msg.headers() or [])
        headers.append((codec.HEADER_SOURCE, f"{msg.topic()}:{msg.partition()}:{msg.offset()}".encode()))
        headers.append((codec.HEADER_INPUT, cfg.topic.encode()))
        if msg.key() != kb:
            headers.append((codec.HEADER_SOURCE_KEY, msg.key()))
        self.send(self.repartition_topic, target, kb, msg.value(), headers, msg.timestamp()[1], False)
        self.counts["repartitioned"] += 1

    def _advance(self, ts: int) -> int:
        """Record clock: move to a record's timestamp (ms), firing the timers due by then;
        returns how many fired or started (the caller's emissions need their cause again)."""
        if self.cfg.clock != "record":
            return 0
        clock = self.clock
        assert isinstance(clock, SimulatedTimeProvider)
        t = ts * 1000
        if not self.started and not self.grouped:
            clock.set_now(max(t, clock.now()))
            if self.partition == 0:
                self._begin_start()
                self.engine.start()
                self.started = True
                return 1
            return 0
        if t >= clock.now():
            return clock.advance_to(t)
        return 0

    def fire_timers(self) -> int:
        """Wall clock: fire the timers due now (record clock: they fire as records advance time)."""
        if not self.restored or self.cfg.clock != "wall":
            return 0
        timers = self.clock.timers
        now = self.clock.refresh()  # type: ignore[attr-defined]
        if not timers.due(now):
            return 0
        return self.clock.run_due()  # each firing names its cause (_begin_timer)

    def next_timer(self) -> int | None:
        return self.clock.next_deadline() if self.cfg.clock == "wall" else None

    # -- committing ----------------------------------------------------------------------------------

    def changelog_records(self) -> dict[bytes, bytes | None]:
        """Snapshots of the instances changed since the last commit (None: terminated), and the
        changelog records to send for them."""
        changes: dict[bytes, bytes | None] = {}
        snapshot = self.engine.snapshot
        hints = self.store.timer_hints  # each snapshot's timer, for the store's timer index
        unsaved, recent = self.cache.draining()  # not evictable until written; recently used
        key_bytes_of = self._ctx_key_bytes
        timed = self._timed
        self._fresh.clear()  # every one still alive is snapshotted now: persisted from here on
        for ctx in self.engine.drain_dirty():
            if not self.grouped:
                changes[SINGLE_KEY] = snapshot(ctx)
                continue
            kb = key_bytes_of(ctx)
            # A changed instance is either in memory or ended (and released): then a tombstone. An
            # instance that ended and started again in one batch is drained twice, in that order.
            if ctx.terminated:
                changes[kb] = None
            else:
                changes[kb] = snapshot(ctx)
                if timed:
                    hints[kb] = timer_info(ctx)
            unsaved.add(kb)
            if recent is not None:
                recent.add(id(ctx))
        if self.hwm_dirty:
            changes[HWM_KEY] = orjson.dumps(self.hwm)
            self.hwm_dirty = False
        if self.record_clock and self.clock.now() != self._clock_saved:
            self._clock_saved = self.clock.now()
            changes[CLOCK_KEY] = b"%d" % self._clock_saved
        if self.clock.timers.next_seq != self._seq_saved:
            self._seq_saved = self.clock.timers.next_seq
            changes[SEQ_KEY] = b"%d" % self._seq_saved
        if changes:
            headers = [("es-pos", position_header(self.position))]  # one list for the whole commit
            self.send_changelog(self.changelog_topic, self.partition, changes, headers, self.clock.now() // 1000)
        return changes

    def close(self) -> None:
        self.engine.clear()
        self.cache.close()
        self.store.close()
