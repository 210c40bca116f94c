"""The abstract syntax tree, with a source position on every node.

Three families of nodes mirror the language: declarations, regular expressions (with event
markers and action blocks as their leaves) and actions/expressions. The checker annotates
expression nodes in place (``ty``: the inferred type; ``ref``: what a name denotes), so later
stages never repeat name resolution or inference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .source import Pos

# ---------------------------------------------------------------------------------------
# Type expressions (as written; resolved to language.types by the checker)


@dataclass
class TypeName:
    name: str
    pos: Pos


@dataclass
class ArrayTypeExpr:
    element: TypeExpr
    pos: Pos


@dataclass
class StructField:
    type: TypeExpr
    name: str
    pos: Pos


@dataclass
class StructTypeExpr:
    fields: list[StructField]
    pos: Pos


TypeExpr = TypeName | ArrayTypeExpr | StructTypeExpr

# ---------------------------------------------------------------------------------------
# Expressions


@dataclass
class Expr:
    pos: Pos
    #: Filled by the checker: the expression's type (language.types.Type) or None if unknown.
    ty: Any = field(default=None, init=False, repr=False, compare=False)


@dataclass
class IntLit(Expr):
    value: int
    #: The literal is the negation of a written one (-5): a second minus (- -5) is an operator.
    negated: bool = field(default=False, init=False, repr=False, compare=False)
    #: An arrive pattern's component written in parentheses, ``arrive[(25):00]``: an expression,
    #: evaluated when its timer is set (as ``10 / 0`` is), not a number of the pattern.
    parenthesized: bool = field(default=False, init=False, repr=False, compare=False)


@dataclass
class FloatLit(Expr):
    value: float
    #: As ``IntLit.parenthesized``.
    parenthesized: bool = field(default=False, init=False, repr=False, compare=False)


@dataclass
class StrLit(Expr):
    value: str


@dataclass
class BoolLit(Expr):
    value: bool


@dataclass
class Name(Expr):
    name: str
    #: Filled by the checker: a checker.Variable, checker.LoopIndex or checker.EventValue.
    ref: Any = field(default=None, init=False, repr=False, compare=False)


@dataclass
class GroupRef(Expr):
    """``group[n]``: component n of the current instance's group key."""

    index: Expr


@dataclass
class Unary(Expr):
    op: str
    operand: Expr


@dataclass
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass
class CondExpr(Expr):
    cond: Expr
    then: Expr
    otherwise: Expr


@dataclass
class Call(Expr):
    name: str
    args: list[Expr]
    #: Filled by the checker: the resolved stdlib.Builtin overload or checker.ExternalFunction.
    target: Any = field(default=None, init=False, repr=False, compare=False)


@dataclass
class Index(Expr):
    obj: Expr
    index: Expr


@dataclass
class FieldAccess(Expr):
    obj: Expr
    name: str
    name_pos: Pos


@dataclass
class FieldInit:
    name: str
    value: Expr
    pos: Pos


@dataclass
class StructBuild(Expr):
    fields: list[FieldInit]
    #: Filled by the checker: the structure type expected here, when the fields are its fields.
    expected: Any = field(default=None, init=False, repr=False, compare=False)


@dataclass
class NewArray(Expr):
    element: TypeExpr
    size: Expr


# ---------------------------------------------------------------------------------------
# Actions


@dataclass
class Action:
    pos: Pos


@dataclass
class Block(Action):
    actions: list[Action]


@dataclass
class Emit(Action):
    name: str
    name_pos: Pos
    value: Expr | None


@dataclass
class Assign(Action):
    target: Expr
    value: Expr


@dataclass
class IfAction(Action):
    cond: Expr
    then: Action
    otherwise: Action | None


@dataclass
class ForAction(Action):
    var: str
    var_pos: Pos
    low: Expr
    high: Expr
    body: Action
    #: Filled by the checker: the checker.LoopIndex bound by this loop.
    index: Any = field(default=None, init=False, repr=False, compare=False)


# ---------------------------------------------------------------------------------------
# Regular expressions


@dataclass
class Regex:
    pos: Pos


@dataclass
class RSeq(Regex):
    items: list[Regex]


@dataclass
class RAlt(Regex):
    items: list[Regex]


@dataclass
class RInter(Regex):
    left: Regex
    right: Regex


@dataclass
class RDiff(Regex):
    left: Regex
    right: Regex


@dataclass
class RRepeat(Regex):
    item: Regex
    low: int
    high: int | None  # None: unbounded
    op_pos: Pos


@dataclass
class RActions(Regex):
    """An action block placed in a sequence."""

    block: Block
    #: Program-text order of the block (token index of its opening brace).
    order: int = 0


@dataclass
class RMarker(Regex):
    """``Name(target)``: an event marker for a named (or classified) event."""

    name: str
    target: str | None
    target_pos: Pos | None
    order: int = 0


@dataclass
class RWildcard(Regex):
    """``.``: any named event."""


@dataclass
class RElapse(Regex):
    """``elapse[amount unit](target)``: fires when the amount has passed since the state was entered."""

    amount: Expr
    unit: str
    unit_pos: Pos
    target: str | None
    target_pos: Pos | None
    order: int = 0


@dataclass
class Wild:
    """A ``.`` component in an arrive pattern."""

    pos: Pos


PatternComponent = Wild | Expr


@dataclass
class ArrivePattern:
    """A date/time pattern: date components (year, month, day) or None, and time components.

    ``time_expr`` is set instead when the whole pattern is a ``time`` expression.
    """

    pos: Pos
    date: list[PatternComponent] | None = None
    time: list[PatternComponent] | None = None
    time_expr: Expr | None = None


@dataclass
class RArrive(Regex):
    """``arrive[pattern](target)``: fires at the next instant matching the pattern."""

    pattern: ArrivePattern
    target: str | None
    target_pos: Pos | None
    order: int = 0


TimeMarker = RElapse | RArrive

# ---------------------------------------------------------------------------------------
# Declarations


@dataclass
class CaseName:
    name: str
    pos: Pos


@dataclass
class CaseArm:
    cond: Expr
    then: CaseNode
    otherwise: CaseNode
    pos: Pos


CaseNode = CaseName | CaseArm


@dataclass
class InputEntry:
    type: TypeExpr
    name: str
    pos: Pos
    group: list[Expr] | None = None
    group_pos: Pos | None = None
    case: CaseNode | None = None
    case_pos: Pos | None = None


@dataclass
class InputDecl:
    entries: list[InputEntry]
    pos: Pos


@dataclass
class OutputEntry:
    type: TypeExpr
    name: str
    pos: Pos


@dataclass
class OutputDecl:
    entries: list[OutputEntry]
    pos: Pos


@dataclass
class TypeDecl:
    name: str
    type: TypeExpr
    pos: Pos


@dataclass
class FunctionDecl:
    result: TypeExpr
    name: str
    params: list[TypeExpr]
    impl: str
    impl_pos: Pos
    pos: Pos


Decl = InputDecl | OutputDecl | TypeDecl | FunctionDecl


@dataclass
class Program:
    decls: list[Decl]
    regex: Regex | None
    pos: Pos
