"""Instance contexts (language document §6.1) and their compact serialized form.

An instance context holds what one computation instance owns: its machine state, its variables
and its pending timer. The engine keeps one per group key (one in all for an ungrouped program).

A context serializes to a few bytes (msgpack) so that the Kafka worker can keep it in RocksDB
and in a changelog topic, and a fresh engine can resume it mid-stream. Arrays and structures
are shared by reference (document footnote 4); the encoding keeps that sharing, so two
variables that referred to one array still do after a restore.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgpack
import orjson

from .values import UNSET

#: Version 2 added the instance's origin and timer-firing count (output ids); version 1
#: snapshots still restore, with neither.
FORMAT_VERSION = 2

_EXT_UNSET = 0
_EXT_LIST = 1  # first occurrence of a list: [index, items]
_EXT_REF = 2  # a later occurrence of the same list: index
_EXT_OBJECT = 3  # an opaque object value, as JSON


class InstanceContext:
    __slots__ = ("fires", "key", "last_fire", "origin", "repeats", "state", "terminated", "timer", "tsym", "vars")

    def __init__(self, key: tuple[Any, ...] | None, state: Any, nvars: int) -> None:
        self.key = key
        self.state = state
        self.vars: list[Any] = [UNSET] * nvars
        #: The pending timer entry (engine.time_provider.TimerEntry) or None.
        self.timer: Any = None
        #: The time symbol the pending timer will deliver.
        self.tsym = -1
        self.terminated = False
        #: Deadline of the last timer event and how many times in a row it fired at that instant
        #: (a guard against time markers that fire again and again without time passing).
        self.last_fire = -1
        self.repeats = 0
        #: What created the instance, as the host names it (for the Kafka worker and the
        #: backfill: the coordinates of the record that started it), and how many time events it
        #: has consumed. Together they name each timer firing by the key's own history, so
        #: outputs of a timer get the same id wherever and however often the firing is replayed.
        self.origin: str | None = None
        self.fires = 0

    def __repr__(self) -> str:
        return f"InstanceContext(key={self.key!r}, state={self.state!r})"

    def __lt__(self, other: InstanceContext) -> bool:
        """Timer entries tie on (deadline, seq) only when contexts restored from different
        sources carry equal sequence numbers (or a cancelled entry meets its replacement);
        the group key then decides, so the order is still the same on every run."""
        return (self.key or ()) < (other.key or ())


_UNSET_EXT = msgpack.ExtType(_EXT_UNSET, b"")


def _shared_lists(values: list[Any]) -> set[int]:
    """Ids of the lists reachable from ``values`` more than once (shared by reference)."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [v for v in values if type(v) is list]
    while stack:
        x = stack.pop()
        i = id(x)
        if i in seen:
            shared.add(i)
            continue
        seen.add(i)
        stack.extend(v for v in x if type(v) is list)
    return shared


class _Encoder:
    """Values to msgpack. A list reached once is a plain msgpack array; a list reached several
    times is numbered at its first occurrence and referred to by number after, so the sharing
    survives a restore."""

    def __init__(self, shared: set[int]) -> None:
        self.shared = shared
        self.seen: dict[int, int] = {}

    def enc(self, x: Any) -> Any:
        if x is UNSET:
            return _UNSET_EXT
        t = type(x)
        if t is list:
            if id(x) not in self.shared:
                return [self.enc(v) for v in x]
            i = self.seen.get(id(x))
            if i is not None:
                return msgpack.ExtType(_EXT_REF, msgpack.packb(i))
            i = self.seen[id(x)] = len(self.seen)
            items = [self.enc(v) for v in x]
            return msgpack.ExtType(_EXT_LIST, msgpack.packb([i, items], default=self._ext))
        if t in (int, float, str, bool) or x is None:
            return x
        return msgpack.ExtType(_EXT_OBJECT, orjson.dumps(x, default=str))

    @staticmethod
    def _ext(x: Any) -> Any:
        if isinstance(x, msgpack.ExtType):
            return x
        raise TypeError(f"cannot serialize {type(x).__name__}")


class _Decoder:
    def __init__(self) -> None:
        self.lists: dict[int, list[Any]] = {}

    def hook(self, code: int, data: bytes) -> Any:
        if code == _EXT_UNSET:
            return UNSET
        if code == _EXT_LIST:
            i, items = msgpack.unpackb(data, ext_hook=self.hook, strict_map_key=False)
            lst = self.lists.get(i)
            if lst is None:
                lst = self.lists[i] = []
            lst.extend(items)
            return lst
        if code == _EXT_REF:
            i = msgpack.unpackb(data)
            lst = self.lists.get(i)
            if lst is None:
                lst = self.lists[i] = []
            return lst
        if code == _EXT_OBJECT:
            return orjson.loads(data)
        return msgpack.ExtType(code, data)


_PLAIN = frozenset((int, float, str, bool))
_pack = msgpack.Packer(use_bin_type=True).pack


class ContextSnapshot(NamedTuple):
    """A decoded instance-context snapshot."""

    state: Any
    variables: list[Any]
    key: tuple[Any, ...] | None
    timer: tuple[int, int, int] | None  # (deadline, time symbol, seq) of the pending timer
    terminated: bool
    origin: str | None
    fires: int


def encode(state: Any, variables: list[Any], key: tuple[Any, ...] | None, timer: tuple[int, int, int] | None,
           terminated: bool = False, origin: str | None = None, fires: int = 0) -> bytes:
    """Serialize (state id, variables, key, (deadline, symbol, seq) of the pending timer, whether
    the instance has terminated — an ungrouped program stays terminated —, its origin and its
    count of time events)."""
    key_list = list(key) if key is not None else None
    timer_list = list(timer) if timer is not None else None
    for v in variables:
        if type(v) not in _PLAIN:
            break
    else:  # the common case, every variable a number, string or boolean: no per-value encoding
        return _pack([FORMAT_VERSION, state, variables, key_list, timer_list, terminated, origin, fires])
    e = _Encoder(_shared_lists(variables))
    payload = [FORMAT_VERSION, state, [e.enc(v) for v in variables], key_list, timer_list, terminated, origin, fires]
    return msgpack.packb(payload, default=_Encoder._ext, use_bin_type=True)


def decode(data: bytes) -> ContextSnapshot:
    d = _Decoder()
    payload = msgpack.unpackb(data, ext_hook=d.hook, strict_map_key=False, raw=False)
    if not isinstance(payload, list) or not payload or (payload[0], len(payload)) not in ((1, 6), (2, 8)):
        raise ValueError("not an EventScript instance-context snapshot of a known version")
    _, state, variables, key, timer, terminated, *rest = payload
    origin, fires = rest if rest else (None, 0)
    return ContextSnapshot(state, variables, tuple(key) if key is not None else None,
                           (int(timer[0]), int(timer[1]), int(timer[2])) if timer is not None else None,
                           bool(terminated), origin if isinstance(origin, str) else None, int(fires))
