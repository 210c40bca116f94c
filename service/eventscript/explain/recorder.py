"""A step record per event and per timer firing, taken while a host runs its engines.

The recorder wraps each engine's ``feed`` (and ``feed_keyed``, which a task calls with the key it
computed), ``fire_timer`` and ``start`` (public methods, looked up on the engine by every host)
and snapshots the instance an event or timer goes to before and
after, so what it records is what the engine computed, not a second simulation. Steps nest: an
event one stage emits is fed to the next stage within the step that emitted it (``parent``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..engine.engine import Engine
from ..engine.timeutil import format_time
from .instance import InstanceView, json_value, view_of_snapshot
from .terms import ProgramTerms


@dataclass
class Step:
    """What one event or timer firing did to one instance of one stage."""

    index: int
    stage: int
    kind: str  # "start" (an ungrouped program's initial actions), "event" or "timer"
    time: int
    name: str  # the event's name, or the time marker's text
    value: Any  # the event's value as JSON (None for a timer)
    key: list[Any] | None
    before: InstanceView | None  # None: the event created the instance
    after: InstanceView | None  # None: no instance took the event (an undeclared name)
    parent: int | None
    symbol: str | None = None  # what the event was classified as (None: no transition took it)
    actions: list[dict[str, Any]] = field(default_factory=list)
    timers: list[dict[str, Any]] = field(default_factory=list)  # timers set or stopped
    outputs: list[int] = field(default_factory=list)  # indexes of the outputs emitted in this step

    def page_json(self) -> dict[str, Any]:
        """The step as the playground's page takes it, smaller (a 10,000-event run is sent
        whole): the time in microseconds, no state before (the key's previous step has it, or
        the start state), actions as unit numbers."""
        return {
            "i": self.index,
            "stage": self.stage,
            "kind": self.kind,
            "t": self.time,
            "name": self.name,
            "value": self.value,
            "key": self.key,
            "after": self.after.to_json() if self.after else None,
            "parent": self.parent,
            "symbol": self.symbol,
            "actions": [a["unit"] for a in self.actions],
            "timers": self.timers,
            "outputs": self.outputs,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "i": self.index,
            "stage": self.stage,
            "kind": self.kind,
            "time": format_time(self.time),
            "name": self.name,
            "value": self.value,
            "key": self.key,
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
            "parent": self.parent,
            "symbol": self.symbol,
            "actions": self.actions,
            "timers": self.timers,
            "outputs": self.outputs,
        }


class StepRecorder:
    """Records the steps of ``engines`` (one per stage, in the host's order)."""

    def __init__(self, engines: list[Engine], before_step: Callable[[StepRecorder], None] | None = None) -> None:
        self.engines = engines
        self.terms = [ProgramTerms(e.compiled) for e in engines]
        self.steps: list[Step] = []
        self.outputs: list[dict[str, Any]] = []
        self._open: list[Step] = []
        #: The view each instance had after its last recorded step, by id of its context: the
        #: view before its next step, since only recorded steps change an instance.
        self._last: dict[int, tuple[Any, InstanceView]] = {}
        #: Called with the recorder before each step (a host's limits: raise to stop the run).
        self._before_step = before_step or (lambda recorder: None)
        for stage, engine in enumerate(engines):
            self._wrap(stage, engine)

    # -- what the host calls ---------------------------------------------------------------

    def output(self, obj: dict[str, Any]) -> None:
        """An output line of the host (an event of the last stage, or a ``$error``)."""
        n = len(self.outputs)
        if self._open:
            step = self._open[-1]
            step.outputs.append(n)
            obj = {**obj, "step": step.index}
        self.outputs.append(obj)

    def live(self, stage: int) -> list[InstanceView]:
        """The instances of a stage now, as views."""
        engine = self.engines[stage]
        contexts = list(engine.contexts.values()) if engine.grouped else [engine.single] if engine.single else []
        return [view_of_snapshot(self.terms[stage], engine.snapshot(c)) for c in contexts]

    # -- wrapping --------------------------------------------------------------------------

    def _view(self, stage: int, ctx: Any) -> InstanceView | None:
        if ctx is None:
            return None
        view = view_of_snapshot(self.terms[stage], self.engines[stage].snapshot(ctx))
        self._last[id(ctx)] = (ctx, view)
        return view

    def _view_before(self, stage: int, ctx: Any) -> InstanceView | None:
        if ctx is None:
            return None
        last = self._last.get(id(ctx))
        return last[1] if last is not None and last[0] is ctx else self._view(stage, ctx)

    def _instance_of(self, engine: Engine, key: Any) -> Any:
        """The instance an event of group key ``key`` goes to (the only one of an ungrouped
        program), or None."""
        if not engine.grouped:
            return engine.single
        return None if key is None else engine.contexts.get(key)

    def drop_unfinished(self) -> None:
        """Forget the steps still open and what they led to (their outputs, and the steps of later
        stages they fed): a run stopped inside a step (a playground limit met by a later stage's
        step) would show its first stage's step as one no instance took, its effects half there."""
        if not self._open:
            return
        first = self._open[0].index
        del self.steps[first:]
        cut = next((i for i, o in enumerate(self.outputs) if o.get("step", -1) >= first), len(self.outputs))
        del self.outputs[cut:]

    def _begin(self, step: Step) -> Step:
        self._before_step(self)
        self.steps.append(step)
        self._open.append(step)
        return step

    def _wrap(self, stage: int, engine: Engine) -> None:
        terms = self.terms[stage]
        # A compact engine keeps bare state numbers and its feed returns no context; a host hook
        # (public, documented to do so) turns it into one with a context per key, same outputs.
        previous = engine.on_terminate
        engine.on_terminate = previous or (lambda ctx: None)
        engine.creates_late = False  # (every event shows its instance; set before feed is read)
        feed, feed_keyed, fire_timer, start = engine.feed, engine.feed_keyed, engine.fire_timer, engine.start
        now = engine.time.now

        def recorded_feed(name: str, value: Any) -> Any:
            # the event's key, computed once: the instance before the event, and after it (a
            # compact engine's feed returns no context)
            key = engine.group_key(name, value) if engine.grouped else None
            return recorded(name, value, key, lambda: feed(name, value))

        def recorded_feed_keyed(name: str, value: Any, key: tuple[Any, ...]) -> Any:
            # a host that computed the key (a task) feeds it with the event
            return recorded(name, value, key, lambda: feed_keyed(name, value, key))

        def recorded(name: str, value: Any, key: Any, fed: Callable[[], Any]) -> Any:
            ctx = self._instance_of(engine, key)
            before = self._view_before(stage, ctx)
            ty = engine.input_type(name)
            shown = _json_value(value, ty)
            step = self._begin(
                Step(
                    len(self.steps),
                    stage,
                    "event",
                    now(),
                    name,
                    shown,
                    before.key if before else None,
                    before,
                    None,
                    self._open[-1].index if self._open else None,
                )
            )
            try:
                ctx = fed()
            finally:
                self._open.pop()
            if ctx is None and ty is not None:
                ctx = self._instance_of(engine, key)
            step.after = self._view(stage, ctx)
            if step.after is not None:
                step.key = step.after.key
                self._explain_event(terms, step, name)
            return ctx

        def recorded_fire(ctx: Any, deadline: int) -> None:
            before = self._view_before(stage, ctx)
            if before is None or before.terminated:
                fire_timer(ctx, deadline)
                return
            sym = ctx.tsym
            if before.timer is None:  # the time provider took the entry off the queue: show what fires
                before = replace(before, timer=(deadline, sym, -1))
            marker = terms.time_marker(sym)
            step = self._begin(
                Step(
                    len(self.steps),
                    stage,
                    "timer",
                    deadline,
                    str(marker) if marker else terms.symbol(sym),
                    None,
                    before.key,
                    before,
                    None,
                    self._open[-1].index if self._open else None,
                )
            )
            try:
                fire_timer(ctx, deadline)
            finally:
                self._open.pop()
            step.after = self._view(stage, ctx)
            found, units = terms.step(before.state, [sym], step.after.state) if step.after else (None, ())
            step.symbol = terms.symbol(found) if found is not None else None
            step.actions = [terms.unit(u) for u in units]
            step.timers = _timer_changes(terms, before.timer, step.after, fired=True)

        def recorded_start() -> None:
            if engine.grouped or engine.single is not None:
                start()
                return
            step = self._begin(
                Step(
                    len(self.steps),
                    stage,
                    "start",
                    now(),
                    "start",
                    None,
                    None,
                    None,
                    None,
                    self._open[-1].index if self._open else None,
                )
            )
            try:
                start()
            finally:
                self._open.pop()
            step.after = self._view(stage, engine.single)
            step.actions = [terms.unit(u) for u in terms.start()[1]]
            step.timers = _timer_changes(terms, None, step.after)

        engine.feed = recorded_feed
        engine.feed_keyed = recorded_feed_keyed
        # method-assign: the recorder wraps this engine's methods for the run it records
        engine.fire_timer = recorded_fire  # type: ignore[method-assign]
        engine.start = recorded_start  # type: ignore[method-assign]

    def _explain_event(self, terms: ProgramTerms, step: Step, name: str) -> None:
        after = step.after
        assert after is not None
        units: tuple[int, ...] = ()
        before_state = step.before.state if step.before else None
        if step.before is None:  # a new instance: its initial actions, then the event from the start state
            before_state, units = terms.start()
        found, moved = terms.step(before_state, terms.symbols_of_input.get(name, []), after.state)
        if found is not None:
            step.symbol = terms.symbol(found)
            units += moved
        step.actions = [terms.unit(u) for u in units]
        step.timers = _timer_changes(terms, step.before.timer if step.before else None, after)


def _json_value(value: Any, ty: Any) -> Any:
    return repr(value) if ty is None else json_value(value, ty)


def _timer_changes(
    terms: ProgramTerms, before: tuple[int, int, int] | None, after: InstanceView | None, fired: bool = False
) -> list[dict[str, Any]]:
    """The timers a step set or stopped (deadlines in microseconds): a pending timer with a new
    sequence number was set (restarted) by the step; one that is gone was stopped (or, for a
    timer step, fired)."""
    out: list[dict[str, Any]] = []
    new = after.timer if after is not None and not after.terminated else None
    if before is not None and (new is None or new[2] != before[2]) and not fired:
        out.append({"change": "stopped", "marker": terms.time_marker_text(before[1]), "deadline": before[0]})
    if new is not None and (before is None or new[2] != before[2]):
        out.append({"change": "set", "marker": terms.time_marker_text(new[1]), "deadline": new[0]})
    return out


@dataclass
class Recording:
    """The steps and outputs of a run, and the stages' names."""

    recorder: StepRecorder
    names: list[str]

    @property
    def steps(self) -> list[Any]:
        return self.recorder.steps

    @property
    def outputs(self) -> list[dict[str, Any]]:
        return self.recorder.outputs
