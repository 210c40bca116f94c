"""Counts in the commands' messages, with their nouns agreeing: "ok: 1 programs" read as a slip."""

from __future__ import annotations


def counted(n: int, noun: str) -> str:
    """``1 program``, ``3 programs``, ``0 warnings`` (the nouns of the messages take an s)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
