"""Key-split mode: more tasks than input partitions, with no shuffle (``Plan.split`` = S > 1).

Spark task (p, j), for input partition p and key group j < S, reads p's whole range as partition
mode's task p does and runs the worker's own :class:`~eventscript.task.task.Task` over it, but
the program sees only the records whose group key is in key group j (:func:`key_group` of the
key's routing bytes, a hash that numpy computes over a whole Arrow batch). The other groups'
records only move the task's record clock, as they move task p's: every key's timers fire at the
same points of its history, each at its own deadline, and its records are processed at the same
record time. So per key the outputs (values, order, ``es-id``) and the hand-over state are
partition mode's, with no shuffle and no second decoding of a record — the key-parallel mode's
costs.

What makes it cheap: a record of another group is not decoded at all. Its group is read from its
record key (the routing bytes of its group key, when it is keyed as the input's key format says —
as ``eventscript produce`` and every producer following docs/worker.md write records), in Arrow,
and for task p's clock it counts as what such a record is: a move to its timestamp. Records
without a record key, with headers (ticks; event names in headers; ``es-seq`` alone, the order
of ties, does not count) or with a timestamp the clock cannot take reach every group's task,
which decodes them as task p does; only the group they belong to feeds them to the program or
reports their ``$error`` (an unkeyed record's: group 0).

Several co-partitioned inputs: task p merges them by timestamp, and where a record lands in that
merge depends on the records of the other groups before it, so those stay in the task's inputs
as stubs that the worker's own merge orders (:meth:`SplitStage._with_stubs`).

The assumption is checked by the one task that decodes each such record, its record key's group:
if the record does not then move the clock to its timestamp as the other groups took it to
(undecodable, an undeclared event, an unkeyed input) while that timestamp is ahead of the clock,
or its group key belongs to another group, the task fails with :class:`SplitMismatchError`, and the
``backfill`` command runs again in partition mode (``main.py``): slower, never wrong.
"""

from __future__ import annotations

import heapq
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..engine.timeutil import MAX_TIME
from ..task.codec import HEADER_SEQ
from ..task.keys import input_format
from ..task.routing import HASH_MIX, HASH_PRIME, KeyFilter, key_group
from .plan import Plan
from .task_stage import BackfillError, TaskStage, compiled_program, record_clock_config

#: Record timestamps (ms) the record clock can move to.
MAX_TS_MS = MAX_TIME // 1000
#: What a record of another key group costs a task, relative to a record it processes in full
#: (reading it and finding its group in Arrow; bench/backfill.py: ~0.05–0.1).
SKIP_COST = 0.1
#: The same with several inputs: a stub per record through the task's merge (measured on two
#: topics, 150,000 records in one process: 2 tasks per partition took ~1.7× partition mode's CPU
#: per record, i.e. ~0.7).
MERGED_SKIP_COST = 0.7
#: The name the driver finds in a failed Spark job's text to fall back to partition mode.
MISMATCH = "SplitMismatchError"


def batch_groups(keys: pa.Array, splits: int) -> np.ndarray:
    """:func:`~eventscript.task.routing.key_group` (the one key-group hash) of every key of a
    binary column, null keys in group 0, with no Python object per row (a partition's every record passes here in
    each of its S tasks)."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    wide = pa.types.is_large_binary(keys.type)
    keys = keys.cast(pa.large_binary()) if not wide and not pa.types.is_binary(keys.type) else keys
    bufs = keys.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if pa.types.is_large_binary(keys.type) else np.int32)
    offsets = offsets[keys.offset : keys.offset + n + 1].astype(np.int64)
    starts, ends = offsets[:-1] - offsets[0], offsets[1:] - offsets[0]
    lengths = ends - starts
    data = (
        np.frombuffer(bufs[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
        if bufs[2] is not None
        else np.zeros(0, dtype=np.uint8)
    ).astype(np.uint64)
    longest = int(lengths.max()) if n else 0
    with np.errstate(over="ignore"):
        powers = np.full(max(longest - 1, 0), HASH_PRIME, dtype=np.uint64)
        weights = np.cumprod(np.concatenate([[1], powers]).astype(np.uint64))
        pos = np.arange(len(data), dtype=np.int64) - np.repeat(starts, lengths)
        sums = np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(data * weights[pos], dtype=np.uint64)])
        h = (sums[ends] - sums[starts]) ^ lengths.astype(np.uint64)
        h = (h ^ (h >> np.uint64(29))) * np.uint64(HASH_MIX)
        group = ((h ^ (h >> np.uint64(32))) % np.uint64(splits)).astype(np.int64)
    if keys.null_count:
        group[np.asarray(keys.is_null())] = 0
    return group


class SplitMismatchError(BackfillError):
    """A record is not what key-split mode took it for (see the module's docstring)."""


def mismatch(rec: Any, what: str) -> SplitMismatchError:
    return SplitMismatchError(
        f"record {rec.topic()}:{rec.partition()}:{rec.offset()} {what}: key-split mode took it, by "
        f"its record key, for a record of its key group that moves the clock to its timestamp; "
        f"run in partition mode"
    )


def split_refusal(plan: Plan) -> str | None:
    """Why the plan's program cannot run in key-split mode, or None."""
    cfg = record_clock_config(plan.program)
    if plan.key_groups:
        return "key-parallel mode (--key-groups) splits the keys already"
    if not compiled_program(plan.program).grouped:
        return f"program {cfg.name} has no group key (one instance sees every record)"
    types = compiled_program(plan.program).program.key_types
    home = input_format(cfg.inputs[0], types)
    for inp in cfg.inputs:
        if inp.key == "none" or inp.keyed is False:
            return f"input {inp.topic} has no record keys to split by"
        if input_format(inp, types) != home:
            return (
                f"input {inp.topic}'s record keys are in format {input_format(inp, types)}, not the "
                f"{home} of the routing bytes key-split mode hashes"
            )
    return None


def auto_split(plan: Plan, slots: int) -> list[int]:
    """Tasks per input partition (``Plan.split_each``) that finish soonest on ``slots`` Spark
    slots, then with the least work: every partition in S tasks, or the last k partitions in S
    tasks and the others whole (3 partitions on 2 slots: 2 whole, then the third's two halves
    — 4 tasks, not 6). A task of a partition split S ways costs 1/S of its records plus
    ``SKIP_COST`` (several inputs: ``MERGED_SKIP_COST``) for each of the others; Spark starts the tasks in order,
    each on the first
    free slot. All 1 (partition mode) when nothing is faster, or the program cannot be split."""
    sizes = [sum(max(0, r.end - r.start) for r in piece.ranges) for piece in plan.slices]
    whole = [1] * len(sizes)
    if not any(sizes) or slots <= 1 or split_refusal(plan) is not None:
        return whole

    def cost(splits: list[int]) -> tuple[float, float]:
        free = [0.0] * slots
        work = 0.0
        for size, s in zip(sizes, splits):
            for _ in range(s):
                task = size * (1 / s + (1 - 1 / s) * skip)
                heapq.heapreplace(free, free[0] + task)
                work += task
        return round(max(free), 9), round(work, 9)

    skip = MERGED_SKIP_COST if len(record_clock_config(plan.program).inputs) > 1 else SKIP_COST
    n = len(sizes)
    candidates = [whole] + [[1] * (n - k) + [s] * k for s in range(2, slots + 1) for k in range(1, n + 1)]
    return min(candidates, key=cost)


def _plain(msg: Any) -> bool:
    """Whether key-split mode took the record, by its record key, for one of its key group that
    moves the clock to its timestamp (in Arrow: ``SplitStage._split``'s ``plain``)."""
    return msg.key() is not None and _order_only(msg.headers()) and 0 <= msg.timestamp()[1] <= MAX_TS_MS


def _order_only(headers: Any) -> bool:
    """No header but ``es-seq``: the producer's order of ties, which only the merge reads (every
    record ``eventscript produce`` writes has one), so it keeps no record from being plain."""
    return not headers or all(k == HEADER_SEQ for k, _ in headers)


def order_only_headers(column: pa.Array) -> np.ndarray:
    """Per row of a headers column: ``_order_only``, in Arrow."""
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy()
    if not lengths.any():
        return lengths == 0
    keys = pc.list_flatten(column).field("key")
    other = pc.fill_null(pc.not_equal(keys, HEADER_SEQ), True).to_numpy(zero_copy_only=False)
    parents = pc.list_parent_indices(column).to_numpy()
    return np.bincount(parents[other], minlength=len(column)) == 0


class SplitStage(TaskStage, KeyFilter):
    """Task (p, j) of key-split mode: data source partition ``index`` = p × S + j."""

    def __init__(self, plan: Plan, index: int, store_dir: Path) -> None:
        refusal = split_refusal(plan)
        if refusal is not None:
            raise BackfillError(f"key-split mode (split {plan.split}): {refusal}; run in partition mode")
        piece, self.group = plan.read_at(index)
        super().__init__(plan, plan.slices[piece], store_dir)
        self.splits = plan.splits_of(piece)
        self.skipped_max = -1  # the latest timestamp (ms) of the other groups' records so far
        self.reached = -1  # the latest of those the task's records so far were preceded by
        self.partition_records = 0
        self._group_of: dict[bytes, int] = {}
        #: Several inputs: the task's own merge orders them (``_with_stubs``); how many stubs
        #: there were.
        self.merged = len(self.cfg.inputs) > 1
        self.stub_count = 0
        self.topic_max: dict[str, int] = {}  # each topic's latest record timestamp (ms) so far
        self.task.set_key_filter(self)

    # -- which records: in Arrow --------------------------------------------------------------------

    def feed(self, batch: pa.RecordBatch) -> pa.RecordBatch | None:
        kept, owned = self._split(batch)
        counted = self.summary.records
        out = super().feed(kept)
        self.summary.records = counted + owned  # each record counted by one group's task
        return out

    def _split(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, int]:
        """The records this task processes (its group's, and those every group's task decodes),
        the number of records of its group (each record is its record key's group's; unkeyed: 0),
        and, through ``Task.move_clock_before``, where the other groups' records move the clock
        before them: before a record that enters the task, if that clock moved since the previous one and the record
        does not move it there itself (a plain record of this group at or after that time does:
        it is checked to have done so). With several inputs: ``_with_stubs``."""
        if not batch.num_rows:
            return batch, 0
        key = batch.column("key")
        ts = pc.fill_null(batch.column("timestamp"), -1).to_numpy()
        offset = batch.column("offset").to_numpy()
        record = offset >= 0  # not an end marker
        no_headers = order_only_headers(batch.column("headers"))
        plain = key.is_valid().to_numpy(zero_copy_only=False) & no_headers & record & (ts >= 0) & (ts <= MAX_TS_MS)
        mine = batch_groups(key, self.splits) == self.group
        skipped = plain & ~mine
        self.partition_records += int(np.count_nonzero(record))
        owned = int(np.count_nonzero(mine & record))
        if self.merged:
            return self._with_stubs(batch, skipped, ts, offset), owned
        enters = record & ~skipped
        if enters.any():
            need = np.maximum(np.maximum.accumulate(np.where(skipped, ts, -1)), self.skipped_max)[enters]
            before = np.concatenate([[self.reached], need[:-1]])
            mark = (need > before) & ~(plain[enters] & (ts[enters] >= need))
            self.reached = int(need[-1])
            if mark.any():
                # before each such record the clock moves to the latest timestamp of the other
                # groups' records before it
                self.task.move_clock_before(
                    self.cfg.inputs[0].topic, zip(offset[enters][mark].tolist(), need[mark].tolist())
                )
        if not skipped.any():
            return batch, owned
        self.skipped_max = max(self.skipped_max, int(ts[skipped].max()))
        return batch.filter(pa.array(~skipped)), owned

    def _with_stubs(
        self, batch: pa.RecordBatch, skipped: np.ndarray, ts: np.ndarray, offset: np.ndarray
    ) -> pa.RecordBatch:
        """Several inputs: the task merges them by timestamp itself, so the other groups' records
        stay in its inputs, as *stubs* that are never decoded: processing one moves the clock
        where its records would have (``Task.stand_in``). Consecutive
        records of one topic share a stub only while none of them is later than every earlier
        record of its topic: once the merge has taken the first of them, it takes the others
        at once (each timestamp is at most that of a record of the topic it took already, which
        was not behind any other input's next record), so no other record comes between them,
        and the stub keeps the first one's timestamp for the merge."""
        if not skipped.any():
            return batch
        keep = ~skipped
        stub = np.zeros(len(ts), dtype=bool)
        first_ts = ts.copy()
        codes = pc.dictionary_encode(batch.column("topic"))
        indices = codes.indices.to_numpy(zero_copy_only=False)
        for code, topic in enumerate(codes.dictionary.to_pylist()):
            rows = np.nonzero(indices == code)[0]
            run = skipped[rows]
            latest = self.topic_max.get(topic, -1)
            before = np.maximum(np.concatenate([[latest], np.maximum.accumulate(ts[rows])[:-1]]), latest)
            self.topic_max[topic] = max(latest, int(ts[rows].max()))
            if not run.any():
                continue
            starts = np.nonzero(run & ~(np.concatenate([[False], run[:-1]]) & (ts[rows] <= before)))[0]
            start = np.zeros(len(rows), dtype=bool)
            start[starts] = True
            skipped_at = np.nonzero(run)[0]
            segment = (np.cumsum(start) - 1)[skipped_at]  # a stub's records: from its start, all skipped
            last = rows[skipped_at[np.concatenate([segment[1:] != segment[:-1], [True]])]]
            targets = np.maximum.reduceat(np.where(run, ts[rows], -1), starts)
            first_ts[last] = ts[rows[starts]]
            stub[last] = True
            keep[last] = True
            self.task.stand_in(topic, zip(offset[last].tolist(), targets.tolist()))
            self.stub_count += len(last)
        if not np.array_equal(first_ts[stub], ts[stub]):
            batch = batch.set_column(
                batch.schema.get_field_index("timestamp"),
                "timestamp",
                pc.replace_with_mask(batch.column("timestamp"), pa.array(stub), pa.array(first_ts[stub])),
            )
        return batch.filter(pa.array(keep))

    def _key_group(self, kb: bytes | None) -> int:
        if kb is None:
            return 0
        g = self._group_of.get(kb)
        if g is None:
            if len(self._group_of) > 100_000:
                self._group_of.clear()
            g = self._group_of[kb] = key_group(kb, self.splits)
        return g

    # -- what the task does with them: the worker's task's key filter ---------------------------------

    def owns(self, route: bytes) -> bool:
        return key_group(route, self.splits) == self.group

    def passed(self, msg: Any) -> None:
        if _plain(msg):  # its record key is this group's (the others' plain records never get here)
            raise mismatch(msg, "has a group key of another key group than its record key")

    def reports(self, msg: Any, forward: bool) -> bool:
        """Only the record key's group's task reports a record (an unkeyed one: group 0's). A
        plain record that could not be used (``forward``: re-published, on the wrong partition,
        which the backfill reports at its end) did not move the clock as the others took it to."""
        if msg is None:
            return True
        if self._key_group(msg.key()) != self.group:
            return False
        if not forward and _plain(msg) and msg.timestamp()[1] * 1000 > self.task.clock.now():
            raise mismatch(msg, "reached no instance (see its $error record)")
        return True

    def end_of_records(self) -> None:
        """Task p's last record time: the other groups' last records move the clock there."""
        if self.skipped_max >= 0:
            self.task.move_clock(self.skipped_max)
        self.task.counts["processed"] -= self.stub_count  # stubs stand for other groups' records

    def had_records(self) -> bool:
        return self.partition_records > 0
