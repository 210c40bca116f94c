"""The engine's executors, chosen once (engine.engine: the façade), its hooks given at
construction, and the accessors hosts use instead of the engine's private names.

- the executor follows the machine and the options: lazy for a lazy DFA, compact for a grouped
  program without timers whose host persists nothing and gave no hook taking contexts, eager
  otherwise; each satisfies ``executor.Executor``;
- hooks given at construction (``EngineHooks``) act as hooks set afterwards, without a compact
  engine made first and undone (outputs, origins and ended instances the same);
- ``changed``/``forget_change``, ``input_key_function`` and ``report_error``.
"""

from __future__ import annotations

from typing import Any

import pytest

from eventscript.automata.compile import compile_source
from eventscript.engine.eager import CompactExecutor, EagerExecutor
from eventscript.engine.engine import Engine, EngineHooks
from eventscript.engine.events import Emitted, ErrorCode
from eventscript.engine.executor import Executor
from eventscript.engine.lazy import LazyExecutor
from eventscript.engine.time_provider import SimulatedTimeProvider

COUNT = (
    "in string A group(A), string B group(B)\nout {string k; long n;} Z\n"
    "( A() ( B() { n = n + 1; } )* A() { !>Z({k: group[0], n: n}); } )*\n"
)
TIMED = "in string A group(A)\nout string Z\n( A() elapse[1 minutes]() { !>Z(group[0]); } )*\n"
EVENTS = [("A", "x"), ("B", "x"), ("A", "y"), ("B", "x"), ("A", "x"), ("A", "y"), ("B", "q")]


def _engine(src: str, **options: Any) -> tuple[Engine, list[Emitted]]:
    lazy = options.pop("force_lazy", False)
    out: list[Emitted] = []
    return Engine(
        compile_source(src, name="p", force_lazy=lazy).require(), out.append, SimulatedTimeProvider(), **options
    ), out


@pytest.mark.parametrize(
    ("src", "options", "chosen"),
    [
        (COUNT, {}, CompactExecutor),
        (COUNT, {"compact": False}, EagerExecutor),
        (COUNT, {"track_dirty": True}, EagerExecutor),
        (COUNT, {"hooks": EngineHooks(on_terminate=lambda ctx: None)}, EagerExecutor),
        (COUNT, {"hooks": EngineHooks(outputs={"Z": lambda ctx, v: None})}, EagerExecutor),
        (COUNT, {"hooks": EngineHooks(before_timer=lambda ctx: None)}, CompactExecutor),  # (no context needed)
        (TIMED, {}, EagerExecutor),
        (COUNT, {"force_lazy": True}, LazyExecutor),
        (TIMED, {"force_lazy": True, "lazy_mode": "simulate"}, LazyExecutor),
    ],
)
def test_executor_chosen_once_from_machine_and_options(src: str, options: dict[str, Any], chosen: type) -> None:
    engine, _ = _engine(src, **options)
    assert type(engine.executor) is chosen
    assert isinstance(engine.executor, Executor)
    assert engine.compact == (chosen is CompactExecutor)
    assert (engine.positions is not None) == (engine.lazy_cache is not None) == (chosen is LazyExecutor)


def _run_with_hooks(given_at_construction: bool) -> tuple[Engine, list[Any], list[str], list[Any]]:
    ended: list[str] = []
    handled: list[Any] = []
    hooks = EngineHooks(
        origin_of=lambda: "cause",
        on_terminate=lambda ctx: ended.append(ctx.key),
        outputs={"Z": lambda ctx, v: handled.append((ctx.key, v, ctx.origin))},
    )
    if given_at_construction:
        engine, out = _engine(COUNT, hooks=hooks)
    else:
        engine, out = _engine(COUNT)
        assert engine.compact
        engine.origin_of, engine.on_terminate = hooks.origin_of, hooks.on_terminate
        engine.set_output_handler("Z", hooks.outputs["Z"])
    for name, value in EVENTS:
        engine.feed(name, value)
    return engine, [(e.name, e.value, e.key) for e in out], ended, handled


def test_hooks_at_construction_act_as_hooks_set_later() -> None:
    early, early_out, early_ended, early_handled = _run_with_hooks(True)
    late, late_out, late_ended, late_handled = _run_with_hooks(False)
    assert not early.compact and not late.compact
    assert early_handled == late_handled and early_handled  # (the handler saw the matches, with their origin)
    assert all(origin == "cause" for _, _, origin in early_handled)
    assert early_out == late_out and early_ended == late_ended
    assert sorted(early.contexts) == sorted(late.contexts)


def test_hook_for_an_unknown_output_is_refused() -> None:
    with pytest.raises(KeyError, match="no output event 'Nope'"):
        _engine(COUNT, hooks=EngineHooks(outputs={"Nope": lambda ctx, v: None}))


def test_changes_are_read_and_forgotten_through_accessors() -> None:
    engine, _ = _engine(COUNT, track_dirty=True)
    ctx = engine.feed("A", "x")
    other = engine.feed("A", "y")
    assert ctx is not None and other is not None
    assert engine.changed(ctx) and engine.changed(other)
    engine.forget_change(ctx)
    assert not engine.changed(ctx) and engine.changed(other)
    assert engine.drain_dirty() == [other] and not engine.changed(other)
    untracked, _ = _engine(COUNT, compact=False)
    ctx = untracked.feed("A", "x")
    assert ctx is not None and not untracked.changed(ctx)
    untracked.forget_change(ctx)  # (nothing tracked: nothing to forget, no error)


def test_input_key_function_and_report_error() -> None:
    engine, out = _engine(COUNT)
    key = engine.input_key_function("A")
    assert key is not None and key(None, "x") == ("x",) == engine.group_key("A", "x")
    assert engine.input_key_function("Nope") is None
    ungrouped, _ = _engine("in long A\nout long Z\n( A() )*\n")
    assert ungrouped.input_key_function("A") is None
    engine.report_error(ErrorCode.BAD_INPUT_VALUE, "A: not a string")
    assert [(e.name, e.value, e.key) for e in out] == [("$error", [ErrorCode.BAD_INPUT_VALUE, "A: not a string"], None)]
