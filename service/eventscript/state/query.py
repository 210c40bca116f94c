"""One key's state, answered in program terms from a task's committed store.

Host-neutral: it needs a compiled program, a store (``state.store.TaskStore``: the worker's task
or standby store, or a store written by the backfill's hand-over) and a key. The answer reads
the instance's snapshot, the store's committed input position and its changelog checkpoint from
one RocksDB snapshot, so it is never torn: the instance is exactly as the last commit that
reached the store left it, and the position says which commit that was. The instance is explained
with ``eventscript.explain`` (the markers it waits for with line:col, its variables, its pending
timer), the same code as the playground and ``eventscript test --explain``.

Beside the instance, the same read takes what the task keeps about the key (``state.keyinfo``):
the last input record its instance took (``topic:partition:offset`` and record time), and for a
grouped key whose instance ended, when and why — so an ended key answers ``ended``, not
``absent``, for ``ENDED_RETENTION_MS`` after its end (an ungrouped program's instance stays,
terminated).

What the task does not keep, the answer says it does not know (``known: false`` and why) rather
than guess:

- the last record of an instance last written before the task kept it (a store or changelog from
  an earlier version), or changed only by timers since the task started;
- an instance's origin in a program without timers (only a program with timers names the record
  that created an instance: ``Task._on_create``);
- an ended key's end once its marker is past its retention, or for an instance that retired
  (went back to its start) between two commits: nothing of it was ever committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ..automata.compiled import CompiledProgram
from ..engine.context import decode as decode_snapshot
from ..engine.encoding import DecodeError, decode, encode
from ..engine.timeutil import format_time
from ..engine.values import key_double
from ..explain.instance import explain_instance, view_of_snapshot
from ..explain.terms import ProgramTerms
from ..language.types import DOUBLE, STRING
from .changelog import CLOCK_KEY, SINGLE_KEY, Position, decode_clock, decode_position, split_batch_frame
from .keyinfo import ENDED_RETENTION_MS, WHY, KeyInfo, decode_info, info_key, split_value, stored_info
from .program_versions import WrittenBy

# The store's own metadata keys (one home: state/store.py), read here in the same snapshot as the key.
from .store import _META_CHECKPOINT, _META_POSITION, TaskStore

#: Reasons given where the task keeps nothing to answer with.
LAST_RECORD_NOT_KEPT = (
    "not kept: the instance was last written without it (by a version before it was kept), or "
    "only timers changed it since its task started"
)
ORIGIN_NOT_KEPT = "not kept: a program without timers does not record what created its instances"
ENDED_UNKNOWN = (
    "no instance in the committed state: the key was never seen, or its instance ended more than "
    f"{ENDED_RETENTION_MS // 3_600_000} h ago (ended markers are kept that long), or went back to its "
    "start between two commits (nothing of it was committed)"
)


class BadKey(ValueError):
    """A key that does not fit the program's group key (the message says what to give instead)."""


def parse_key(program: CompiledProgram, text: str | None, name: str | None = None) -> tuple[Any, ...] | None:
    """The group key a person typed: for a key of one component its value (``front``, ``42``) or
    a one-element JSON array; for several components a JSON array in the group's order. None
    for an ungrouped program (which takes no key). Raises BadKey saying what is expected, naming
    the program ``name`` (default: the compiled program's, its file's name)."""
    types = program.program.key_types
    name = name or program.name
    if types is None:
        if text not in (None, ""):
            raise BadKey(f"program {name} is not grouped (it has one instance): ask without a key")
        return None
    if text is None or text == "":
        shown = ", ".join(str(t) for t in types)
        raise BadKey(
            f"program {name} is grouped by ({shown}): give a key, e.g. key=... "
            + ("(its value)" if len(types) == 1 else "(a JSON array of the components)")
        )
    try:
        obj: Any = orjson.loads(text)
    except orjson.JSONDecodeError:
        obj = text  # a bare word: a string component
    if len(types) == 1:
        if isinstance(obj, list) and len(obj) == 1:
            obj = obj[0]
        elif types[0] == STRING and not isinstance(obj, str):
            obj = text  # "42" for a string key is the string "42"
        parts = [obj]
    else:
        if not isinstance(obj, list) or len(obj) != len(types):
            raise BadKey(
                f"program {name} is grouped by {len(types)} components "
                f"({', '.join(str(t) for t in types)}): give them as a JSON array, e.g. "
                f"{orjson.dumps(['...'] * len(types)).decode()}"
            )
        parts = obj
    try:
        key = tuple(decode(p, t, f"key[{i}]") for i, (p, t) in enumerate(zip(parts, types)))
    except DecodeError as exc:
        raise BadKey(f"program {name}: key {text!r} does not fit the group key: {exc}") from None
    # (in the form the engine gives its keys: -0.0 is the key 0.0, every NaN the one NaN key)
    return tuple(key_double(k) if t == DOUBLE else k for k, t in zip(key, types))


def store_key(program: CompiledProgram, key: tuple[Any, ...] | None) -> bytes:
    """The key's store and changelog key: its canonical JSON array (the task's ``_key_bytes``),
    or the ungrouped program's one key."""
    types = program.program.key_types
    if key is None or types is None:
        return SINGLE_KEY
    return orjson.dumps([encode(k, t) for k, t in zip(key, types)])


@dataclass(frozen=True)
class CommittedRead:
    """What one consistent read of a store gives: the key's snapshot (None: none), its
    information (``state.keyinfo``: its value's, or its ended marker without a value), the input
    position of the last commit written to the store, the changelog offset the store has reached
    and the record clock saved with that commit (microseconds; 0 before the first)."""

    snapshot: bytes | None
    position: Position | None
    changelog_offset: int
    record_clock: int
    info: KeyInfo | None = None


class StoreNotOpen(RuntimeError):
    """The store exists but its owner has not opened it (yet): ask again."""


def read_committed(store: TaskStore, key: bytes, other_thread: bool = False) -> CommittedRead:
    """The key's snapshot and the store's position, from one RocksDB snapshot: never torn by a
    commit written meanwhile (the worker writes instances and position in one batch). A store
    that was never written reads as empty. From ``other_thread`` than the task's, a store is
    read only once its owner has opened it (StoreNotOpen before)."""
    db = store.opened
    if db is None:
        if not store.path.exists():
            return CommittedRead(None, None, 0, 0)
        if other_thread:
            raise StoreNotOpen(f"{store.path} is not open yet")
        db = store.db
    snap = db.snapshot()
    try:
        values = _get_many(snap, [key, _META_POSITION, _META_CHECKPOINT, CLOCK_KEY, info_key(key)])
    finally:
        del snap
    raw, pos, checkpoint, clock, marker = values
    snapshot = split_value(raw, None)[0]  # (a live key's information is in its value: state/store.py)
    return CommittedRead(
        snapshot,
        decode_position(pos),
        int(checkpoint) if checkpoint else 0,
        decode_clock(clock),
        decode_info(stored_info(raw, marker)),
    )


def _get_many(snap: Any, keys: list[bytes]) -> list[bytes | None]:
    """Values of ``keys`` in a RocksDB snapshot (its lookup raises on a missing key: seek instead)."""
    out: list[bytes | None] = []
    it = snap.iter()
    for k in keys:
        it.seek(k)  # (seek, not get: a snapshot's iterator; keys in any order)
        out.append(it.value() if it.valid() and it.key() == k else None)
    return out


@dataclass
class KeyAnswer:
    """The answer about one key: ``status`` is ``present`` (an instance, live), ``ended`` (an
    ungrouped program's instance that terminated, or a grouped key's ended marker: ``ended`` says
    when and why) or ``absent`` (no instance; see ``ENDED_UNKNOWN``). ``last_record`` is the
    input record the instance last took. ``served_by`` says where it came from and how fresh it
    is; ``owner`` which worker owns the key's task, when known."""

    program: str
    key: list[Any] | None
    task: int | None
    status: str
    instance: dict[str, Any] | None
    committed: dict[str, Any]
    served_by: dict[str, Any] = field(default_factory=dict)
    owner: dict[str, Any] | None = None
    note: str | None = None
    ended: dict[str, Any] | None = None
    last_record: dict[str, Any] = field(default_factory=lambda: last_record_fields(None))

    def to_json(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "key": self.key,
            "task": self.task,
            "status": self.status,
            "note": self.note,
            "instance": self.instance,
            "ended": self.ended,
            "last_record": self.last_record,
            "committed": self.committed,
            "served_by": self.served_by,
            "owner": self.owner,
        }


def explain_snapshot(terms: ProgramTerms, raw: bytes, written_by: WrittenBy | None = None) -> dict[str, Any]:
    """An instance snapshot in program terms (``explain.explain_instance``), with its origin
    (the record that created it, ``topic:partition:offset``) and the timer events it took.
    ``raw`` may also be a changelog record's value as it is (its batch's position in front,
    ``changelog.split_batch_frame``, then the key's information, ``keyinfo.split_value``), which a
    reader of the changelog's raw records has. ``written_by``: the task state's versions, so that
    a snapshot of another version is read in its writer's terms and says so (``version``)."""
    raw = split_batch_frame(raw, None, None)[0] or raw
    data = split_value(raw, None)[0] or raw
    version = None
    if written_by is not None:
        terms, version = written_by.terms_for(data)
    snap = decode_snapshot(data)
    out = explain_instance(terms, view_of_snapshot(terms, snap))
    if version is not None:
        out["version"] = version
    timed = bool(terms.program.timers)
    out["origin"] = snap.origin if snap.origin is not None or timed else None
    if snap.origin is None and not timed:
        out["origin_why"] = ORIGIN_NOT_KEPT
    out["timer_events_taken"] = snap.fires
    return out


def last_record_fields(info: KeyInfo | None) -> dict[str, Any]:
    """The last input record a key's instance took, as an answer shows it."""
    if info is None or info.last is None:
        return {"known": False, "why": LAST_RECORD_NOT_KEPT}
    topic, partition, offset, ms = info.last
    return {"known": True, "record": f"{topic}:{partition}:{offset}", "time": format_time(ms * 1000)}


def ended_fields(info: KeyInfo | None) -> dict[str, Any] | None:
    """When and why a grouped key's instance ended (None: no marker kept)."""
    if info is None or info.ended_at is None:
        return None
    return {
        "at": format_time(info.ended_at),
        "why": info.why,
        "explained": WHY.get(info.why or "", info.why),
        "kept_until": format_time((info.wall + ENDED_RETENTION_MS) * 1000) if info.wall is not None else None,
    }


def committed_fields(read: CommittedRead) -> dict[str, Any]:
    """How fresh an answer read from a store is: the input offsets of the commit it reflects."""
    return {
        "position": read.position,
        "changelog_offset": read.changelog_offset,
        "record_clock": format_time(read.record_clock) if read.record_clock else None,
    }


def answer_key(
    terms: ProgramTerms,
    key: tuple[Any, ...] | None,
    read: CommittedRead,
    task: int | None,
    written_by: WrittenBy | None = None,
) -> KeyAnswer:
    """The answer about ``key`` from one consistent read of its task's store (``written_by``: see
    ``explain_snapshot``)."""
    program = terms.compiled
    shown_key = None
    if key is not None and program.program.key_types is not None:
        shown_key = [encode(k, t) for k, t in zip(key, program.program.key_types)]
    last = last_record_fields(read.info)
    if read.snapshot is None:
        ended = ended_fields(read.info)
        if ended is not None:
            return KeyAnswer(
                program.name, shown_key, task, "ended", None, committed_fields(read), ended=ended, last_record=last
            )
        return KeyAnswer(
            program.name, shown_key, task, "absent", None, committed_fields(read), note=ENDED_UNKNOWN, last_record=last
        )
    instance = explain_snapshot(terms, read.snapshot, written_by)
    status = "ended" if instance["ended"] else "present"
    return KeyAnswer(program.name, shown_key, task, status, instance, committed_fields(read), last_record=last)


def answer_from_store(
    terms: ProgramTerms, store: TaskStore, key: tuple[Any, ...] | None, task: int | None, other_thread: bool = False
) -> KeyAnswer:
    """``answer_key`` over a consistent read of ``store`` (see ``read_committed``), a snapshot of
    another program version read in its writer's terms (the versions the store keeps)."""
    read = read_committed(store, store_key(terms.compiled, key), other_thread)
    return answer_key(terms, key, read, task, WrittenBy(terms, store.get))
