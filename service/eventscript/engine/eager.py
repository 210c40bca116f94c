"""The eager DFA's executors: every state and transition resolved before the first event.

:class:`EagerExecutor` runs a :class:`DFAMachine` with a context per instance, whose state is
an :class:`RState` (its transition row by symbol). :class:`CompactExecutor` runs the same
states for a grouped program without timers whose host persists nothing: the instance table
then holds each key's state number (or a record of its variables and the number), no context,
and a context is only built for actions that need one (``CodeGen.compact_step``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..automata.machine import DFAMachine
from ..language import ir
from . import names as N
from .codegen import SymbolPlan
from .codespace import CodeSpace
from .context import NO_VARIABLES, InstanceContext
from .liveness import retiring_states
from .values import UNSET

#: The feed inlines at most this many distinct action functions per input symbol, each of at
#: most INLINE_LINES lines (more would make the feed long for little gain); others are called.
INLINE_BODIES = 4
INLINE_LINES = 24


class RState:
    """A machine state at run time: its transition row (indexed by symbol) and timer behaviour."""

    __slots__ = ("accepting", "ends", "key", "row", "terminal", "timed", "timer_fn", "timers")

    def __init__(self, key: int, accepting: bool, nsym: int) -> None:
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

    def __init__(self, target_key: int, units: tuple[int, ...]) -> None:
        self.target_key = target_key
        self.target: RState | None = None
        self.units = units
        self.fn: Callable[[InstanceContext, Any], None] | None = None
        #: Which of its symbol's distinct functions ``fn`` is (0: none), for the inlined feed.
        self.code = 0


def _dfa_state_id(st: RState) -> Any:
    """An eager DFA state's snapshot form: its number."""
    return st.key


class EagerExecutor:
    """An eager DFA with a context per instance (see the module docstring)."""

    kind = "eager"
    compact = False
    positions = None  # (the lazy executor's step tables)
    cache = None  # (the lazy executor's transition cache)
    state_json = staticmethod(_dfa_state_id)

    def __init__(self, code: CodeSpace, program: ir.ProgramIR, machine: DFAMachine) -> None:
        self.code = code
        self.program = program
        self.machine = machine
        self.nsym = len(program.symbols)
        self.states: dict[int, RState] = {}
        start_key, init_units = machine.start()
        self.start = self._state(start_key)
        self.start_terminal = self.start.terminal
        self.init_fn = self._function(init_units, self.start, None)
        for k in range(machine.size):
            self._state(k)
        for st in list(self.states.values()):
            for tr in st.row:
                if tr is not None:
                    self._resolve(st, tr)

    def namespace(self) -> dict[str, Any]:
        """What the executor's generated code reads besides the engine's names."""
        return {}

    def feed_options(self) -> dict[str, Any]:
        """``CodeGen.feed``'s arguments for this executor's feed."""
        return {"plans": self.symbol_plans()}

    def retire(self) -> None:
        """Mark the states where an instance equals a fresh one (``liveness``) as ending it."""
        for key in retiring_states(self.program, self.machine):
            self.states[key].ends = True

    def step(self, st: RState, sym: int) -> tuple[RState, Callable[..., Any] | None, bool] | None:
        """The transition from ``st`` on ``sym``: (target, function, whether it ends the
        instance), or None. For the timer events the engine delivers (the feed inlines it)."""
        tr = st.row[sym]
        if tr is None:
            return None
        target = tr.target
        assert target is not None  # (every transition is resolved in __init__)
        return target, tr.fn, target.ends

    @staticmethod
    def terminal(st: RState) -> bool:
        return st.terminal

    def state_from_json(self, data: Any) -> RState:
        """The state of a snapshot's state form (its number: every state exists already)."""
        st = self.states.get(data) if type(data) is int else None
        if st is None:
            raise ValueError(f"no DFA state {data!r}")
        return st

    # -- building ---------------------------------------------------------------------------

    def _function(self, units: tuple[int, ...], target: RState, source: RState | None) -> Callable[..., Any] | None:
        """The compiled function of a transition: its units, then the target's timer start, or a
        timer stop when leaving a timed state for an untimed one. Shared between transitions."""
        return self.code.function_of(
            units, target.timers, bool(source is not None and source.timed and not target.timed)
        )

    def _state(self, key: int) -> RState:
        st = self.states.get(key)
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
            st.timer_fn = self.code.timer_start(timers)
        self.states[key] = st
        return st

    def _resolve(self, st: RState, tr: RTrans) -> RState:
        target = self._state(tr.target_key)
        tr.fn = self._function(tr.units, target, st)
        tr.target = target
        return target

    def symbol_plans(self, by_key: bool = False) -> dict[int, SymbolPlan]:
        """For each symbol, number the distinct functions of the eager DFA's transitions on it
        (``RTrans.code``) and say what the feed must handle: the first INLINE_BODIES functions of
        at most INLINE_LINES lines are inlined in the feed, saving a call per event."""
        keys = {fn: fn_key for fn_key, fn in self.code.functions.items() if fn is not None}
        plans: dict[int, SymbolPlan] = {}
        states = list(self.states.values())
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
                    body = self.code.gen.transition_body(*keys[tr.fn], by_key=by_key)
                    if (
                        code == len(bodies) + 1
                        and len(bodies) < INLINE_BODIES
                        and body is not None
                        and len(body) <= INLINE_LINES
                    ):
                        bodies.append(body)
                tr.code = code
            distinct = len(codes) - (None in codes)
            targets = {tr.target.key for st in states if (tr := st.row[sym]) is not None}  # type: ignore[union-attr]  # __init__ resolved every target
            plans[sym] = SymbolPlan(
                bodies,
                distinct > len(bodies),
                total,
                ends,
                uniform=total and len(codes) == 1 and len(bodies) == 1,
                target=targets.pop() if total and len(targets) == 1 else None,
                start_retires=self._start_retires(sym),
                acting=self._acting(sym, states) if total and not ends and distinct == len(bodies) == 1 else None,
            )
        return plans

    @staticmethod
    def _acting(sym: int, states: list[RState]) -> tuple[int, int, int] | None:
        """``SymbolPlan.acting`` of a total symbol whose transitions run one function at most:
        (the one state whose transition runs it, that transition's target, the target every
        other state's transition shares), or None when more states run it or the others go
        to different targets."""
        rows = [(st.key, tr) for st in states if (tr := st.row[sym]) is not None]
        acting = [(key, tr) for key, tr in rows if tr.fn is not None]
        others = {tr.target_key for _, tr in rows if tr.fn is None}
        if len(acting) != 1 or len(others) != 1:
            return None
        key, tr = acting[0]
        return key, tr.target_key, others.pop()

    def _start_retires(self, sym: int) -> bool:
        """Does the start state's transition on ``sym`` leave a fresh instance as it was
        (``SymbolPlan.start_retires``)?"""
        tr = self.start.row[sym]
        if tr is None or tr.fn is not None or self.init_fn is not None or self.program.time_symbols:
            return False
        assert tr.target is not None  # (every transition is resolved in __init__)
        return tr.target.ends and not tr.target.terminal


class CompactExecutor(EagerExecutor):
    """An eager DFA whose instance table holds each key's state number, or with variables or
    initial actions a record (a list) of the variables then the number (see the module
    docstring). Made from an :class:`EagerExecutor` (``of``) and turned back into one
    (``uncompacted``) when a host hook that needs contexts is set."""

    kind = "compact"
    compact = True
    #: Set by ``of`` (the executor is made from an eager one's attributes, not by ``__init__``).
    table: dict[Any, Any]
    context_class: type[InstanceContext]
    #: A table entry's state number is at this index of its record (None: bare numbers).
    record: int | None
    _nvars: int

    @classmethod
    def of(
        cls, eager: EagerExecutor, table: dict[Any, Any], context_class: type[InstanceContext], nvars: int
    ) -> CompactExecutor:
        self = cls.__new__(cls)
        self.__dict__.update(eager.__dict__)
        self.table = table
        self.context_class = context_class
        self.record = nvars if nvars or eager.init_fn is not None else None
        self._nvars = nvars
        return self

    def uncompacted(self) -> EagerExecutor:
        """The same states run with a context per instance."""
        eager = EagerExecutor.__new__(EagerExecutor)
        for name in ("code", "program", "machine", "nsym", "states", "start", "start_terminal", "init_fn"):
            setattr(eager, name, getattr(self, name))
        return eager

    def feed_options(self) -> dict[str, Any]:
        return {
            "plans": self.symbol_plans(True),
            "compact": True,
            "record": self.record,
            "inline_records": self.init_fn is None,
        }

    def namespace(self) -> dict[str, Any]:
        """The names the compact feed reads (``CodeGen._compact_feed``): per symbol, each state's
        target number, function code and function, by state number (an eager DFA's states are
        numbered 0 to n - 1)."""
        states = [self.states[k] for k in range(len(self.states))]
        ns: dict[str, Any] = {
            N.TABLE: self.table,
            N.START_STATE: self.start.key,
            N.VIEW: self.view,
            N.ENDS: tuple(st.ends for st in states),
            N.STATES: tuple(states),
            N.VIEW_CLASS: self.context_class,
            N.NO_VARIABLES: NO_VARIABLES,
            N.NEW_RECORD: self._recorder(),
        }
        nxt, fns = [], []
        for sym in range(self.nsym):
            rows = [st.row[sym] for st in states]
            nxt.append(tuple(None if tr is None else tr.target.key for tr in rows))  # type: ignore[union-attr]  # __init__ resolved every target
            fns.append(tuple(None if tr is None else tr.fn for tr in rows))
            ns[N.indexed(N.TARGET_OF, sym)], ns[N.indexed(N.FUNCTION_OF, sym)] = nxt[-1], fns[-1]
            ns[N.indexed(N.CODE_OF, sym)] = tuple(0 if tr is None else tr.code for tr in rows)
        ns[N.TARGETS], ns[N.FUNCTIONS] = nxt, fns
        return ns

    def view(self, gk: Any, entry: Any) -> InstanceContext:
        """A context for a table entry, a state number or a record (for errors and hosts): a
        copy, so changing it changes nothing in the engine (``Engine.holds`` compares)."""
        if self.record is None:
            return self.context_class(gk, self.states[entry], NO_VARIABLES)
        return self.context_class(gk, self.states[entry[-1]], entry[:-1] or NO_VARIABLES)

    def entry(self, ctx: InstanceContext) -> Any:
        """The table entry for ``ctx`` (the reverse of ``view``)."""
        return ctx.state.key if self.record is None else [*ctx.vars, ctx.state.key]

    def entry_state(self, gk: Any) -> int | None:
        """The state number the table holds for ``gk`` (None: no entry)."""
        entry = self.table.get(gk)
        return entry if entry is None or self.record is None else entry[-1]

    def _recorder(self) -> Callable[[Any], list[Any]]:
        """``_rec(gk)`` for a compact feed of records: a key's new record at the start state,
        in the table, its initial actions run on a context whose variables are the record."""
        table, start, cls, init = self.table, self.start, self.context_class, self.init_fn
        fresh = [UNSET] * self._nvars + [start.key]

        def new(gk: Any) -> list[Any]:
            v = table[gk] = fresh.copy()
            if init is not None:
                init(cls(gk, start, v), None)
            return v

        return new
