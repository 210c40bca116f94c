"""A small evaluator for the actions and expressions the generator writes (document 2.5, 3.1).

Independent of ``engine/``: values are plain Python values (``long`` an int kept in 64 bits,
``double`` a float, ``time`` an int of microseconds, arrays lists, structures dicts). Types come
from the checker's annotations (the shared front end). Errors follow the conformance README's
table: the ``$error`` is reported when it happens and the failing operation yields its type's
default value.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from eventscript.language import ast
from eventscript.language.types import BOOLEAN, DOUBLE, LONG, STRING, TIME, ArrayType, StructType, Type

from . import builtins

UNSET_VARIABLE, LONG_DIVISION_BY_ZERO, OUT_OF_BOUNDS, INVALID_OPERATION = 3, 4, 5, 8


def wrap(n: int) -> int:
    """64-bit two's complement (choice 7)."""
    return (n + 2**63) % 2**64 - 2**63


def default(ty: Type | None) -> Any:
    if ty in (LONG, TIME):
        return 0
    if ty == DOUBLE:
        return 0.0
    if ty == BOOLEAN:
        return False
    if ty == STRING:
        return ""
    if isinstance(ty, ArrayType):
        return []
    if isinstance(ty, StructType):
        return {n: default(t) for n, t in ty.fields}
    return None


def java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return wrap(q if (a >= 0) == (b >= 0) else -q)


def java_rem(a: int, b: int) -> int:
    return a - b * (abs(a) // abs(b)) * (1 if (a >= 0) == (b >= 0) else -1)


def text_of(value: Any, ty: Type | None) -> str:
    if ty == BOOLEAN:
        return "true" if value else "false"
    if ty == DOUBLE:
        return java_double_text(float(value))
    if ty == TIME:  # docs/language.md 8, string(t): ISO-8601 UTC, as the output writes times
        return builtins.iso_text(value)
    return str(value)


def java_double_text(x: float) -> str:
    """Java's ``Double.toString`` (docs/language.md 6.3, ``string(x)``): the shortest digits that
    read back as ``x``; plain decimal from 10^-3 up to below 10^7, else ``d.dddE<n>``."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    _, digit_tuple, exponent = Decimal(repr(abs(x))).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # the value is 0.<digits> * 10^point
    digits = digits.rstrip("0")
    if len(digits) == 1:
        digits, point = _two_digit_text(abs(x), digits, point)
    sign = "-" if x < 0 else ""
    if 1e-3 <= abs(x) < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def _two_digit_text(x: float, digit: str, point: int) -> tuple[str, int]:
    """Java (Double.toString since JDK 19): when one digit is enough to read back as ``x``, the
    decimal of one or two digits nearest to ``x`` among those that read back as it (4.9E-324)."""
    best = (abs(Fraction(int(digit) * 10) * Fraction(10) ** (point - 2) - Fraction(x)), digit, point)
    for p in (point, point - 1):
        for n in range(10, 100):
            value = Fraction(n) * Fraction(10) ** (p - 2)
            if float(value) == x:
                text = str(n).rstrip("0")
                best = min(best, (abs(value - Fraction(x)), text, p), key=lambda b: (b[0], int(b[1][-1]) % 2))
    return best[1], best[2]


def json_double(x: float) -> float | str:
    """A double as the output format writes it: non-finite values as strings (conformance README)."""
    x = float(x)
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def java_long_of(x: float) -> int:
    """Java's ``(long)`` cast (docs/language.md 6.3, ``long(x)``): toward zero, NaN 0, clamped."""
    return builtins.to_long(x, int)


@dataclass
class Scope:
    """What an expression can see: the instance's variables, the event value, the clock, the key."""

    variables: dict[str, Any]
    now: int
    error: Callable[[int, str], None]
    emit: Callable[[str, Any], None] = lambda name, value: None
    event_value: Any = None
    key: tuple[Any, ...] | None = None
    loop: dict[str, int] = field(default_factory=dict)


def evaluate(e: ast.Expr, s: Scope) -> Any:
    if isinstance(e, (ast.IntLit, ast.FloatLit, ast.StrLit, ast.BoolLit)):
        return float(e.value) if e.ty == DOUBLE else e.value
    if isinstance(e, ast.Name):
        if e.name in s.loop:
            return s.loop[e.name]
        if type(e.ref).__name__ == "EventValue":
            return s.event_value
        if e.name not in s.variables:
            s.error(UNSET_VARIABLE, f"variable {e.name} has not been set")
            return default(e.ty)
        return s.variables[e.name]
    if isinstance(e, ast.GroupRef):
        assert s.key is not None
        return s.key[evaluate(e.index, s)]
    if isinstance(e, ast.Unary):
        v = evaluate(e.operand, s)
        if e.op == "!":
            return not v
        return wrap(-v) if e.ty == LONG else -float(v)
    if isinstance(e, ast.CondExpr):
        return _as(evaluate(e.then if evaluate(e.cond, s) else e.otherwise, s), e.ty)
    if isinstance(e, ast.Binary):
        return _binary(e, s)
    if isinstance(e, ast.Call):
        return _call(e, [evaluate(a, s) for a in e.args], s)
    if isinstance(e, ast.Index):
        arr = evaluate(e.obj, s)
        i = evaluate(e.index, s)
        if not 0 <= i < len(arr):
            s.error(OUT_OF_BOUNDS, f"subscript {i} is out of bounds for length {len(arr)}")
            return default(e.ty)
        return arr[i]
    if isinstance(e, ast.NewArray):
        n = evaluate(e.size, s)
        if n < 0:  # conformance README, code 8: a negative array size; the default is an empty array
            s.error(INVALID_OPERATION, f"negative array size {n}")
            return []
        return [default(e.ty.element) for _ in range(n)]
    if isinstance(e, ast.StructBuild):
        # Evaluated in the order written (left to right, as in Java); the structure keeps the
        # declared order of its type's fields (the README's output format).
        written = {f.name: evaluate(f.value, s) for f in e.fields}
        return {n: written[n] for n in e.ty.names} if isinstance(e.ty, StructType) else written
    if isinstance(e, ast.FieldAccess):
        return evaluate(e.obj, s)[e.name]
    raise NotImplementedError(f"the reference does not evaluate {type(e).__name__}")


def _as(v: Any, ty: Type | None) -> Any:
    return float(v) if ty == DOUBLE else v


def _binary(e: ast.Binary, s: Scope) -> Any:
    if e.op == "&&":
        return bool(evaluate(e.left, s)) and bool(evaluate(e.right, s))
    if e.op == "||":
        return bool(evaluate(e.left, s)) or bool(evaluate(e.right, s))
    a, b = evaluate(e.left, s), evaluate(e.right, s)
    if e.op in ("==", "!=", "<", "<=", ">", ">=") and DOUBLE in (e.left.ty, e.right.ty):
        # Footnote 5 of the language document: a long operand is promoted to double, also in a
        # comparison (2**63 - 1 == 9.223372036854775807E18 is true, as in Java).
        a, b = float(a), float(b)
    if e.op in ("==", "!="):
        return (a == b) == (e.op == "==")
    if e.op in ("<", "<=", ">", ">="):
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[e.op]
    if e.ty == STRING:
        return text_of(a, e.left.ty) + text_of(b, e.right.ty)
    if e.ty == DOUBLE:
        a, b = float(a), float(b)
        if e.op == "/" and b == 0.0:
            return math.copysign(math.inf, a) * math.copysign(1.0, b) if a == a and a != 0.0 else math.nan
        if e.op == "%":
            # Java: NaN for an infinite dividend or a zero divisor (math.fmod raises on the first)
            return math.fmod(a, b) if b != 0.0 and not math.isinf(a) else math.nan
        return {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else 0.0}[e.op]
    if e.op in ("/", "%") and b == 0:
        s.error(LONG_DIVISION_BY_ZERO, f"long division by zero ({a} {e.op} 0)")
        return 0
    if e.op == "/":
        return java_div(a, b)
    if e.op == "%":
        return java_rem(a, b)
    return wrap({"+": a + b, "-": a - b, "*": a * b}[e.op])


_CLOCK = {"millisecond": (1000, 1000), "second": (10**6, 60), "minute": (60 * 10**6, 60), "hour": (3600 * 10**6, 24)}
_MICROS = {"microseconds": 1, "milliseconds": 1000, "seconds": 10**6, "minutes": 60 * 10**6}


def _call(e: ast.Call, args: list[Any], s: Scope) -> Any:
    name = e.name
    if name == "now":
        return s.now
    for unit, size in _MICROS.items():
        if name == unit + "Between":
            d = args[1] - args[0]
            return d // size if d >= 0 else -((-d) // size)
    if name == "long":
        if e.args[0].ty == STRING:
            return builtins.parse_long(args[0], s.error)
        return java_long_of(args[0]) if e.args[0].ty == DOUBLE else args[0]
    if name == "double":
        return builtins.parse_double(args[0], s.error) if e.args[0].ty == STRING else float(args[0])
    if name == "time":
        return builtins.parse_time(args[0], s.error)
    if name == "string":
        return text_of(args[0], e.args[0].ty)
    if name == "abs":
        return wrap(abs(args[0])) if e.ty == LONG else abs(args[0])
    if name in _CLOCK:  # docs/language.md 6.3: fields of a time, in UTC
        size, modulus = _CLOCK[name]
        return args[0] // size % modulus
    if name == "length":
        return len(args[0])
    if name == "contains":
        return args[1] in args[0]
    if name in ("min", "max"):
        if e.ty == DOUBLE:
            a, b = float(args[0]), float(args[1])
            if a != a or b != b:
                return math.nan
            if a == b == 0.0:  # Java: -0.0 is below 0.0
                signs = {math.copysign(1.0, a), math.copysign(1.0, b)}
                return (min if name == "min" else max)(signs) * 0.0
        return min(args) if name == "min" else max(args)
    return builtins.call(name, args, s.error)


def execute(a: ast.Action, s: Scope) -> None:
    if isinstance(a, ast.Block):
        for inner in a.actions:
            execute(inner, s)
    elif isinstance(a, ast.Emit):
        value = {} if a.value is None else evaluate(a.value, s)
        s.emit(a.name, copy.deepcopy(value))  # a snapshot (choice 9)
    elif isinstance(a, ast.Assign):
        _assign(a, s)
    elif isinstance(a, ast.IfAction):
        if evaluate(a.cond, s):
            execute(a.then, s)
        elif a.otherwise is not None:
            execute(a.otherwise, s)
    elif isinstance(a, ast.ForAction):
        low, high = evaluate(a.low, s), evaluate(a.high, s)
        saved = s.loop.get(a.var)
        for i in range(low, high + 1):  # both ends included (choice 10)
            s.loop[a.var] = i
            execute(a.body, s)
        if saved is None:
            s.loop.pop(a.var, None)
        else:
            s.loop[a.var] = saved
    else:
        raise NotImplementedError(f"the reference does not execute {type(a).__name__}")


def _assign(a: ast.Assign, s: Scope) -> None:
    target = a.target
    if isinstance(target, ast.Name):
        s.variables[target.name] = _as(evaluate(a.value, s), target.ty)
    elif isinstance(target, ast.Index):
        arr = evaluate(target.obj, s)
        i = evaluate(target.index, s)
        value = _as(evaluate(a.value, s), target.ty)
        if 0 <= i < len(arr):
            arr[i] = value
        else:
            s.error(OUT_OF_BOUNDS, f"subscript {i} is out of bounds for length {len(arr)}")
    elif isinstance(target, ast.FieldAccess):
        # The structure first, then the value, as in Java (a Python ``x[k] = v`` evaluates v first):
        # in q[i].a = v an out-of-bounds i is reported before an unset v.
        record = evaluate(target.obj, s)
        record[target.name] = _as(evaluate(a.value, s), target.ty)
    else:
        raise NotImplementedError(f"cannot assign to {type(target).__name__}")
