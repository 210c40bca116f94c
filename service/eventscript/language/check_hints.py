"""The wording of the checker's hints, and small helpers its parts share."""

from __future__ import annotations

from collections.abc import Iterable

from . import ast
from .hints import closest
from .source import Pos
from .types import DOUBLE, LONG, STRING, ArrayType, StructType, Type, describe


def field_name(f: tuple[str, Type]) -> str:
    return f[0]


def suggest(name: str, candidates: Iterable[str], otherwise: str) -> str:
    """``otherwise``, preceded by "did you mean 'X'?" when a candidate is close to ``name``."""
    best = closest(name, candidates)
    if best is None:
        return otherwise
    return f"did you mean {best!r}? Otherwise, {otherwise}"


#: For a marker or an input named ``$error``: such names are the engine's, and a program that
#: means to react to errors reads another program's error topic under a name of its own.
ERROR_EVENTS_HINT = (
    "to react to another program's errors, declare an input of your own, "
    "in {long code; string message;} Failure, and read that program's error topic as it "
    "(event: Failure in the worker's inputs: docs/worker.md)"
)

#: Field names other languages give the size of an array or a string (``a.length``, ``s.size``).
SIZE_FIELDS = frozenset(("length", "size", "count", "len"))


def size_hint(e: ast.FieldAccess, of: Type) -> str | None:
    """For ``a.length`` (or ``.size``, ``.count``, ``.len``) on an array or a string, which have
    no fields: the library function that gives the size, with the value as written."""
    if e.name not in SIZE_FIELDS or not (isinstance(of, ArrayType) or of == STRING):
        return None
    what = "elements" if isinstance(of, ArrayType) else "characters"
    return f"the number of {what} is length({_object_as_written(e)})"


def _object_as_written(e: ast.FieldAccess) -> str:
    """The text of ``e``'s object (``x``, ``a[i]``, ``s.items``), or ``x`` when its start is not
    known (it starts with a parenthesis) or it spans lines."""
    start = e.obj
    while isinstance(start, (ast.Index, ast.FieldAccess)):
        start = start.obj
    source = e.name_pos.source
    if not isinstance(start, (ast.Name, ast.Call)) or start.pos.source is not source:
        return "x"
    text = source.text[start.pos.offset : e.name_pos.offset].rstrip()
    return text[:-1].rstrip() if text.endswith(".") and "\n" not in text else "x"


def condition_hint(got: Type) -> str | None:
    """How to turn a value of type ``got`` into the boolean a condition needs."""
    if got.is_numeric:
        return "EventScript has no truth values for numbers: write a comparison, e.g. n != 0 ? ..."
    if got == STRING:
        return 'write a comparison, e.g. s != "" ? ... or contains(s, "x") ? ...'
    return "write a comparison or another boolean expression"


def choose_guess(candidates: list[tuple[Type, Pos]]) -> tuple[Type, Pos]:
    """The type a variable takes from the guesses of one round, whatever their order: the one
    type they agree on; double when they mix long and double (the long uses are promoted);
    otherwise an arbitrary but fixed one (a conflict reported later anyway)."""
    types = {t for t, _ in candidates}
    if types == {LONG, DOUBLE}:
        chosen: Type = DOUBLE
    else:
        chosen = min(types, key=lambda t: (describe(t), repr(t)))
    pos = min((p for t, p in candidates if t == chosen), key=lambda p: (p.source.name, p.offset))
    return chosen, pos


def conversion_hint(value: ast.Expr, got: Type, want: Type) -> str | None:
    if want == DOUBLE and got == LONG:
        if isinstance(value, ast.IntLit):
            return f"write {value.value}.0 for a double constant"
        return "EventScript never converts on assignment: write double(...)"
    if want == LONG and got == DOUBLE:
        return "EventScript never converts on assignment: write long(...) to truncate"
    if isinstance(want, StructType) and isinstance(got, StructType) and sorted(want.names) == sorted(got.names):
        return struct_hint(got, want)
    return None


def struct_hint(got: StructType, want: StructType) -> str:
    """Why two structures with the same field names differ: a field's type (named, with what to
    write), their order, or both."""
    wanted = dict(want.fields)
    mistyped = [(n, t, wanted[n]) for n, t in got.fields if t != wanted[n]]
    if mistyped:
        name, have, need = mistyped[0]
        order = " (and the fields are in a different order)" if got.names != want.names else ""
        return f"field {name!r} is {describe(have)} here but {describe(need)} is wanted{order}"
    return "the fields are the same but in a different order"


def expression_start(e: ast.Expr) -> Pos:
    """Where ``e``'s text begins (its leftmost operand's position; a binary or conditional
    expression's own is its operator's): the caret for an error about the whole value."""
    while True:
        if isinstance(e, ast.Binary):
            e = e.left
        elif isinstance(e, ast.CondExpr):
            e = e.cond
        elif isinstance(e, (ast.Index, ast.FieldAccess)):
            e = e.obj
        else:
            return e.pos


def subexpressions(e: ast.Expr) -> list[ast.Expr]:
    if isinstance(e, ast.Unary):
        return [e.operand]
    if isinstance(e, ast.Binary):
        return [e.left, e.right]
    if isinstance(e, ast.CondExpr):
        return [e.cond, e.then, e.otherwise]
    if isinstance(e, ast.Call):
        return list(e.args)
    if isinstance(e, ast.Index):
        return [e.obj, e.index]
    if isinstance(e, ast.FieldAccess):
        return [e.obj]
    if isinstance(e, ast.StructBuild):
        return [f.value for f in e.fields]
    if isinstance(e, ast.NewArray):
        return [e.size]
    if isinstance(e, ast.GroupRef):
        return [e.index]
    return []
