"""What the engine emits, and the consumer interface that receives it (document §6.7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..language.types import LONG, STRING, StructType, Type

ERROR_EVENT = "$error"
#: The value type of ``$error`` events: a code (conformance README table) and a message.
ERROR_TYPE = StructType((("code", LONG), ("message", STRING)))


class ErrorCode:
    UNDECLARED_EVENT = 1
    UNEXPECTED_EVENT = 2
    UNSET_VARIABLE = 3
    DIVISION_BY_ZERO = 4
    SUBSCRIPT_OUT_OF_BOUNDS = 5
    BAD_INPUT_VALUE = 6
    EXTERNAL_FUNCTION = 7
    INVALID_OPERATION = 8


@dataclass(slots=True)
class Emitted:
    """An emitted event: an output event or an ``$error``.

    ``value`` is the run-time value (a snapshot: later assignments do not change it); ``ty`` its
    type; ``time`` the emission instant (µs); ``key`` the instance's group key (None when the
    program is ungrouped, or for an error not tied to an instance).
    """

    program: str
    name: str
    value: Any
    ty: Type
    time: int
    key: tuple[Any, ...] | None

    @property
    def is_error(self) -> bool:
        return self.name == ERROR_EVENT

    @property
    def error_code(self) -> int | None:
        return self.value[0] if self.name == ERROR_EVENT else None


class EventConsumer(Protocol):
    def __call__(self, event: Emitted, /) -> None: ...
