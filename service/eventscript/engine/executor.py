"""What the engine asks of an executor, whichever it chose (``Engine._choose_executor``).

An executor runs one kind of machine: ``eager.EagerExecutor`` and ``eager.CompactExecutor`` an
eager DFA (with a context per instance, or a table of state numbers), ``lazy.LazyExecutor`` a
lazy DFA. The per-event path is generated code (``CodeGen.feed``, shaped by ``feed_options`` and
reading ``namespace``); the engine's own paths that depend on the machine (timer events,
snapshots, restores, errors) go through the methods below, so that it checks no mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..automata.hybrid import TransitionCache
from ..automata.simulate import PositionSets


@runtime_checkable
class Executor(Protocol):
    #: "eager", "compact" or "lazy".
    kind: str
    #: Does the instance table hold state numbers (or records) instead of contexts?
    compact: bool

    #: The lazy DFA's step tables and transition cache (None for an eager DFA). Read-only here,
    #: so that each executor may declare the narrower type it has.
    @property
    def positions(self) -> PositionSets | None: ...
    @property
    def cache(self) -> TransitionCache | None: ...

    #: The start state, whether an instance there has ended, and the initial actions (None: none).
    start: Any
    start_terminal: bool
    init_fn: Callable[..., Any] | None

    def namespace(self) -> dict[str, Any]:
        """The names its generated code reads (``engine.names``), bound before the feeds are made."""
        ...

    def feed_options(self) -> dict[str, Any]:
        """``CodeGen.feed``'s arguments for this machine."""
        ...

    def retire(self) -> None:
        """Mark the states where an instance equals a fresh one as ending it (``engine.liveness``)."""
        ...

    def step(self, state: Any, sym: int) -> tuple[Any, Callable[..., Any] | None, bool] | None:
        """The transition on ``sym``: (target, function, whether it ends the instance), or None."""
        ...

    def terminal(self, state: Any) -> bool:
        """Has an instance in ``state`` ended (accepting, no way out)?"""
        ...

    def state_json(self, state: Any) -> Any:
        """The state's form in a snapshot."""
        ...

    def state_from_json(self, data: Any) -> Any:
        """The state of a snapshot's form (ValueError: no such state)."""
        ...
