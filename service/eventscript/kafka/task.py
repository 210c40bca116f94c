"""The task moved to :mod:`eventscript.task` (host-neutral: the worker and the backfill run it).
Re-exported here for the tests and tools that import it from its old place."""

from ..task.collector import OutRecord
from ..task.merge import InputPartition
from ..task.routing import KEY_CACHE_SIZE, NOT_OWNED, PLACE_CACHE_SIZE, KeyFilter
from ..task.task import Task

__all__ = ["KEY_CACHE_SIZE", "NOT_OWNED", "PLACE_CACHE_SIZE", "InputPartition", "KeyFilter", "OutRecord", "Task"]
