"""The local RocksDB store of one task: the store of record of its instances.

Like a Kafka Streams state store: every change to an instance (a new snapshot, or a tombstone
when the instance terminates) is written to the program's changelog topic in the same
transaction as the outputs and the input offsets, and — once that transaction has committed —
to the task's local RocksDB store together with a checkpoint (how far into the changelog the
store is, and the committed input position it reflects). A restarted worker with its local store
only replays the changelog after the checkpoint; a worker without it replays from the start.

The store therefore always holds the committed state of every instance, and the task's memory
only a bounded cache of them (``state.cache``). Beside the instances the store keeps a timer
index (``\\x04`` + deadline + sequence + instance key, one empty value per pending timer of a
stored snapshot), so that a task knows its next deadlines without holding every instance
(``state.timers``). The index is local: every write of a snapshot adds its timer's entry (the
task says which, or the snapshot is decoded — changelog replays); entries of older snapshots are
left behind and dropped when the task's timer scan finds that the stored snapshot no longer has
that timer (see ``TimerIndex``).

A live instance's stored value is its changelog record's value as it is: the key's information
(``state.keyinfo``: the last record it took) in front of the snapshot (``keyinfo.framed_value``;
a snapshot alone when the task knows no last record), so that a changed live key costs one
RocksDB entry, as it costs one changelog record. Readers of a snapshot take it out of the value
(``snapshot``, ``snapshot_fields``, ``keyinfo.snapshot_of``); ``instances`` yields values as
stored. An ended key (no value) keeps its marker under ``\\x05`` + key and an index entry
``\\x06`` + wall time + key (``keyinfo``); ``key_info`` reads either form of a key's information.

A store written before this layout (format 1: live keys' information under ``\\x05`` beside a
bare snapshot) is converted in place when first opened (``_convert_key_infos``: each live key's
information moved into its value, one pass over the ``\\x05`` entries), as the timer index is
built for a store from before the index. Why convert rather than read both forms: with both, an
unframed value would send every reader to the ``\\x05`` entry, where a stale ended marker of a
key that came back (left there: deleting it would be the second entry this layout saves) would
have to be told from old live information on every read; converted once, the rule is one — a
value's frame is its key's information, ``\\x05`` is only ever an ended marker — and a rebuild
from the changelog (minutes at millions of keys) is not needed for what a local pass does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import orjson
from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteBatch

from .changelog import (
    ENDED_PREFIX,
    INDEX_PREFIX,
    INFO_PREFIX,
    SINGLE_KEY,
    Position,
    decode_int,
    is_instance_key,
    position_header,
)
from .keyinfo import (
    ENDED_HEAD,
    ENDED_RETENTION_MS,
    INFO_FRAME,
    PRUNE_PER_WRITE,
    decode_info,
    ended_index_key,
    framed_value,
    info_key,
    parse_ended_index_key,
    snapshot_of,
    stored_info,
)

log = logging.getLogger("eventscript.state")

_META_CHECKPOINT = b"\x00checkpoint"
_META_POSITION = b"\x00position"
#: The topic id of the changelog the checkpoint counts in (kafka/topic_ids.py): a recreated
#: changelog has another, whatever its length.
_META_CHANGELOG_ID = b"\x00changelog-id"
#: The highest owner epoch (``es-gen``) of the changelog records up to the checkpoint, or of the
#: task's owner that wrote the store: a replay from the checkpoint goes on fencing with it
#: (state/changelog.py, ``EpochFence``).
_META_EPOCH = b"\x00owner-epoch"
#: Present once the timer index covers every stored snapshot (stores written before the index
#: existed get it built when first opened).
_META_INDEX = b"\x00timer-index"
_INDEX_VERSION = b"1"
#: The store's layout: absent (format 1), a live key's information under ``\\x05`` beside its
#: snapshot; "2", inside its value (see the module). A format-1 store is converted when opened.
_META_FORMAT = b"\x00store-format"
_FORMAT = b"2"
#: Live keys converted per write batch when a format-1 store is opened (bounds the batch's memory).
_CONVERT_BATCH = 10_000

#: RocksDB memory of one task's store: the block cache (data blocks), the memtables (at most two
#: of WRITE_BUFFER_MIB), and the table readers' filters and indexes (~1.5 bytes per stored key).
#: RocksDB's defaults (64 MiB memtables, up to two, and an 8 MiB cache per store) would cost up to
#: 136 MiB per task whatever the state's size.
BLOCK_CACHE_MIB = 16
WRITE_BUFFER_MIB = 8

#: (deadline, seq) of a pending timer.
TimerKey = tuple[int, int]

_GROUPED_FROM = bytes([ENDED_PREFIX[0] + 1])  # the first key after the timer index and the key information
_DEADLINE_BIAS = 1 << 63  # deadlines are signed microseconds (year 1 is negative): sort them unsigned


def index_key(deadline: int, seq: int, key: bytes) -> bytes:
    """The timer index entry of a pending timer: sorts by deadline, then sequence number."""
    return INDEX_PREFIX + (deadline + _DEADLINE_BIAS).to_bytes(8, "big") + seq.to_bytes(8, "big") + key


def parse_index_key(entry: bytes) -> tuple[int, int, bytes]:
    """(deadline, seq, instance key) of a timer index entry."""
    return (int.from_bytes(entry[1:9], "big") - _DEADLINE_BIAS, int.from_bytes(entry[9:17], "big"), entry[17:])


def snapshot_fields(raw: bytes) -> tuple[tuple[Any, ...] | None, TimerKey | None]:
    """The group key and the (deadline, seq) of the pending timer of an instance snapshot
    (``engine.context.encode``; or a stored value, its key's information in front: see the
    module); (None, None) for bytes that are not one."""
    try:
        payload = msgpack.unpackb(snapshot_of(raw), raw=False, strict_map_key=False)
        key, timer = payload[3], payload[4]
        return (tuple(key) if key is not None else None, (int(timer[0]), int(timer[2])) if timer is not None else None)
    except (ValueError, TypeError, IndexError, msgpack.UnpackException):
        return None, None


def _options() -> Options:
    table = BlockBasedOptions()
    table.set_block_cache(Cache(BLOCK_CACHE_MIB << 20))
    # A key's first record looks it up in the store: mostly misses, which the Bloom filters answer
    # without reading data. The filters and indexes stay out of the block cache (held by each
    # table file's reader, ~1.5 bytes per stored key): in a small cache the data blocks would
    # push them out, and every miss would read and parse whole filter blocks (measured: 360 µs
    # per lookup at 1.5M stored keys with them in a 16 MiB cache, 0.2 µs without).
    table.set_cache_index_and_filter_blocks(False)
    table.set_bloom_filter(10, False)
    options = Options(raw_mode=True)
    options.set_block_based_table_factory(table)
    options.set_write_buffer_size(WRITE_BUFFER_MIB << 20)
    options.set_max_write_buffer_number(2)
    return options


class TaskStore:
    """The local RocksDB store of one task (one partition of a program).

    Opened lazily: RocksDB is opened (~50 ms, and its memory) at the first write, or at the first
    read once the store exists on disk. Until then a store with no directory reads as empty, so
    a task that never writes (a backfill task without hand-over) never opens one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: Rdict | None = None
        #: Whether the opened store is ready to read from another thread (converted, indexed).
        self._ready = False
        #: (deadline, seq) of the pending timer (None: none) of snapshots the task is about to
        #: write, so that ``write`` need not decode them; filled by the task, emptied by writes.
        self.timer_hints: dict[bytes, TimerKey | None] = {}
        #: Index entries the timer scan passed for instances in memory: dropped at the instance's
        #: next write (its new snapshot has its new timer).
        self.passed_index: dict[bytes, bytes] = {}
        #: Whether the program can have pending timers (the task says): if not, no snapshot has
        #: one, and writes skip the timer index.
        self.timed = True
        #: Told, after each write, which keys it wrote (the task's cache may then evict them).
        self.on_write: Callable[[dict[bytes, bytes | None]], None] | None = None
        #: The key information (``state.keyinfo``) of the changes the task is about to write, by
        #: store key (None: none, drop what is kept); filled by the task, emptied by writes.
        self.pending_infos: dict[bytes, bytes | None] = {}
        #: When ended markers past their retention were last looked for (monotonic seconds).
        self._pruned_at = 0.0
        #: How the task reads a stored snapshot (key, bytes) for the program it runs: a snapshot
        #: written by another version of the program is converted (task/versions.py), and None
        #: means the instance is gone (restarted or ended by the upgrade). None: read as stored.
        self.translate: Callable[[bytes, bytes], bytes | None] | None = None

    @property
    def db(self) -> Rdict:
        """The RocksDB store, opened on first use."""
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = Rdict(str(self.path), options=_options())
            if self._db.get(_META_FORMAT) != _FORMAT:
                self._convert_key_infos()
            if self._db.get(_META_INDEX) != _INDEX_VERSION:
                self._build_index()
            self._ready = True
        return self._db

    @property
    def opened(self) -> Rdict | None:
        """The RocksDB store if this object has opened it, else None: what a reader on another
        thread than the task's uses (opening it there could race the task's own open; a store
        being converted or indexed at its open is not ready yet)."""
        return self._db if self._ready else None

    def _absent(self) -> bool:
        """Not opened, and nothing on disk yet: every read finds nothing (no need to open it)."""
        return self._db is None and not self.path.exists()

    @property
    def checkpoint(self) -> int:
        raw = self.get(_META_CHECKPOINT)
        return int(raw) if raw is not None else 0

    @property
    def position(self) -> Position | None:
        raw = self.get(_META_POSITION)
        return None if raw is None else orjson.loads(raw)

    @property
    def changelog_id(self) -> str | None:
        """The topic id of the changelog this store was written from (None: not known, a store
        written before the ids were kept, or a broker without topic ids)."""
        raw = self.get(_META_CHANGELOG_ID)
        return None if raw is None else raw.decode()

    @property
    def epoch(self) -> int:
        """The highest owner epoch up to the checkpoint (0: none known)."""
        return decode_int(self.get(_META_EPOCH))

    def keep_changelog_id(self, topic_id: str) -> None:
        """Remember which changelog (by topic id) the checkpoint counts in."""
        self.db.put(_META_CHANGELOG_ID, topic_id.encode())

    def instances(self) -> Iterator[tuple[bytes, bytes]]:
        """Every stored instance: (store key, value as stored: its key's information in front of
        the snapshot, see the module; ``keyinfo.snapshot_of`` takes the snapshot out)."""
        if self._absent():
            return
        single = self.db.get(SINGLE_KEY)
        if single is not None:
            yield SINGLE_KEY, single
        for k, v in self.db.items(from_key=_GROUPED_FROM):  # past the metadata and the timer index
            if isinstance(k, bytes) and is_instance_key(k):  # always bytes: the store is opened raw
                yield k, v

    def with_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Every stored (key, value) whose key starts with ``prefix``, in key order."""
        if self._absent():
            return
        for k, v in self.db.items(from_key=prefix):
            if not (isinstance(k, bytes) and k.startswith(prefix)):
                return
            yield k, v

    def has_instances(self) -> bool:
        return next(self.instances(), None) is not None

    def snapshot(self, key: bytes) -> bytes | None:
        """The stored instance of ``key`` as the task's program reads it (see ``translate``): the
        snapshot, without the key's information."""
        raw = self.get(key)
        if raw is None:
            return None
        raw = snapshot_of(raw)
        return raw if self.translate is None else self.translate(key, raw)

    def key_info(self, key: bytes) -> bytes | None:
        """The key's information as kept (``KeyInfo.encode``'s bytes; None: none): its stored
        value's frame, or, without a value (an ended key), its marker."""
        value = self.get(key)
        return stored_info(value, None if value is not None else self.get(info_key(key)))

    def get(self, key: bytes) -> bytes | None:
        db = self._db
        if db is None:
            if not self.path.exists():
                return None  # (see _absent)
            db = self.db
        return db.get(key)

    def write(
        self,
        changes: dict[bytes, bytes | None],
        checkpoint: int | None,
        position: Position | None,
        infos: dict[bytes, bytes | None] | None = None,
        epoch: int | None = None,
    ) -> None:
        """Apply changes (values as stored: a live key's information inside, see the module;
        None: delete), index their timers, keep the ended markers of the keys that ended
        (``infos``, else what the task left in ``pending_infos``; None: drop the key's marker) and
        move the checkpoint (and the highest owner ``epoch`` with it), atomically."""
        wb = WriteBatch(raw_mode=True)
        if infos is None:
            infos, self.pending_infos = self.pending_infos, {}
        if infos:
            self._batch_infos(wb, infos)
        if self.timed or self.passed_index:
            self._batch_indexed(wb, changes)
        else:  # no timer to index: puts and deletes only
            put, delete = wb.put, wb.delete
            for k, v in changes.items():
                if v is None:
                    delete(k)
                else:
                    put(k, v)
        if checkpoint is not None:
            wb.put(_META_CHECKPOINT, str(checkpoint).encode())
        if position is not None:
            wb.put(_META_POSITION, position_header(position))
        if epoch is not None:
            wb.put(_META_EPOCH, b"%d" % epoch)
        self.db.write(wb)
        if self.on_write is not None:
            self.on_write(changes)

    def _batch_infos(self, wb: WriteBatch, infos: dict[bytes, bytes | None]) -> None:
        """Put the ended keys' markers into ``wb`` with their retention index entries, and drop
        markers past their retention (a few, at most once a minute)."""
        put = wb.put
        for kb, raw in infos.items():
            if raw is None:
                wb.delete(INFO_PREFIX + kb)
                continue
            put(INFO_PREFIX + kb, raw)
            if raw.startswith(ENDED_HEAD):
                info = decode_info(raw)
                if info is not None and info.wall is not None:
                    wb.put(ended_index_key(info.wall, kb), b"")
        now = time.monotonic()
        if now - self._pruned_at >= 60:
            self._pruned_at = now
            self.prune_ended(wb, int(time.time() * 1000) - ENDED_RETENTION_MS, infos)

    def prune_ended(
        self,
        wb: WriteBatch,
        before_ms: int,
        written: dict[bytes, bytes | None] | None = None,
        limit: int = PRUNE_PER_WRITE,
    ) -> int:
        """Into ``wb``: drop up to ``limit`` ended markers written before ``before_ms`` (wall
        clock), unless their key has been written since (it started again, or ended again later;
        ``written``: the keys ``wb`` writes). Returns how many index entries were dropped."""
        if self._absent():
            return 0
        it = self.db.iter()
        it.seek(ENDED_PREFIX)
        n = 0
        while it.valid() and n < limit:
            entry = it.key()
            if entry[:1] != ENDED_PREFIX:
                break
            wall, kb = parse_ended_index_key(entry)
            if wall >= before_ms:
                break
            wb.delete(entry)
            info = decode_info(self.db.get(info_key(kb)))
            if (not written or kb not in written) and info is not None and info.wall is not None and info.wall <= wall:
                wb.delete(info_key(kb))
            n += 1
            it.next()
        return n

    def _batch_indexed(self, wb: WriteBatch, changes: dict[bytes, bytes | None]) -> None:
        """Put changes into ``wb`` with their timers' index entries (and drop passed ones)."""
        hints = self.timer_hints
        passed = self.passed_index
        for k, v in changes.items():
            if passed:
                old = passed.pop(k, None)
                if old is not None:
                    wb.delete(old)
            if v is None:
                wb.delete(k)
                hints.pop(k, None)
                continue
            wb.put(k, v)
            if is_instance_key(k) and k != SINGLE_KEY:  # (the ungrouped instance is always in memory)
                timer = hints.pop(k) if k in hints else snapshot_fields(v)[1]
                if timer is not None:
                    wb.put(index_key(timer[0], timer[1], k), b"")

    def delete(self, key: bytes) -> None:
        self.db.delete(key)

    def index_after(self, entry: bytes | None) -> Iterator[bytes]:
        """Timer index entries in (deadline, seq) order, after ``entry`` (None: from the first)."""
        if self._absent():
            return
        it = self.db.iter()
        it.seek(INDEX_PREFIX if entry is None else entry + b"\x00")
        while it.valid():
            k = it.key()
            if k[:1] != INDEX_PREFIX:
                return
            yield k
            it.next()

    def next_index_seq(self) -> int:
        """One past the highest timer sequence number in the index (a store without the task's
        persisted sequence: written before it, or handed over without it). Scans the index."""
        top = -1
        for entry in self.index_after(None):
            top = max(top, parse_index_key(entry)[1])
        return top + 1

    def _convert_key_infos(self) -> None:
        """Move the information of each live key of a format-1 store (under ``\\x05``) into its
        value, and mark the store format 2; ended markers (no value) stay. Runs at open, before
        anything reads the store."""
        db = self.db
        moved = 0
        wb = WriteBatch(raw_mode=True)
        for k, info in self.with_prefix(INFO_PREFIX):
            kb = k[len(INFO_PREFIX) :]
            value = db.get(kb)
            if value is None:
                continue  # an ended marker (or information without an instance: read as before)
            if value[:1] != INFO_FRAME and not info.startswith(ENDED_HEAD):
                wb.put(kb, framed_value(info, value))
            wb.delete(k)
            moved += 1
            if moved % _CONVERT_BATCH == 0:
                db.write(wb)
                wb = WriteBatch(raw_mode=True)
        wb.put(_META_FORMAT, _FORMAT)
        db.write(wb)
        if moved:
            log.info("%s: the information of %d live key(s) moved into their values (store format 2)", self.path, moved)

    def _build_index(self) -> None:
        """Index the timers of every stored snapshot (a store from before the index)."""
        count = 0
        wb = WriteBatch(raw_mode=True)
        for k, v in self.instances():
            if k == SINGLE_KEY:
                continue
            timer = snapshot_fields(v)[1]
            if timer is not None:
                wb.put(index_key(timer[0], timer[1], k), b"")
                count += 1
        wb.put(_META_INDEX, _INDEX_VERSION)
        self.db.write(wb)
        if count:
            log.info("%s: indexed %d pending timer(s) of stored instances", self.path, count)

    def memory(self) -> dict[str, int]:
        """RocksDB's own memory (bytes): memtables, block cache, table readers (none unopened)."""
        out = {}
        for name in ("cur-size-all-mem-tables", "block-cache-usage", "estimate-table-readers-mem"):
            try:
                out[name] = int(self._db.property_int_value(f"rocksdb.{name}") or 0) if self._db is not None else 0
            except Exception:  # a property this RocksDB build does not know
                out[name] = 0
        return out

    def disk_bytes(self) -> int:
        """RocksDB's estimate of the store on disk: table files plus unflushed memtables (their
        write-ahead log is on disk); 0 before it is opened. Exported as eventscript_state_bytes."""
        total = 0
        for name in ("total-sst-files-size", "cur-size-all-mem-tables"):
            try:
                total += int(self._db.property_int_value(f"rocksdb.{name}") or 0) if self._db is not None else 0
            except Exception:  # a property this RocksDB build does not know, or closed meanwhile
                pass
        return total

    def wipe(self) -> None:
        """Delete everything the store holds (its changelog was recreated: what it has belongs to
        another log); it reads as empty afterwards and is made again at the next write."""
        import shutil

        self.close()
        self._db = None
        self._ready = False
        shutil.rmtree(self.path, ignore_errors=True)
        self.timer_hints.clear()
        self.passed_index.clear()
        self.pending_infos.clear()

    def close(self) -> None:
        if self._db is None:
            return
        try:
            self._db.close()
        except Exception:  # closing twice, or after a failure: nothing left to do
            pass
