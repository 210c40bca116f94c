"""One key's state, answered in program terms from a task's committed store.

Host-neutral: it needs a compiled program, a store (``state.store.TaskStore``: the worker's task
or standby store, or a store written by the backfill's hand-over) and a key. The answer reads
the instance's snapshot, the store's committed input position and its changelog checkpoint from
one RocksDB snapshot, so it is never torn: the instance is exactly as the last commit that
reached the store left it, and the position says which commit that was. The instance is explained
with ``eventscript.explain`` (the markers it waits for with line:col, its variables, its pending
timer), the same code as the playground and ``eventscript test --explain``.

What the task does not keep, the answer says it does not know (``known: false`` and why) rather
than guess:

- the last record a key consumed (the task keeps no per-key record coordinates: it would have to
  store ``topic:partition:offset`` and the record time in each instance's snapshot);
- an instance's origin in a program without timers (only a program with timers names the record
  that created an instance: ``Task._on_create``);
- whether a grouped program's key ended: an ended instance leaves a tombstone in the changelog and
  nothing in the store, so the store cannot tell "ended" from "never seen" (``eventscript state
  dump`` reads the changelog and can). An ungrouped program's instance stays, terminated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ..automata.compiled import CompiledProgram
from ..engine.context import decode as decode_snapshot
from ..engine.encoding import DecodeError, decode, encode
from ..engine.timeutil import format_time
from ..explain.instance import explain_instance, view_of_snapshot
from ..explain.terms import ProgramTerms
from ..language.types import STRING
from .changelog import CLOCK_KEY, SINGLE_KEY, Position, decode_clock, decode_position

# The store's own metadata keys (one home: state/store.py), read here in the same snapshot as the key.
from .store import _META_CHECKPOINT, _META_POSITION, TaskStore

#: Reasons given where the task keeps nothing to answer with.
LAST_RECORD_NOT_KEPT = (
    "not kept: the task records no per-key record coordinates (each instance's snapshot "
    "would have to carry the topic:partition:offset and time of the last record it took)"
)
ORIGIN_NOT_KEPT = "not kept: a program without timers does not record what created its instances"
ENDED_UNKNOWN = (
    "no instance in the committed state: the key was never seen, or its instance ended (the store "
    "keeps no record of ended instances; `eventscript state dump` shows the changelog's tombstones)"
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
        return tuple(decode(p, t, f"key[{i}]") for i, (p, t) in enumerate(zip(parts, types)))
    except DecodeError as exc:
        raise BadKey(f"program {name}: key {text!r} does not fit the group key: {exc}") from None


def store_key(program: CompiledProgram, key: tuple[Any, ...] | None) -> bytes:
    """The key's store and changelog key: its canonical JSON array (the task's ``_key_bytes``),
    or the ungrouped program's one key."""
    types = program.program.key_types
    if key is None or types is None:
        return SINGLE_KEY
    return orjson.dumps([encode(k, t) for k, t in zip(key, types)])


@dataclass(frozen=True)
class CommittedRead:
    """What one consistent read of a store gives: the key's snapshot (None: none), the input
    position of the last commit written to the store, the changelog offset the store has reached
    and the record clock saved with that commit (microseconds; 0 before the first)."""

    snapshot: bytes | None
    position: Position | None
    changelog_offset: int
    record_clock: int


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
        values = _get_many(snap, [key, _META_POSITION, _META_CHECKPOINT, CLOCK_KEY])
    finally:
        del snap
    raw, pos, checkpoint, clock = values
    return CommittedRead(raw, decode_position(pos), int(checkpoint) if checkpoint else 0, decode_clock(clock))


def _get_many(snap: Any, keys: list[bytes]) -> list[bytes | None]:
    """Values of ``keys`` in a RocksDB snapshot (its lookup raises on a missing key: seek instead)."""
    out: list[bytes | None] = []
    it = snap.iter()
    for k in keys:
        it.seek(k)
        out.append(it.value() if it.valid() and it.key() == k else None)
    return out


@dataclass
class KeyAnswer:
    """The answer about one key: ``status`` is ``present`` (an instance, live), ``ended`` (an
    ungrouped program's instance that terminated, or a tombstone read from the changelog) or
    ``absent`` (no instance; see ``ENDED_UNKNOWN``). ``served_by`` says where it came from and
    how fresh it is; ``owner`` which worker owns the key's task, when known."""

    program: str
    key: list[Any] | None
    task: int | None
    status: str
    instance: dict[str, Any] | None
    committed: dict[str, Any]
    served_by: dict[str, Any] = field(default_factory=dict)
    owner: dict[str, Any] | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "key": self.key,
            "task": self.task,
            "status": self.status,
            "note": self.note,
            "instance": self.instance,
            "last_record": {"known": False, "why": LAST_RECORD_NOT_KEPT},
            "committed": self.committed,
            "served_by": self.served_by,
            "owner": self.owner,
        }


def explain_snapshot(terms: ProgramTerms, raw: bytes) -> dict[str, Any]:
    """An instance snapshot in program terms (``explain.explain_instance``), with its origin
    (the record that created it, ``topic:partition:offset``) and the timer events it took."""
    snap = decode_snapshot(raw)
    out = explain_instance(terms, view_of_snapshot(terms, snap))
    timed = bool(terms.program.timers)
    out["origin"] = snap.origin if snap.origin is not None or timed else None
    if snap.origin is None and not timed:
        out["origin_why"] = ORIGIN_NOT_KEPT
    out["timer_events_taken"] = snap.fires
    return out


def committed_fields(read: CommittedRead) -> dict[str, Any]:
    """How fresh an answer read from a store is: the input offsets of the commit it reflects."""
    return {
        "position": read.position,
        "changelog_offset": read.changelog_offset,
        "record_clock": format_time(read.record_clock) if read.record_clock else None,
    }


def answer_key(terms: ProgramTerms, key: tuple[Any, ...] | None, read: CommittedRead, task: int | None) -> KeyAnswer:
    """The answer about ``key`` from one consistent read of its task's store."""
    program = terms.compiled
    shown_key = None
    if key is not None and program.program.key_types is not None:
        shown_key = [encode(k, t) for k, t in zip(key, program.program.key_types)]
    if read.snapshot is None:
        return KeyAnswer(program.name, shown_key, task, "absent", None, committed_fields(read), note=ENDED_UNKNOWN)
    instance = explain_snapshot(terms, read.snapshot)
    status = "ended" if instance["ended"] else "present"
    return KeyAnswer(program.name, shown_key, task, status, instance, committed_fields(read))


def answer_from_store(
    terms: ProgramTerms, store: TaskStore, key: tuple[Any, ...] | None, task: int | None, other_thread: bool = False
) -> KeyAnswer:
    """``answer_key`` over a consistent read of ``store`` (see ``read_committed``)."""
    return answer_key(terms, key, read_committed(store, store_key(terms.compiled, key), other_thread), task)
