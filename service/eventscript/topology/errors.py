"""The error of a topology that cannot be used, in a module of its own so that the file reader
(topology/load.py) and the model (topology/config.py) both raise it without importing each other."""

from __future__ import annotations


class TopologyError(Exception):
    """A topology that cannot be used; the message says where and what to do."""
