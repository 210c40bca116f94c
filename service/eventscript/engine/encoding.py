"""Values to and from JSON, directed by their EventScript type.

``encode`` gives the conformance encoding (conformance README, "The output format"): doubles
always as JSON numbers with a fraction (or the strings "NaN", "Infinity", "-Infinity"), longs
as integers, times as ISO-8601 UTC with six fractional digits, structures as objects with
fields in declared order. ``decode`` is the strict inverse used by adapters: a value that does
not conform raises :class:`DecodeError` naming the offending path, and becomes ``$error`` 6.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..language.types import BOOLEAN, DOUBLE, LONG, OBJECT, STRING, TIME, ArrayType, StructType, Type
from .timeutil import MAX_TIME, MIN_TIME, TimeRangeError, format_time, parse_time
from .values import LONG_MAX, LONG_MIN

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_at(text: str) -> int | None:
    """Index of the first UTF-16 surrogate code point in ``text``, or None.

    Python strings hold code points, so a surrogate in one is always a lone one (JSON readers
    join ``\\ud83d\\ude00`` into one character): it is not a character, UTF-8 cannot carry it,
    and so no output line or record could hold it. Input values with one are rejected.
    """
    if text.isascii():
        return None
    m = _SURROGATE.search(text)
    return None if m is None else m.start()


class DecodeError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


def json_line(obj: Any) -> str:
    """One JSON-compatible value as one line of JSON text, UTF-8 characters kept as they are.

    Never fails on a string holding a lone UTF-16 surrogate (an ``object`` value or an external
    function's result can carry one past the input checks): it is written as its JSON escape
    ``\\ud800``, which JSON readers accept, where writing the raw code point to a UTF-8 stream
    would raise.
    """
    text = json.dumps(obj, ensure_ascii=False)
    if text.isascii() or lone_surrogate_at(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


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
            at = lone_surrogate_at(obj)
            if at is None:
                return obj
            raise DecodeError(
                path,
                f"the string holds a lone UTF-16 surrogate \\u{ord(obj[at]):04x} at index {at}, "
                f"which is not a character",
            )
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
            raise DecodeError(
                path,
                f"epoch milliseconds {obj} are out of range: a time lies in years 1 to 9999 "
                f"(was the value written in microseconds or nanoseconds?)",
            )
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
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(obj), type(obj).__name__
    )
    return f"{kind} {text[:60]}"


# ---------------------------------------------------------------------------------------------
# Compiled codecs: the same conversions as encode/decode, specialised once per type (adapters
# call them for every record; comparing types on every value would cost more than the work).

_ENCODERS: dict[Type, Any] = {}
_DECODERS: dict[Type, Any] = {}


def _identity(x: Any) -> Any:
    return x


def encoder_for(t: Type) -> Any:
    """A function run-time value → JSON-compatible value, equivalent to ``encode(value, t)``."""
    enc = _ENCODERS.get(t)
    if enc is not None:
        return enc
    if t == DOUBLE:
        enc = encode_double
    elif t == TIME:
        enc = format_time
    elif isinstance(t, ArrayType):
        inner = encoder_for(t.element)
        enc = _identity if inner is _identity else (lambda v, _e=inner: [_e(x) for x in v])
    elif isinstance(t, StructType):
        enc = _struct_codec(t, encode=True)
    else:
        enc = _identity
    _ENCODERS[t] = enc
    return enc


def decoder_for(t: Type) -> Any:
    """A function JSON-compatible value → run-time value, equivalent to ``decode(obj, t)``: the
    common, well-typed case is checked inline; anything else goes through ``decode``, which
    converts what it can and raises DecodeError with the offending path otherwise."""
    dec = _DECODERS.get(t)
    if dec is not None:
        return dec
    if t == LONG:

        def dec(obj: Any) -> Any:
            if type(obj) is int and LONG_MIN <= obj <= LONG_MAX:
                return obj
            return decode(obj, LONG)
    elif t == DOUBLE:

        def dec(obj: Any) -> Any:
            return obj if type(obj) is float else decode(obj, DOUBLE)
    elif t == STRING:

        def dec(obj: Any) -> Any:
            return obj if type(obj) is str and obj.isascii() else decode(obj, STRING)
    elif t == BOOLEAN:

        def dec(obj: Any) -> Any:
            return obj if type(obj) is bool else decode(obj, BOOLEAN)
    elif t == OBJECT:
        dec = _identity
    elif isinstance(t, StructType):
        dec = _struct_codec(t, encode=False)
    elif isinstance(t, ArrayType):
        inner = decoder_for(t.element)

        def dec(obj: Any) -> Any:
            if type(obj) is list:
                try:
                    return [inner(x) for x in obj]
                except DecodeError:
                    pass
            return decode(obj, t)
    else:

        def dec(obj: Any) -> Any:
            return decode(obj, t)

    _DECODERS[t] = dec
    return dec


def _struct_codec(t: StructType, encode: bool) -> Any:
    """Generated code for one structure type: one function, no per-field calls for primitive
    fields (only program types reach here, never event data)."""
    ns: dict[str, Any] = {
        "_fallback": lambda obj: decode(obj, t),
        "_MIN": LONG_MIN,
        "_MAX": LONG_MAX,
        "_ed": encode_double,
        "_isfinite": __import__("math").isfinite,
        "_whole": lambda s: lone_surrogate_at(s) is None,
    }
    lines: list[str] = []
    if encode:
        parts = []
        for i, (name, ft) in enumerate(t.fields):
            if ft in (LONG, STRING, BOOLEAN, OBJECT):
                parts.append(f"{name!r}: v[{i}]")
            elif ft == DOUBLE:
                parts.append(f"{name!r}: (v[{i}] if _isfinite(v[{i}]) else _ed(v[{i}]))")
            else:
                ns[f"_e{i}"] = encoder_for(ft)
                parts.append(f"{name!r}: _e{i}(v[{i}])")
        lines = ["def codec(v):", "    return {" + ", ".join(parts) + "}"]
    else:
        checks, values = [], []
        lines = ["def codec(obj):", "    if type(obj) is dict:", "        try:", "            pass"]
        for i, (name, ft) in enumerate(t.fields):
            lines.append(f"            f{i} = obj[{name!r}]")
            if ft == LONG:
                checks.append(f"type(f{i}) is int and _MIN <= f{i} <= _MAX")
            elif ft == DOUBLE:
                checks.append(f"type(f{i}) is float")
            elif ft == STRING:
                checks.append(f"type(f{i}) is str and (f{i}.isascii() or _whole(f{i}))")
            elif ft == BOOLEAN:
                checks.append(f"type(f{i}) is bool")
            elif ft != OBJECT:
                ns[f"_d{i}"] = decoder_for(ft)
                lines.append(f"            f{i} = _d{i}(f{i})")
            values.append(f"f{i}")
        lines.append("        except (KeyError, DecodeError):")
        lines.append("            return _fallback(obj)")
        lines.append(f"        if {' and '.join(checks) or 'True'}:")
        lines.append(f"            return [{', '.join(values)}]")
        lines.append("    return _fallback(obj)")
        ns["DecodeError"] = DecodeError
    exec(compile("\n".join(lines), f"<codec {t}>", "exec"), ns)
    return ns["codec"]
