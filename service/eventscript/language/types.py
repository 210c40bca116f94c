"""EventScript data types: six primitives, arrays and structures.

Types are structural: two structure types with the same field names and types, in the same
order, are the same type, whatever names ``type`` definitions gave them. Types are immutable
and hashable, and serialize to a small JSON form (used by compiled programs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class Type:
    """Base of all types. Types are immutable; their hash is computed once (they are dictionary
    keys on hot paths: codec caches, overload tables)."""

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((type(self).__name__, *(getattr(self, f) for f in self.__dataclass_fields__)))  # type: ignore[attr-defined]  # subclasses are dataclasses
            object.__setattr__(self, "_hash", h)
        return h

    def to_json(self) -> Any:
        raise NotImplementedError

    @property
    def is_numeric(self) -> bool:
        return self in (LONG, DOUBLE)


@dataclass(frozen=True)
class PrimitiveType(Type):
    name: str

    def __str__(self) -> str:
        return self.name

    def to_json(self) -> Any:
        return self.name


@dataclass(frozen=True)
class ArrayType(Type):
    element: Type

    def __str__(self) -> str:
        return f"{self.element}[]"

    def to_json(self) -> Any:
        return ["array", self.element.to_json()]


@dataclass(frozen=True)
class StructType(Type):
    fields: tuple[tuple[str, Type], ...]

    def __str__(self) -> str:
        if not self.fields:
            return "{}"
        inner = " ".join(f"{t} {n};" for n, t in self.fields)
        return "{" + inner + "}"

    def to_json(self) -> Any:
        return ["struct", [[n, t.to_json()] for n, t in self.fields]]

    def field_index(self, name: str) -> int | None:
        for i, (n, _) in enumerate(self.fields):
            if n == name:
                return i
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.fields)


# Frozen dataclasses generate a __hash__ that rehashes every field on each call; use the cached one.
for _cls in (PrimitiveType, ArrayType, StructType):
    _cls.__hash__ = Type.__hash__  # type: ignore[method-assign]  # deliberately, as said above

BOOLEAN = PrimitiveType("boolean")
DOUBLE = PrimitiveType("double")
LONG = PrimitiveType("long")
STRING = PrimitiveType("string")
TIME = PrimitiveType("time")
OBJECT = PrimitiveType("object")
EMPTY = StructType(())

PRIMITIVES: dict[str, PrimitiveType] = {t.name: t for t in (BOOLEAN, DOUBLE, LONG, STRING, TIME, OBJECT)}

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1


def type_from_json(data: Any) -> Type:
    if isinstance(data, str):
        return PRIMITIVES[data]
    tag = data[0]
    if tag == "array":
        return ArrayType(type_from_json(data[1]))
    if tag == "struct":
        return StructType(tuple((n, type_from_json(t)) for n, t in data[1]))
    raise ValueError(f"unknown type encoding {data!r}")


def promote(a: Type, b: Type) -> Type | None:
    """The common type of two numeric operands (long is promoted to double), else None."""
    if a == b and a.is_numeric:
        return a
    if a.is_numeric and b.is_numeric:
        return DOUBLE
    return None


def describe(t: Type | None) -> str:
    return "an unknown type" if t is None else f"'{t}'"
