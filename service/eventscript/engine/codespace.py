"""Where an engine's generated code lives: one namespace and the functions compiled into it.

The engine and its executor both compile code into the same namespace (``names`` lists what
it holds): the engine its feeds, classifiers and group keys; the executor the transitions'
functions and timer starts of the states it makes. A transition's function is shared between
every transition with the same units and timer behaviour, so both ask this one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..language import ir
from . import names as N
from .codegen import CodeGen

#: A transition function's identity: its action units, the timer symbols it starts, and
#: whether it stops the timer (leaving a timed state for an untimed one).
FunctionKey = tuple[tuple[int, ...], tuple[int, ...], bool]


class CodeSpace:
    """The namespace of one engine's generated code and the functions defined in it."""

    def __init__(self, program: ir.ProgramIR, label: str, ns: dict[str, Any]) -> None:
        self.gen = CodeGen(program)
        self.ns = ns
        self.label = label
        #: Transition functions by what they do (None: a transition with nothing to do).
        self.functions: dict[FunctionKey, Callable[..., Any] | None] = {}
        self._timer_starts: dict[tuple[int, ...], Callable[..., Any]] = {}

    def define(self, name: str, source: str) -> Callable[..., Any]:
        """Compile ``source`` (which defines ``name``) into the namespace; the function."""
        code = compile(source, f"<eventscript {self.label}:{name}>", "exec")
        exec(code, self.ns)
        return self.ns[name]

    def function_of(self, units: tuple[int, ...], timers: tuple[int, ...], disarm: bool) -> Callable[..., Any] | None:
        """The compiled function running ``units``, then starting the timer of ``timers`` (or
        stopping it when ``disarm``); None when that is nothing. Made once per distinct key."""
        fn_key = (units, timers, disarm)
        if fn_key in self.functions:
            return self.functions[fn_key]
        name = N.indexed(N.TRANSITION, len(self.functions))
        src = self.gen.transition(name, units, timers, disarm)
        fn = None if src is None else self.define(name, src)
        self.functions[fn_key] = fn
        return fn

    def timer_start(self, timers: tuple[int, ...]) -> Callable[..., Any]:
        """The function starting the timer of a state whose time symbols are ``timers``."""
        fn = self._timer_starts.get(timers)
        if fn is None:
            name = N.indexed(N.TIMER_START, len(self._timer_starts))
            fn = self._timer_starts[timers] = self.define(name, self.gen.timer_start(name, list(timers)))
        return fn
