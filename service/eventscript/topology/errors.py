"""The error of a topology that cannot be used, in a module of its own so that the file reader
(topology/load.py) and the model (topology/config.py) both raise it without importing each other."""

from __future__ import annotations


class TopologyError(Exception):
    """A topology that cannot be used; the message says where and what to do."""


def partitions_word(n: int) -> str:
    """``1 partition``, ``3 partitions``: a topic's partition count in a message."""
    return f"{n} partition" if n == 1 else f"{n} partitions"
