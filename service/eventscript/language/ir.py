"""The intermediate form: what the front end hands to the automata and the engine.

Like CPython's ``re`` (parser → small intermediate form → compiler), the front end lowers the
checked syntax tree into plain, typed, position-free records:

* the **alphabet**: one symbol per unclassified input name, per event class of a case clause,
  and per textual time marker (language document §6.1, footnote 17);
* **markers**: each textual event marker and the symbols it matches (``.`` matches every named
  symbol; a classified event's original name matches all its classes);
* **action units**: each action block, and each marker's store of the event value into its
  variable, numbered in program-text order (that order breaks ties between paths);
* the **regex** over markers and units;
* typed **expression** and **action** trees, with ``long`` → ``double`` promotions explicit.

Everything here serializes to JSON, so a compiled program can be stored and run without its
source. Nodes are dataclasses; ``to_json``/``from_json`` walk them generically.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .types import Type, type_from_json

# ---------------------------------------------------------------------------------------
# Expressions


@dataclass
class Node:
    TAG: ClassVar[str] = ""
    #: Last fields left out of the JSON form while they are None (read back as their default), so
    #: that adding one changes neither the compiled form nor the fingerprint of programs without it.
    OPTIONAL_TAIL: ClassVar[tuple[str, ...]] = ()


@dataclass
class Const(Node):
    TAG = "const"
    ty: Type
    value: Any


@dataclass
class Var(Node):
    """Read of a program variable. ``checked``: it may be unset here, so test at run time."""

    TAG = "var"
    ty: Type
    slot: int
    name: str
    checked: bool = True


@dataclass
class Loop(Node):
    TAG = "loop"
    ty: Type
    slot: int
    name: str


@dataclass
class EventVal(Node):
    """The arriving event's value (only in case and group clauses)."""

    TAG = "event"
    ty: Type


@dataclass
class Key(Node):
    """``group[n]``."""

    TAG = "key"
    ty: Type
    n: int


@dataclass
class Unary(Node):
    TAG = "unary"
    ty: Type
    op: str  # "!" or "-"
    x: Node


@dataclass
class Binary(Node):
    """A binary operator. ``opty`` is the operands' type after promotion."""

    TAG = "binary"
    ty: Type
    op: str
    opty: Type
    left: Node
    right: Node


@dataclass
class ToDouble(Node):
    TAG = "todouble"
    ty: Type
    x: Node


@dataclass
class Cond(Node):
    TAG = "cond"
    ty: Type
    cond: Node
    then: Node
    otherwise: Node


@dataclass
class Call(Node):
    """A built-in function call; ``fn`` is the overload id of language.stdlib."""

    TAG = "call"
    ty: Type
    fn: str
    args: list[Node]


@dataclass
class Extern(Node):
    """A call of a declared external function (index into the program's externals)."""

    TAG = "extern"
    ty: Type
    fn: int
    args: list[Node]


@dataclass
class Index(Node):
    TAG = "index"
    ty: Type
    obj: Node
    index: Node


@dataclass
class Field(Node):
    TAG = "field"
    ty: Type
    obj: Node
    k: int
    name: str


@dataclass
class Build(Node):
    """A structure builder; ``values`` are in the structure type's field order. ``order``, when
    the builder wrote its fields in another order, lists the values' indices in the order written:
    they are evaluated in that order (language document 2.5, "Java-like" expressions: left to
    right as written), which shows in the order of the ``$error`` events they may raise."""

    TAG = "build"
    OPTIONAL_TAIL = ("order",)
    ty: Type
    values: list[Node]
    order: list[int] | None = None


@dataclass
class New(Node):
    TAG = "new"
    ty: Type  # the array type
    size: Node


#: The expression nodes: the ones with a type (``ty``). Fields hold a plain ``Node`` (actions and
#: regular expressions share the class), so code that needs an expression's type asks ``type_of``.
Expr = (
    Const | Var | Loop | EventVal | Key | Unary | Binary | ToDouble | Cond | Call | Extern | Index | Field | Build | New
)


def type_of(node: Node) -> Type:
    """The type of an expression node (a statement or a regular expression node has none)."""
    if not isinstance(node, Expr):
        raise TypeError(f"{type(node).__name__} is not an expression")
    return node.ty


# ---------------------------------------------------------------------------------------
# Actions


@dataclass
class SetVar(Node):
    TAG = "setvar"
    slot: int
    name: str
    value: Node


@dataclass
class SetIndex(Node):
    TAG = "setindex"
    obj: Node
    index: Node
    value: Node


@dataclass
class SetField(Node):
    TAG = "setfield"
    obj: Node
    k: int
    value: Node


@dataclass
class Emit(Node):
    TAG = "emit"
    output: int
    value: Node


@dataclass
class If(Node):
    TAG = "if"
    cond: Node
    then: list[Node]
    otherwise: list[Node]


@dataclass
class For(Node):
    TAG = "for"
    slot: int
    name: str
    low: Node
    high: Node
    body: list[Node]


@dataclass
class Store(Node):
    """A marker's store of the matched event's value (or a time event's time) into a variable."""

    TAG = "store"
    slot: int
    name: str


# ---------------------------------------------------------------------------------------
# Regular expressions over markers and action units


@dataclass
class RSeq(Node):
    TAG = "seq"
    items: list[Node]


@dataclass
class RAlt(Node):
    TAG = "alt"
    items: list[Node]


@dataclass
class RInter(Node):
    TAG = "inter"
    left: Node
    right: Node


@dataclass
class RDiff(Node):
    TAG = "diff"
    left: Node
    right: Node


@dataclass
class RRepeat(Node):
    TAG = "repeat"
    item: Node
    low: int
    high: int | None


@dataclass
class RMarker(Node):
    TAG = "marker"
    marker: int


@dataclass
class RUnit(Node):
    TAG = "unit"
    unit: int


# ---------------------------------------------------------------------------------------
# Program-level records


@dataclass
class Symbol(Node):
    """One symbol of the input alphabet."""

    TAG = "symbol"
    index: int
    name: str
    kind: str  # "input" (unclassified input name), "class" (case-clause class) or "time"
    marker: int | None = None  # for time symbols: the marker occurrence


@dataclass
class Marker(Node):
    """A textual event marker. ``line``/``col`` are kept for diagnostics and drawings."""

    TAG = "markerdef"
    index: int
    text: str
    symbols: list[int]
    store: int | None  # action unit storing the value, if the marker names a variable
    order: int
    line: int
    col: int
    file: str


@dataclass
class Unit(Node):
    """An action unit: an action block, or a marker's store. Units run whole, once per transition."""

    TAG = "unitdef"
    index: int
    order: int
    actions: list[Node]
    text: str
    line: int
    col: int
    file: str


@dataclass
class CaseArm(Node):
    TAG = "arm"
    cond: Node
    then: Node
    otherwise: Node


@dataclass
class CaseSymbol(Node):
    TAG = "casesym"
    symbol: int


@dataclass
class Input(Node):
    TAG = "input"
    index: int
    name: str
    ty: Type
    group: list[Node] | None
    classify: Node  # CaseArm tree or CaseSymbol


@dataclass
class Output(Node):
    TAG = "output"
    index: int
    name: str
    ty: Type


@dataclass
class Variable(Node):
    """A program variable. ``never_set``: no action or marker sets it (a warning, not an error:
    each read is $error 3)."""

    TAG = "variable"
    slot: int
    name: str
    ty: Type
    never_set: bool = False


@dataclass
class External(Node):
    TAG = "external"
    index: int
    name: str
    params: list[Type]
    result: Type
    impl: str


@dataclass
class ElapseSpec(Node):
    """``elapse[amount unit]``: the deadline is state entry + amount * unit_us microseconds."""

    TAG = "elapse"
    symbol: int
    amount: Node
    unit_us: int


@dataclass
class ArriveSpec(Node):
    """``arrive[...]``: either a whole time expression, or six components (year, month, day,
    hour, minute, second; None is a wildcard)."""

    TAG = "arrive"
    symbol: int
    time: Node | None
    components: list[Node | None] | None


@dataclass
class ProgramIR(Node):
    TAG = "program"
    name: str
    symbols: list[Symbol]
    inputs: list[Input]
    outputs: list[Output]
    variables: list[Variable]
    externals: list[External]
    key_types: list[Type] | None
    markers: list[Marker]
    units: list[Unit]
    timers: list[Node]  # ElapseSpec | ArriveSpec, indexed by time symbol order
    regex: Node
    loop_slots: int = 0
    time_symbols: dict[int, int] = field(default_factory=dict)  # symbol -> index in timers

    @property
    def grouped(self) -> bool:
        return self.key_types is not None

    def timer_of(self, symbol: int) -> Node:
        return self.timers[self.time_symbols[symbol]]


# ---------------------------------------------------------------------------------------
# JSON


_CLASSES: dict[str, type[Node]] = {c.TAG: c for c in Node.__subclasses__() if c.TAG}


def to_json(x: Any) -> Any:
    if isinstance(x, Node):
        fields = [f.name for f in dataclasses.fields(x)]
        while fields and fields[-1] in x.OPTIONAL_TAIL and getattr(x, fields[-1]) is None:
            fields.pop()
        return [x.TAG, *(to_json(getattr(x, name)) for name in fields)]
    if isinstance(x, Type):
        return {"type": x.to_json()}
    if isinstance(x, list):
        return [to_json(v) for v in x]
    if isinstance(x, dict):
        return {"map": [[to_json(k), to_json(v)] for k, v in x.items()]}
    return x


def from_json(x: Any) -> Any:
    if isinstance(x, list):
        if x and isinstance(x[0], str) and x[0] in _CLASSES:
            cls = _CLASSES[x[0]]
            names = [f.name for f in dataclasses.fields(cls)]
            return cls(**{n: from_json(v) for n, v in zip(names, x[1:])})
        return [from_json(v) for v in x]
    if isinstance(x, dict):
        if "type" in x:
            return type_from_json(x["type"])
        if "map" in x:
            return {from_json(k): from_json(v) for k, v in x["map"]}
    return x
