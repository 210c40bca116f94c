"""What the checker's names denote, and the checked program it hands to lowering.

Variables (with their inferred types and the sites that typed them), loop indexes, input and
output events, event classes of case clauses, external functions; ``CheckedProgram`` gathers
them for ``lower``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import ast
from .source import Pos
from .types import Type


@dataclass(eq=False)
class Variable:
    """A program variable: one slot of every instance context."""

    name: str
    index: int
    first_pos: Pos
    ty: Type | None = None
    origin: Pos | None = None  # where the type was inferred
    assigned_at: Pos | None = None
    read_at: Pos | None = None
    #: The type came from a structure builder, whose field order is arbitrary: a structure type
    #: required elsewhere with the same fields in another order may still set the order.
    loose: bool = False
    #: Loose variables copied to or from this one (``q = p``): they share the builder's order, so
    #: settling one settles them all, whichever comes first in the text.
    copies: list[Variable] = field(default_factory=list)
    #: Set by a marker of an event that has no type (undeclared, an output event, or declared with
    #: a type that has errors): its type is unknown for a reason already reported.
    broken: bool = False


@dataclass(eq=False)
class LoopIndex:
    """The index of a ``for`` action: a long local to the loop body."""

    name: str
    pos: Pos
    slot: int


@dataclass(eq=False)
class InputEvent:
    name: str
    ty: Type
    pos: Pos
    index: int
    entry: ast.InputEntry
    classes: list[str] = field(default_factory=list)


@dataclass(eq=False)
class EventValue:
    """The arriving event's value, as its name denotes it in case and group clauses."""

    event: InputEvent


@dataclass(eq=False)
class OutputEvent:
    name: str
    ty: Type
    pos: Pos
    index: int


@dataclass(eq=False)
class EventClass:
    """A name introduced by an event-case clause."""

    name: str
    ty: Type
    pos: Pos
    inputs: list[InputEvent] = field(default_factory=list)


@dataclass(eq=False)
class ExternalFunction:
    name: str
    params: tuple[Type, ...]
    result: Type
    impl: str
    pos: Pos
    index: int
    function: Callable[..., Any] | None = None


@dataclass
class CheckedProgram:
    """A parsed program with every name resolved and every expression typed."""

    program: ast.Program
    inputs: dict[str, InputEvent]
    outputs: dict[str, OutputEvent]
    classes: dict[str, EventClass]
    variables: list[Variable]
    externals: dict[str, ExternalFunction]
    key_types: list[Type] | None
    loop_slots: int

    @property
    def grouped(self) -> bool:
        return self.key_types is not None
