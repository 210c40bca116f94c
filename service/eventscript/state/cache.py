"""A bounded cache of hot instances: ``engine.contexts`` holds at most a budget's worth of them,
the task's store holds them all.

Exactness rests on one rule: an instance leaves memory only when the store holds its current
state — it is not dirty (changed since the changelog records were last drained) and its last
drained snapshot has been written (the store is written only after the transaction that carried
the changelog records committed). So a rewind (``Engine.clear`` and ``Task.load_from_store``)
always finds the committed state in the store, and an evicted instance loaded again
(``Engine.loader``, or the timer index when its timer comes due) is exactly what was evicted.

Eviction runs after each store write, in one batch, down to 90% of the capacity, oldest first
with a second chance (CLOCK): ``engine.contexts`` keeps insertion order, and an instance touched
since the previous round is moved to the back instead of evicted.

The capacity is ``state.cache_instances`` instances, or ``state.cache_mib`` MiB at the estimated
size of the instances in memory (:func:`instance_bytes`, sampled each round), shared by the tasks
of the program in this process.
"""

from __future__ import annotations

import collections
import logging
import sys
from collections.abc import Callable
from typing import Any, ClassVar

from ..engine.context import InstanceContext
from ..engine.engine import Engine
from .store import TaskStore
from .timers import TimerIndex

log = logging.getLogger("eventscript.state")

#: Eviction brings the cache down to this fraction of its capacity (a batch, not one at a time).
LOW_WATER = 0.9
#: Touches are tracked (for the second chance) once the cache is this full.
TRACK_FROM = 0.5
#: Never fewer instances than this per task, whatever the budget.
MIN_CAPACITY = 16
#: Instances sampled (from each end of the table) to estimate their size, every MEASURE_EVERY writes.
SAMPLE = 16
MEASURE_EVERY = 32

#: What holding one more instance costs beyond its objects: its slot in ``engine.contexts`` (a dict
#: entry and an index slot, ~48 bytes at typical fill), rounded up so that the estimate errs high.
#: The task's key caches are bounded (and skipped by one-value keys): no entry per instance.
#: Measured (bench/state.py): a counter 417 bytes (estimated 446), with a timer 881 (889).
_SLOT_BYTES = 64


def _value_bytes(v: Any, depth: int = 0) -> int:
    """Estimated memory of one variable's value (small ints, None and booleans are shared)."""
    t = type(v)
    if v is None or t is bool or (t is int and -5 <= v <= 256):
        return 0
    if t is list and depth < 4:
        head = v[:256]
        items = sum(_value_bytes(x, depth + 1) for x in head)
        return sys.getsizeof(v) + (items * len(v) // len(head) if head else 0)
    return sys.getsizeof(v)


def instance_bytes(ctx: InstanceContext) -> int:
    """Estimated memory of one instance in the cache (its context, variables, key, timer entry)."""
    size = sys.getsizeof(ctx) + sys.getsizeof(ctx.vars) + _SLOT_BYTES
    size += sum(_value_bytes(v) for v in ctx.vars)
    key = getattr(ctx, "gk", ctx.key)  # the key as the engine stores it (a tuple, or one bare value)
    if type(key) is tuple:
        size += sys.getsizeof(key) + sum(_value_bytes(k) for k in key)
    else:
        size += _value_bytes(key)
    rare = getattr(ctx, "_rare", None)  # fields most instances leave at their defaults
    if rare is not None:
        size += sys.getsizeof(rare)
    if ctx.origin is not None:
        size += sys.getsizeof(ctx.origin)
    if ctx.timer is not None:
        # Its heap entry (a list, its deadline and sequence ints, a heap slot) and, until the heap
        # is rebuilt, up to two dead entries it replaced (timer_provider.TimerQueue): count two.
        size += 2 * (sys.getsizeof(ctx.timer) + 2 * 32 + 8)
    return size


class CacheBudget:
    """The cache size of one program in this process, shared equally by its live tasks."""

    _live: ClassVar[collections.Counter[str]] = collections.Counter()

    def __init__(self, program: str, mib: float | None, instances: int | None) -> None:
        self.program = program
        self.mib = mib
        self.instances = instances
        self._open = True
        CacheBudget._live[program] += 1

    def capacity(self, bytes_per_instance: float) -> int:
        share = max(1, CacheBudget._live[self.program])
        if self.instances is not None:
            return max(MIN_CAPACITY, self.instances // share)
        assert self.mib is not None
        return max(MIN_CAPACITY, int(self.mib * (1 << 20) / share / max(1.0, bytes_per_instance)))

    def close(self) -> None:
        if self._open:
            self._open = False
            CacheBudget._live[self.program] -= 1


class InstanceCache:
    """Keeps a task's ``engine.contexts`` within its budget, the store holding the rest."""

    def __init__(
        self,
        engine: Engine,
        store: TaskStore,
        index: TimerIndex,
        budget: CacheBudget,
        key_bytes: Callable[[tuple[Any, ...]], bytes | None],
    ) -> None:
        self.engine = engine
        self.store = store
        self.index = index
        self.budget = budget
        self.key_bytes = key_bytes
        #: Store keys of snapshots drained (sent to the changelog) but not yet written to the store.
        self.unsaved: set[bytes] = set()
        #: ids of the contexts touched since the last eviction round (their second chance).
        self.recent: set[int] = set()
        self.bytes_per_instance = 400.0
        self.capacity = budget.capacity(self.bytes_per_instance)
        #: Keys whose instance ended since the changelog records were last drained: their
        #: stored snapshot is out of date until the tombstone is written, so never load it.
        self.ended: set[tuple[Any, ...]] = set()
        self.evicted = 0
        self.loaded = 0
        self._writes = 0
        self._next_measure = 0
        store.on_write = self.written
        self.engine.on_terminate = self.ended_instance

    def ended_instance(self, ctx: InstanceContext) -> None:
        """``Engine.on_terminate`` (or the task's, for an instance that was persisted): the key's
        stored snapshot is out of date until its tombstone is written (see ``ended``)."""
        if ctx.key is not None:
            self.ended.add(ctx.key)

    def reset(self) -> None:
        """The task reloaded its committed state: nothing in memory, nothing pending."""
        self.unsaved.clear()
        self.recent.clear()
        self.ended.clear()
        self.store.timer_hints.clear()
        self.engine.loader = self.load if self.store.has_instances() else None

    def out_of_date(self, key: tuple[Any, ...], kb: bytes) -> bool:
        """Whether the stored snapshot of ``key`` (store key ``kb``) is older than the instance
        in memory was: it ended, or was drained, since the last commit (``load`` loads neither)."""
        return key in self.ended or kb in self.unsaved

    def load(self, key: tuple[Any, ...]) -> InstanceContext | None:
        """``Engine.loader``: the instance of ``key`` from the store, into memory (or None)."""
        kb = self.key_bytes(key)
        if kb is None or self.out_of_date(key, kb):  # (drained: a tombstone, as the key is not in memory)
            return None
        raw = self.store.snapshot(kb)  # (another program version's: converted)
        if raw is None:
            return None
        self.loaded += 1
        return self.engine.restore(raw)

    def draining(self) -> tuple[set[bytes], set[int] | None]:
        """The task is about to drain the changed instances for the changelog: where to note
        the store key of each one (``unsaved``), and ids of the ones to give a second chance
        (None while the cache is far from full). Every instance that ended since the last drain
        is among them, so ``ended`` starts over."""
        self.ended.clear()
        if len(self.recent) > self.capacity:  # no eviction round for long: the marks are stale
            self.recent.clear()
        tracking = len(self.engine.contexts) >= self.capacity * TRACK_FROM
        return self.unsaved, (self.recent if tracking else None)

    def written(self, changes: dict[bytes, bytes | None]) -> None:
        """The store was written (a commit): what it now holds may leave memory."""
        unsaved = self.unsaved
        if unsaved:
            if unsaved <= changes.keys():  # (the common case: the commit wrote every one; a C-level check)
                unsaved.clear()
            else:
                unsaved.difference_update(changes)
        self._writes += 1
        size = len(self.engine.contexts)
        if size > self.capacity * TRACK_FROM and self._writes >= self._next_measure:
            self._next_measure = self._writes + MEASURE_EVERY
            self._measure()
        if size > self.capacity:
            self.evict()

    def _table(self) -> dict[Any, InstanceContext]:
        """The engine's instance table as a plain dict (insertion order is the cache's age
        order), keyed as the engine keys it (``table_key``)."""
        contexts: Any = self.engine.contexts
        table = getattr(contexts, "table", None)  # a view over the engine's own table
        return table if isinstance(table, dict) else contexts

    def _measure(self) -> None:
        table = self._table()
        sample: list[InstanceContext] = []
        for it in (iter(table.values()), reversed(table.values())):
            for ctx in it:
                sample.append(ctx)
                if len(sample) % SAMPLE == 0:
                    break
        if sample:
            self.bytes_per_instance = sum(instance_bytes(c) for c in sample) / len(sample)
        self.capacity = self.budget.capacity(self.bytes_per_instance)

    def _evictable(self, ctx: InstanceContext) -> bool:
        """Whether the store holds ctx's current state and nothing needs it in memory."""
        if self.engine.changed(ctx):
            return False
        t = ctx.timer
        if t is not None and t[3] is not None and (t[0], t[1]) <= self.index.horizon:
            return False  # the timer scan has passed it: it must stay in the queue
        return not (self.unsaved and ctx.key is not None and self.key_bytes(ctx.key) in self.unsaved)

    def evict(self) -> int:
        """Evict clean instances, oldest first (touched ones get a second chance: they go last),
        down to LOW_WATER of the capacity; returns how many left memory."""
        self._measure()
        table = self._table()
        goal = len(table) - int(self.capacity * LOW_WATER)
        if goal <= 0:
            return 0
        recent = self.recent
        victims: list[Any] = []
        spared: list[Any] = []
        for tk, ctx in table.items():
            if not self._evictable(ctx):
                continue
            if id(ctx) in recent:
                spared.append(tk)
                continue
            victims.append(tk)
            if len(victims) >= goal:
                break
        recent.clear()
        short = goal - len(victims)
        if short > 0:  # not enough untouched ones: the touched ones too, oldest first
            victims += spared[:short]
            spared = spared[short:]
        for tk in spared:
            table[tk] = table.pop(tk)
        queue = self.engine.time.timers
        for tk in victims:
            ctx = table.pop(tk)
            t = ctx.timer
            if t is not None and t[3] is not None:
                queue.hold(t[0], t[1])
                queue.cancel(ctx)
        if victims:
            self.engine.loader = self.load
            log.log(
                logging.INFO if not self.evicted else logging.DEBUG,
                "%s: %d instance(s) evicted to the store, %d in memory (capacity %d at ~%d bytes each)",
                self.store.path.name,
                len(victims),
                len(table),
                self.capacity,
                self.bytes_per_instance,
            )
            self.evicted += len(victims)
        return len(victims)

    def close(self) -> None:
        self.budget.close()
        self.store.on_write = None
