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
from ..engine.encoding import encode
from ..engine.engine import Engine
from ..engine.events import ERROR_EVENT, Emitted, ErrorCode
from ..engine.time_provider import SimulatedTimeProvider, TimeProvider, WallClockTimeProvider
from . import codec
from .codec import BadRecord, Headers, RecordInfo
from .config import InputConfig, ProgramConfig
from .partitioner import key_bytes, partition_of
from .state import HWM_KEY, SINGLE_KEY, Position, TaskStore, decode_hwm, position_header, tp_name

log = logging.getLogger("eventscript.kafka.task")


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

    @property
    def name(self) -> str:
        return tp_name(self.topic, self.partition)


class Task:
    def __init__(self, partition: int, program: CompiledProgram, cfg: ProgramConfig, inputs: list[InputConfig],
                 repartition_topic: str, changelog_topic: str, partitions: int, store_path: Path,
                 stats: Callable[[str, int], None] | None = None) -> None:
        self.partition = partition
        self.cfg = cfg
        self.program = program
        self.partitions = partitions
        self.repartition_topic = repartition_topic
        self.changelog_topic = changelog_topic
        self.inputs = [InputPartition(c.topic, partition, i, c) for i, c in enumerate(inputs)]
        self.inputs.append(InputPartition(repartition_topic, partition, len(inputs), None))
        self.by_name = {ip.name: ip for ip in self.inputs}
        self.by_topic_cfg = {c.topic: c for c in inputs}
        self.clock: TimeProvider = (SimulatedTimeProvider() if cfg.clock == "record" else WallClockTimeProvider())
        self.engine = Engine(program, self._consume, self.clock, name=cfg.name, tz=ZoneInfo(cfg.timezone),
                             track_dirty=True)
        self.grouped = program.grouped
        self.key_types = program.program.key_types
        self.input_types = {i.name: i.ty for i in program.program.inputs}
        self.store = TaskStore(store_path)
        self.position: Position = {}
        self.hwm: dict[str, int] = {}
        self.hwm_dirty = False
        self.outbox: list[OutRecord] = []
        self.restored = False
        self.started = False
        self.processed = 0
        self._source: RecordInfo | None = None
        self._src_id = ""
        self._src_count = 0
        self._idle_since: float | None = None
        self._stats = stats or (lambda name, n: None)

    # -- restore ------------------------------------------------------------------------------

    def load_from_store(self) -> None:
        """Rebuild the engine's instances from the local store (which holds committed state)."""
        self.engine.clear()
        self.hwm = decode_hwm(self.store.get(HWM_KEY))
        count = 0
        for k, v in self.store.instances():
            ctx = self.engine.restore(v)
            if k == SINGLE_KEY:
                self.started = True
            count += 1
            if ctx.key is None and not self.grouped:
                self.started = True
        self.restored = True
        log.info("%s task %d: %d instance(s) restored", self.cfg.name, self.partition, count)

    def start_wall_clock(self) -> None:
        """An ungrouped program on the wall clock starts when its task does."""
        if not self.grouped and not self.started and self.partition == 0 and self.cfg.clock == "wall":
            self._begin_source(None, f"start@{self.clock.now()}")
            self.engine.start()
            self.started = True

    # -- the engine's consumer -----------------------------------------------------------------

    def _next_id(self) -> str:
        self._src_count += 1
        return f"{self.cfg.name}/{self.partition}/{self._src_id}/{self._src_count}"

    def _begin_source(self, source: RecordInfo | None, src_id: str) -> None:
        self._source = source
        self._src_id = src_id
        self._src_count = 0

    def _consume(self, e: Emitted) -> None:
        key = key_bytes(e.key, self.key_types)
        ts = e.time // 1000
        if e.name == ERROR_EVENT:
            key_json = [encode(k, t) for k, t in zip(e.key, self.key_types or [])] if e.key is not None else None
            value = codec.emitted_error_value(e, self._source, key_json)
            self.outbox.append(OutRecord(self.cfg.error_topic, None, key, value,
                                         codec.output_headers(e, self.cfg.name, self._next_id()), ts))
            self._stats("errors", 1)
            return
        topic = self.cfg.output_topic(e.name)
        if topic is None:
            return  # an output with no topic configured is dropped (the worker warns at start)
        self.outbox.append(OutRecord(topic, None, key, codec.encode_value(e),
                                     codec.output_headers(e, self.cfg.name, self._next_id()), ts))
        self._stats("outputs", 1)

    def _error_record(self, code: int, message: str, source: RecordInfo) -> None:
        now = self.clock.now()
        value = codec.error_value(self.cfg.name, code, message, now, source)
        e = Emitted(self.cfg.name, ERROR_EVENT, [code, message], None, now, None)  # type: ignore[arg-type]
        self.outbox.append(OutRecord(self.cfg.error_topic, None, source.key, value,
                                     codec.output_headers(e, self.cfg.name, self._next_id()),
                                     (source.timestamp or now // 1000)))
        self._stats("errors", 1)

    # -- processing -------------------------------------------------------------------------------

    def add(self, msg: Any) -> None:
        ip = self.by_name.get(tp_name(msg.topic(), msg.partition()))
        if ip is None:
            return
        ip.buffer.append(msg)
        ip.eof = False

    def mark_eof(self, topic: str, partition: int) -> None:
        ip = self.by_name.get(tp_name(topic, partition))
        if ip is not None:
            ip.eof = True

    def buffered(self) -> int:
        return sum(len(ip.buffer) for ip in self.inputs)

    def process(self, max_idle_ms: int) -> int:
        """Process buffered records in timestamp order; returns how many were processed."""
        if not self.restored:
            return 0
        done = 0
        inputs = self.inputs
        while True:
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
            self._process_one(best, best.buffer.popleft())
            done += 1
        self.processed += done
        return done

    def _process_one(self, ip: InputPartition, msg: Any) -> None:
        offset = msg.offset()
        self.position[ip.name] = offset + 1
        ts = msg.timestamp()[1]
        headers = msg.headers()
        info = RecordInfo(msg.topic(), msg.partition(), offset, ts, msg.key(), headers, msg.value())
        self._begin_source(info, f"{ip.name}:{offset}")
        if codec.header(headers, codec.HEADER_TICK) is not None:
            self._advance(ts)
            return
        cfg = ip.config
        if cfg is None:  # from the repartition topic
            source = codec.header(headers, codec.HEADER_SOURCE)
            origin = codec.header(headers, codec.HEADER_INPUT)
            if source is not None:
                src_tp, _, src_off = source.decode().rpartition(":")
                if int(src_off) < self.hwm.get(src_tp, 0):
                    return  # already processed (a re-sent copy)
                self.hwm[src_tp] = int(src_off) + 1
                self.hwm_dirty = True
            cfg = self.by_topic_cfg.get(origin.decode()) if origin is not None else None
            if cfg is None:
                self._error_record(ErrorCode.BAD_INPUT_VALUE, "repartitioned record of an unknown input topic", info)
                return
        try:
            name, value = codec.decode_record(cfg, msg.value(), headers, self.input_types)
        except BadRecord as exc:
            self._error_record(exc.code, exc.message, info)
            return
        if ip.config is not None:
            keyed = cfg.keyed if cfg.keyed is not None else self.grouped
            if keyed and msg.key() is None:
                self._error_record(ErrorCode.BAD_INPUT_VALUE,
                                   "the record has no key; this input's records must be keyed "
                                   "(set keyed: false in the topology to accept unkeyed records)", info)
                return
            target = self._target_partition(name, value)
            if target != self.partition:
                self._forward(msg, cfg, target, info)
                return
        self._advance(ts)
        if not self.grouped and not self.started:
            self.engine.start()
            self.started = True
        self.engine.feed(name, value)
        clock = self.clock
        if clock.timers.due(clock.now()):
            clock.run_due()  # timers set due now fire at once, as in the tester

    def _target_partition(self, name: str, value: Any) -> int:
        if not self.grouped:
            return 0
        key = self.engine.group_key(name, value)
        kb = key_bytes(key, self.key_types)
        assert kb is not None
        return partition_of(kb, self.partitions)

    def _forward(self, msg: Any, cfg: InputConfig, target: int, info: RecordInfo) -> None:
        """Re-publish a record whose group key belongs to another task, keyed by that key."""
        name, value = codec.decode_record(cfg, msg.value(), msg.headers(), self.input_types)
        kb = key_bytes(self.engine.group_key(name, value), self.key_types)
        headers = list(msg.headers() or [])
        headers.append((codec.HEADER_SOURCE, f"{info.topic}:{info.partition}:{info.offset}".encode()))
        headers.append((codec.HEADER_INPUT, cfg.topic.encode()))
        self.outbox.append(OutRecord(self.repartition_topic, target, kb, msg.value(), headers,
                                     msg.timestamp()[1]))
        self._stats("repartitioned", 1)

    def _advance(self, ts: int) -> None:
        if self.cfg.clock != "record":
            return
        clock = self.clock
        assert isinstance(clock, SimulatedTimeProvider)
        t = ts * 1000
        if not self.started and not self.grouped:
            clock.set_now(t)
            if self.partition == 0:
                self.engine.start()
                self.started = True
            return
        if t >= clock.now():
            clock.advance_to(t)

    def fire_timers(self) -> int:
        """Wall clock: fire the timers due now (record clock: they fire as records advance time)."""
        if not self.restored or self.cfg.clock != "wall":
            return 0
        timers = self.clock.timers
        now = self.clock.now()
        if not timers.due(now):
            return 0
        self._begin_source(None, f"timer@{now}")
        return self.clock.run_due()

    def next_timer(self) -> int | None:
        return self.clock.next_deadline() if self.cfg.clock == "wall" else None

    # -- committing ----------------------------------------------------------------------------------

    def changelog_records(self) -> dict[bytes, bytes | None]:
        """Snapshots of the instances changed since the last commit (None: terminated), and the
        changelog records to send for them."""
        changes: dict[bytes, bytes | None] = {}
        for ctx in self.engine.drain_dirty():
            key = SINGLE_KEY if ctx.key is None else key_bytes(ctx.key, self.key_types)
            assert key is not None
            if ctx.key is not None and self.engine.contexts.get(ctx.key) is not ctx:
                changes[key] = None  # terminated and released: a tombstone
            else:
                changes[key] = self.engine.snapshot(ctx)
        if self.hwm_dirty:
            changes[HWM_KEY] = orjson.dumps(self.hwm)
            self.hwm_dirty = False
        if changes:
            pos = position_header(self.position)
            now_ms = self.clock.now() // 1000
            for k, v in changes.items():
                self.outbox.append(OutRecord(self.changelog_topic, self.partition, k, v,
                                             [("es-pos", pos)], now_ms, changelog=True))
        return changes

    def close(self) -> None:
        self.engine.clear()
        self.store.close()
