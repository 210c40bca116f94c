"""Partitioners and canonical key bytes moved to :mod:`eventscript.task.partitioner`: routing is
the task's, in every host. Re-exported here for the tests and tools that import them from their
old place."""

from ..task.partitioner import (  # noqa: F401
    compact_bytes,
    key_bytes,
    murmur2,
    murmur2_partition,
    partition_of,
    value_key_bytes,
)
