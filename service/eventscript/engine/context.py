"""Instance contexts (language document §6.1) and their compact serialized form.

An instance context holds what one computation instance owns: its machine state, its variables
and its pending timer. The engine keeps one per group key (one in all for an ungrouped program).

A context serializes to a few bytes (msgpack) so that the Kafka worker can keep it in RocksDB
and in a changelog topic, and a fresh engine can resume it mid-stream. Arrays and structures
are shared by reference (document footnote 4); the encoding keeps that sharing, so two
variables that referred to one array still do after a restore.
"""

from __future__ import annotations

from typing import Any

import msgpack
import orjson

from .values import UNSET

FORMAT_VERSION = 1

_EXT_UNSET = 0
_EXT_LIST = 1  # first occurrence of a list: [index, items]
_EXT_REF = 2  # a later occurrence of the same list: index
_EXT_OBJECT = 3  # an opaque object value, as JSON


class InstanceContext:
    __slots__ = ("key", "last_fire", "repeats", "state", "terminated", "timer", "tsym", "vars")

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

    def __repr__(self) -> str:
        return f"InstanceContext(key={self.key!r}, state={self.state!r})"


class _Encoder:
    def __init__(self) -> None:
        self.seen: dict[int, int] = {}

    def enc(self, x: Any) -> Any:
        if x is UNSET:
            return msgpack.ExtType(_EXT_UNSET, b"")
        t = type(x)
        if t is list:
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


def encode(state: Any, variables: list[Any], key: tuple[Any, ...] | None, timer: tuple[int, int, int] | None,
           terminated: bool = False) -> bytes:
    """Serialize (state id, variables, key, (deadline, symbol, seq) of the pending timer, and
    whether the instance has terminated — an ungrouped program stays terminated)."""
    e = _Encoder()
    payload = [FORMAT_VERSION, state, [e.enc(v) for v in variables], list(key) if key is not None else None,
               list(timer) if timer is not None else None, terminated]
    return msgpack.packb(payload, default=_Encoder._ext, use_bin_type=True)


def decode(data: bytes) -> tuple[Any, list[Any], tuple[Any, ...] | None, tuple[int, int, int] | None, bool]:
    d = _Decoder()
    payload = msgpack.unpackb(data, ext_hook=d.hook, strict_map_key=False, raw=False)
    if not isinstance(payload, list) or len(payload) != 6 or payload[0] != FORMAT_VERSION:
        raise ValueError("not an EventScript instance-context snapshot of a known version")
    _, state, variables, key, timer, terminated = payload
    return (state, variables, tuple(key) if key is not None else None,
            (int(timer[0]), int(timer[1]), int(timer[2])) if timer is not None else None, bool(terminated))
