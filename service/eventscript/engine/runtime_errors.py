"""The helpers generated actions call where an operation can fail at run time.

Each checks what the language leaves to run time (a division by zero, a subscript out of
bounds, a deadline past year 9999, ...) and on failure reports ``$error`` for the instance and
returns the value the language document gives the expression, so the actions go on: errors
never stop the engine (language document §7.7).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import tzinfo
from typing import Any

from . import names as N
from .context import InstanceContext
from .events import ErrorCode
from .timeutil import MAX_TIME, TimeRangeError, next_match
from .values import java_div, java_rem

#: Largest array ``new T[n]`` may allocate.
MAX_ARRAY = 50_000_000

#: error(ctx, code, message): reports an $error event of the instance ctx (or of none).
ErrorReporter = Callable[[InstanceContext | None, int, str], None]


class RuntimeChecks:
    """The checked operations of one engine's generated code (``namespace`` binds them)."""

    def __init__(self, error: ErrorReporter, tz: tzinfo) -> None:
        self._error = error
        self.tz = tz

    def namespace(self) -> dict[str, Any]:
        return {
            N.UNSET_READ: self.unset,
            N.LONG_DIV: self.ldiv,
            N.LONG_REM: self.lrem,
            N.INDEX: self.idx,
            N.SET_INDEX: self.setidx,
            N.NEW_ARRAY: self.new,
            N.TIME_RANGE: self.time_out_of_range,
            N.DEADLINE_TOO_FAR: self.deadline_out_of_range,
            N.ELAPSE_DEADLINE: self.elapse_deadline,
            N.ARRIVE_PATTERN: self.pattern,
        }

    def unset(self, ctx: InstanceContext, name: str, default: Any) -> Any:
        self._error(ctx, ErrorCode.UNSET_VARIABLE, f"variable {name} has not been set")
        return default

    def ldiv(self, ctx: InstanceContext, a: int, b: int) -> int:
        if b == 0:
            self._error(ctx, ErrorCode.DIVISION_BY_ZERO, f"long division by zero ({a} / 0)")
            return 0
        return java_div(a, b)

    def lrem(self, ctx: InstanceContext, a: int, b: int) -> int:
        if b == 0:
            self._error(ctx, ErrorCode.DIVISION_BY_ZERO, f"long remainder by zero ({a} % 0)")
            return 0
        return java_rem(a, b)

    def idx(self, ctx: InstanceContext, a: list[Any], i: int, default: Any) -> Any:
        if 0 <= i < len(a):
            return a[i]
        self._error(ctx, ErrorCode.SUBSCRIPT_OUT_OF_BOUNDS, f"subscript {i} is out of bounds for length {len(a)}")
        return default

    def setidx(self, ctx: InstanceContext, a: list[Any], i: int, value: Any) -> None:
        if 0 <= i < len(a):
            a[i] = value
        else:
            self._error(ctx, ErrorCode.SUBSCRIPT_OUT_OF_BOUNDS, f"subscript {i} is out of bounds for length {len(a)}")

    def new(self, ctx: InstanceContext, n: int, factory: Callable[[], Any]) -> list[Any]:
        if n < 0 or n > MAX_ARRAY:
            self._error(ctx, ErrorCode.INVALID_OPERATION, f"array size {n} is {'negative' if n < 0 else 'too large'}")
            return []
        d = factory()
        if isinstance(d, list):
            return [factory() for _ in range(n)]
        return [d] * n

    def elapse_deadline(self, ctx: InstanceContext, now: int, amount: float, unit_us: int) -> int | None:
        try:
            d = now + max(0, round(amount * unit_us))
        except (OverflowError, ValueError):  # infinite or NaN
            self._error(ctx, ErrorCode.INVALID_OPERATION, f"elapse amount {amount} is not a usable duration")
            return None
        if d <= MAX_TIME:
            return d
        self.deadline_out_of_range(ctx, d)
        return None

    def time_out_of_range(self, ctx: InstanceContext, t: int) -> int:
        self._error(ctx, ErrorCode.INVALID_OPERATION, f"time out of range ({t} µs is outside years 1 to 9999)")
        return 0

    def deadline_out_of_range(self, ctx: InstanceContext, d: int) -> None:
        self._error(ctx, ErrorCode.INVALID_OPERATION, "elapse deadline beyond year 9999: the marker cannot fire")
        return None

    def pattern(self, ctx: InstanceContext, now: int, comps: tuple[Any, ...]) -> int | None:
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
