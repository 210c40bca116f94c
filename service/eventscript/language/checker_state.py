"""The state every part of the checker shares, and how it reports.

The checker (``checker.Checker``) is made of one class per stage, each in its own module:
declarations (``check_declarations``), the regular expression's typing sites
(``check_regex``), the actions' (``check_actions``), inference over the sites
(``type_inference``) and the synthesis and expectation of expression types
(``type_synthesis``). They all read and write the state defined here: the declarations seen,
the variables, the typing sites, and which pass is running (``reporting``: only the final pass
reports errors).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .checked import EventClass, ExternalFunction, InputEvent, OutputEvent, Variable
from .diagnostics import Diagnostics, Severity
from .source import Pos
from .types import Type

if TYPE_CHECKING:
    from . import ast
    from .checked import LoopIndex

RESERVED_PREFIX = "$"
#: A bound on the passes of type inference. Every pass but the last types a variable (or fixes
#: the field order of one), so this only guards the compiler against a bug.
MAX_INFERENCE_PASSES = 100_000
PATTERN_RANGE_HINT = (
    "patterns are [YYYY-MM-DD] H:MM or H:MM:SS in UTC, hours 0..23, minutes and seconds 0..59; "
    "for midnight write 0:00; '.' matches any value"
)


class CheckerState:
    """The declarations, variables and typing sites of one program being checked."""

    def __init__(self, diagnostics: Diagnostics, *, resolve_externals: bool = True) -> None:
        self.d = diagnostics
        self.resolve_externals = resolve_externals
        self.typedefs: dict[str, Type] = {}
        self.inputs: dict[str, InputEvent] = {}
        self.outputs: dict[str, OutputEvent] = {}
        self.classes: dict[str, EventClass] = {}
        self.externals: dict[str, ExternalFunction] = {}
        self.variables: dict[str, Variable] = {}
        self.key_types: list[Type] | None = None
        #: The key components whose group expression has no type (reported there): ``group[k]``
        #: of one has no type either, rather than ``key_types``' stand-in, so no error follows on.
        self.unknown_key_components: set[int] = set()
        #: Events declared with a type that has errors (reported there, not again at each use).
        self.broken_events: set[str] = set()
        #: The output events some emit action names (the others are reported: never emitted).
        self.emitted: set[str] = set()
        #: The typing sites, run for their effect at each pass (what one returns is dropped).
        self.sites: list[Callable[[], object]] = []
        self.loop_slots = 0
        self.reporting = False
        self.changed = False
        #: Inside the expectation of a context that would also accept a long for a double (or
        #: the reverse): a type given there is only a guess (see _infer).
        self.guessing = False
        #: During inference: the guessed types of untyped variables, with their positions.
        self.candidates: dict[Variable, list[tuple[Type, Pos]]] | None = None

    # -- reporting ------------------------------------------------------------------

    def err(self, pos: Pos, msg: str, hint: str | Callable[[], str] | None = None) -> None:
        """Report an error (in the reporting pass). A hint that costs something to word (a
        "did you mean" search) is given as a function, called only if the error will be shown."""
        if self.reporting:
            if callable(hint):
                hint = hint() if self.d.has_room(Severity.ERROR) else None
            self.d.error(pos, msg, hint)

    if TYPE_CHECKING:
        # The methods one stage calls on another: each is defined by the stage named, and
        # ``Checker`` inherits them all. Declared here (for the type checker only) so that every
        # stage is checked against the others' signatures rather than seen as calling unknowns.

        # check_declarations
        def resolve_type(self, t: ast.TypeExpr) -> Type | None: ...

        # check_regex
        def variable(self, name: str, pos: Pos) -> Variable: ...
        def _typed_site(
            self, e: ast.Expr, t: Type, what: str, hint: Callable[[Type], str | None] | None = None
        ) -> None: ...

        # check_actions
        def _collect_action(self, a: ast.Action, scope: dict[str, LoopIndex]) -> None: ...
        def _collect_expr(self, e: ast.Expr, scope: dict[str, LoopIndex]) -> None: ...
        def _unknown_function(self, e: ast.Call) -> None: ...

        # type_inference
        def _give_type(self, v: Variable, t: Type, pos: Pos) -> None: ...
        def _soft_expect(self, e: ast.Expr, t: Type) -> Type | None: ...

        # type_synthesis
        def expect(self, e: ast.Expr, t: Type) -> Type | None: ...
        def _settle_order(self, v: Variable, t: Type) -> None: ...
        def synth(self, e: ast.Expr) -> Type | None: ...
