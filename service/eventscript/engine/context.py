"""Instance contexts (language document §6.1) and their compact serialized form.

An instance context holds what one computation instance owns: its machine state, its variables
and its pending timer. The engine keeps one per group key (one in all for an ungrouped program).

A context serializes to a few bytes (msgpack) so that the Kafka worker can keep it in RocksDB
and in a changelog topic, and a fresh engine can resume it mid-stream. Arrays and structures
are shared by reference (document footnote 4); the encoding keeps that sharing, so two
variables that referred to one array still do after a restore.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping, Sequence, ValuesView
from typing import Any, NamedTuple

import msgpack
import orjson

from .values import UNSET

#: Version 2 added the instance's origin and timer-firing count (output ids); version 3 the tag
#: of the program version that wrote the snapshot (``program_tag``; None: a host that does not
#: name it), so that a worker never reads another version's state as its own (upgrade/). Versions
#: 1 and 2 still restore (origin None and fires 0 for 1; no tag for either). A worker from before
#: version 3 refuses a version-3 snapshot ("not ... of a known version"): the rolling-upgrade
#: protection, as a newer worker's state is never misread by an older one.
FORMAT_VERSION = 3
#: The snapshot formats this build reads: (version, payload length).
KNOWN_FORMATS = ((1, 6), (2, 8), (3, 9))


def program_tag(fingerprint: str) -> int:
    """The tag a snapshot carries for the program version of ``fingerprint`` (its last 8 hex
    digits as a number: 5 bytes of msgpack per snapshot; the task state maps it back to the
    fingerprint and the compiled program, see ``state.versions``)."""
    return int(fingerprint[-8:], 16)


_EXT_UNSET = 0
_EXT_LIST = 1  # first occurrence of a list: [index, items]
_EXT_REF = 2  # a later occurrence of the same list: index
_EXT_OBJECT = 3  # an opaque object value, as JSON


#: The variables of an instance of a program without variables: one shared, never-written list.
NO_VARIABLES: list[Any] = []


#: What set an instance's pending timer, as the host names it (``Engine.arm_of``): the host's
#: order of that cause among everything its program did, so that timers of one deadline set by
#: different tasks of a program can be put in the order one task would have fired them in (the
#: one that was set first, first). The engine only keeps it with the timer (its entry's last
#: item: ``time_provider.armed``) and in snapshots. Bytes (the Kafka host's ``es-armed`` header),
#: which the garbage collector never scans.
Armed = bytes


class RareFields:
    """The fields of an instance that are usually at their defaults, kept apart so that an
    instance that never fired a timer nor was named by a host carries one empty slot for them."""

    __slots__ = ("fires", "last_fire", "origin", "repeats")

    def __init__(self) -> None:
        self.origin: str | None = None
        self.fires = 0
        self.last_fire = -1
        self.repeats = 0


def _rare_field(name: str, default: Any, doc: str) -> property:
    def get(ctx: InstanceContext) -> Any:
        rare = ctx._rare
        return default if rare is None else getattr(rare, name)

    def put(ctx: InstanceContext, value: Any) -> None:
        rare = ctx._rare
        if rare is None:
            if value == default and type(value) is type(default):
                return
            rare = ctx._rare = RareFields()
        setattr(rare, name, value)

    return property(get, put, doc=doc)


class InstanceContext:
    """One computation instance: its machine state, variables and pending timer.

    Memory per instance matters (a task may hold millions), so the context has slots only for
    what most instances use; ``origin``, ``fires``, ``last_fire`` and ``repeats`` live in a
    side object created the first time one of them leaves its default. ``gk`` is the group key
    as the engine's instance table stores it (see :class:`GroupContexts`); ``key`` is its public
    form, a tuple (None for an ungrouped program).
    """

    __slots__ = ("_rare", "gk", "note", "state", "terminated", "timer", "tsym", "vars")

    def __init__(self, gk: Any, state: Any, variables: list[Any]) -> None:
        self.gk = gk
        #: The host's, never read nor kept by the engine: what the host notes of the instance
        #: between two reads of its changes (the Kafka worker and the backfill: the last input
        #: record it took since the last commit). On the instance, not in a table of the host's
        #: by key: the instance is at hand, and in cache, when the record is fed and when the
        #: commit reads it, where a table of a few thousand keys is not.
        self.note: Any = None
        self.state = state
        #: Variable slots (NO_VARIABLES, shared, for a program without variables).
        self.vars = variables
        #: The pending timer entry (engine.time_provider.TimerEntry) or None.
        self.timer: Any = None
        #: The time symbol the pending timer will deliver.
        self.tsym = -1
        self.terminated = False
        self._rare: RareFields | None = None

    @property
    def key(self) -> tuple[Any, ...] | None:
        """The group key (None for the instance of an ungrouped program)."""
        return self.gk

    #: What created the instance, as the host names it (for the Kafka worker and the backfill:
    #: the coordinates of the record that started it), and how many time events it has
    #: consumed. Together they name each timer firing by the key's own history, so outputs of a
    #: timer get the same id wherever and however often the firing is replayed.
    origin = _rare_field("origin", None, "What created the instance, as the host names it.")
    fires = _rare_field("fires", 0, "How many time events the instance has consumed.")
    #: Deadline of the last timer event and how many times in a row it fired at that instant
    #: (a guard against time markers that fire again and again without time passing).
    last_fire = _rare_field("last_fire", -1, "Deadline of the last timer event consumed.")
    repeats = _rare_field("repeats", 0, "Timer events in a row at the instant last_fire.")

    def __repr__(self) -> str:
        return f"InstanceContext(key={self.key!r}, state={self.state!r})"

    def __lt__(self, other: InstanceContext) -> bool:
        """Timer entries tie on (deadline, seq) only when contexts restored from different
        sources carry equal sequence numbers (or a cancelled entry meets its replacement);
        the group key then decides, so the order is still the same on every run."""
        return (self.key or ()) < (other.key or ())


class OneKeyContext(InstanceContext):
    """The instance of a program grouped by one value: ``gk`` holds the bare value (no tuple per
    instance, and the instance table hashes the value itself); ``key`` builds the tuple."""

    __slots__ = ()

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.gk,)


class GroupContexts(MutableMapping[tuple[Any, ...], InstanceContext]):
    """The instances of a grouped program by group key (a tuple), over the engine's table.

    The table (``table``, a plain dict the generated code reads directly) is keyed by ``gk``:
    the bare value when the program is grouped by one value, else the key tuple itself. This
    view translates, so hosts keep using group-key tuples. The table of a compact engine
    (``Engine.compact``: a program without timers whose host persists nothing) holds state
    numbers (``ctx.state.key``) or records of the variables and the state number; ``view`` then
    makes a context of an entry when a host asks for one, and ``entry`` an entry of a context."""

    __slots__ = ("entry", "one", "table", "view")

    def __init__(self, table: dict[Any, InstanceContext], one: bool) -> None:
        self.table = table
        self.one = one
        self.view: Callable[[Any, Any], InstanceContext] | None = None
        self.entry: Callable[[InstanceContext], Any] | None = None

    def gk(self, key: tuple[Any, ...]) -> Any:
        """The table's key for a group-key tuple."""
        if self.one:
            if type(key) is not tuple or len(key) != 1:
                raise KeyError(key)
            return key[0]
        return key

    def __getitem__(self, key: tuple[Any, ...]) -> InstanceContext:
        gk = self.gk(key)
        entry = self.table[gk]
        return entry if self.view is None else self.view(gk, entry)

    def get(self, key: tuple[Any, ...], default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        try:
            return self.gk(key) in self.table  # type: ignore[arg-type]  # any object may be asked: TypeError below
        except (KeyError, TypeError):
            return False

    def __setitem__(self, key: tuple[Any, ...], ctx: InstanceContext) -> None:
        if ctx.gk != self.gk(key):
            raise ValueError(f"instance of key {ctx.key!r} stored under {key!r}")
        self.table[ctx.gk] = ctx if self.entry is None else self.entry(ctx)

    def __delitem__(self, key: tuple[Any, ...]) -> None:
        del self.table[self.gk(key)]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        if self.one:
            return ((k,) for k in self.table)
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)

    def values(self) -> ValuesView[InstanceContext]:
        if self.view is not None:
            view = self.view
            return {gk: view(gk, st) for gk, st in self.table.items()}.values()
        return self.table.values()

    def clear(self) -> None:
        self.table.clear()

    def __repr__(self) -> str:
        return f"GroupContexts({len(self.table)} instances)"


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
    armed: Armed | None = None  # what set the pending timer (``Armed``), when the host named it


def encode(
    state: Any,
    variables: list[Any],
    key: Sequence[Any] | None,
    timer: Sequence[Any] | None,
    terminated: bool = False,
    origin: str | None = None,
    fires: int = 0,
    tag: int | None = None,
) -> bytes:
    """Serialize (state id, variables, key, (deadline, symbol, seq) of the pending timer, whether
    the instance has terminated — an ungrouped program stays terminated —, its origin, its
    count of time events and the tag of the program version that wrote it)."""
    key_list = list(key) if key is not None else None
    timer_list = list(timer) if timer is not None else None
    for v in variables:
        if type(v) not in _PLAIN:
            break
    else:  # the common case, every variable a number, string or boolean: no per-value encoding
        return _pack([FORMAT_VERSION, state, variables, key_list, timer_list, terminated, origin, fires, tag])
    e = _Encoder(_shared_lists(variables))
    payload = [
        FORMAT_VERSION,
        state,
        [e.enc(v) for v in variables],
        key_list,
        timer_list,
        terminated,
        origin,
        fires,
        tag,
    ]
    return msgpack.packb(payload, default=_Encoder._ext, use_bin_type=True)


def _unset_only(x: Any) -> Any:
    """``default`` of the packer of plain variables: UNSET is the one non-msgpack value there."""
    if x is UNSET:
        return _UNSET_EXT
    raise TypeError(f"cannot serialize {type(x).__name__}")


#: Packs a snapshot payload whose variables are numbers, strings, booleans or UNSET (a program
#: without arrays, structures or object variables): one C call, no per-value Python work.
pack_plain = msgpack.Packer(use_bin_type=True, default=_unset_only).pack


class _NeedsSharing(Exception):
    """The snapshot holds lists numbered for sharing: decode it with a stateful _Decoder."""


def _stateless_hook(code: int, data: bytes) -> Any:
    if code == _EXT_UNSET:
        return UNSET
    if code == _EXT_OBJECT:
        return orjson.loads(data)
    if code in (_EXT_LIST, _EXT_REF):
        raise _NeedsSharing
    return msgpack.ExtType(code, data)


def decode_payload(data: bytes) -> list[Any]:
    """The checked payload of a snapshot: [version, state, variables, key, timer, terminated,
    origin, fires, tag] (origin None and fires 0 for version 1, tag None before version 3), key
    and timer still as lists."""
    try:
        payload = msgpack.unpackb(data, ext_hook=_stateless_hook, strict_map_key=False, raw=False)
    except _NeedsSharing:
        payload = msgpack.unpackb(data, ext_hook=_Decoder().hook, strict_map_key=False, raw=False)
    check_format(payload)
    if len(payload) == 6:
        payload += [None, 0]
    if len(payload) == 8:
        payload.append(None)
    if type(payload[2]) is not list:
        raise ValueError("an instance-context snapshot whose variables are not a list")
    timer = payload[4]
    if timer is not None and (
        type(timer) is not list
        or len(timer) not in (3, 4)
        or not all(type(x) is int for x in timer[:3])
        or (len(timer) == 4 and armed_of(timer) is None)
    ):
        raise ValueError(f"an instance-context snapshot with a malformed timer {timer!r}")
    key = payload[3]
    if key is not None and type(key) is not list:
        raise ValueError(f"an instance-context snapshot with a malformed key {key!r}")
    if type(payload[6]) is not str:
        payload[6] = None
    if type(payload[7]) is not int:
        payload[7] = 0
    if type(payload[8]) is not int:
        payload[8] = None
    return payload


def armed_of(timer: list[Any]) -> Armed | None:
    """What set a snapshot's pending timer (its fourth item, bytes; a timer of three items, of a
    host that named none, has none)."""
    if len(timer) < 4:
        return None
    a = timer[3]
    return a if type(a) is bytes else None


def check_format(payload: Any) -> None:
    """ValueError unless ``payload`` is a snapshot of a format this build reads; a newer format
    says so and what to do (a worker of an older build meeting a newer one's state)."""
    if type(payload) is list and payload and (payload[0], len(payload)) in KNOWN_FORMATS:
        return
    version = payload[0] if type(payload) is list and payload else None
    if type(version) is int and version > FORMAT_VERSION:
        raise ValueError(
            f"an instance snapshot of format {version}, written by a newer EventScript (this build reads "
            f"formats 1 to {FORMAT_VERSION}): run the newer version on this state, or reset the program's "
            f"state (eventscript reset) to start it afresh"
        )
    raise ValueError("not an EventScript instance-context snapshot of a known version")


def snapshot_tag(data: bytes) -> int | None:
    """The program tag of a snapshot (None: a format before 3, or a host that wrote none), read
    without decoding its variables; ValueError for bytes that are not a snapshot."""
    try:
        payload = msgpack.unpackb(data, strict_map_key=False, raw=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise ValueError(f"not an EventScript instance-context snapshot: {exc}") from None
    check_format(payload)
    tag = payload[8] if len(payload) == 9 else None
    return tag if type(tag) is int else None


def retag(data: bytes, tag: int) -> bytes:
    """``data`` (a snapshot of any format) in the current format with program tag ``tag``; the
    variables' encoding is kept byte for byte (extension values pass through undecoded)."""
    payload = msgpack.unpackb(data, strict_map_key=False, raw=False)
    check_format(payload)
    if len(payload) == 6:
        payload += [None, 0]
    if len(payload) == 8:
        payload.append(None)
    payload[0], payload[8] = FORMAT_VERSION, tag
    return msgpack.packb(payload, use_bin_type=True)


def decode(data: bytes) -> ContextSnapshot:
    _, state, variables, key, timer, terminated, origin, fires, _ = decode_payload(data)
    return ContextSnapshot(
        state,
        variables,
        tuple(key) if key is not None else None,
        (timer[0], timer[1], timer[2]) if timer is not None else None,
        bool(terminated),
        origin,
        fires,
        armed_of(timer) if timer is not None else None,
    )
