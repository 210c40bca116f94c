"""A program as the page sends it: a file name and its text (a module of its own so that the
request functions and the topology checker share it without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    name: str
    text: str
