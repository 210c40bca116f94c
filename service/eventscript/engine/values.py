"""How EventScript values live in Python, and the operations with Java-like semantics.

| EventScript | Python                                                         |
|-------------|----------------------------------------------------------------|
| boolean     | bool                                                           |
| long        | int, kept in the signed 64-bit range (two's-complement wrap)    |
| double      | float (IEEE 754)                                               |
| string      | str                                                            |
| time        | int: microseconds since 1970-01-01T00:00:00Z                    |
| object      | any Python object, opaque to programs                          |
| T[]         | list (mutable, shared by reference)                            |
| structure   | list of field values in declared order (mutable, by reference) |

Arrays and structures are both lists: types are static, so nothing at run time needs to tell
them apart, and positional fields are the cheapest structure there is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..language.types import (
    BOOLEAN,
    DOUBLE,
    LONG,
    OBJECT,
    STRING,
    TIME,
    ArrayType,
    StructType,
    Type,
)


class _Unset:
    """The value of a variable that has not been set yet."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()

TWO_63 = 1 << 63
MASK_64 = (1 << 64) - 1
LONG_MIN = -TWO_63
LONG_MAX = TWO_63 - 1


def wrap(x: int) -> int:
    """Two's-complement 64-bit wrap-around, as Java's long arithmetic."""
    return ((x + TWO_63) & MASK_64) - TWO_63


def java_div(a: int, b: int) -> int:
    """long division truncating toward zero (b != 0)."""
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    return wrap(q)


def java_rem(a: int, b: int) -> int:
    """long remainder with the sign of the dividend (b != 0)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def key_double(x: float) -> float:
    """A ``double`` group key component in its one form: ``-0.0`` is ``0.0`` (they are equal, as
    ``==`` says) and every NaN is the one ``math.nan`` (no NaN equals another, so each record
    of a NaN key would start an instance of its own). Keys are routed and stored by their bytes
    (``[0.0]``, ``[NaN]``): one form per key keeps the tester, a worker on any number of
    partitions and the backfill on one instance per key."""
    if x == 0.0:
        return 0.0
    return math.nan if x != x else x


def double_div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def double_rem(a: float, b: float) -> float:
    """Java's % on doubles: the remainder of truncated division (C fmod)."""
    if b == 0.0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    if math.isinf(b):
        return a
    return math.fmod(a, b)


def double_to_long(x: float) -> int:
    """Java's (long) cast: NaN → 0, saturating at the bounds, truncating toward zero."""
    if math.isnan(x):
        return 0
    if x >= 9.223372036854775807e18:
        return LONG_MAX
    if x <= -9.223372036854775808e18:
        return LONG_MIN
    return int(x)


def default_value(t: Type) -> Any:
    """The value an operation yields after an error (conformance README): 0, 0.0, false, "",
    the epoch, an empty array, a structure of defaults."""
    if t in (LONG, TIME):
        return 0
    if t == DOUBLE:
        return 0.0
    if t == BOOLEAN:
        return False
    if t == STRING:
        return ""
    if t == OBJECT:
        return None
    if isinstance(t, ArrayType):
        return []
    if isinstance(t, StructType):
        return [default_value(ft) for _, ft in t.fields]
    return None


def default_factory(t: Type) -> Callable[[], Any]:
    """A function returning a fresh default (fresh lists for arrays and structures)."""
    if isinstance(t, (ArrayType, StructType)):
        return lambda: default_value(t)
    value = default_value(t)
    return lambda: value


def deep_copy(x: Any) -> Any:
    """A snapshot of an array or structure value (emitted values never change afterwards)."""
    if isinstance(x, list):
        return [deep_copy(v) if isinstance(v, list) else v for v in x]
    return x


def needs_copy(t: Type) -> bool:
    return isinstance(t, (ArrayType, StructType))


def conforms(value: Any, t: Type) -> bool:
    """Whether a Python value is a valid run-time value of type t (used by adapters' checks)."""
    if t == LONG:
        return type(value) is int and LONG_MIN <= value <= LONG_MAX
    if t == DOUBLE:
        return type(value) is float
    if t == BOOLEAN:
        return type(value) is bool
    if t == STRING:
        return type(value) is str
    if t == TIME:
        return type(value) is int
    if t == OBJECT:
        return True
    if isinstance(t, ArrayType):
        return type(value) is list and all(conforms(v, t.element) for v in value)
    if isinstance(t, StructType):
        return (
            type(value) is list
            and len(value) == len(t.fields)
            and all(conforms(v, ft) for v, (_, ft) in zip(value, t.fields))
        )
    return False
