"""The lazy DFA's executor: states are int masks of NFA states, made as events need them.

A lazy DFA's states are int masks of NFA states (``automata.simulate``). The generated feed
looks the transition up in the cache ``_M`` (``automata.hybrid``) and on a miss calls ``_miss``,
generated here with the step unrolled for this automaton; when the cache thrashes it switches
itself off and the feed simulates every step inline (``_SIM``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..automata.hybrid import TransitionCache
from ..automata.machine import LazyDFA
from ..automata.simulate import PositionSets, step_expression
from ..language import ir
from . import names as N
from .codespace import CodeSpace

#: How a lazy DFA takes its steps (``lazy_mode``): "auto" caches transitions and falls back to
#: simulating every step when the cache thrashes; "cache" never falls back (tests); "simulate"
#: never caches (the fallback forced on, for tests and benchmarks).
LAZY_MODES = ("auto", "cache", "simulate")

_NOFN = object()  # "not computed yet" in the function caches (None means no function)


class LazyExecutor:
    """A lazy DFA behind a transition cache (see the module docstring)."""

    kind = "lazy"
    compact = False

    def __init__(
        self,
        code: CodeSpace,
        program: ir.ProgramIR,
        machine: LazyDFA,
        mode: str,
        cache_states: int,
        mode_source: str = "lazy_mode",
    ) -> None:
        if mode not in LAZY_MODES:
            raise ValueError(f"{mode_source} must be one of {', '.join(LAZY_MODES)}, not {mode!r}")
        self.code = code
        nsym = len(program.symbols)
        ps = self.positions = PositionSets(machine.efa, machine.occ, nsym)
        self.cache = TransitionCache(
            nsym,
            cache_states,
            enabled=mode != "simulate",
            adaptive=mode == "auto",
            on_switch_off=self._simulate_every_step,
        )
        self._time_syms = tuple(sorted(program.time_symbols))
        timed = 0
        for s in self._time_syms:
            timed |= ps.has[s]
        self._timed_mask = timed
        self.start = ps.start
        self.start_terminal = ps.terminal(ps.start)
        self.init_fn = code.function_of(ps.initial_units, ps.symbols(ps.start, self._time_syms), False)
        self._functions: dict[tuple[int, ...], Callable[..., Any] | None] = {}
        self._by_actions: list[dict[int, Callable[..., Any] | None]] = [{} for _ in range(nsym)]
        self.state_json = ps.to_json
        self.terminal = ps.terminal
        self._young = self.cache.young
        self._miss = code.define(N.MISS, self._miss_source())

    def namespace(self) -> dict[str, Any]:
        ps = self.positions
        return {
            N.CACHE_YOUNG: self.cache.young,
            N.CACHE: self.cache,
            N.STEP_TABLES: ps.tables,
            N.ACTION_MASKS: ps.act,
            N.OUT_MASK: ps.out,
            N.STEP: ps.step,
            N.FUNCTIONS_BY_ACTIONS: self._by_actions,
            N.NO_FUNCTION: _NOFN,
            N.LAZY_FUNCTION: self._function,
            N.LAZY_FUNCTION_MISS: self._function_cached,
            N.SIMULATE: not self.cache.enabled,
        }

    def feed_options(self) -> dict[str, Any]:
        return {"lazy": self._simulated_step_lines()}

    def retire(self) -> None:
        """Nothing: which masks equal a fresh instance is not known ahead (``engine.liveness``
        works on the eager DFA's states)."""

    def step(self, m: int, sym: int) -> tuple[int, Callable[..., Any] | None, bool] | None:
        """The transition from mask ``m`` on ``sym``: (target, function, whether it ends the
        instance), or None. For the timer events the engine delivers (the feed inlines it)."""
        e = self._young[sym].get(m)
        return e if e is not None else self._miss(m, sym)

    def state_from_json(self, data: Any) -> int:
        return self.positions.from_json(data)

    def _simulate_every_step(self) -> None:
        """The cache thrashed and switched itself off: the feed simulates every step inline."""
        self.code.ns[N.SIMULATE] = True

    def _simulated_step_lines(self) -> list[str]:
        """The feed's inline step while the cache is off (see ``CodeGen.feed``)."""
        step = step_expression(self.positions, "m", "t")
        lines = ["t = _T[sym]", f"n = {step}"] if step else ["n = _step(m, sym)"]
        lines += ["if not n:", "    return _unexpected(ctx, name, sym)", "ctx.state = n"]
        if self._time_syms:
            lines += ["fn = _lfn(m, n, sym)"]
        else:
            lines += ["fn = _FN[sym].get(m & _ACT[sym], _NOFN)", "if fn is _NOFN:", "    fn = _fnmiss(m, n, sym)"]
        return lines

    def _miss_source(self) -> str:
        """``_miss(m, sym)``: the transition from mask m on sym as (target mask, function, whether
        the target ends the instance), or None when there is none; from the cache's old generation
        if it is there, else computed (and cached unless the cache is off)."""
        step = step_expression(self.positions, "m", "t")
        lines = [
            f"def {N.MISS}(m, sym):",
            "    if _cache.enabled:",
            "        e = _cache.recall(m, sym)",
            "        if e is not None:",
            "            return e",
        ]
        lines += ["    t = _T[sym]", f"    n = {step}"] if step else ["    n = _step(m, sym)"]
        lines += ["    if not n:", "        return None"]
        if self._time_syms:
            lines += ["    fn = _lfn(m, n, sym)"]
        else:
            lines += [
                "    fn = _FN[sym].get(m & _ACT[sym], _NOFN)",
                "    if fn is _NOFN:",
                "        fn = _fnmiss(m, n, sym)",
            ]
        lines += [
            "    e = (n, fn, not n & _OUT)",
            "    if _cache.enabled:",
            "        _cache.remember(m, sym, e)",
            "    return e",
        ]
        return "\n".join(lines)

    def _function_cached(self, m: int, n: int, sym: int) -> Callable[..., Any] | None:
        """For programs without timers the function depends on the symbol and on the states of m
        whose edges on it carry actions only: kept in ``_FN[sym]`` under those states."""
        fn = self._by_actions[sym][m & self.positions.act[sym]] = self._function(m, n, sym)
        return fn

    def _function(self, m: int, n: int, sym: int) -> Callable[..., Any] | None:
        """The compiled function of the step m → n on sym: its merged units, then the timer of n
        (or a stop, leaving a timed state for an untimed one), as the DFA's transition has."""
        ps = self.positions
        timed = self._timed_mask
        key = (sym, m & ps.act[sym], bool(m & timed), n & timed)
        fn = self._functions.get(key, _NOFN)
        if fn is _NOFN:
            timers = ps.symbols(n, self._time_syms)
            fn = self._functions[key] = self.code.function_of(ps.units(m, sym), timers, bool(m & timed) and not timers)
        return fn  # type: ignore[return-value]  # not the _NOFN sentinel: replaced just above
