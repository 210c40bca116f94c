"""A task: partition p of every input topic of a program (plus its repartition and changelog
partitions), the instances whose group keys hash to p, and their timers.

As in Kafka Streams, a task is the unit of ownership: it has its own engine (one instance
context per group key), its own clock, its own local store; a rebalance moves whole tasks.
It is composed of the parts of this package — the input merge (``merge.py``), the clock
(``clock.py``), routing (``routing.py``), output ids (``ids.py``) and the record collector
(``collector.py``) — and runs in every host: the worker attaches its producer, the backfill
takes the records it keeps, and a key-parallel backfill runs it dry with an observer.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import orjson

from ..automata.compiled import CompiledProgram
from ..engine.encoding import DecodeError, decoder_for, encode, encoder_for, json_line
from ..engine.engine import Engine
from ..engine.events import ERROR_EVENT, Emitted, ErrorCode
from ..engine.time_provider import armed, timer_info
from ..state.cache import CacheBudget, InstanceCache
from ..state.changelog import (
    CLOCK_KEY,
    EPOCH_BASE_KEY,
    HEADER_EPOCH,
    HEADER_POSITION,
    HWM_KEY,
    SEQ_KEY,
    SINGLE_KEY,
    Position,
    batch_frame,
    decode_int,
    owner_epoch,
    position_header,
)
from ..state.keyinfo import (
    HEADER_KEY_INFO,
    INFO_END,
    INFO_FRAME,
    RETIRED,
    TERMINATED,
    KeyInfo,
    LastRecord,
    decode_info,
    framed_value,
    info_key,
    last_record_head,
)
from ..state.store import TaskStore
from ..state.timers import TimerIndex
from ..topology.config import InputConfig, ProgramConfig
from ..topology.progress import ProgressPlan
from . import codec
from .clock import TaskClock, clock_for
from .codec import BadRecord, Headers
from .collector import OutRecord, RecordCollector, Send, SendChangelog, changelog_through, drop
from .copies import CopiesSeen
from .ids import OutputIds
from .lifecycle import TaskState
from .merge import MAX_FRONTIER, InputPartition, PartitionGroup, ProcessRun
from .noting import DoneNotes
from .partitioner import murmur2_partition
from .progress import RESEND_S, InputProgress, marker_headers
from .record import Record
from .repeats import RESTARTED
from .routing import NOT_OWNED, KeyFilter, Routing
from .streams import WriterStreams
from .versions import ProgramVersions

#: ``Task._elsewhere``'s answer for a record that moves no clock: its task keeps it (for its
#: ``$error``), and its timestamp is no progress of its partition (``InputPartition.seen_ms``).
UNTIMED = (-1, None)

__all__ = ["NOT_OWNED", "InputPartition", "KeyFilter", "OutRecord", "Task", "TaskObserver"]

log = logging.getLogger("eventscript.kafka.task")  # the name operators' log settings know


class TaskObserver(Protocol):
    """Told of each record as the task processes it (``Task.observe``)."""

    def processed(self, msg: Record, key: tuple[Any, ...] | None, clock_before: int, moved_to: int) -> None:
        """``msg`` was processed: its group key (None: it has none, or it reached no instance),
        the task's clock before it (µs) and where it moved the clock (µs; -1: it did not)."""


class _KeyNote:
    """A dry run's stand-in for the engine's feeds: the program is off; only the group key of
    the record fed is noted (``Task.record_key``)."""

    def __init__(self, task: Task) -> None:
        self.task = task

    def feed_keyed(self, name: str, value: Any, key: tuple[Any, ...]) -> None:
        return None

    def feed(self, name: str, value: Any) -> None:
        self.task.record_key = None

    def start(self) -> None:
        """The program's initial actions do not run."""


class Task:
    def __init__(
        self,
        partition: int,
        program: CompiledProgram,
        cfg: ProgramConfig,
        inputs: list[InputConfig],
        repartition_topic: str,
        changelog_topic: str,
        partitions: int,
        store_path: Path,
        clock: TaskClock | None = None,
    ) -> None:
        """``clock``: the task's clock, when the host gives one (a simulation shares one among its
        tasks: ``clock.SimulatedClock``); else the one the program's ``clock:`` setting names."""
        self.partition = partition
        self.cfg = cfg
        self.program = program
        self.partitions = partitions
        self.repartition_topic = repartition_topic
        self.changelog_topic = changelog_topic
        parts = [InputPartition(c.topic, partition, i, c) for i, c in enumerate(inputs)]
        parts.append(InputPartition(repartition_topic, partition, len(inputs), None))
        self.group = PartitionGroup(parts)
        self.inputs = parts
        self.by_name = self.group.by_name
        self.by_topic = self.group.by_topic
        self.by_topic_cfg = {c.topic: c for c in inputs}
        self.clock: TaskClock = clock if clock is not None else clock_for(cfg.clock)
        #: The program versions of the task's state (upgrades: another version's instances are
        #: converted as they are loaded, under the topology's ``upgrade`` policy).
        #: Counts since the worker last collected them (consumed, processed, outputs, errors, ...).
        self.counts: collections.Counter[str] = collections.Counter()
        self.versions = ProgramVersions(cfg.name, partition, program, cfg.upgrade, self.clock.now, self.counts)
        self.engine = Engine(
            program,
            self._consume,
            self.clock,
            name=cfg.name,
            tz=ZoneInfo(cfg.timezone),
            track_dirty=True,
            program_tag=self.versions.tag,
        )
        # A key's first event that would leave a fresh instance as it was creates none: such an
        # instance was made only to be released and forgotten (``_on_terminate``). An observer
        # that shows each event's instance (explain) turns it off again.
        self.engine.creates_late = True
        #: What the records are fed to: the engine, or in a dry run a note of their keys.
        self._feeds: Any = self.engine
        self.grouped = program.grouped
        self.key_types = program.program.key_types
        self.input_types = {i.name: i.ty for i in program.program.inputs}
        self.decoders = {i.name: decoder_for(i.ty) for i in program.program.inputs}
        self.routing = Routing(cfg, self.key_types, partition, partitions, self.engine.one_key)
        self.scheme = self.routing.scheme
        #: The store of record of the task's instances; the engine's contexts are a bounded cache
        #: of them (state/cache.py), and the store's timer index backs the clock's timer queue.
        self.store = TaskStore(store_path)
        self.timer_index = TimerIndex(self.store, self.engine)
        self.cache = InstanceCache(
            self.engine,
            self.store,
            self.timer_index,
            CacheBudget(cfg.name, cfg.state.cache_mib, cfg.state.cache_instances),
            self.routing.key_bytes,
        )
        self.timer_index.out_of_date = self.cache.out_of_date
        #: The timer sequence number as last persisted (task state, like the record clock).
        self._seq_saved = 0
        #: The re-published copies processed (the repartition topic's deduplication).
        self.copies = CopiesSeen()
        self.group.remember(self.copies)
        self.collector = RecordCollector()
        #: Where the task's records go (see collector.py): the collector until a host attaches
        #: its own (``attach``).
        self.send: Send = self.collector.send
        self.send_changelog: SendChangelog = changelog_through(self._send_one)
        self.state = TaskState.CREATED
        self.started = False
        #: The group key of the record being processed (None: none, or not yet computed).
        self.record_key: tuple[Any, ...] | None = None
        self.observer: TaskObserver | None = None
        #: With a key filter: topic → offset → record time (ms) the clock moves to before that
        #: record (``move_clock_before``) or instead of processing it (``stand_in``: a record
        #: that stands for records of other keys). Checked only while a key filter is set.
        self._clock_moves: dict[str, dict[int, int]] = {}
        self._stand_ins: dict[str, dict[int, int]] = {}
        #: Whether an input record's group key is placed (another partition's: re-published;
        #: not the key filter's: only the clock moves).
        self._check_place = partitions > 1
        self.ids = OutputIds(cfg.name, repartition_topic)
        self._route = self.routing.route
        self._placed = self.routing.placed
        self._ctx_key_bytes = self.routing.ctx_key_bytes()
        #: Progress markers (``set_progress``): what the task writes them on, and the progress it
        #: last wrote on each topic (the repartition topic's is how far it has re-published).
        self.progress_plan: ProgressPlan | None = None
        #: Topic → partitions, for the topics other programs read (``ProgressPlan.outputs``): an
        #: output with no key goes to the partition its ``es-id`` hashes to, not to a random one.
        #: A writer restarted from its last commit (at-least-once) writes its batch again with
        #: the same ids; at random partitions a copy and its original land apart, where no reader
        #: can tell them (each partition's repeat rules see only its own records), and a program
        #: downstream took both (tests/kafka/test_pipeline_kills.py, windows-alarm, seed 31).
        self._keyless_partitions: dict[str, int] = {}
        #: Forward ahead (``forward_ahead``): a gated task on several partitions re-publishes the
        #: records of other tasks as they are fetched, not when its merge reaches them.
        self._ahead = False
        self._marked: dict[str, tuple[int, int | None]] = {}
        #: The task's last markers on its outputs said it was idle (``IDLE``): before it processes
        #: a record again, it says it is not (``process``).
        self._idle_marked = False
        #: The host's markers reach readers only when it commits (``set_progress``): then the
        #: markers saying the task has records again are committed before the records they
        #: announce are processed, and ``wants_commit`` asks the host for that commit.
        self._commit_markers_first = False
        self.wants_commit = False
        #: The task starts from a commit (as every task does: a new owner, a restore) or was
        #: rewound to one: its next markers say so (``repeats.py``), for readers to drop what it
        #: writes again.
        self._restarted = True
        #: The input partitions several upstream tasks write, read in record-time order (per key,
        #: ``streams.WriterStreams``; re-published so too: ``_forward_in_time_order``): the records
        #: done with at or above their positions are noted (``copies.py``).
        self._time_ordered: frozenset[str] = frozenset()
        self._resend_at = 0.0
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
        #: What the changelog records of the next commit say about their keys (``state.keyinfo``):
        #: the last record each key's instance took, as the instance's ``note`` (``InstanceContext``;
        #: set as the record is fed, read and reset by the commit; ``_last_single`` for an
        #: ungrouped program), and when and why instances ended, by the engine's table key
        #: (``ctx.gk``: the bare value of a one-value group key, which the commit reads from each
        #: instance without building its key tuple, and hashes faster; else the key tuple).
        self._last_single: Record | None = None
        self._ended: dict[Any, tuple[int, str]] = {}
        self._terminal = self.engine.executor.terminal
        #: ``keyinfo.last_record_head`` of each input topic (not the repartition topic's records,
        #: which name the input record they copy: ``_record_coordinates``).
        self._info_heads = {c.topic: last_record_head(c.topic) for c in inputs}
        #: The changelog records of the last commit (its keys: see ``rewind``), and the keys to
        #: write again at the next commit: changelog records of a batch that was never committed
        #: may be in the log (at-least-once; an aborted transaction on a broker that shows it), and
        #: a replay applies them once a later commit covers their input position. The retry may
        #: leave such a key unwritten (an instance created and ended inside its batch writes
        #: nothing), so the next commit writes each one's committed value again over it.
        self._last_sent: dict[bytes, bytes | None] = {}
        self._rewrite: set[bytes] = set()
        #: The owner epoch its changelog records carry (``es-gen``, state/changelog.py: fences a
        #: zombie's late records), given by the host when it takes the task on (``take_epoch``);
        #: None: none (a host without a consumer group). ``epoch_base``: the task's epoch base
        #: (task state), written again when raised.
        self.owner_epoch: int | None = None
        self._epoch_header: tuple[str, bytes] | None = None
        self.epoch_base = 0
        self._epoch_base_dirty = False
        self.engine.origin_of = self._on_create
        self.engine.on_terminate = self._on_terminate
        self.engine.before_timer = self._begin_timer
        #: Inputs of one event name in JSON (by ``id`` of their configuration): the name and the
        #: value's decoder, which ``_process_run`` calls inline.
        self._fixed: dict[int, tuple[str, Callable[[Any], Any]]] = {}
        self._decoders = {id(c): self._input_decoder(c) for c in inputs}
        for ip in self.inputs:
            if ip.config is not None:
                ip.id_head = f"{self.ids.prefix}{ip.topic}:".encode()
                ip.decode = self._decoders[id(ip.config)]
                if ip.config.event is not None and self.grouped:
                    ip.key_fn = self.engine.input_key_function(ip.config.event)

    # -- what hosts see ---------------------------------------------------------------------------

    @property
    def position(self) -> Position:
        """ "topic:partition" → the offset after the last record processed."""
        return self.group.position

    @position.setter
    def position(self, value: Position) -> None:
        self.group.position = value

    @property
    def outbox(self) -> list[OutRecord]:
        """The records kept by the collector (a task no host attached its own ``send`` to)."""
        return self.collector.outbox

    @outbox.setter
    def outbox(self, value: list[OutRecord]) -> None:
        self.collector.outbox = value

    @property
    def restored(self) -> bool:
        """Whether the task processes records (its committed state is loaded, its inputs are at it)."""
        return self.state is TaskState.RUNNING

    @restored.setter
    def restored(self, value: bool) -> None:
        self.state = TaskState.RUNNING if value else TaskState.RESTORING

    @property
    def key_filter(self) -> KeyFilter | None:
        """Which group keys the task runs (``set_key_filter``; None: every key placed on it)."""
        return self.routing.key_filter

    def attach(self, send: Send, send_changelog: SendChangelog | None = None) -> None:
        """Send the task's records through a host's functions (the worker's producer) instead of
        keeping them."""
        self.send = send
        self.send_changelog = send_changelog or changelog_through(send)

    def take_outputs(self) -> list[OutRecord]:
        """The records kept since last taken (a task no host attached its own ``send`` to)."""
        return self.collector.take()

    def rewind(self) -> None:
        """Its inputs go back to the committed positions: drop what was fetched, processed or kept
        since, load the committed state again, and process nothing until ``resume``."""
        self.group.clear()
        self._marked.clear()  # the markers of the batch rewound may not have been written
        self._restarted = True
        self._idle_marked = self._idle_marked or self._commit_markers_first  # (the last written: IDLE?)
        self.collector.outbox.clear()
        self.rewrite_at_next_commit(self._last_sent)  # the batch that was not committed wrote them
        self._last_sent = {}
        self.load_from_store()
        self.state = TaskState.RESTORING

    def rewrite_at_next_commit(self, keys: Iterable[bytes]) -> None:
        """Changelog records of these keys may be in the log from a batch that was never
        committed (the last one before a rewind; those a restore skipped): the next commit writes
        each key's current value (a tombstone if it has none), so that no replay that applies them
        once a later commit covers them keeps them (issue 20, fault 1: ghost instances)."""
        self._rewrite.update(keys)

    def take_epoch(self, generation: int | None, highest: int) -> int | None:
        """Take the owner epoch of a host whose consumer group's generation is ``generation``
        (None: not known; the records then carry none), its state loaded from a changelog whose
        highest epoch is ``highest``: see ``state.changelog.owner_epoch``. Returns the epoch."""
        if generation is None:
            self.owner_epoch = self._epoch_header = None
            return None
        epoch, base = owner_epoch(generation, self.epoch_base, highest)
        if base != self.epoch_base:
            self.epoch_base, self._epoch_base_dirty = base, True
        self.owner_epoch = epoch
        self._epoch_header = (HEADER_EPOCH, b"%d" % epoch)
        return epoch

    def resume(self) -> None:
        """Its inputs are back at the committed positions: drop records fetched before the seek,
        and process again."""
        self.group.drop_buffered()
        self.state = TaskState.RUNNING

    def drained(self) -> bool:
        return self.group.drained()

    def observe(self, observer: TaskObserver, *, dry_run: bool = False) -> None:
        """Tell ``observer`` of each record as it is processed (set before the first record).
        With ``dry_run`` the program is off: the task decodes, keys, places, merges and runs its
        record clock as it would, but feeds nothing to the engine and sends nothing (no instance,
        no timer, no output, no ``$error`` record)."""
        self.observer = observer
        if dry_run:
            self._feeds = _KeyNote(self)  # (no instance fed: none notes a record)
            self.send = drop
            self.send_changelog = changelog_through(drop)

    def _send_one(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        ts: int,
        changelog: bool,
    ) -> None:
        self.send(topic, partition, key, value, headers, ts, changelog)

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
        self._last_single = None
        self._ended.clear()
        self.store.pending_infos.clear()
        timers = self.clock.timers
        timers.clear()  # the task's own clock: drop the cancelled entries too
        self.copies = CopiesSeen.decode(self.store.get(HWM_KEY))
        self.group.remember(self.copies)
        self.clock.restore(self.store.get(CLOCK_KEY))
        raw_seq = self.store.get(SEQ_KEY)
        self._seq_saved = decode_int(raw_seq) if raw_seq is not None else self.store.next_index_seq()
        timers.next_seq = self._seq_saved
        # A base raised but not committed yet (a rewind) is kept, and written at the next commit.
        stored_base = decode_int(self.store.get(EPOCH_BASE_KEY))
        if self.epoch_base > stored_base:
            self._epoch_base_dirty = True
        else:
            self.epoch_base = stored_base
        self.versions.open(self.store)  # (UpgradeRefused: the policy forbids another version's state)
        if self.grouped:
            self.timer_index.reset(timers)
            self.cache.reset()
            self.versions.convert_timed(self.store, self.engine)
        else:
            raw = self.store.snapshot(SINGLE_KEY)
            if raw is not None:
                self.engine.restore(raw)
                self.started = True
        self.versions.log_summary()
        self.state = TaskState.RUNNING
        log.info(
            "%s task %d: committed state loaded (instances are loaded from the store as needed)",
            self.cfg.name,
            self.partition,
        )

    def start_wall_clock(self) -> None:
        """An ungrouped program starts when its task does on a clock that says so (the wall
        clock; simulated time, where the task starts at the first timestamp)."""
        if not self.grouped and not self.started and self.partition == 0 and self.clock.starts_with_task():
            self.ids.begin_start()
            self._feeds.start()
            self.started = True

    # -- the engine's consumer -----------------------------------------------------------------

    def _next_id(self) -> str:
        return self.ids.next()

    def _next_id_bytes(self) -> bytes:
        return self.ids.next_bytes()

    def _output_handler(self, name: str, ty: Any, topic: str) -> Callable[[Any, Any], None]:
        """What the engine calls for each emission of one output event: encode and send."""
        encode_value = encoder_for(ty)
        dumps = orjson.dumps
        ev_header = (codec.HEADER_EVENT, name.encode())
        prog_header = (codec.HEADER_PROGRAM, self.cfg.name.encode())
        now = self.clock.now
        key_of = self.routing.ctx_out_key(self.grouped)
        ids = self.ids
        next_id = ids.next_bytes
        id_header, time_header = codec.HEADER_ID, codec.HEADER_TIME

        keyless = self._keyless_partition

        def handler(ctx: Any, value: Any) -> None:
            t = now()
            rid = next_id()
            headers: codec.Headers = [ev_header, prog_header, (id_header, rid)]
            if t % 1000:
                headers.append((time_header, b"%d" % t))  # sub-millisecond emission time
            seq = ids.seq  # (the cause's, read once as it began)
            if seq is not None:
                headers.append((codec.HEADER_SEQ, seq))
            elif ids.armed is not None and (armed := ids.armed_header()) is not None:
                headers.append((codec.HEADER_ARMED, armed))  # a timer's outputs: what set it
            try:
                data = dumps(encode_value(value))
            except TypeError:  # a lone surrogate in an object value (from an external function)
                data = json_line(encode_value(value)).encode()
            key = key_of(ctx)
            self.send(topic, -1 if key is not None else keyless(topic, rid), key, data, headers, t // 1000, False)

        return handler

    def _input_decoder(self, cfg: InputConfig) -> Callable[[bytes | None, Headers | None], tuple[str, Any]]:
        """Record value and headers → (event name, value) for one input topic (or BadRecord)."""
        if cfg.format == "json" and cfg.event is not None and cfg.event in self.decoders:
            name = cfg.event
            decode_value = self.decoders[name]
            loads = orjson.loads
            self._fixed[id(cfg)] = (name, decode_value)

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

    def _begin_timer(self, ctx: Any) -> None:
        """``Engine.before_timer``: emissions from here on are caused by ctx's time event, whose
        timer is the one firing (what set it, when named: ``name_timers``)."""
        self.ids.begin_timer(ctx, armed(self.clock.timers.firing))

    def _begin_start(self) -> None:
        """Emissions from here on come from an ungrouped program's initial actions."""
        self.ids.begin_start()

    def _on_create(self) -> str | None:
        """``Engine.origin_of``, called as the record being fed creates its key's instance: note
        the creation, and name the instance's origin (for the ids of its timers' outputs; None,
        so no side object per instance, for a program without timers)."""
        self._creating = True
        if not self._timed:
            return None
        return self.ids.origin()

    def _on_terminate(self, ctx: Any) -> None:
        """``Engine.on_terminate``: an instance ended (terminated or retired) and was released.
        One that retired since the last drain, which created it, was never written to the
        changelog nor the store, and equals no instance at all: it leaves nothing to persist — no
        tombstone, no store delete, no cache bookkeeping — so it is taken out of the engine's
        changed instances (a program whose instances retire after each record pays nothing). Any
        other needs its tombstone, which says when and why it ended (``state.keyinfo``): one that
        terminated since it was created too, so that its key answers "ended", not "never seen"."""
        fresh = self._creating or (self._fresh and self._fresh.pop(id(ctx), None) is not None)
        retired = not self._terminal(ctx.state)
        if fresh and retired:
            self.engine.forget_change(ctx)
            return
        if self.grouped:
            self._ended[ctx.gk] = (self.clock.now(), RETIRED if retired else TERMINATED)
        self.cache.ended_instance(ctx)

    def _key_bytes(self, key: tuple[Any, ...] | None) -> bytes | None:
        return self.routing.key_bytes(key)

    def _consume(self, e: Emitted) -> None:
        key = self.routing.out_key(e.key)
        ts = e.time // 1000
        if e.name == ERROR_EVENT:
            key_json = [encode(k, t) for k, t in zip(e.key, self.key_types or [])] if e.key is not None else None
            source = self.ids.source_info()
            if e.key is None and source is not None:
                key = source.key  # about a record that reached no instance: keyed as that record
            value = codec.emitted_error_value(e, source, key_json)
            headers = self._error_headers(e)
            self.send(self.cfg.error_topic, self._error_partition(key, headers), key, value, headers, ts, False)
            self.counts["errors"] += 1
            return
        # Outputs with a topic have their own handler (_output_handler); the others are dropped
        # (the worker warns about them at start).

    def _error_headers(self, e: Emitted) -> codec.Headers:
        """An ``$error`` record's headers: as an output's, with its cause's ``es-seq``."""
        headers = codec.output_headers(e, self.cfg.name, self.ids.next())
        seq = self.ids.seq
        if seq is not None:
            headers.append((codec.HEADER_SEQ, seq))
        elif (armed := self.ids.armed_header()) is not None:
            headers.append((codec.HEADER_ARMED, armed))
        return headers

    def _keyless_partition(self, topic: str, rid: bytes) -> int:
        """The partition of a record with no key and id ``rid``: on a topic another program reads,
        where its ``es-id`` hashes to (``_keyless_partitions``: a copy written again after a
        restart lands beside its original; ids are unique, so no cache); else -1, the producer's
        partitioner."""
        n = self._keyless_partitions.get(topic)
        return -1 if n is None else murmur2_partition(rid, n)

    def _error_partition(self, key: bytes | None, headers: codec.Headers) -> int:
        """An ``$error`` record's partition: placed by its key, or, with none, as a keyless
        output is (``_keyless_partition``)."""
        if key is not None:
            return -1
        return self._keyless_partition(self.cfg.error_topic, codec.header(headers, codec.HEADER_ID) or b"")

    def _error_record(self, code: int, message: str) -> None:
        """An $error record about the input record being processed (it could not be used)."""
        key_filter = self.routing.key_filter
        if key_filter is not None and not key_filter.reports(self.ids.msg, False):
            return
        source = self.ids.source_info()
        assert source is not None
        now = self.clock.now()
        value = codec.error_value(self.cfg.name, code, message, now, source)
        e = Emitted(self.cfg.name, ERROR_EVENT, [code, message], None, now, None)  # type: ignore[arg-type]
        headers = self._error_headers(e)
        partition = self._error_partition(source.key, headers)
        self.send(self.cfg.error_topic, partition, source.key, value, headers, source.timestamp or now // 1000, False)
        self.counts["errors"] += 1

    # -- processing -------------------------------------------------------------------------------

    def add(self, msg: Record) -> bool:
        return self.group.add(msg)

    def mark_eof(self, topic: str, partition: int) -> None:
        self.group.mark_eof(topic, partition)

    def process(self, max_idle_ms: int) -> int:
        """Process buffered records in timestamp order; returns how many were processed."""
        if self.state is not TaskState.RUNNING:
            return 0
        # (chosen once per call: a task without a key filter or observer pays nothing for theirs)
        process_run: ProcessRun | None = None
        process_one: Callable[[InputPartition, Record], None]
        if self.observer is not None:
            process_one = self._observed_one
        elif self.routing.key_filter is not None:
            process_one = self._filtered_one
        else:
            process_one = self._process_one
            process_run = self._process_run if self.grouped else None
        notes = DoneNotes(self.copies, self._time_ordered) if self._time_ordered else None
        if notes is not None:
            process_one, process_run = notes.one(process_one), notes.run(process_run)
        if self._idle_marked and any(ip.pending() for ip in self.inputs):
            # Records again after an idle marker: markers first, on the topics marked idle only.
            # (A topic marked with a time waits for the next commit: a marker written ahead of
            # the commit of what the task processed lets readers take records that a kill before
            # it makes the next owner write again, later, after they took the first copies.)
            was_idle = self._idle_topics()
            self.write_progress(forward=False, idle_only=True)
            if self._commit_markers_first and not was_idle <= self._idle_topics():
                # Committed first: in one transaction with the records' outputs, a kill would
                # abort the marker with them, leave the idle one standing and the readers taking
                # other writers' later records ahead of these when the next owner processes them.
                self.wants_commit = True
                return 0
        forwarded = self.forward_ahead() if self._ahead else 0
        try:
            done = self.group.process(max_idle_ms, process_one, process_run)
        finally:
            if notes is not None:
                notes.flush(self.inputs)
        self.counts["processed"] += done + forwarded
        if self.group.repeats:
            self.counts["repeats"] += self.group.repeats
            self.group.repeats = 0
        return done + forwarded

    def forward_ahead(self) -> int:
        """Re-publish every record of another task's group key as soon as it may go, as Kafka
        Streams' repartitioning sub-topology does, and keep the task's own for the merge; returns
        how many were re-published. A source partition's records may go at once, a gated one's
        once its writers' progress passes them (in its offset order, as the merge would take
        them; in record-time order when several tasks write it: ``_forward_in_time_order``). A
        gated task holds its own records back until its inputs' writers have progressed past them,
        the other tasks of its program among them (they write the repartition topic):
        were their records held back too, each task's repartition marker would wait on its own
        held records, and the tasks would wait on each other while input keeps coming. So the
        marker speaks only of what is re-published (``PartitionGroup.republished``), and the
        position passes the records re-published before the first one still waiting
        (``InputPartition.settle_position``)."""
        if self.state is not TaskState.RUNNING:
            return 0
        forwarded = 0
        position = self.group.position
        for ip in self.inputs:
            cfg, inbox = ip.config, ip.inbox
            if cfg is None or not inbox:
                continue
            bound = MAX_FRONTIER if ip.progress is None else ip.progress.watermark
            if bound is None:
                continue
            streams = ip.streams
            keep = (
                ip.buffer.append
                if streams is None
                else streams.keep
                if isinstance(streams, WriterStreams)
                else streams.append
            )
            if isinstance(inbox, WriterStreams):
                forwarded += self._forward_in_time_order(ip, cfg, inbox, bound, keep)
            else:
                while inbox and inbox[0].timestamp()[1] < bound:
                    msg = inbox.popleft()
                    forwarded += self._release(ip, cfg, msg, keep, None)
                    ip.looked_to = msg.offset() + 1
            ip.settle_position(position)
        return forwarded

    def _forward_in_time_order(
        self, ip: InputPartition, cfg: InputConfig, inbox: WriterStreams, bound: int, keep: Callable[[Record], object]
    ) -> int:
        """``forward_ahead`` for a partition several upstream tasks write: its records below
        ``bound`` in record-time order (``WriterStreams``), not in the order the writers' commits
        landed, so that the copies of each source partition reach their reader in the order the
        simulated run takes them (the reader takes a source's copies in the order they come:
        ``SourceStreams``). Each copy says below which offset its partition is re-published
        (``es-source-below``), which the reader's deduplication needs instead of the offset order
        (``copies.py``). Returns how many were re-published."""
        forwarded = 0
        taken = inbox.take_below(bound)
        # Below which offset every record is re-published before each one: the least offset
        # still waiting, or taken after it (the highest taken when none is).
        below: list[int | None] = [None] * len(taken)
        least = inbox.first_offset()
        for i in range(len(taken) - 1, -1, -1):
            below[i] = least if least is not None else inbox.taken_to
            offset = taken[i].offset()
            if least is None or offset < least:
                least = offset
        done, done_before = self.copies.done, self.copies.done_before
        for msg, under in zip(taken, below):
            if done_before(ip.name, msg.offset()):
                continue  # read again after a restart: done with before the commit it restarted from
            if self._release(ip, cfg, msg, keep, under):
                done(ip.name, msg.offset())
                forwarded += 1
        if inbox.taken_to is not None:
            ip.looked_to = inbox.taken_to
        return forwarded

    def _release(
        self, ip: InputPartition, cfg: InputConfig, msg: Record, keep: Callable[[Record], object], below: int | None
    ) -> int:
        """A record ``forward_ahead`` lets go: re-published when another task runs its group key
        (1), else kept for this task's merge (0)."""
        target = self._elsewhere(ip, msg)
        if target is UNTIMED:
            keep(msg)  # (its $error, at its place in the merge)
            return 0
        ip.saw(msg.timestamp()[1])
        if target is None:
            keep(msg)
            return 0
        self._forward(msg, cfg, target[0], target[1], below)
        return 1

    def _elsewhere(self, ip: InputPartition, msg: Record) -> tuple[int, bytes | None] | None:
        """Where a source record goes when another task runs its group key (its partition and the
        re-published record's key); None when this task processes it (its key is this task's, or
        it is a tick); ``UNTIMED`` when it moves no clock (it gives an ``$error`` here, at its
        time in the merge, or is an event the program does not declare)."""
        headers = msg.headers()
        if msg.timestamp()[1] > self.clock.max_record_ms:
            return UNTIMED
        if headers and codec.header(headers, codec.HEADER_TICK) is not None:
            return None
        try:
            name, value = ip.decode(msg.value(), headers)
        except BadRecord:
            return UNTIMED
        if not self.grouped:
            if ip.config is not None and ip.config.keyed and msg.key() is None:
                return UNTIMED
            if self.partition == 0:
                return None
            return 0, msg.key()
        if ip.needs_key and msg.key() is None:
            return UNTIMED
        key = ip.key_fn(None, value) if ip.key_fn is not None else self.engine.group_key(name, value)
        if key is None:
            return UNTIMED
        rb = self._route(key) if self._route is not None else self.routing.route_key(key)
        target = self._placed.get(rb)
        if target is None:
            target = self.routing.place(rb)
        if target == self.partition or target == NOT_OWNED:
            return None
        return target, rb

    def _observed_one(self, ip: InputPartition, msg: Record) -> None:
        """``_process_one`` told to the observer."""
        clock = self.clock
        before = clock.now()
        clock.moved_to = -1
        self.record_key = None
        self._process_one(ip, msg)
        assert self.observer is not None
        self.observer.processed(msg, self.record_key, before, clock.moved_to)

    def _filtered_one(self, ip: InputPartition, msg: Record) -> None:
        """``_process_one`` with a key filter: first the clock moves the other keys' records
        make before this one (``move_clock_before``, ``stand_in``)."""
        moves = self._clock_moves.get(ip.topic)
        if moves:
            target = moves.pop(msg.offset(), None)
            if target is not None:
                self._advance(target)
        stand_ins = self._stand_ins and self._stand_ins.get(ip.topic)  # (none with one input)
        if stand_ins:
            target = stand_ins.pop(msg.offset(), None)
            if target is not None:
                self._advance(target)
                return
        self._process_one(ip, msg)

    def _pass_by(self, msg: Record) -> None:
        """A record of a group key the key filter does not own: only the clock moves, as the
        record moves it (timers due by its timestamp fire, and those set due then)."""
        if self._advance(msg.timestamp()[1]):
            self.ids.again(msg)
        if self.clock.fire_due():
            self.ids.again(msg)
        key_filter = self.routing.key_filter
        assert key_filter is not None
        key_filter.passed(msg)

    def _process_each(self, ip: InputPartition, buf: collections.deque[Record], n: int, position: Position) -> None:
        """``_process_run``'s fallback: the first ``n`` records of the buffer each through
        ``_process_one``, the position moved past the last one taken (also when one fails)."""
        msg = None
        try:
            for _ in range(n):
                msg = buf.popleft()
                self._process_one(ip, msg)
        finally:
            if msg is not None:
                position[ip.name] = msg.offset() + 1

    def _process_run(self, ip: InputPartition, buf: collections.deque[Record], n: int, position: Position) -> None:
        """Process the first ``n`` records of one input partition's buffer (``merge.ProcessRun``):
        ``_process_one`` for each, with its common case -- a grouped program's keyed record of a
        one-event JSON input, of a key this task runs -- inline and what it reads looked up once
        per run rather than once per record; also a keyed record of an input whose records name
        their event (``event_from``). Such an input reads only three headers, once per
        record (``codec.cause_headers``): ``es-id`` and ``es-seq`` for the outputs' ids and order
        (the headers of ``eventscript produce`` and of another program's outputs), ``es-tick``;
        the others (``es-event`` of an intermediate topic, a producer's own) change nothing. Any
        other record (a tick, a bad value, a key of another task, a record from the repartition
        topic) goes through ``_process_one`` itself, before which the run has changed nothing."""
        fixed = self._fixed.get(id(ip.config)) if ip.config is not None else None
        key_fn = ip.key_fn
        msg = None
        # An input whose records name their event (``event_from``: a header or a field) is fed
        # inline too, each record's group-key function looked up by its name (``named``).
        named = fixed is None and ip.config is not None and self.grouped
        if (not named and (fixed is None or key_fn is None)) or self._feeds is not self.engine:
            self._process_each(ip, buf, n, position)
            return
        name, decode_value = fixed if fixed is not None else ("", orjson.loads)  # (named: not used)
        decode, key_fns = ip.decode, self.engine.key_functions
        loads, undecodable = orjson.loads, (orjson.JSONDecodeError, DecodeError)
        process_one, popleft = self._process_one, buf.popleft
        ids, head, clock = self.ids, ip.id_head, self.clock
        max_ms, to_record, fire_due = clock.max_record_ms, clock.to_record, clock.fire_due
        needs_key, check_place, partition = ip.needs_key, self._check_place, self.partition
        route, route_key, placed, place = self._route, self.routing.route_key, self._placed, self.routing.place
        fresh, feed_keyed = self._fresh, self.engine.feed_keyed
        cause_headers = codec.cause_headers
        try:
            for _ in range(n):
                msg = popleft()
                ids.msg = msg  # (ids.begin_record, inlined)
                ids.head = head
                ids.cause = None
                ids.base = None
                headers = msg.headers()
                if headers:
                    upstream, seq, tick = cause_headers(headers)
                    if tick:
                        process_one(ip, msg)
                        continue
                    ids.upstream = upstream
                    ids.record_seq = ids.seq = seq
                else:
                    ids.upstream = ids.record_seq = ids.seq = None
                ts = msg.timestamp()[1]
                value = msg.value()
                if ts > max_ms or value is None or (needs_key and msg.key() is None):
                    process_one(ip, msg)
                    continue
                if named:
                    try:
                        name, ev = decode(value, headers)
                    except BadRecord:
                        process_one(ip, msg)  # (its $error)
                        continue
                    key_fn = key_fns.get(name)
                    if key_fn is None:
                        process_one(ip, msg)  # (an event the program does not declare)
                        continue
                else:
                    try:
                        ev = decode_value(loads(value))
                    except undecodable:
                        process_one(ip, msg)  # (its $error)
                        continue
                key = key_fn(None, ev)
                if key is None:
                    process_one(ip, msg)
                    continue
                if check_place:
                    rb = route(key) if route is not None else route_key(key)
                    target = placed.get(rb)
                    if target is None:
                        target = place(rb)
                    if target != partition:
                        process_one(ip, msg)  # (re-published, or only the clock moves)
                        continue
                if to_record(ts):
                    ids.again(msg)  # timers fired first, each its own cause
                self.record_key = key
                ctx = None
                try:
                    ctx = feed_keyed(name, ev, key)
                finally:  # (as in _process_one)
                    if ctx is not None:
                        ctx.note = msg
                    if self._creating:
                        self._creating = False
                        if ctx is not None and not ctx.terminated:
                            fresh[id(ctx)] = ctx
                if fire_due():
                    ids.again(msg)
        finally:
            if msg is not None:
                position[ip.name] = msg.offset() + 1

    def _process_one(self, ip: InputPartition, msg: Record) -> None:
        """Process one record. The caller advances the task's position past it."""
        headers = msg.headers()
        ids = self.ids
        ids.begin_record(msg, ip.id_head, headers)  # the record being processed
        clock = self.clock
        ts = msg.timestamp()[1]
        if ts > clock.max_record_ms:
            ip.seen_untimed(ts, clock.now() // 1000)
            self._error_record(
                ErrorCode.BAD_INPUT_VALUE,
                f"the record timestamp {ts} ms is past year 9999: record time cannot move there",
            )
            return
        if headers and codec.header(headers, codec.HEADER_TICK) is not None:
            self._advance(ts)
            return
        cfg = ip.config
        if cfg is None:
            cfg = self._from_repartition(msg, headers)
            if cfg is None:
                return
        try:
            name, value = (ip.decode if ip.config is not None else self._decoders[id(cfg)])(msg.value(), headers)
        except BadRecord as exc:
            ip.seen_untimed(ts, clock.now() // 1000)
            self._error_record(exc.code, exc.message)
            return
        feeds = self._feeds
        if self.grouped:
            if ip.needs_key and msg.key() is None:
                ip.seen_untimed(ts, clock.now() // 1000)
                self._error_record(
                    ErrorCode.BAD_INPUT_VALUE,
                    "the record has no key; this input's records must be keyed "
                    "(set keyed: false in the topology to accept unkeyed records)",
                )
                return
            key_fn = ip.key_fn
            key = key_fn(None, value) if key_fn is not None else self.engine.group_key(name, value)
            if key is None:  # an event name the program does not declare
                ip.seen_untimed(ts, clock.now() // 1000)
                key_filter = self.routing.key_filter
                if key_filter is None or key_filter.reports(msg, False):
                    feeds.feed(name, value)
                return
            if ip.config is not None and self._check_place:
                route = self._route
                rb = route(key) if route is not None else self.routing.route_key(key)
                target = self._placed.get(rb)
                if target is None:
                    target = self.routing.place(rb)
                if target != self.partition:
                    if target == NOT_OWNED:
                        self._pass_by(msg)
                    else:
                        self._forward(msg, cfg, target, rb)
                    return
            if clock.to_record(ts):
                ids.again(msg)  # timers fired first, each its own cause
            self.record_key = key
            ctx = None
            try:
                ctx = feeds.feed_keyed(name, value, key)
            finally:  # (also when it raised: a later ending must not pass for this creation's)
                if ctx is not None:
                    ctx.note = msg  # (the last record the instance took: its key information)
                if self._creating:  # this record created the key's instance (_on_create)
                    self._creating = False
                    if ctx is not None and not ctx.terminated:
                        self._fresh[id(ctx)] = ctx
        else:
            if ip.config is not None and cfg.keyed and msg.key() is None:
                ip.seen_untimed(ts, clock.now() // 1000)
                self._error_record(
                    ErrorCode.BAD_INPUT_VALUE, "the record has no key; this input's records must be keyed"
                )
                return
            if ip.config is not None and self.partition != 0:
                self._forward(msg, cfg, 0, msg.key())
                return
            if self._advance(ts):
                ids.again(msg)
            if not self.started:
                ids.begin_start()
                feeds.start()
                self.started = True
                ids.again(msg)
            self._last_single = msg
            feeds.feed(name, value)
        if clock.fire_due():
            ids.again(msg)

    def _from_repartition(self, msg: Record, headers: Headers | None) -> InputConfig | None:
        """The input configuration of a re-published record, or None when it is a copy already
        processed (deduplicated by its source coordinates) or cannot be used."""
        source = codec.header(headers, codec.HEADER_SOURCE)
        origin = codec.header(headers, codec.HEADER_INPUT)
        if source is not None:
            src_tp, _, src_off = source.decode().rpartition(":")
            below = codec.header(headers, codec.HEADER_SOURCE_BELOW)
            if not self.copies.first_time(src_tp, int(src_off), int(below) if below is not None else None):
                return None  # already processed (a re-sent copy)
        cfg = self.by_topic_cfg.get(origin.decode()) if origin is not None else None
        if cfg is None:
            self._error_record(ErrorCode.BAD_INPUT_VALUE, "repartitioned record of an unknown input topic")
        return cfg

    def _forward(self, msg: Record, cfg: InputConfig, target: int, kb: bytes | None, below: int | None = None) -> None:
        """Re-publish a record whose group key belongs to another task, keyed by that key.
        ``below``: the copies of its partition go in record-time order, not offset order
        (``forward_ahead``), and every record of it below this offset is re-published already
        (``es-source-below``, for the reader's deduplication: ``copies.py``)."""
        key_filter = self.routing.key_filter
        if key_filter is not None and not key_filter.reports(msg, True):
            return
        headers = list(msg.headers() or [])
        headers.append((codec.HEADER_SOURCE, f"{msg.topic()}:{msg.partition()}:{msg.offset()}".encode()))
        headers.append((codec.HEADER_INPUT, cfg.topic.encode()))
        if msg.key() != kb:
            headers.append((codec.HEADER_SOURCE_KEY, msg.key()))
        if below is not None:
            headers.append((codec.HEADER_SOURCE_BELOW, b"%d" % below))
        self.send(self.repartition_topic, target, kb, msg.value(), headers, msg.timestamp()[1], False)
        self.counts["repartitioned"] += 1

    def _advance(self, ts: int) -> int:
        """Move the clock for a record's timestamp (ms), firing the timers due by then; returns
        how many fired or started (the caller's emissions need their cause again). An ungrouped
        program on record time starts at its first record."""
        if not self.started and not self.grouped:
            if self.clock.starts_program(ts) and self.partition == 0:
                self.ids.begin_start()
                self._feeds.start()
                self.started = True
                return 1
            return 0
        return self.clock.to_record(ts)

    def fire_timers(self) -> int:
        """Fire the timers due now (the wall clock; on record time they fire as records move it)."""
        if self.state is not TaskState.RUNNING:
            return 0
        return self.clock.poll()

    def next_timer(self) -> int | None:
        return self.clock.next_wake()

    # -- a key filter (key-split backfill) ---------------------------------------------------------

    def set_key_filter(self, key_filter: KeyFilter) -> None:
        """Run only the group keys ``key_filter`` owns (set once, before the first record): the
        check rides on the placement of each record's key, which is cached per key, so a task
        without a filter pays nothing for it."""
        self.routing.set_key_filter(key_filter)
        self._check_place = True

    def move_clock(self, ts: int) -> int:
        """Record clock: move to ``ts`` (ms) as a record of that timestamp would, firing the
        timers due by then (a key-split task: where the other keys' records take it)."""
        return self._advance(ts)

    def move_clock_before(self, topic: str, moves: Iterable[tuple[int, int]]) -> None:
        """With a key filter: before the record at each offset of ``topic``, move the clock to the
        record time (ms) paired with it (where the other keys' records took it)."""
        self._clock_moves.setdefault(topic, {}).update(moves)

    def stand_in(self, topic: str, stubs: Iterable[tuple[int, int]]) -> None:
        """With a key filter: the record at each offset of ``topic`` stands for other keys'
        records: instead of processing it, move the clock to the record time (ms) paired with it."""
        self._stand_ins.setdefault(topic, {}).update(stubs)

    # -- event time across topics (task/progress.py) ----------------------------------------------

    def name_timers(self) -> None:
        """Name what sets each timer (``OutputIds.arming``) and put it on the timer's outputs
        (``es-armed``): for a task whose outputs other programs read, where the timers of one
        deadline that several tasks fire must reach a reader in the order the tester fires them
        (a program without timers: nothing to do)."""
        if self._timed:
            self.ids.now = self.clock.now
            self.engine.arm_of = self.ids.arming

    def set_progress(self, plan: ProgressPlan, commit_markers_first: bool = False) -> None:
        """Write and wait on progress markers as ``plan`` says (set before the first record).
        ``commit_markers_first``: the host's records reach readers when it commits (a transaction,
        or a batch a kill may lose), so the markers saying the task has records again after an
        idle one must be committed before those records are processed (``wants_commit``)."""
        self.progress_plan = plan
        self._commit_markers_first = commit_markers_first
        self._keyless_partitions.clear()
        self._keyless_partitions.update(plan.outputs)
        if plan.outputs:
            self.name_timers()
        # The task's last committed marker may be an earlier owner's ``IDLE`` (a task moved or
        # restored): it says it has records again before it processes its first.
        self._idle_marked = self._idle_marked or commit_markers_first
        for ip in self.inputs:
            if ip.config is None:
                if plan.repartition:
                    ip.markers = True
                    ip.progress = InputProgress(
                        frozenset(f"{plan.program}/{t}" for t in range(plan.tasks) if t != self.partition)
                    )
            elif ip.topic in plan.marked:
                ip.markers = True
                writers = plan.writers.get(ip.topic)
                if writers:
                    ip.progress = InputProgress(writers, own=plan.owners_of(ip.topic, ip.partition))
        self.group.gate()
        self._ahead = (
            plan.repartition and bool(self.group.gated) and self.partitions > 1 and self.routing.key_filter is None
        )
        if self._ahead:
            self.group.forward_ahead()
        elif plan.record and self.routing.key_filter is None:
            self.group.order_sources()  # (one task: its sources in record-time order all the same)
        self._time_ordered = frozenset(
            ip.name for ip in self.inputs if ip.config is not None and isinstance(ip.streams, WriterStreams)
        )

    @property
    def held_back(self) -> int:
        """Records buffered when the last ``process`` stopped at its inputs' watermark."""
        return self.group.held_back

    def move_to_progress(self) -> int:
        """A gated task on record time moves its clock to where all its inputs have come (the
        least of their reached times: ``PartitionGroup.reached``), firing the timers due by then,
        as a record there would: a quiet task's timers fire and its progress moves on. Returns
        how many fired. (Not while it waits for the commit of the markers it wrote before its
        records, ``wants_commit``: ``process`` has not sorted what it fetched, whose times its
        inputs' reached times do not count yet.)"""
        if not self.group.gated or self.state is not TaskState.RUNNING or not (self.started or self.grouped):
            return 0
        if self.wants_commit:
            return 0
        target = self.group.reached()
        if target is None or target >= MAX_FRONTIER or target * 1000 <= self.clock.now():
            return 0
        return self.clock.to_record(target)

    def forward_fetched(self) -> int:
        """Re-publish ahead the records fetched since the last ``process`` (``forward_ahead``),
        counted as processed; returns how many (0: the task does not forward ahead)."""
        if not self._ahead or self.state is not TaskState.RUNNING:
            return 0
        forwarded = self.forward_ahead()
        self.counts["processed"] += forwarded
        return forwarded

    def _idle_topics(self) -> set[str]:
        """The topics the task's last markers said it was idle on (``IDLE``), or has not marked."""
        plan = self.progress_plan
        if plan is None:
            return set()
        topics = [*plan.outputs, *((self.repartition_topic,) if plan.repartition else ())]
        return {t for t in topics if self._marked.get(t, (MAX_FRONTIER, None))[0] >= MAX_FRONTIER}

    def write_progress(self, force: bool = False, forward: bool = True, idle_only: bool = False) -> int:
        """Write markers of the task's progress on every partition of its marked topics, where
        it moved since last written, and everywhere every ``RESEND_S`` or with ``force`` (so that
        a reader that restarted after a quiet task's last marker hears from it again); returns
        how many records were written (with the records re-published first: ``forward_ahead``,
        unless not ``forward``). The host calls it as it commits: the markers go in the batch of
        the outputs before them. The task calls it too, before it processes or re-publishes
        records again after a marker said it was idle (``IDLE``): a reader that took those
        records before the next commit's marker would take them as an idle writer's, as they
        come, ahead of other writers' earlier ones; ``idle_only``: then only on the topics it
        said it was idle on."""
        plan = self.progress_plan
        if plan is None or self.state is not TaskState.RUNNING:
            return 0
        now = time.monotonic()
        if not idle_only and now >= self._resend_at:
            force = True
            self._resend_at = now + RESEND_S
        # Records fetched since the last ``process`` that go to other tasks: the marker after them.
        forwarded = self.forward_fetched() if forward else 0
        written = 0
        clock_ms = self.clock.now() // 1000  # every later output has a timestamp at least this
        # ... unless every input is idle with nothing buffered: then nothing comes until they
        # have records again (IDLE holds nothing back; the readers take the next marker after).
        output = MAX_FRONTIER if self.group.frontier() == MAX_FRONTIER else clock_ms
        # Each with the time reached, which an idle marker (holding nothing back) says apart: the
        # task's clock for its outputs; for its copies, how far its own inputs have come (not its
        # clock, which waits on the other tasks' copies: their clocks would wait on each other).
        targets: list[tuple[str, int, int, int | None]] = [(t, n, output, clock_ms) for t, n in plan.outputs.items()]
        if plan.repartition:
            republished = self.group.republished()  # every later copy is at least this
            if republished is not None:
                targets.append((self.repartition_topic, plan.tasks, republished, self.group.sources_reached()))
        for topic, partitions, progress, reached in targets:
            if progress < MAX_FRONTIER:
                reached = None  # (its progress is where it is)
            if idle_only and self._marked.get(topic, (MAX_FRONTIER, None))[0] < MAX_FRONTIER:
                continue
            if not force and self._marked.get(topic) == (progress, reached):
                continue
            self._marked[topic] = (progress, reached)
            headers = marker_headers(plan.program, self.partition, progress, reached)
            if self._restarted:
                headers.append(RESTARTED)
            ts = progress if progress < MAX_FRONTIER else clock_ms  # (a timestamp the broker keeps)
            for q in range(partitions):
                if topic == self.repartition_topic and q == self.partition:
                    continue
                self.send(topic, q, None, None, headers, ts, False)
                written += 1
        self.counts["markers"] += written
        if written:
            self._restarted = False
        self._idle_marked = any(progress >= MAX_FRONTIER for progress, _ in self._marked.values())
        idled = sum(ip.times_idled for ip in self.inputs)
        if idled:
            self.counts["idle_partitions"] += idled
            for ip in self.inputs:
                ip.times_idled = 0
        return written + forwarded

    # -- committing ----------------------------------------------------------------------------------

    def changelog_records(self) -> dict[bytes, bytes | None]:
        """The values of the instances changed since the last commit (None: terminated), as the
        changelog records sent for them carry them and the store keeps them (a live key's
        information in front of its snapshot: ``keyinfo.framed_value``)."""
        changes: dict[bytes, bytes | None] = {}
        snapshot = self.engine.snapshot
        hints = self.store.timer_hints  # each snapshot's timer, for the store's timer index
        unsaved, recent = self.cache.draining()  # not evictable until written; recently used
        key_bytes_of = self._ctx_key_bytes
        timed = self._timed
        self._fresh.clear()  # every one still alive is snapshotted now: persisted from here on
        # Each change's key information (state/keyinfo.py): a snapshot's inside its value, built
        # once for the record sent and the store (one entry); a tombstone's in an ``es-key`` header
        # after the commit's (its value stays null, for compaction), a list made here for each,
        # and for the store's ended marker (``infos``).
        infos = self.store.pending_infos
        pos_raw = position_header(self.position)
        pos_header = (HEADER_POSITION, pos_raw)
        gen_header = self._epoch_header
        # A tombstone's headers (the others carry the two in their value's batch frame).
        lead = (pos_header,) if gen_header is None else (pos_header, gen_header)
        key_headers: dict[bytes, codec.Headers] = {}
        frame = b"".join
        frame_head, info_end = INFO_FRAME, INFO_END  # (keyinfo.framed_value, inline)
        key_info = self._key_info
        heads = self._info_heads.get
        ended = self._ended.get
        info_header = HEADER_KEY_INFO
        save, touch = unsaved.add, recent.add if recent is not None else None
        drained = self.engine.drain_dirty()
        if not self.grouped:
            for ctx in drained:
                snap = snapshot(ctx)
                info = key_info(SINGLE_KEY, self._last_single, None)
                changes[SINGLE_KEY] = snap if info is None else framed_value(info, snap)
            drained = []
        for ctx in drained:
            kb = key_bytes_of(ctx)
            # A changed instance is either in memory or ended (and released): then a tombstone. An
            # instance that ended and started again in one batch is drained twice, in that order.
            gk = ctx.gk
            msg: Record | None = ctx.note  # (the last record it took since the last commit)
            ctx.note = None  # (not held past the commit)
            if ctx.terminated:
                changes[kb] = None
                info = infos[kb] = key_info(kb, msg, ended(gk))
                if info is None:
                    key_headers[kb] = [*lead]
                else:  # (a list display: cheaper than [*lead, ...] per record)
                    key_headers[kb] = (
                        [pos_header, (info_header, info)]
                        if gen_header is None
                        else [pos_header, gen_header, (info_header, info)]
                    )
            else:
                snap = snapshot(ctx)
                head = heads(msg.topic()) if msg is not None else None
                if head is not None:  # (assert msg is not None) the common case, built at least cost
                    info = head + b"%d,%d,%d]}" % (msg.partition(), msg.offset(), msg.timestamp()[1])  # type: ignore[union-attr]
                else:
                    info = key_info(kb, msg, None)
                if info is not None:
                    changes[kb] = frame((frame_head, info, info_end, snap))
                else:
                    changes[kb] = snap
                if key_headers and key_headers.pop(kb, None) is not None:
                    del infos[kb]  # (ended and started again in this batch: neither its tombstone's header nor marker)
                if timed:
                    hints[kb] = timer_info(ctx)
            save(kb)
            if touch is not None:
                touch(id(ctx))
        self._last_single = None
        self._ended.clear()
        for name in self._time_ordered:
            self._note_repeats(name)
            at = self.position.get(name)
            if at is not None:
                self.copies.settle(name, at)
        if self.copies.unsaved():
            changes[HWM_KEY] = self.copies.encode(self.group.position)
            self.copies.dirty = False
        clock_raw = self.clock.unsaved()
        if clock_raw is not None:
            changes[CLOCK_KEY] = clock_raw
        if self._epoch_base_dirty:
            changes[EPOCH_BASE_KEY] = b"%d" % self.epoch_base
            self._epoch_base_dirty = False
        if self.clock.timers.next_seq != self._seq_saved:
            self._seq_saved = self.clock.timers.next_seq
            changes[SEQ_KEY] = b"%d" % self._seq_saved
        if self._rewrite:
            get = self.store.get  # the committed value (as stored: its information inside it)
            for kb in self._rewrite:
                if kb in changes:
                    continue
                if (changes.setdefault(kb, get(kb))) is None:  # (a tombstone: its ended marker as kept)
                    info = infos[kb] = get(info_key(kb))
                    key_headers[kb] = [*lead] if info is None else [*lead, (HEADER_KEY_INFO, info)]
            self._rewrite = set()
        self.versions.changelog_records(changes, self.store.key_info)
        self.versions.log_summary()
        self._last_sent = changes
        if changes:
            head = batch_frame(pos_raw, None if gen_header is None else gen_header[1])
            self.send_changelog(
                self.changelog_topic, self.partition, changes, head, self.clock.now() // 1000, key_headers
            )
        return changes

    def _note_repeats(self, name: str) -> None:
        """The repeats the queues of input partition ``name`` dropped (``WriterStreams``) are done
        with: a restart from this commit skips them when it reads them again (``copies.py``),
        whether or not their originals, read again too, were processed before it."""
        ip = self.by_name[name]
        for queued in (ip.inbox, ip.streams):
            if isinstance(queued, WriterStreams):
                for offset in queued.take_repeats():
                    self.copies.done(name, offset)

    def discard_changes(self) -> None:
        """Forget the changes since the last commit without writing them (a host that keeps no
        state: a backfill without hand-over), letting go of terminated instances."""
        for ctx in self.engine.drain_dirty():
            ctx.note = None  # (the record it took: nothing to say of it, and not to be held)
        self._fresh.clear()
        self._last_single = None
        self._ended.clear()

    def _key_info(self, kb: bytes, msg: Record | None, ended: tuple[int, str] | None) -> bytes | None:
        """The key information of a key's changelog record (``state.keyinfo``: in its value, or a
        tombstone's ``es-key`` header): the last record its instance took
        (``msg``; None: none since the last commit, then the one kept before) and, for a
        tombstone, when and why it ended."""
        last: LastRecord | None
        if msg is not None:
            last = self._record_coordinates(msg)
        else:
            before = decode_info(self.store.key_info(kb))
            last = before.last if before is not None else None
        if ended is None:
            return KeyInfo(last).encode() if last is not None else None
        return KeyInfo(last, ended[0], ended[1], int(time.time() * 1000)).encode()

    def _record_coordinates(self, msg: Record) -> LastRecord:
        """Topic, partition, offset and time (ms) of an input record; for a record re-published
        through the repartition topic, of the input record it copies."""
        ts = msg.timestamp()[1]
        if msg.topic() == self.repartition_topic:
            source = codec.header(msg.headers(), codec.HEADER_SOURCE)
            if source is not None:
                tp, _, offset = source.decode().rpartition(":")
                topic, _, partition = tp.rpartition(":")
                return (topic, int(partition), int(offset), ts)
        return (msg.topic(), msg.partition(), msg.offset(), ts)

    def close(self) -> None:
        self.engine.clear()
        self.cache.close()
        self.store.close()
        self.state = TaskState.CLOSED
