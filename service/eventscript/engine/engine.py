"""The engine: runs a compiled program over a stream of events (language document §6.1).

For each arriving event: find the instance context of its group key (creating it, and running
the initial actions in it, on the key's first event, whether or not the event is then accepted), classify the event
by its case clause,
look up the transition of the current state on that symbol, run its compiled actions (which
also start or stop the instance's timer) and move to the target state. An accepting state with
no way out ends the instance. Errors become ``$error`` events and never stop the engine.

The engine knows nothing of Kafka, Spark or files: hosts give it a consumer for what it emits
and a :class:`TimeProvider`, and feed it ``(name, value)`` pairs with values already in their
run-time form (``engine.encoding`` converts from JSON).

``Engine`` is a façade, as regex-automata's meta engine is over its strategies: it chooses an
executor once, when it is made (:meth:`Engine._choose_executor`), and every path that depends
on the machine asks the executor (``step``, ``terminal``, the snapshot form of a state):

- ``eager.EagerExecutor``: an eager DFA, a context per instance;
- ``eager.CompactExecutor``: the same for a grouped program without timers whose host persists
  nothing: the instance table holds state numbers (or records), no contexts;
- ``lazy.LazyExecutor``: a lazy DFA (past the compiler's state limit) behind a transition cache;

all satisfy ``executor.Executor``.

The one change of executor after construction is compact → eager, when a host sets a hook that
needs contexts after the engine was made (``_decompact``); hooks given to the constructor
(``hooks=EngineHooks(...)``) choose the right executor from the start. The generated code's
global names are declared in ``names``; the code space it runs in is ``codespace``.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..automata.compiled import CompiledProgram
from ..automata.hybrid import TransitionCache
from ..automata.machine import DFAMachine, LazyDFA, Machine
from ..automata.simulate import PositionSets
from ..language import ir
from ..language.external_functions import resolve_external
from ..language.types import BOOLEAN, DOUBLE, LONG, STRING, TIME, ArrayType, StructType, Type
from . import builtins, context
from . import names as N
from .batch import feed_many_source
from .codegen import one_value_key
from .codespace import CodeSpace
from .context import NO_VARIABLES, GroupContexts, InstanceContext, OneKeyContext, RareFields
from .eager import INLINE_BODIES, INLINE_LINES, CompactExecutor, EagerExecutor, RState, RTrans
from .encoding import DecodeError, decode
from .events import ERROR_EVENT, ERROR_TYPE, Emitted, ErrorCode, EventConsumer
from .executor import Executor
from .externals import make_external
from .lazy import LAZY_MODES, LazyExecutor
from .runtime_errors import MAX_ARRAY, RuntimeChecks
from .time_provider import ARMED, DEADLINE, SEQ, TARGET, SimulatedTimeProvider, TimeProvider
from .timeutil import format_time
from .values import UNSET, deep_copy, double_div, double_rem, key_double, wrap

#: Consecutive timer events of one instance at one instant before its timer is stopped.
MAX_FIRES_AT_ONE_INSTANT = 1000
#: Lazy-DFA transitions per generation of its cache (``automata.hybrid``): at most twice this
#: many are kept, each ~200 bytes. A program that thrashes it falls back after three generations.
DEFAULT_LAZY_CACHE = 10_000
#: Engines created without ``lazy_mode`` (``lazy.LAZY_MODES``) take it from this environment
#: variable, so a whole tester or conformance run can be forced onto the fallback (with a low
#: ``--state-limit``, so that programs compile to lazy DFAs):
#: ``EVENTSCRIPT_LAZY_MODE=simulate eventscript test --state-limit 5 ...``.
LAZY_MODE_ENV = "EVENTSCRIPT_LAZY_MODE"
#: Whether a grouped instance entering a state where it equals a fresh one is released
#: ("retired", see ``engine.liveness``). Engines created without ``retire`` take it from this
#: environment variable: "auto" (the default) retires where it saves something, for hosts that
#: persist instances (``track_dirty``: a store entry and a changelog record per instance) and
#: in compact engines of bare state numbers (a table entry); elsewhere, records included, a retired
#: instance would be made again at its key's next event, which costs more than keeping it (~1 µs per match). "on" and
#: "off" force
#: it, so a whole tester or conformance run can be compared: ``EVENTSCRIPT_RETIRE=on eventscript test``.
RETIRE_ENV = "EVENTSCRIPT_RETIRE"
RETIRE_MODES = ("auto", "on", "off")
#: Whether a grouped program without timers keeps each key's state number in its table
#: ("compact", no context per key) when its host persists nothing: the bare number, or with
#: variables or initial actions a record (a list) of the variables then the number. Engines
#: created without ``compact`` take it from this environment variable ("on", the default, or "off").
COMPACT_ENV = "EVENTSCRIPT_COMPACT"

__all__ = [
    "COMPACT_ENV",
    "DEFAULT_LAZY_CACHE",
    "INLINE_BODIES",
    "INLINE_LINES",
    "LAZY_MODES",
    "LAZY_MODE_ENV",
    "MAX_ARRAY",
    "MAX_FIRES_AT_ONE_INSTANT",
    "RETIRE_ENV",
    "RETIRE_MODES",
    "Engine",
    "EngineError",
    "EngineHooks",
    "InputRT",
    "RState",
    "RTrans",
]


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


class EngineError(Exception):
    """A compiled program that cannot be run (e.g. an external function that cannot be loaded)."""


@dataclass(slots=True)
class InputRT:
    name: str
    index: int
    ty: Type
    symbol: int  # the symbol, when the input has no case clause (else -1)
    classify: Callable[[Any, Any], int] | None
    key: Callable[[Any, Any], tuple[Any, ...]] | None


@dataclass
class EngineHooks:
    """What a host tells the engine, given at construction (each may also be set later on the
    engine, at a cost: a compact engine then turns into one with contexts, ``_decompact``).

    ``origin_of``: what names the cause of a new instance (output ids, InstanceContext.origin).
    ``before_timer``: told before an instance consumes a time event. ``loader``: group key ->
    the instance restored from the host's store, or None (state larger than memory).
    ``on_terminate``: told of every instance that ends, after it is released. ``outputs``:
    output name -> handler(ctx, value), instead of the consumer (``set_output_handler``).
    """

    origin_of: Callable[[], str | None] | None = None
    before_timer: Callable[[InstanceContext], None] | None = None
    loader: Callable[[tuple[Any, ...]], InstanceContext | None] | None = None
    on_terminate: Callable[[InstanceContext], None] | None = None
    outputs: dict[str, Callable[[InstanceContext, Any], None]] = field(default_factory=dict)

    def need_contexts(self) -> bool:
        """Does a hook take contexts (so the instance table cannot hold bare state numbers)?"""
        return bool(self.origin_of or self.loader or self.on_terminate or self.outputs)


class Engine:
    """Runs one compiled program. Not thread-safe: one engine per task/partition."""

    def __init__(
        self,
        compiled: CompiledProgram,
        consumer: EventConsumer | None = None,
        time: TimeProvider | None = None,
        *,
        name: str | None = None,
        tz: tzinfo = UTC,
        search_dirs: Iterable[Path] = (),
        lazy_cache_states: int = DEFAULT_LAZY_CACHE,
        track_dirty: bool = False,
        lazy_mode: str | None = None,
        retire: bool | None = None,
        compact: bool | None = None,
        hooks: EngineHooks | None = None,
        program_tag: int | None = None,
    ) -> None:
        hooks = hooks or EngineHooks()
        #: Written into every snapshot (``context.program_tag``): hosts that keep state across
        #: program versions (the worker's tasks) name the version; None otherwise.
        self.program_tag = program_tag
        self.compiled = compiled
        self.program: ir.ProgramIR = compiled.program
        self.machine: Machine = compiled.machine
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
        #: Contexts changed since the host last drained them (None: not tracked); see
        #: ``changed``, ``forget_change`` and ``drain_dirty``.
        self._dirty: dict[int, InstanceContext] | None = {} if track_dirty else None
        #: Host hooks (see EngineHooks; ``origin_of``, ``loader`` and ``on_terminate`` are
        #: properties over these: setting one turns a compact engine into a normal one).
        self._origin_of = hooks.origin_of
        self._arm_of: Callable[[], context.Armed] | None = None
        self.before_timer = hooks.before_timer
        self._loader = hooks.loader
        self._on_terminate = hooks.on_terminate
        self._output_handlers: dict[str, Callable[[InstanceContext, Any], None]] = {}
        for output in hooks.outputs:
            if output not in self.output_names:
                raise KeyError(f"no output event {output!r}")
        self._output_handlers.update(hooks.outputs)
        self._code = CodeSpace(self.program, self.name, self._namespace(search_dirs))
        self._bind_emitters()
        self._inputs: dict[str, InputRT] = {}
        #: ``_waits_for``'s answers by machine state (asked only as events are discarded).
        self._waits_cache: dict[Any, str] = {}
        for inp in self.program.inputs:
            self._inputs[inp.name] = self._input_rt(inp)
        self._key_functions = MappingProxyType({n: i.key for n, i in self._inputs.items() if i.key is not None})
        if compact is None:
            compact = os.environ.get(COMPACT_ENV, "on") != "off"
        self.executor: Executor = self._choose_executor(
            lazy_mode or os.environ.get(LAZY_MODE_ENV) or "auto",
            compact and not track_dirty and not hooks.need_contexts(),
        )
        self._start: Any = self.executor.start
        self._start_terminal = self.executor.start_terminal
        self._init_fn = self.executor.init_fn or _no_actions
        mode = ("on" if retire else "off") if retire is not None else os.environ.get(RETIRE_ENV) or "auto"
        if mode not in RETIRE_MODES:
            raise ValueError(f"retire (or ${RETIRE_ENV}) must be one of {', '.join(RETIRE_MODES)}, not {mode!r}")
        bare_numbers = isinstance(self.executor, CompactExecutor) and self.executor.record is None
        if mode == "on" or (mode == "auto" and (track_dirty or bare_numbers)):
            self.executor.retire()
        self.snapshot = self._snapshotter()
        self._code.ns[N.CREATE] = self._creator()
        self._code.ns[N.KEYED] = self._keyer()
        self._creates_late = False
        self._define_feeds()

    def _choose_executor(self, lazy_mode: str, compact: bool) -> Executor:
        """The executor for this machine, chosen once (see the module docstring): the lazy DFA's
        for a lazy machine; else the eager DFA's, compact when the table can hold each key's state
        number (and variables) instead of a context: a grouped program without timers whose host
        persists nothing and gave no hook that takes contexts."""
        machine = self.machine
        if isinstance(machine, LazyDFA):
            return LazyExecutor(
                self._code,
                self.program,
                machine,
                lazy_mode,
                self.lazy_cache_states,
                mode_source=f"lazy_mode (or ${LAZY_MODE_ENV})",
            )
        assert isinstance(machine, DFAMachine), machine  # the two kinds there are
        eager = EagerExecutor(self._code, self.program, machine)
        if compact and self.grouped and not self.program.time_symbols:
            return CompactExecutor.of(eager, self._table, self._context_class, self.nvars)
        return eager

    def _define_feeds(self) -> None:
        """Generate the feeds for the executor (again after ``_decompact``)."""
        ex = self.executor
        options = ex.feed_options()  # (first: it numbers the transitions' functions, RTrans.code)
        self._code.ns.update(ex.namespace())
        if isinstance(ex, CompactExecutor):
            self.contexts.view, self.contexts.entry = ex.view, ex.entry
        track_dirty = self._dirty is not None
        options["create_late"] = self._creates_late
        self._feed_source = self._code.gen.feed(self.grouped, track_dirty=track_dirty, **options)
        self.feed = self._define(N.FEED, self._feed_source)
        self._feed_many: Callable[[Iterable[tuple[str, Any]]], None] | None = None  # made when first called
        self.__dict__.pop(N.FEED_MANY, None)
        if not self.grouped:
            self.feed_keyed = self._ungrouped_feed_keyed
        else:
            self.feed_keyed = self._define(
                N.FEED_KEYED, self._code.gen.feed(True, keyed=True, track_dirty=track_dirty, **options)
            )

    def _hoistable(self, name: str) -> bool:
        """May ``feed_many`` read the namespace's ``name`` once per batch? Not names rebound
        while events run (``_SIM``: the lazy cache switched off) or by hosts between them (the
        loader, the consumer ``_C`` and output functions ``_e<k>``, ``_bind_emitters``)."""
        return name in self._code.ns and name not in N.REBOUND and not N.is_output(name)

    def _decompact(self) -> None:
        """Turn a compact engine into one with a context per key (a host hook was set)."""
        ex = self.executor
        if not isinstance(ex, CompactExecutor):
            return
        self.executor = ex.uncompacted()
        self.contexts.view = self.contexts.entry = None
        for gk, st in list(self._table.items()):
            self._table[gk] = ex.view(gk, st)
        self._define_feeds()

    @property
    def creates_late(self) -> bool:
        """Does a key's first event that would leave a fresh instance as it was create none?

        With instances that retire (``retire``, on for ``track_dirty``), an event that takes a
        new key's fresh instance, running no action, to a state where it equals a fresh one
        makes an instance only to release it: its creation, release, change record and the
        host's tombstone for a key it never stored. Set, the feed of contexts creates a new
        key's instance only in the step of a class that changes it (``CodeGen._first_event``),
        and ``feed`` returns None for the others, as a compact engine does (about 4x less CPU
        for the realistic program fed as the worker holds it, bench/SPEED.md). Off by default:
        an event that creates nothing has no instance to show, so a host that shows each
        event's instance before and after (``explain``) keeps it off. Setting it regenerates
        the feeds, as setting a hook does: a host that wraps ``feed`` sets it first. It changes
        nothing for a compact engine (whose feed makes no such instance)."""
        return self._creates_late

    @creates_late.setter
    def creates_late(self, on: bool) -> None:
        if bool(on) != self._creates_late:
            self._creates_late = bool(on)
            self._define_feeds()

    # -- what tests and tools may ask of the executor -------------------------------------------

    @property
    def compact(self) -> bool:
        """Does the instance table hold state numbers (or records) instead of contexts?"""
        return self.executor.compact

    @property
    def positions(self) -> PositionSets | None:
        """The lazy DFA's steps over int masks of NFA states (None for an eager DFA)."""
        return self.executor.positions

    @property
    def lazy_cache(self) -> TransitionCache | None:
        """The lazy DFA's transition cache (None for an eager DFA)."""
        return self.executor.cache

    # -- host accessors ------------------------------------------------------------------------

    @property
    def dirty(self) -> dict[int, InstanceContext] | None:
        """The changed instances by id (None: not tracked). Read-only for hosts: use
        ``changed``, ``forget_change`` and ``drain_dirty``."""
        return self._dirty

    def changed(self, ctx: InstanceContext) -> bool:
        """Has ``ctx`` changed since the host last drained the changes (``drain_dirty``)?"""
        return self._dirty is not None and id(ctx) in self._dirty

    def mark_changed(self, ctx: InstanceContext) -> None:
        """Count ``ctx`` among the changes to persist although no event changed it (a host
        converted it from another program version: its new snapshot must be written)."""
        self._touch(ctx)

    def forget_change(self, ctx: InstanceContext) -> None:
        """Drop ``ctx`` from the changes to persist (an instance made and ended between two
        drains leaves nothing to write)."""
        if self._dirty is not None:
            self._dirty.pop(id(ctx), None)

    @property
    def key_functions(self) -> Mapping[str, Callable[[Any, Any], tuple[Any, ...]]]:
        """Each input's group-key function ``key(None, value)`` by event name (empty for an
        ungrouped program): for hosts feeding runs of records whose event name each record
        carries (an input topic whose records name their event in a header or a field), one
        lookup per record, a name not in it being undeclared (``feed`` reports it), before
        ``feed_keyed(name, value, key)``, which takes any declared name."""
        return self._key_functions

    def input_key_function(self, name: str) -> Callable[[Any, Any], tuple[Any, ...]] | None:
        """The group-key function ``key(None, value)`` of input ``name`` (None: ungrouped or
        undeclared): for hosts routing many events of one input (``group_key`` looks it up)."""
        inp = self._inputs.get(name)
        return None if inp is None else inp.key

    def report_error(self, code: int, message: str, ctx: InstanceContext | None = None) -> None:
        """Emit an ``$error`` event (of the instance ``ctx``, or of none), as the engine's own
        errors are: for hosts that find an input wrong before the engine sees it."""
        self._error(ctx, code, message)

    @property
    def origin_of(self) -> Callable[[], str | None] | None:
        """Host hook for output ids: what names the cause of a new instance."""
        return self._origin_of

    @origin_of.setter
    def origin_of(self, hook: Callable[[], str | None] | None) -> None:
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
        self._loader = self._code.ns[N.LOADER] = hook

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

    # -- the generated code's namespace ---------------------------------------------------------

    def _namespace(self, search_dirs: Iterable[Path]) -> dict[str, Any]:
        """The names every program's generated code may read (``names``); the executor adds its
        own (``_define_feeds``), the emit functions come from ``_bind_emitters``."""
        ns: dict[str, Any] = {
            N.UNSET: UNSET,
            N.NAN: math.nan,
            N.INF: math.inf,
            N.ERROR: self._error,
            N.DOUBLE_DIV: double_div,
            N.DOUBLE_REM: double_rem,
            N.DEEP_COPY: deep_copy,
            N.NOW: self.time.now,
            N.SET_TIMER: self._timer_setter(),
            N.DISARM: self.time.cancel_timer,
            N.TABLE_GET: self._table.get,
            N.LOADER: self._loader,  # Engine.loader (the property keeps it up to date)
            N.SINGLE: self._single,
            N.UNEXPECTED: self._unexpected,
            N.UNEXPECTED_KEY: self._unexpected_key,
            N.TERMINATE: self._terminate if self.program.time_symbols else self._untimed_terminate,
            N.DIRTY: self._dirty,
            N.WRAP: wrap,
            N.FORMAT_DOUBLE: builtins.format_double,
            N.FORMAT_TIME: format_time,
            N.KEY_DOUBLE: key_double,
        }
        ns.update(RuntimeChecks(self._error, self.tz).namespace())
        for fid, fn in builtins.IMPLEMENTATIONS.items():
            ns[N.indexed(N.BUILTIN, fid)] = fn
        dirs = list(search_dirs)
        if self.compiled.source_name:
            dirs.append(Path(self.compiled.source_name).resolve().parent)
        for ext in self.program.externals:
            impl, problem = resolve_external(ext.impl, dirs)
            if impl is None:
                raise EngineError(f"external function {ext.name}: {problem}")
            ns[N.indexed(N.EXTERNAL, ext.index)] = make_external(ext, impl, self._error)
        return ns

    def _define(self, name: str, source: str) -> Callable[..., Any]:
        return self._code.define(name, source)

    def _input_rt(self, inp: ir.Input) -> InputRT:
        src, sym = self._code.gen.classifier(N.indexed(N.CLASSIFIER, inp.index), inp.classify)
        classify = self._define(N.indexed(N.CLASSIFIER, inp.index), src) if src is not None else None
        key = None
        if inp.group is not None:
            key = self._define(
                N.indexed(N.GROUP_KEY, inp.index),
                self._code.gen.group_key(N.indexed(N.GROUP_KEY, inp.index), inp.group),
            )
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
        if hasattr(self, "_code"):
            self._bind_emitters()

    def _bind_emitters(self) -> None:
        consumer, name, now, ns = self._consumer, self.name, self.time.now, self._code.ns
        handlers = self._output_handlers
        one = self.one_key
        for k, (out_name, ty) in enumerate(zip(self.output_names, self.output_types)):
            if one:  # the key tuple without the property call

                def emit(ctx: InstanceContext, value: Any, _n: str = out_name, _t: Type = ty) -> None:
                    consumer(Emitted(name, _n, value, _t, now(), (ctx.gk,)))
            else:

                def emit(ctx: InstanceContext, value: Any, _n: str = out_name, _t: Type = ty) -> None:
                    consumer(Emitted(name, _n, value, _t, now(), ctx.key))

            ns[N.indexed(N.OUTPUT, k)] = handlers.get(out_name, emit)
            ns[N.indexed(N.OUTPUT_TYPE, k)] = ty
        # (compact feeds build their outputs inline, CodeGen.emit_by_key; an output handler turns them off)
        ns.update({N.CONSUMER: consumer, N.PROGRAM_NAME: name, N.NEW_OBJECT: object.__new__, N.EMITTED: Emitted})

    def set_output_handler(self, output: str, handler: Callable[[InstanceContext, Any], None]) -> None:
        """Deliver one output event's emissions to ``handler(ctx, value)`` instead of the consumer
        (hosts use it to skip building an Emitted per event). ``value`` is already a snapshot; the
        emission time is ``self.time.now()``, the key ``ctx.key``."""
        if output not in self.output_names:
            raise KeyError(f"no output event {output!r}")
        self._decompact()  # a handler takes a context: the compact feed emits by key (emit_by_key)
        self._output_handlers[output] = handler
        self._bind_emitters()

    def _timer_setter(self) -> Callable[[InstanceContext, int], Any]:
        """``_settimer(ctx, deadline)`` for generated code: straight to the provider's queue when
        the provider does not override set_timer (one call fewer on every timed transition);
        with an ``arm_of`` hook, the instance notes first what sets its timer."""
        if type(self.time).set_timer is TimeProvider.set_timer:
            setter: Callable[[InstanceContext, int], Any] = functools.partial(self.time.timers.set, self)
        else:
            setter = functools.partial(self.time.set_timer, self)
        arm_of = self._arm_of
        if arm_of is None:
            return setter

        def set_armed(ctx: InstanceContext, deadline: int) -> Any:
            entry = setter(ctx, deadline)
            entry.append(arm_of())
            return entry

        return set_armed

    @property
    def arm_of(self) -> Callable[[], context.Armed] | None:
        """Host hook: what sets a timer now (``context.Armed``), kept in the timer's entry and
        the instance's snapshots, for the host to name when the timer fires
        (``TimerQueue.firing``)."""
        return self._arm_of

    @arm_of.setter
    def arm_of(self, hook: Callable[[], context.Armed] | None) -> None:
        self._arm_of = hook
        self._code.ns[N.SET_TIMER] = self._timer_setter()

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
            origin_of = engine._origin_of
            if origin_of is not None and (origin := origin_of()) is not None:  # (None: the default, nothing to set)
                ctx.origin = origin
            table[gk] = ctx
            if init is not None:
                init(ctx, None)
            return ctx

        return create

    def _touch(self, ctx: InstanceContext) -> None:
        if self._dirty is not None:
            self._dirty[id(ctx)] = ctx

    #: Process one named event; ``value`` must already conform to the declared type. Returns
    #: the instance context the event went to (None for an undeclared name, and in a compact
    #: engine). Not a method: the code generated for the program and its executor
    #: (``CodeGen.feed``: group key, classification and step inlined), bound by ``_define_feeds``,
    #: so that a host's call is the generated function's call and nothing more.
    feed: Callable[[str, Any], InstanceContext | None]
    #: ``feed`` for a grouped program when the host already computed the event's group key
    #: (with :meth:`group_key`, to route it); saves computing it twice. Generated as ``feed`` is.
    feed_keyed: Callable[[str, Any, tuple[Any, ...]], InstanceContext | None]
    #: Compact bytes for one instance: state, variables, key, pending timer (format 2 of
    #: ``context``): a function specialised for the program (``_snapshotter``).
    snapshot: Callable[[InstanceContext], bytes]

    def _ungrouped_feed_keyed(self, name: str, value: Any, key: tuple[Any, ...]) -> InstanceContext | None:
        """``feed_keyed`` of an ungrouped program: there is no key to give."""
        raise TypeError(f"feed_keyed: program {self.name} is not grouped (its events have no key): call feed")

    def feed_many(self, events: Iterable[tuple[str, Any]]) -> None:  # replaced on first call
        """Process a batch of ``(name, value)`` pairs: the same as ``feed`` for each in turn
        (outputs, errors, termination, timers started), without a call per event. The engine
        replaces this method with its feed's code in a loop (``batch.feed_many_source``).

        ``events`` is read lazily, one pair per event processed. Time does not move within a
        batch: a host that moves the clock between events (``advance_to``, ``set_now``, the wall
        clock's ``refresh`` and ``run_due``) splits its batches there; one on simulated time may
        pass a generator that fires the timers due (``run_due``) before yielding the next event.
        On the engine's own time providers (``TimeProvider.moves_by_itself`` false) the batch
        reads the clock once, when it starts: what its events emit carries that time. The
        consumer, output handlers and host hooks must not change
        while a batch runs (from a consumer, say): set them between batches.

        Made on the first call (it costs as much again as compiling the feed: most engines
        never batch), and again after the feed changes (``_decompact``).
        """
        made = self._feed_many
        if made is None:
            source = feed_many_source(self._feed_source, self._hoistable, not self.time.moves_by_itself)
            made = self._feed_many = self._define("feed_many", source)
            self.feed_many = made  # type: ignore[method-assign]  # a host that bound this method keeps calling it
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
        what = (
            f"unexpected event {name}"
            if inp.classify is None
            else f"unexpected event {name} ({self.program.symbols[sym].name})"
        )
        # (a stand-in with no state is a key without an instance: a new one would be at the start)
        waits = None if ctx is None else self._waits_for(self.executor.start if ctx.state is None else ctx.state)
        self._error(
            ctx, ErrorCode.UNEXPECTED_EVENT, what if waits is None else f"{what}: the instance waits for {waits}"
        )
        if ctx is None or ctx.state is None:  # (a ``_keyed`` stand-in: no instance)
            return None
        if self.executor.terminal(ctx.state):
            self._terminate(ctx)
        else:
            self._touch(ctx)
        return ctx

    def _waits_for(self, state: Any) -> str | None:
        """What an instance in ``state`` takes next, in program terms (``Big``, ``elapse[5
        minutes]``), for a discarded event's ``$error`` 2; None where it cannot be told. Worked
        out on the error path only, once per state."""
        try:
            key = self.machine.state_from_json(self.executor.state_json(state))
            cache = self._waits_cache
            if key not in cache:
                symbols, markers = self.program.symbols, self.program.markers
                names = []
                for s in sorted(self.machine.transitions(key)):
                    sy = symbols[s]
                    text = markers[sy.marker].text if sy.kind == "time" and sy.marker is not None else sy.name
                    if text not in names:
                        names.append(text)
                cache[key] = " or ".join(names) if names else "nothing more"
            return cache[key]
        except Exception:  # (a state no machine form reads back: the message goes without)
            return None

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
        self._unexpected(self._code.ns[N.KEYED](gk), name, sym)

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
                self._error(
                    ctx,
                    ErrorCode.INVALID_OPERATION,
                    f"the time marker fired {MAX_FIRES_AT_ONE_INSTANT} times at one instant (an elapse "
                    f"of zero or less in a loop?); its timer is stopped until the next event",
                )
                rare.repeats = 0
                return
        else:
            rare.last_fire = deadline
            rare.repeats = 0
        e = self.executor.step(ctx.state, ctx.tsym)
        if e is None:  # cannot happen: timers are only set for symbols with a transition
            return
        ctx.state, fn, terminal = e
        if fn is not None:
            fn(ctx, deadline)
        if terminal:
            self._terminate(ctx)
        else:
            self._touch(ctx)

    def _terminate(self, ctx: InstanceContext) -> None:
        self.time.cancel_timer(ctx)
        ctx.terminated = True
        if self.grouped and self._held(ctx):
            del self._table[ctx.gk]
        self._touch(ctx)
        if self._on_terminate is not None:
            self._on_terminate(ctx)

    def _held(self, ctx: InstanceContext) -> bool:
        """Does the table hold ``ctx`` as its key's instance? For a compact table, whose
        entries are state numbers or records, whether it holds ``ctx``'s state."""
        ex = self.executor
        if isinstance(ex, CompactExecutor):
            return ex.entry_state(ctx.gk) == ctx.state.key
        return self._table.get(ctx.gk) is ctx

    def _untimed_terminate(self, ctx: InstanceContext) -> None:
        """``_terminate`` for a program without timers (no timer to cancel): what the feed calls
        at every match of a program whose instances retire, so it does the least it can."""
        ctx.terminated = True
        gk = ctx.gk
        table = self._table
        if table.get(gk) is ctx or self._held(ctx):  # (a compact engine's feed releases its entries itself)
            del table[gk]
        dirty = self._dirty
        if dirty is not None:
            dirty[id(ctx)] = ctx
        hook = self._on_terminate
        if hook is not None:
            hook(ctx)

    def holds(self, ctx: InstanceContext) -> bool:
        """Is ``ctx`` the engine's live instance of its key (not terminated and released, nor
        replaced by a restore)? For hosts persisting changes: ``engine.contexts.get(ctx.key) is
        ctx`` says the same, but builds and translates a key tuple."""
        ex = self.executor
        if isinstance(ex, CompactExecutor):  # contexts are views: the one whose state (and variables) the table holds
            return not ctx.terminated and self._table.get(ctx.gk) == ex.entry(ctx)
        if self.grouped:
            return self._table.get(ctx.gk) is ctx
        return self.single is ctx and not ctx.terminated

    def drain_dirty(self) -> list[InstanceContext]:
        """Contexts changed (or terminated) since the last call; for hosts that persist them."""
        if self._dirty is None:
            return []
        out = list(self._dirty.values())
        self._dirty.clear()
        return out

    @property
    def instance_count(self) -> int:
        if self.grouped:
            return len(self._table)
        return 0 if self.single is None or self.single.terminated else 1

    # -- snapshots --------------------------------------------------------------------------

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
        state_json: Callable[[Any], Any] = self.executor.state_json  # (the same after _decompact)
        one, version, tag = self.one_key, context.FORMAT_VERSION, self.program_tag

        def snapshot(ctx: InstanceContext) -> bytes:
            e = ctx.timer
            timer = None if e is None or e[TARGET] is None else [e[DEADLINE], ctx.tsym, e[SEQ]]
            gk = ctx.gk
            key = None if gk is None else [gk] if one else list(gk)
            if timer is not None and len(e) > ARMED:  # (``e``: live, since ``timer`` is)
                timer.append(e[ARMED])  # what set it (``context.Armed``)
            rare = ctx._rare
            origin, fires = (None, 0) if rare is None else (rare.origin, rare.fires)
            variables = ctx.vars
            if direct or (all(kinds) and len({id(variables[slot]) for slot in flat}) == len(flat)):
                return pack([version, state_json(ctx.state), variables, key, timer, ctx.terminated, origin, fires, tag])
            return encode(state_json(ctx.state), variables, key, timer, ctx.terminated, origin, fires, tag)

        return snapshot

    def restore(self, data: bytes) -> InstanceContext:
        """Resume an instance from :meth:`snapshot` bytes (its pending timer is re-armed).
        Reads every snapshot format (``context.decode_payload``)."""
        _, state, variables, key, timer, terminated, origin, fires, _ = context.decode_payload(data)
        if len(variables) != self.nvars:
            raise ValueError(f"snapshot has {len(variables)} variables, the program has {self.nvars}")
        st = self.executor.state_from_json(state)
        if self.grouped:
            if key is None:
                raise ValueError("snapshot of an ungrouped instance given to a grouped program")
            if len(key) != self._key_arity:
                raise ValueError(
                    f"snapshot of an instance keyed by {len(key)} values given to a program "
                    f"grouped by {self._key_arity}"
                )
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
        ex = self.executor
        if isinstance(ex, CompactExecutor):
            if not (ctx.terminated or ctx._rare is not None or timer is not None):
                self._table[gk] = ex.entry(ctx)  # the table of a compact engine holds state numbers or records
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
            deadline, tsym, seq = timer[0], timer[1], timer[2]
            ctx.tsym = tsym
            entry = self.time.timers.set(self, ctx, deadline, seq)
            armed = context.armed_of(timer)
            if armed is not None:
                entry.append(armed)
        return ctx

    def clear(self) -> None:
        """Drop every instance (a host about to reload them from its store). Changes not yet
        drained are dropped too: they belong to the discarded instances, and draining them later
        would persist stale contexts (or tombstones for keys that are alive again)."""
        if self._dirty is not None:
            self._dirty.clear()
        if not self.compact:  # (a compact engine has no timers)
            for ctx in list(self._table.values()):
                self.time.cancel_timer(ctx)
        self._table.clear()
        if self.single is not None:
            self.time.cancel_timer(self.single)
        self.single = None
