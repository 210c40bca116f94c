"""Values to and from JSON, directed by their EventScript type.

``encode`` gives the conformance encoding (conformance README, "The output format"): doubles
always as JSON numbers with a fraction (or the strings "NaN", "Infinity", "-Infinity"), longs
as integers, times as ISO-8601 UTC with six fractional digits, structures as objects with
fields in declared order. ``decode`` is the strict inverse used by adapters: a value that does
not conform raises :class:`DecodeError` naming the offending path, and becomes ``$error`` 6.
"""

from __future__ import annotations

import math
from typing import Any

from ..language.types import BOOLEAN, DOUBLE, LONG, OBJECT, STRING, TIME, ArrayType, StructType, Type
from .timeutil import MAX_TIME, MIN_TIME, TimeRangeError, format_time, parse_time
from .values import LONG_MAX, LONG_MIN


class DecodeError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


def encode_double(x: float) -> Any:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def encode(value: Any, t: Type) -> Any:
    """Run-time value → JSON-compatible Python (dict, list, str, int, float, bool, None)."""
    if t == DOUBLE:
        return encode_double(value)
    if t == TIME:
        return format_time(value)
    if isinstance(t, StructType):
        return {name: encode(v, ft) for (name, ft), v in zip(t.fields, value)}
    if isinstance(t, ArrayType):
        et = t.element
        return [encode(v, et) for v in value]
    return value


def decode(obj: Any, t: Type, path: str = "") -> Any:
    """JSON-compatible Python → run-time value of type t, or DecodeError."""
    if t == LONG:
        if type(obj) is int and LONG_MIN <= obj <= LONG_MAX:
            return obj
        if type(obj) is float and obj.is_integer() and LONG_MIN <= obj <= LONG_MAX:
            return int(obj)
        raise DecodeError(path, f"expected a long, got {_show(obj)}")
    if t == DOUBLE:
        if type(obj) is float:
            return obj
        if type(obj) is int:
            try:
                return float(obj)
            except OverflowError:
                raise DecodeError(path, f"{_show(obj)} is too large for a double") from None
        if obj in ("NaN", "Infinity", "-Infinity"):
            return float(obj.replace("Infinity", "inf"))
        raise DecodeError(path, f"expected a double, got {_show(obj)}")
    if t == BOOLEAN:
        if type(obj) is bool:
            return obj
        raise DecodeError(path, f"expected a boolean, got {_show(obj)}")
    if t == STRING:
        if type(obj) is str:
            return obj
        raise DecodeError(path, f"expected a string, got {_show(obj)}")
    if t == TIME:
        if type(obj) is str:
            try:
                return parse_time(obj)
            except (ValueError, TimeRangeError) as exc:
                raise DecodeError(path, str(exc)) from None
        if type(obj) is int:
            us = obj * 1000  # epoch milliseconds
            if MIN_TIME <= us <= MAX_TIME:
                return us
        raise DecodeError(path, f"expected a time (ISO-8601 text or epoch milliseconds), got {_show(obj)}")
    if t == OBJECT:
        return obj
    if isinstance(t, ArrayType):
        if type(obj) is not list:
            raise DecodeError(path, f"expected an array, got {_show(obj)}")
        return [decode(v, t.element, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(t, StructType):
        if type(obj) is dict:
            out = []
            for name, ft in t.fields:
                if name not in obj:
                    raise DecodeError(path, f"missing field {name!r}")
                out.append(decode(obj[name], ft, f"{path}.{name}" if path else name))
            return out
        if type(obj) is list and len(obj) == len(t.fields):
            return [decode(v, ft, f"{path}.{name}" if path else name) for v, (name, ft) in zip(obj, t.fields)]
        raise DecodeError(path, f"expected a structure {t}, got {_show(obj)}")
    raise DecodeError(path, f"unsupported type {t}")


def _show(obj: Any) -> str:
    if obj is None:
        return "null"
    text = repr(obj)
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(obj), type(obj).__name__)
    return f"{kind} {text[:60]}"
