"""Key schemes (a group key's record key and its partition) moved to
:mod:`eventscript.task.keys`: routing is the task's, in every host. Re-exported here for the tests
and tools that import them from their old place."""

from ..task.keys import (  # noqa: F401
    PARTITIONERS,
    KeyFormat,
    KeyScheme,
    PartitionerName,
    cached_partition,
    crc32_partition,
    input_format,
    scheme_for,
)
