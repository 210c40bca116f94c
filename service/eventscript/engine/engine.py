"""The engine: runs a compiled program over a stream of events (language document §6.1).

For each arriving event: find the instance context of its group key (creating it, and running
the initial actions in it, on the key's first event, whether or not the event is then accepted), classify the event by its case clause,
look up the transition of the current state on that symbol, run its compiled actions (which
also start or stop the instance's timer) and move to the target state. An accepting state with
no way out ends the instance. Errors become ``$error`` events and never stop the engine.

The engine knows nothing of Kafka, Spark or files: hosts give it a consumer for what it emits
and a :class:`TimeProvider`, and feed it ``(name, value)`` pairs with values already in their
run-time form (``engine.encoding`` converts from JSON).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any

from ..automata.compiled import CompiledProgram
from ..automata.hybrid import TransitionCache
from ..automata.machine import DFAMachine, LazyDFA
from ..automata.simulate import PositionSets, step_expression
from ..language import ir
from ..language.checker import resolve_external
from ..language.types import BOOLEAN, DOUBLE, LONG, STRING, TIME, ArrayType, StructType, Type
from . import builtins, context
from .batch import feed_many_source
from .codegen import CodeGen, SymbolPlan, one_value_key
from .context import NO_VARIABLES, GroupContexts, InstanceContext, OneKeyContext, RareFields
from .encoding import DecodeError, decode
from .events import ERROR_EVENT, ERROR_TYPE, Emitted, ErrorCode, EventConsumer
from .externals import make_external
from .liveness import retiring_states
from .time_provider import DEADLINE, SEQ, TARGET, SimulatedTimeProvider, TimeProvider
from .timeutil import MAX_TIME, TimeRangeError, format_time, next_match
from .values import UNSET, deep_copy, double_div, double_rem, java_div, java_rem, wrap

#: Largest array ``new T[n]`` may allocate.
MAX_ARRAY = 50_000_000
#: Consecutive timer events of one instance at one instant before its timer is stopped.
MAX_FIRES_AT_ONE_INSTANT = 1000
#: The feed inlines at most this many distinct action functions per input symbol, each of at
#: most INLINE_LINES lines (more would make the feed long for little gain); others are called.
INLINE_BODIES = 4
INLINE_LINES = 24
#: Names of the generated code's namespace rebound after the feeds are defined (besides the
#: output functions ``_e<k>``): ``feed_many`` reads them per event (``Engine._hoistable``).
_REBOUND = frozenset({"_SIM", "_loader", "_C"})
#: Lazy-DFA transitions per generation of its cache (``automata.hybrid``): at most twice this
#: many are kept, each ~200 bytes. A program that thrashes it falls back after three generations.
DEFAULT_LAZY_CACHE = 10_000
#: How a lazy DFA takes its steps (``lazy_mode``): "auto" caches transitions and falls back to
#: simulating every step when the cache thrashes; "cache" never falls back (tests); "simulate"
#: never caches (the fallback forced on, for tests and benchmarks). Engines created without
#: ``lazy_mode`` take it from this environment variable, so a whole tester or conformance run can
#: be forced onto the fallback (with a low ``--state-limit``, so that programs compile to lazy DFAs):
#: ``EVENTSCRIPT_LAZY_MODE=simulate eventscript test --state-limit 5 ...``.
LAZY_MODES = ("auto", "cache", "simulate")
LAZY_MODE_ENV = "EVENTSCRIPT_LAZY_MODE"
#: Whether a grouped instance entering a state where it equals a fresh one is released
#: ("retired", see ``engine.liveness``). Engines created without ``retire`` take it from this
#: environment variable: "auto" (the default) retires where it saves something, for hosts that
#: persist instances (``track_dirty``: a store entry and a changelog record per instance) and
#: in compact engines of bare state numbers (a table entry); elsewhere, records included, a retired
#: instance would be made again at its key's next event, which costs more than keeping it (~1 µs per match). "on" and "off" force
#: it, so a whole tester or conformance run can be compared: ``EVENTSCRIPT_RETIRE=on eventscript test``.
RETIRE_ENV = "EVENTSCRIPT_RETIRE"
RETIRE_MODES = ("auto", "on", "off")
#: Whether a grouped program without timers keeps each key's state number in its table
#: ("compact", no context per key) when its host persists nothing: the bare number, or with
#: variables or initial actions a record (a list) of the variables then the number. Engines
#: created without ``compact`` take it from this environment variable ("on", the default, or "off").
COMPACT_ENV = "EVENTSCRIPT_COMPACT"


_NOFN = object()  # "not computed yet" in the lazy DFA's function caches (None means no function)


def _no_actions(ctx: InstanceContext, ev: Any) -> None:
    """The initial actions of a program that has none."""


_PLAIN_TYPES = (LONG, DOUBLE, STRING, BOOLEAN, TIME)


def _plain_kind(t: Type) -> str:
    """How a variable of type t snapshots: "plain" (a number, string or boolean), "flat" (an
    array or structure of those: a list of them), or "" (anything else: generic encoding)."""
    if t in _PLAIN_TYPES:
        return "plain"
    if isinstance(t, ArrayType) and t.element in _PLAIN_TYPES:
        return "flat"
    if isinstance(t, StructType) and all(ft in _PLAIN_TYPES for _, ft in t.fields):
        return "flat"
    return ""


def _dfa_state_id(st: RState) -> Any:
    """An eager DFA state's snapshot form: its number."""
    return st.key


class EngineError(Exception):
    """A compiled program that cannot be run (e.g. an external function that cannot be loaded)."""


class RState:
    """A machine state at run time: its transition row (indexed by symbol) and timer behaviour."""

    __slots__ = ("accepting", "ends", "key", "row", "terminal", "timed", "timer_fn", "timers")

    def __init__(self, key: Hashable, accepting: bool, nsym: int) -> None:
        self.key = key
        self.accepting = accepting
        self.row: list[RTrans | None] = [None] * nsym
        self.terminal = False
        #: An instance entering the state is released: it terminates, or (a grouped program's
        #: start state where nothing is live, ``engine.liveness``) it equals a fresh instance.
        self.ends = False
        self.timed = False
        self.timers: tuple[int, ...] = ()  # time symbols with a transition, in program-text order
        self.timer_fn: Callable[[InstanceContext], None] | None = None

    def __repr__(self) -> str:
        return f"RState({self.key!r})"


class RTrans:
    __slots__ = ("code", "fn", "target", "target_key", "units")

    def __init__(self, target_key: Hashable, units: tuple[int, ...]) -> None:
        self.target_key = target_key
        self.target: RState | None = None
        self.units = units
        self.fn: Callable[[InstanceContext, Any], None] | None = None
        #: Which of its symbol's distinct functions ``fn`` is (0: none), for the inlined feed.
        self.code = 0


@dataclass(slots=True)
class InputRT:
    name: str
    index: int
    ty: Type
    symbol: int  # the symbol, when the input has no case clause (else -1)
    classify: Callable[[Any, Any], int] | None
    key: Callable[[Any, Any], tuple[Any, ...]] | None


class Engine:
    """Runs one compiled program. Not thread-safe: one engine per task/partition."""

    def __init__(self, compiled: CompiledProgram, consumer: EventConsumer | None = None,
                 time: TimeProvider | None = None, *, name: str | None = None, tz: tzinfo = UTC,
                 search_dirs: Iterable[Path] = (), lazy_cache_states: int = DEFAULT_LAZY_CACHE,
                 track_dirty: bool = False, lazy_mode: str | None = None, retire: bool | None = None,
                 compact: bool | None = None) -> None:
        self.compiled = compiled
        self.program: ir.ProgramIR = compiled.program
        self.machine: DFAMachine | LazyDFA = compiled.machine
        self.name = name or self.program.name
        self._consumer: EventConsumer = consumer or (lambda e: None)
        self.time: TimeProvider = time or SimulatedTimeProvider()
        self.tz = tz
        self.grouped = self.program.grouped
        self.nsym = len(self.program.symbols)
        self.nvars = len(self.program.variables)
        self.output_types = [o.ty for o in self.program.outputs]
        self.output_names = [o.name for o in self.program.outputs]
        #: The instances of a grouped program: ``_table`` by ``ctx.gk`` (the bare value when the
        #: program is grouped by one value), read by the generated code; ``contexts`` the same
        #: by group-key tuple, for hosts.
        self._table: dict[Any, InstanceContext] = {}
        self.one_key = one_value_key(self.program)
        self.contexts = GroupContexts(self._table, self.one_key)
        self._context_class = OneKeyContext if self.one_key else InstanceContext
        self._key_arity = len(self.program.inputs[0].group or ()) if self.grouped else 0
        self.single: InstanceContext | None = None
        self.lazy_cache_states = lazy_cache_states
        #: Contexts changed since the host last drained them (None: not tracked).
        self.dirty: dict[int, InstanceContext] | None = {} if track_dirty else None
        #: Host hooks for output ids (see InstanceContext.origin): what names the cause of a new
        #: instance, and who is told before an instance consumes a time event.
        #: (``origin_of``, ``loader`` and ``on_terminate`` are properties over these: setting one
        #: turns a compact engine into a normal one, see ``_decompact``.)
        self._origin_of: Callable[[], str] | None = None
        self.before_timer: Callable[[InstanceContext], None] | None = None
        self._loader: Callable[[tuple[Any, ...]], InstanceContext | None] | None = None
        self._on_terminate: Callable[[InstanceContext], None] | None = None
        self.compact = False
        self._gen = CodeGen(self.program)
        self._ns = self._namespace(search_dirs)
        self._bind_emitters()
        self._fns: dict[tuple[Any, ...], Callable[..., Any] | None] = {}
        self._timer_fns: dict[tuple[int, ...], Callable[[InstanceContext], None]] = {}
        self._states: dict[Hashable, RState] = {}
        self._inputs: dict[str, InputRT] = {}
        for inp in self.program.inputs:
            self._inputs[inp.name] = self._input_rt(inp)
        #: The lazy DFA's steps over int masks of NFA states, and its transition cache (None for a DFA).
        self.positions: PositionSets | None = None
        self.lazy_cache: TransitionCache | None = None
        self._start: Any
        if isinstance(self.machine, LazyDFA):
            self._setup_lazy(lazy_mode or os.environ.get(LAZY_MODE_ENV) or "auto")
        else:
            start_key, init_units = self.machine.start()
            self._start = self._state(start_key)
            self._start_terminal = self._start.terminal
            self._ns["_start_row"] = self._start.row
            self._init_fn = self._function(init_units, self._start, None) or _no_actions
            self._materialize()
        if compact is None:
            compact = os.environ.get(COMPACT_ENV, "on") != "off"
        self.compact = compact and self._compactable(track_dirty)
        #: A compact table's entries: None, bare state numbers; else records (lists) of the
        #: variables then the state number, at this index (``nvars``).
        self._record: int | None = self.nvars if self.nvars or self._init_fn is not _no_actions else None
        mode = ("on" if retire else "off") if retire is not None else os.environ.get(RETIRE_ENV) or "auto"
        if mode not in RETIRE_MODES:
            raise ValueError(f"retire (or ${RETIRE_ENV}) must be one of {', '.join(RETIRE_MODES)}, not {mode!r}")
        if self.positions is None and (mode == "on" or (mode == "auto" and (track_dirty or (self.compact and self._record is None)))):
            self._retire()
        self.snapshot = self._snapshotter()  # type: ignore[method-assign]
        self._ns["_create"] = self._creator()
        self._ns["_keyed"] = self._keyer()
        self._define_feeds(track_dirty)

    def _define_feeds(self, track_dirty: bool) -> None:
        lazy = self._simulated_step_lines() if self.positions is not None else None
        plans = self._symbol_plans(self.compact) if self.positions is None else None
        record = self._record if self.compact else None
        if self.compact:
            self.contexts.view, self.contexts.entry = self._view, self._entry
            self._ns.update(self._compact_tables())
        self._feed_source = self._gen.feed(self.grouped, lazy=lazy, track_dirty=track_dirty, plans=plans,
                                           compact=self.compact, record=record)
        self.feed = self._define("feed", self._feed_source)
        self._feed_many: Callable[[Iterable[tuple[str, Any]]], None] | None = None  # made when first called
        self.__dict__.pop("feed_many", None)
        if self.grouped:
            self.feed_keyed = self._define("feed_keyed", self._gen.feed(True, keyed=True, lazy=lazy,
                                                                        track_dirty=track_dirty, plans=plans,
                                                                        compact=self.compact, record=record))

    def _hoistable(self, name: str) -> bool:
        """May ``feed_many`` read the namespace's ``name`` once per batch? Not names rebound
        while events run (``_SIM``: the lazy cache switched off) or by hosts between them (the
        loader, the consumer ``_C`` and output functions ``_e<k>``, ``_bind_emitters``)."""
        return name in self._ns and name not in _REBOUND and not (name[:2] == "_e" and name[2:].isdigit())

    # -- compact tables: a key's state number (and variables), no context ------------------

    def _compactable(self, track_dirty: bool) -> bool:
        """Can the table hold each key's state number (and variables, ``_record``) instead of a
        context? Only when a context would hold nothing else: an eager DFA (its states are
        numbered), no timer, and no host that persists instances (``track_dirty``; ``loader``
        and the other hooks turn the engine back, ``_decompact``)."""
        return self.grouped and self.positions is None and not self.program.time_symbols and not track_dirty

    def _compact_tables(self) -> dict[str, Any]:
        """The names the compact feed reads (``CodeGen._compact_feed``): per symbol, each state's
        target number, function code and function, by state number (an eager DFA's states are
        numbered 0 to n - 1)."""
        states = [self._states[k] for k in range(len(self._states))]
        ns: dict[str, Any] = {"_tab": self._table, "_S": self._start.key, "_view": self._view,
                              "_E": tuple(st.ends for st in states), "_ST": tuple(states),
                              "_VC": self._context_class, "_NV": NO_VARIABLES, "_rec": self._recorder()}
        nxt, fns = [], []
        for sym in range(self.nsym):
            rows = [st.row[sym] for st in states]
            nxt.append(tuple(None if tr is None else tr.target.key for tr in rows))  # type: ignore[union-attr]
            fns.append(tuple(None if tr is None else tr.fn for tr in rows))
            ns[f"_N{sym}"], ns[f"_F{sym}"] = nxt[-1], fns[-1]
            ns[f"_K{sym}"] = tuple(0 if tr is None else tr.code for tr in rows)
        ns["_NS"], ns["_FS"] = nxt, fns
        return ns

    def _view(self, gk: Any, entry: Any) -> InstanceContext:
        """A context for a compact table's entry, a state number or a record (for errors and
        hosts): a copy, so changing it changes nothing in the engine (``holds`` compares)."""
        if self._record is None:
            return self._context_class(gk, self._states[entry], NO_VARIABLES)
        return self._context_class(gk, self._states[entry[-1]], entry[:-1] or NO_VARIABLES)

    def _entry(self, ctx: InstanceContext) -> Any:
        """A compact table's entry for ``ctx`` (the reverse of ``_view``)."""
        return ctx.state.key if self._record is None else [*ctx.vars, ctx.state.key]

    def _entry_state(self, gk: Any) -> int | None:
        """The state number a compact table holds for ``gk`` (None: no entry)."""
        entry = self._table.get(gk)
        return entry if entry is None or self._record is None else entry[-1]  # type: ignore[return-value]

    def _recorder(self) -> Callable[[Any], list[Any]]:
        """``_rec(gk)`` for a compact feed of records: a key's new record at the start state,
        in the table, its initial actions run on a context whose variables are the record."""
        table, start, cls = self._table, self._start, self._context_class
        init = None if self._init_fn is _no_actions else self._init_fn
        fresh = [UNSET] * self.nvars + [start.key]

        def new(gk: Any) -> list[Any]:
            v = table[gk] = fresh.copy()
            if init is not None:
                init(cls(gk, start, v), None)
            return v

        return new

    def _decompact(self) -> None:
        """Turn a compact engine into one with a context per key (a host hook was set)."""
        if not self.compact:
            return
        self.compact = False
        self.contexts.view = self.contexts.entry = None
        for gk, st in list(self._table.items()):
            self._table[gk] = self._view(gk, st)  # type: ignore[arg-type]
        self._define_feeds(self.dirty is not None)

    @property
    def origin_of(self) -> Callable[[], str] | None:
        """Host hook for output ids: what names the cause of a new instance."""
        return self._origin_of

    @origin_of.setter
    def origin_of(self, hook: Callable[[], str] | None) -> None:
        if hook is not None:
            self._decompact()
        self._origin_of = hook

    @property
    def loader(self) -> Callable[[tuple[Any, ...]], InstanceContext | None] | None:
        """Host hook for state larger than memory: group key -> the instance, restored from the
        host's store into ``contexts`` (Engine.restore), or None if the key has none. The
        generated feed asks it when a key is not in ``contexts``, before creating an instance."""
        return self._loader

    @loader.setter
    def loader(self, hook: Callable[[tuple[Any, ...]], InstanceContext | None] | None) -> None:
        if hook is not None:
            self._decompact()
        self._loader = self._ns["_loader"] = hook

    @property
    def on_terminate(self) -> Callable[[InstanceContext], None] | None:
        """Host hook told of every instance that ends (after it is released): a host with a
        store must not load the key's stored snapshot again before the tombstone is written."""
        return self._on_terminate

    @on_terminate.setter
    def on_terminate(self, hook: Callable[[InstanceContext], None] | None) -> None:
        if hook is not None:
            self._decompact()
        self._on_terminate = hook

    # -- code generation -------------------------------------------------------------------

    def _namespace(self, search_dirs: Iterable[Path]) -> dict[str, Any]:
        ns: dict[str, Any] = {
            "UNSET": UNSET,
            "_NAN": math.nan,
            "_INF": math.inf,
            "_err": self._error,
            "_unset": self._unset,
            "_ldiv": self._ldiv,
            "_lrem": self._lrem,
            "_fdiv": double_div,
            "_fmod": double_rem,
            "_idx": self._idx,
            "_setidx": self._setidx,
            "_new": self._new,
            "_copy": deep_copy,
            "_now": self.time.now,
            "_settimer": self._timer_setter(),
            "_disarm": self.time.cancel_timer,
            "_cget": self._table.get,
            "_loader": None,  # Engine.loader (the property keeps it up to date)
            "_single": self._single,
            "_unexpected": self._unexpected,
            "_unexpected_key": self._unexpected_key,
            "_resolve": self._resolve,
            "_terminate": self._terminate if self.program.time_symbols else self._untimed_terminate,
            "_dirty": self.dirty,
            "_trange": self._time_out_of_range,
            "_wrap": wrap,
            "_tfar": self._deadline_out_of_range,
            "_elapse_d": self._elapse_d,
            "_pattern": self._pattern,
            "_fmtd": builtins.format_double,
            "_fmtt": format_time,
        }
        for fid, fn in builtins.IMPLEMENTATIONS.items():
            ns[f"_b_{fid}"] = fn
        dirs = list(search_dirs)
        if self.compiled.source_name:
            dirs.append(Path(self.compiled.source_name).resolve().parent)
        for ext in self.program.externals:
            fn, problem = resolve_external(ext.impl, dirs)
            if fn is None:
                raise EngineError(f"external function {ext.name}: {problem}")
            ns[f"_x{ext.index}"] = make_external(ext, fn, self._error)
        return ns

    def _define(self, name: str, source: str) -> Callable[..., Any]:
        code = compile(source, f"<eventscript {self.name}:{name}>", "exec")
        exec(code, self._ns)
        return self._ns[name]

    def _function(self, units: tuple[int, ...], target: RState,
                  source: RState | None) -> Callable[..., Any] | None:
        """The compiled function of a transition: its units, then the target's timer start, or a
        timer stop when leaving a timed state for an untimed one. Shared between transitions."""
        return self._function_of(units, target.timers, bool(source is not None and source.timed and not target.timed))

    def _function_of(self, units: tuple[int, ...], timers: tuple[int, ...],
                     disarm: bool) -> Callable[..., Any] | None:
        fn_key = (units, timers, disarm)
        if fn_key in self._fns:
            return self._fns[fn_key]
        name = f"_t{len(self._fns)}"
        src = self._gen.transition(name, units, fn_key[1], fn_key[2])
        fn = None if src is None else self._define(name, src)
        self._fns[fn_key] = fn
        return fn

    def _state(self, key: Hashable) -> RState:
        st = self._states.get(key)
        if st is not None:
            return st
        st = RState(key, self.machine.accepting(key), self.nsym)
        trans = self.machine.transitions(key)
        for sym, (tkey, units) in trans.items():
            st.row[sym] = RTrans(tkey, units)
        st.terminal = st.ends = st.accepting and not trans
        timers = tuple(sorted(s for s in trans if s in self.program.time_symbols))
        if timers:
            st.timed = True
            st.timers = timers
            fn = self._timer_fns.get(timers)
            if fn is None:
                name = f"_s{len(self._timer_fns)}"
                fn = self._timer_fns[timers] = self._define(name, self._gen.timer_start(name, list(timers)))
            st.timer_fn = fn
        self._states[key] = st
        return st

    def _resolve(self, st: RState, tr: RTrans) -> RState:
        target = self._state(tr.target_key)
        tr.fn = self._function(tr.units, target, st)
        tr.target = target
        return target

    def _materialize(self) -> None:
        assert isinstance(self.machine, DFAMachine)
        for k in range(self.machine.size):
            self._state(k)
        for st in list(self._states.values()):
            for tr in st.row:
                if tr is not None:
                    self._resolve(st, tr)

    def _retire(self) -> None:
        """Mark the states where an instance equals a fresh one (``liveness``) as ending it."""
        assert isinstance(self.machine, DFAMachine)
        for key in retiring_states(self.program, self.machine):
            self._states[key].ends = True

    def _symbol_plans(self, by_key: bool = False) -> dict[int, SymbolPlan]:
        """For each symbol, number the distinct functions of the eager DFA's transitions on it
        (``RTrans.code``) and say what the feed must handle: the first INLINE_BODIES functions of
        at most INLINE_LINES lines are inlined in the feed, saving a call per event."""
        keys = {fn: fn_key for fn_key, fn in self._fns.items() if fn is not None}
        plans: dict[int, SymbolPlan] = {}
        states = list(self._states.values())
        for sym in range(self.nsym):
            codes: dict[Callable[..., Any] | None, int] = {}
            bodies: list[list[str]] = []
            total, ends = True, False
            for st in states:
                tr = st.row[sym]
                if tr is None:
                    total = False
                    continue
                assert tr.target is not None
                ends = ends or tr.target.ends
                if tr.fn is None:
                    codes[None] = 0
                    continue
                code = codes.get(tr.fn)
                if code is None:
                    code = codes[tr.fn] = sum(1 for f in codes if f is not None) + 1
                    body = self._gen.transition_body(*keys[tr.fn], by_key=by_key)
                    if code == len(bodies) + 1 and len(bodies) < INLINE_BODIES and body is not None \
                            and len(body) <= INLINE_LINES:
                        bodies.append(body)
                tr.code = code
            distinct = len(codes) - (None in codes)
            targets = {tr.target.key for st in states if (tr := st.row[sym]) is not None}  # type: ignore[union-attr]
            plans[sym] = SymbolPlan(bodies, distinct > len(bodies), total, ends,
                                    uniform=total and len(codes) == 1 and len(bodies) == 1,
                                    target=targets.pop() if total and len(targets) == 1 else None)
        return plans

    # -- the lazy DFA ----------------------------------------------------------------------

    def _setup_lazy(self, mode: str) -> None:
        """A lazy DFA's states are int masks of NFA states (``automata.simulate``). The generated
        feed looks the transition up in the cache ``_M`` (``automata.hybrid``) and on a miss
        calls ``_miss``, generated here with the step unrolled for this automaton."""
        if mode not in LAZY_MODES:
            raise ValueError(f"lazy_mode (or ${LAZY_MODE_ENV}) must be one of {', '.join(LAZY_MODES)}, "
                             f"not {mode!r}")
        assert isinstance(self.machine, LazyDFA)
        ps = self.positions = PositionSets(self.machine.efa, self.machine.occ, self.nsym)
        cache = self.lazy_cache = TransitionCache(self.nsym, self.lazy_cache_states,
                                                  enabled=mode != "simulate", adaptive=mode == "auto",
                                                  on_switch_off=self._simulate_every_step)
        self._time_syms = tuple(sorted(self.program.time_symbols))
        timed = 0
        for s in self._time_syms:
            timed |= ps.has[s]
        self._timed_mask = timed
        self._start = ps.start
        self._start_terminal = ps.terminal(ps.start)
        self._ns["_start_row"] = [True if ps.start & h else None for h in ps.has]
        init = self._function_of(ps.initial_units, ps.symbols(ps.start, self._time_syms), False)
        self._init_fn = init or _no_actions
        self._lazy_fns: dict[tuple[int, ...], Callable[..., Any] | None] = {}
        self._ns.update({
            "_M": cache.young, "_cache": cache, "_T": ps.tables, "_ACT": ps.act, "_OUT": ps.out,
            "_step": ps.step, "_FN": [{} for _ in range(self.nsym)], "_NOFN": _NOFN, "_lfn": self._lazy_function,
            "_fnmiss": self._lazy_function_cached, "_SIM": not cache.enabled,
        })
        self._miss = self._define("_miss", self._miss_source(ps))

    def _simulate_every_step(self) -> None:
        """The cache thrashed and switched itself off: the feed simulates every step inline."""
        self._ns["_SIM"] = True

    def _simulated_step_lines(self) -> list[str]:
        """The feed's inline step while the cache is off (see ``CodeGen.feed``)."""
        ps = self.positions
        assert ps is not None
        step = step_expression(ps, "m", "t")
        lines = ["t = _T[sym]", f"n = {step}"] if step else ["n = _step(m, sym)"]
        lines += ["if not n:", "    return _unexpected(ctx, name, sym)", "ctx.state = n"]
        if self._time_syms:
            lines += ["fn = _lfn(m, n, sym)"]
        else:
            lines += ["fn = _FN[sym].get(m & _ACT[sym], _NOFN)", "if fn is _NOFN:", "    fn = _fnmiss(m, n, sym)"]
        return lines

    def _lazy_function_cached(self, m: int, n: int, sym: int) -> Callable[..., Any] | None:
        """For programs without timers the function depends on the symbol and on the states of m
        whose edges on it carry actions only: kept in ``_FN[sym]`` under those states."""
        ps = self.positions
        assert ps is not None
        fn = self._ns["_FN"][sym][m & ps.act[sym]] = self._lazy_function(m, n, sym)
        return fn

    def _miss_source(self, ps: PositionSets) -> str:
        """``_miss(m, sym)``: the transition from mask m on sym as (target mask, function, whether
        the target ends the instance), or None when there is none; from the cache's old generation
        if it is there, else computed (and cached unless the cache is off)."""
        step = step_expression(ps, "m", "t")
        lines = ["def _miss(m, sym):",
                 "    if _cache.enabled:",
                 "        e = _cache.recall(m, sym)",
                 "        if e is not None:",
                 "            return e"]
        lines += ["    t = _T[sym]", f"    n = {step}"] if step else ["    n = _step(m, sym)"]
        lines += ["    if not n:", "        return None"]
        if self._time_syms:
            lines += ["    fn = _lfn(m, n, sym)"]
        else:
            lines += ["    fn = _FN[sym].get(m & _ACT[sym], _NOFN)",
                      "    if fn is _NOFN:",
                      "        fn = _fnmiss(m, n, sym)"]
        lines += ["    e = (n, fn, not n & _OUT)",
                  "    if _cache.enabled:",
                  "        _cache.remember(m, sym, e)",
                  "    return e"]
        return "\n".join(lines)

    def _lazy_function(self, m: int, n: int, sym: int) -> Callable[..., Any] | None:
        """The compiled function of the step m → n on sym: its merged units, then the timer of n
        (or a stop, leaving a timed state for an untimed one), as the DFA's transition has."""
        ps = self.positions
        assert ps is not None
        timed = self._timed_mask
        key = (sym, m & ps.act[sym], bool(m & timed), n & timed)
        fn = self._lazy_fns.get(key, _NOFN)
        if fn is _NOFN:
            timers = ps.symbols(n, self._time_syms)
            fn = self._lazy_fns[key] = self._function_of(ps.units(m, sym), timers, bool(m & timed) and not timers)
        return fn

    def _lazy_step(self, m: int, sym: int) -> tuple[int, Callable[..., Any] | None, bool] | None:
        e = self._ns["_M"][sym].get(m)
        return e if e is not None else self._miss(m, sym)

    def _terminal(self, state: Any) -> bool:
        return self.positions.terminal(state) if self.positions is not None else state.terminal


    def _input_rt(self, inp: ir.Input) -> InputRT:
        src, sym = self._gen.classifier(f"_c{inp.index}", inp.classify)
        classify = self._define(f"_c{inp.index}", src) if src is not None else None
        key = None
        if inp.group is not None:
            key = self._define(f"_k{inp.index}", self._gen.group_key(f"_k{inp.index}", inp.group))
        return InputRT(inp.name, inp.index, inp.ty, -1 if sym is None else sym, classify, key)

    # -- helpers called by generated code --------------------------------------------------

    def _error(self, ctx: InstanceContext | None, code: int, message: str) -> None:
        key = ctx.key if ctx is not None else None
        self.consumer(Emitted(self.name, ERROR_EVENT, [code, message], ERROR_TYPE, self.time.now(), key))

    @property
    def consumer(self) -> EventConsumer:
        return self._consumer

    @consumer.setter
    def consumer(self, consumer: EventConsumer) -> None:
        """Set where emitted events go (rebinds the emit functions of the generated code)."""
        self._consumer = consumer
        if hasattr(self, "_ns"):
            self._bind_emitters()

    def _bind_emitters(self) -> None:
        consumer, name, now = self._consumer, self.name, self.time.now
        handlers = getattr(self, "_output_handlers", {})
        one = getattr(self, "one_key", False)
        for k, (out_name, ty) in enumerate(zip(self.output_names, self.output_types)):
            if one:  # the key tuple without the property call
                def emit(ctx: InstanceContext, value: Any, _n: str = out_name, _t: Type = ty) -> None:
                    consumer(Emitted(name, _n, value, _t, now(), (ctx.gk,)))
            else:
                def emit(ctx: InstanceContext, value: Any, _n: str = out_name, _t: Type = ty) -> None:
                    consumer(Emitted(name, _n, value, _t, now(), ctx.key))

            self._ns[f"_e{k}"] = handlers.get(out_name, emit)
            self._ns[f"_OT{k}"] = ty
        # (compact feeds build their outputs inline, CodeGen.emit_by_key; an output handler turns them off)
        self._ns.update(_C=consumer, _PN=name, _NEWE=object.__new__, _EM=Emitted)

    def set_output_handler(self, output: str, handler: Callable[[InstanceContext, Any], None]) -> None:
        """Deliver one output event's emissions to ``handler(ctx, value)`` instead of the consumer
        (hosts use it to skip building an Emitted per event). ``value`` is already a snapshot; the
        emission time is ``self.time.now()``, the key ``ctx.key``."""
        if output not in self.output_names:
            raise KeyError(f"no output event {output!r}")
        self._decompact()  # a handler takes a context: the compact feed emits by key (emit_by_key)
        if not hasattr(self, "_output_handlers"):
            self._output_handlers: dict[str, Callable[[InstanceContext, Any], None]] = {}
        self._output_handlers[output] = handler
        self._bind_emitters()

    def _unset(self, ctx: InstanceContext, name: str, default: Any) -> Any:
        self._error(ctx, ErrorCode.UNSET_VARIABLE, f"variable {name} has not been set")
        return default

    def _ldiv(self, ctx: InstanceContext, a: int, b: int) -> int:
        if b == 0:
            self._error(ctx, ErrorCode.DIVISION_BY_ZERO, f"long division by zero ({a} / 0)")
            return 0
        return java_div(a, b)

    def _lrem(self, ctx: InstanceContext, a: int, b: int) -> int:
        if b == 0:
            self._error(ctx, ErrorCode.DIVISION_BY_ZERO, f"long remainder by zero ({a} % 0)")
            return 0
        return java_rem(a, b)

    def _idx(self, ctx: InstanceContext, a: list[Any], i: int, default: Any) -> Any:
        if 0 <= i < len(a):
            return a[i]
        self._error(ctx, ErrorCode.SUBSCRIPT_OUT_OF_BOUNDS, f"subscript {i} is out of bounds for length {len(a)}")
        return default

    def _setidx(self, ctx: InstanceContext, a: list[Any], i: int, value: Any) -> None:
        if 0 <= i < len(a):
            a[i] = value
        else:
            self._error(ctx, ErrorCode.SUBSCRIPT_OUT_OF_BOUNDS,
                        f"subscript {i} is out of bounds for length {len(a)}")

    def _new(self, ctx: InstanceContext, n: int, factory: Callable[[], Any]) -> list[Any]:
        if n < 0 or n > MAX_ARRAY:
            self._error(ctx, ErrorCode.INVALID_OPERATION,
                        f"array size {n} is {'negative' if n < 0 else 'too large'}")
            return []
        d = factory()
        if isinstance(d, list):
            return [factory() for _ in range(n)]
        return [d] * n

    def _timer_setter(self) -> Callable[[InstanceContext, int], Any]:
        """``_settimer(ctx, deadline)`` for generated code: straight to the provider's queue when
        the provider does not override set_timer (one call fewer on every timed transition)."""
        if type(self.time).set_timer is TimeProvider.set_timer:
            return functools.partial(self.time.timers.set, self)
        return functools.partial(self.time.set_timer, self)

    def _elapse_d(self, ctx: InstanceContext, now: int, amount: float, unit_us: int) -> int | None:
        try:
            d = now + max(0, round(amount * unit_us))
        except (OverflowError, ValueError):  # infinite or NaN
            self._error(ctx, ErrorCode.INVALID_OPERATION, f"elapse amount {amount} is not a usable duration")
            return None
        return d if d <= MAX_TIME else self._deadline_out_of_range(ctx, d)

    def _time_out_of_range(self, ctx: InstanceContext, t: int) -> int:
        self._error(ctx, ErrorCode.INVALID_OPERATION, f"time out of range ({t} µs is outside years 1 to 9999)")
        return 0

    def _deadline_out_of_range(self, ctx: InstanceContext, d: int) -> None:
        self._error(ctx, ErrorCode.INVALID_OPERATION, "elapse deadline beyond year 9999: the marker cannot fire")
        return None

    def _pattern(self, ctx: InstanceContext, now: int, comps: tuple[Any, ...]) -> int | None:
        second = comps[5]
        micro = 0
        if isinstance(second, float):
            if not math.isfinite(second):
                self._error(ctx, ErrorCode.INVALID_OPERATION, f"second {second} is not a finite number")
                return None
            whole = math.floor(second)
            micro = round((second - whole) * 1_000_000)
            second = int(whole)
        try:
            return next_match(now, (*comps[:5], second), micro, self.tz)
        except TimeRangeError as exc:
            self._error(ctx, ErrorCode.INVALID_OPERATION, f"arrive pattern: {exc}")
            return None

    # -- the public interface ------------------------------------------------------------

    def start(self) -> None:
        """Start an ungrouped program: create its one instance and run the initial actions.

        Grouped programs create instances on demand; for them this does nothing.
        """
        if self.grouped or self.single is not None:
            return
        ctx = InstanceContext(None, self._start, [UNSET] * self.nvars if self.nvars else NO_VARIABLES)
        ctx.origin = "start"
        self.single = ctx
        self._init_fn(ctx, None)
        if self._start_terminal:
            ctx.terminated = True
        self._touch(ctx)

    def _creator(self) -> Callable[[Any], InstanceContext]:
        """``_create(gk)`` for the generated feed: a new instance for the table key ``gk`` (see
        ``_table``), its initial actions run. A closure over what it needs, since every key's
        first event pays for it."""
        cls, start, table, nvars, engine = self._context_class, self._start, self._table, self.nvars, self
        init = None if self._init_fn is _no_actions else self._init_fn

        def create(gk: Any) -> InstanceContext:
            ctx = cls(gk, start, [UNSET] * nvars if nvars else NO_VARIABLES)
            if engine._origin_of is not None:
                ctx.origin = engine._origin_of()
            table[gk] = ctx
            if init is not None:
                init(ctx, None)
            return ctx

        return create

    def _touch(self, ctx: InstanceContext) -> None:
        if self.dirty is not None:
            self.dirty[id(ctx)] = ctx

    def feed_keyed(self, name: str, value: Any, key: tuple[Any, ...]) -> InstanceContext | None:  # replaced
        """``feed`` for a grouped program when the host already computed the event's group key
        (with :meth:`group_key`, to route it); saves computing it twice."""
        raise AssertionError("replaced in __init__ for grouped programs")

    def feed(self, name: str, value: Any) -> InstanceContext | None:  # replaced per engine
        """Process one named event; ``value`` must already conform to the declared type.

        Returns the instance context the event went to (None for an undeclared name). The
        engine replaces this method with code generated for the program (codegen.feed), which
        does the same with the group key and classification inlined.
        """
        raise AssertionError("replaced in __init__")

    def feed_many(self, events: Iterable[tuple[str, Any]]) -> None:  # replaced on first call
        """Process a batch of ``(name, value)`` pairs: the same as ``feed`` for each in turn
        (outputs, errors, termination, timers started), without a call per event. The engine
        replaces this method with its feed's code in a loop (``batch.feed_many_source``).

        ``events`` is read lazily, one pair per event processed. Time does not move within a
        batch: a host that fires due timers between events (the tester: ``run_due`` after each)
        splits its batches there, or passes a generator that fires them before yielding the next
        event (``tester.runner``). The consumer, output handlers and host hooks must not change
        while a batch runs (from a consumer, say): set them between batches.

        Made on the first call (it costs as much again as compiling the feed: most engines
        never batch), and again after the feed changes (``_decompact``).
        """
        made = self._feed_many
        if made is None:
            made = self._feed_many = self._define("feed_many", feed_many_source(self._feed_source, self._hoistable))
            self.feed_many = made  # type: ignore[method-assign]  (a host that bound this method keeps calling it)
        made(events)

    def feed_json(self, name: str, obj: Any) -> InstanceContext | None:
        """Feed a JSON-shaped value (dicts for structures, ISO text or epoch ms for times, ...),
        checked against the declared type; a value that does not fit becomes ``$error`` 6."""
        inp = self._inputs.get(name)
        if inp is None:
            return self.feed(name, obj)
        try:
            value = decode(obj, inp.ty)
        except DecodeError as exc:
            self._error(None, ErrorCode.BAD_INPUT_VALUE, f"{name}: {exc}")
            return None
        return self.feed(name, value)

    def group_key(self, name: str, value: Any) -> tuple[Any, ...] | None:
        """The group key an event of this name and value goes to (None: ungrouped, or unknown name).
        Hosts use it to route events to the task that owns the key."""
        inp = self._inputs.get(name)
        if inp is None or inp.key is None:
            return None
        return inp.key(None, value)

    def input_type(self, name: str) -> Type | None:
        inp = self._inputs.get(name)
        return None if inp is None else inp.ty

    def _single(self) -> InstanceContext:
        ctx = self.single
        if ctx is None:
            self.start()
            ctx = self.single
            assert ctx is not None
        return ctx

    def _unexpected(self, ctx: InstanceContext | None, name: str, sym: int) -> InstanceContext | None:
        inp = self._inputs[name]
        self._error(ctx, ErrorCode.UNEXPECTED_EVENT,
                    f"unexpected event {name}" if inp.classify is None
                    else f"unexpected event {name} ({self.program.symbols[sym].name})")
        if ctx is None or ctx.state is None:  # (a ``_keyed`` stand-in: no instance)
            return None
        if self._terminal(ctx.state):
            self._terminate(ctx)
        else:
            self._touch(ctx)
        return ctx

    def _keyer(self) -> Callable[[Any], InstanceContext]:
        """``_keyed(gk)`` for the generated feed: a stand-in context of the table key ``gk`` with
        no state, in no table, so that errors about an event of a key without an instance
        carry the key as an instance's would (docs/language.md 7.7)."""
        cls = self._context_class

        def keyed(gk: Any) -> InstanceContext:
            return cls(gk, None, NO_VARIABLES)

        return keyed

    def _unexpected_key(self, gk: Any, name: str, sym: int) -> None:
        """A compact engine of state numbers (no variables, initial actions nor timers): a key's
        first event that the start state does not accept. Its new instance would be at the start
        state, which is what no entry means, so ``$error`` 2 with the key is all that shows."""
        self._unexpected(self._ns["_keyed"](gk), name, sym)

    def fire_timer(self, ctx: InstanceContext, deadline: int) -> None:
        """Deliver the time event of ctx's pending timer (called by the time provider)."""
        if ctx.terminated:
            return
        rare = ctx._rare  # fields most instances leave at their defaults (see InstanceContext)
        if rare is None:
            rare = ctx._rare = RareFields()
        rare.fires += 1
        if self.before_timer is not None:
            self.before_timer(ctx)
        if deadline == rare.last_fire:
            rare.repeats += 1
            if rare.repeats >= MAX_FIRES_AT_ONE_INSTANT:
                # e.g. ( A() | elapse[0 seconds]() )*: each firing re-arms the marker at the same
                # instant, and time could never move on. Stop the timer and say why.
                self.time.cancel_timer(ctx)
                self._error(ctx, ErrorCode.INVALID_OPERATION,
                            f"the time marker fired {MAX_FIRES_AT_ONE_INSTANT} times at one instant (an elapse "
                            f"of zero or less in a loop?); its timer is stopped until the next event")
                rare.repeats = 0
                return
        else:
            rare.last_fire = deadline
            rare.repeats = 0
        st = ctx.state
        if self.positions is not None:
            e = self._lazy_step(st, ctx.tsym)
            if e is None:  # cannot happen: timers are only set for symbols with a transition
                return
            ctx.state, fn, terminal = e
        else:
            tr = st.row[ctx.tsym]
            if tr is None:  # cannot happen, as above
                return
            target = tr.target
            if target is None:
                target = self._resolve(st, tr)
            ctx.state = target
            fn = tr.fn
            terminal = target.ends
        if fn is not None:
            fn(ctx, deadline)
        if terminal:
            self._terminate(ctx)
        else:
            self._touch(ctx)

    def _terminate(self, ctx: InstanceContext) -> None:
        self.time.cancel_timer(ctx)
        ctx.terminated = True
        if self.grouped and (self._entry_state(ctx.gk) == ctx.state.key if self.compact
                             else self._table.get(ctx.gk) is ctx):
            del self._table[ctx.gk]
        self._touch(ctx)
        if self._on_terminate is not None:
            self._on_terminate(ctx)

    def _untimed_terminate(self, ctx: InstanceContext) -> None:
        """``_terminate`` for a program without timers (no timer to cancel): what the feed calls
        at every match of a program whose instances retire, so it does the least it can."""
        ctx.terminated = True
        gk = ctx.gk
        table = self._table
        if table.get(gk) is ctx or (self.compact and self._entry_state(gk) == ctx.state.key):  # (a compact engine's feed releases its entries itself)
            del table[gk]
        dirty = self.dirty
        if dirty is not None:
            dirty[id(ctx)] = ctx
        hook = self._on_terminate
        if hook is not None:
            hook(ctx)

    def holds(self, ctx: InstanceContext) -> bool:
        """Is ``ctx`` the engine's live instance of its key (not terminated and released, nor
        replaced by a restore)? For hosts persisting changes: ``engine.contexts.get(ctx.key) is
        ctx`` says the same, but builds and translates a key tuple."""
        if self.compact:  # contexts are views: the one whose state (and variables) the table holds
            return not ctx.terminated and self._table.get(ctx.gk) == self._entry(ctx)
        if self.grouped:
            return self._table.get(ctx.gk) is ctx
        return self.single is ctx and not ctx.terminated

    def drain_dirty(self) -> list[InstanceContext]:
        """Contexts changed (or terminated) since the last call; for hosts that persist them."""
        if self.dirty is None:
            return []
        out = list(self.dirty.values())
        self.dirty.clear()
        return out

    @property
    def instance_count(self) -> int:
        if self.grouped:
            return len(self._table)
        return 0 if self.single is None or self.single.terminated else 1

    # -- snapshots --------------------------------------------------------------------------

    def snapshot(self, ctx: InstanceContext) -> bytes:
        """Compact bytes for one instance: state, variables, key, pending timer (format 2 of
        ``context``). Replaced in ``__init__`` by a function specialised for the program."""
        raise AssertionError("replaced in __init__")

    def _snapshotter(self) -> Callable[[InstanceContext], bytes]:
        """``snapshot`` for this program. Hosts snapshot every changed instance at each commit,
        so it does the least it can: the machine's state id is read directly, the key and timer
        become lists inline, and the payload goes to msgpack in one call without visiting the
        values when no variable can hold an object, nor an array or structure holding one (most
        programs), unless two of those arrays and structures might be one list (``flat``): the
        generic encoding numbers a list met twice to keep the sharing, and is otherwise the
        same bytes (``context.encode``: a list met once is a plain msgpack array)."""
        kinds = [_plain_kind(v.ty) for v in self.program.variables]
        flat = tuple(slot for slot, kind in enumerate(kinds) if kind == "flat")
        direct = all(kinds) and len(flat) <= 1  # (one flat list cannot be met twice)
        pack = context.pack_plain
        encode = context.encode
        positions = self.positions
        state_json: Callable[[Any], Any] = positions.to_json if positions is not None else _dfa_state_id
        one, version = self.one_key, context.FORMAT_VERSION

        def snapshot(ctx: InstanceContext) -> bytes:
            e = ctx.timer
            timer = None if e is None or e[TARGET] is None else [e[DEADLINE], ctx.tsym, e[SEQ]]
            gk = ctx.gk
            key = None if gk is None else [gk] if one else list(gk)
            rare = ctx._rare
            origin, fires = (None, 0) if rare is None else (rare.origin, rare.fires)
            variables = ctx.vars
            if direct or (all(kinds) and len({id(variables[slot]) for slot in flat}) == len(flat)):
                return pack([version, state_json(ctx.state), variables, key, timer, ctx.terminated, origin, fires])
            return encode(state_json(ctx.state), variables, key, timer, ctx.terminated, origin, fires)

        return snapshot

    def restore(self, data: bytes) -> InstanceContext:
        """Resume an instance from :meth:`snapshot` bytes (its pending timer is re-armed).
        Reads every snapshot format (``context.decode_payload``)."""
        _, state, variables, key, timer, terminated, origin, fires = context.decode_payload(data)
        if len(variables) != self.nvars:
            raise ValueError(f"snapshot has {len(variables)} variables, the program has {self.nvars}")
        st: Any
        if self.positions is not None:
            st = self.positions.from_json(state)
        else:  # every state of an eager DFA exists already, under its number
            st = self._states.get(state) if type(state) is int else None
            if st is None:
                raise ValueError(f"no DFA state {state!r}")
        if self.grouped:
            if key is None:
                raise ValueError("snapshot of an ungrouped instance given to a grouped program")
            if len(key) != self._key_arity:
                raise ValueError(f"snapshot of an instance keyed by {len(key)} values given to a program "
                                 f"grouped by {self._key_arity}")
            gk = key[0] if self.one_key else tuple(key)
        elif key is not None:
            raise ValueError("snapshot of a grouped instance given to an ungrouped program")
        else:
            gk = None
        ctx = self._context_class(gk, st, variables or NO_VARIABLES)
        ctx.terminated = bool(terminated)
        if origin is not None or fires:
            ctx.origin = origin
            ctx.fires = fires
        if self.compact:
            if not (ctx.terminated or ctx._rare is not None or timer is not None):
                self._table[gk] = self._entry(ctx)  # the table of a compact engine holds state numbers or records
                return ctx
            self._decompact()
        if self.grouped:
            old = self._table.get(gk)
            if old is not None:
                self.time.cancel_timer(old)
            self._table[gk] = ctx
        else:
            if self.single is not None:
                self.time.cancel_timer(self.single)
            self.single = ctx
        if timer is not None:
            deadline, tsym, seq = timer
            ctx.tsym = tsym
            self.time.timers.set(self, ctx, deadline, seq)
        return ctx

    def clear(self) -> None:
        """Drop every instance (a host about to reload them from its store). Changes not yet
        drained are dropped too: they belong to the discarded instances, and draining them later
        would persist stale contexts (or tombstones for keys that are alive again)."""
        if self.dirty is not None:
            self.dirty.clear()
        if not self.compact:  # (a compact engine has no timers)
            for ctx in list(self._table.values()):
                self.time.cancel_timer(ctx)
        self._table.clear()
        if self.single is not None:
            self.time.cancel_timer(self.single)
        self.single = None
