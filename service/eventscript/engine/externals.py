"""External functions: Python callables declared with ``function T f(...): "module:attribute"``.

The callable receives plain Python values — int, float, bool, str, ``datetime`` (UTC-aware) for
``time``, lists for arrays, dicts for structures, anything for ``object`` — and returns one.
The result is checked against the declared type; an exception or a wrong result is reported as
``$error`` 7 and the call yields the declared type's default.

"An exception" is any ``BaseException`` except ``KeyboardInterrupt``: a function that calls
``sys.exit()`` (SystemExit) must not silently end the tester or the worker with the rest of the
input unread. A string result must be text (no lone UTF-16 surrogate), as input strings must.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..language import ir
from ..language.types import BOOLEAN, DOUBLE, LONG, OBJECT, STRING, TIME, ArrayType, StructType, Type
from .encoding import lone_surrogate_at
from .events import ErrorCode
from .timeutil import from_datetime, to_datetime
from .values import LONG_MAX, LONG_MIN, default_value


def to_python(value: Any, t: Type) -> Any:
    if t == TIME:
        return to_datetime(value)
    if isinstance(t, ArrayType):
        return [to_python(v, t.element) for v in value]
    if isinstance(t, StructType):
        return {n: to_python(v, ft) for (n, ft), v in zip(t.fields, value)}
    return value


def from_python(obj: Any, t: Type) -> Any:
    if t == LONG and type(obj) is int and LONG_MIN <= obj <= LONG_MAX:
        return obj
    if t == DOUBLE and type(obj) in (int, float):
        return float(obj)
    if t == BOOLEAN and type(obj) is bool:
        return obj
    if t == STRING and type(obj) is str:
        at = lone_surrogate_at(obj)
        if at is not None:
            raise ValueError(f"the string holds a lone UTF-16 surrogate \\u{ord(obj[at]):04x} at index {at}")
        return obj
    if t == TIME and isinstance(obj, datetime):
        return from_datetime(obj)
    if t == OBJECT:
        return obj
    if isinstance(t, ArrayType) and isinstance(obj, (list, tuple)):
        return [from_python(v, t.element) for v in obj]
    if isinstance(t, StructType) and isinstance(obj, dict):
        return [from_python(obj[n], ft) for n, ft in t.fields]
    raise TypeError(f"expected {t}, got {type(obj).__name__} {obj!r:.60}")


def _describe(exc: BaseException, with_type: bool = True) -> str:
    """The exception as text for an ``$error`` message, even when its own ``__str__`` raises;
    a lone surrogate in it is spelled ``\\ud800`` (the message goes to outputs that must be UTF-8)."""
    try:
        text = str(exc)
    except Exception:
        text = "(its message cannot be shown)"
    if lone_surrogate_at(text) is not None:
        text = "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return f"{type(exc).__name__}: {text}" if with_type else text


def make_external(ext: ir.External, fn: Callable[..., Any], err: Callable[[Any, int, str], None]) -> Callable[..., Any]:
    params = list(ext.params)
    result = ext.result
    name = ext.name

    def call(ctx: Any, *args: Any) -> Any:
        try:
            out = fn(*[to_python(a, p) for a, p in zip(args, params)])
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit, GeneratorExit too: see the module docstring
            err(ctx, ErrorCode.EXTERNAL_FUNCTION, f"external function {name} failed: {_describe(exc)}")
            return default_value(result)
        try:
            return from_python(out, result)
        except Exception as exc:  # a result object's own methods may raise anything
            err(
                ctx,
                ErrorCode.EXTERNAL_FUNCTION,
                f"external function {name} returned a bad value: {_describe(exc, False)}",
            )
            return default_value(result)

    call.__name__ = f"external_{name}"
    return call
