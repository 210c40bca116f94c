"""A program as the page sends it: a file name and its text (a module of its own so that the
request functions and the topology checker share it without importing each other).

A topology names its programs by path relative to its file (``source: stages/filter.es``), so a
program's name may hold folders. The topology runs from a temporary folder where each program is
written under its name: a name is a relative path of plain segments (no ``..``, no leading
``/``), so that it cannot point outside that folder."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}"
#: At most 8 folders deep, each segment starting with a letter, digit or underscore (so neither
#: ``.`` nor ``..``), the file ending in ``.es``.
_NAME = re.compile(rf"^(?:{_SEGMENT}/){{0,8}}{_SEGMENT}\.es$")


@dataclass(frozen=True)
class Source:
    name: str
    text: str

    @property
    def stem(self) -> str:
        """The program's name as ``eventscript check`` gives it: the file's name without .es."""
        return PurePosixPath(self.name).stem


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a program (None if it can)."""
    if _NAME.match(name):
        return None
    return (
        f"{name!r}: a program's name is a file name ending in .es (letters, digits, . _ -), "
        f"in folders below the topology's if need be (say 'stages/filter.es'; no '..')"
    )
