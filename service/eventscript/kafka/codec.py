"""The record formats (input decoding, output and ``$error`` records, the ``es-*`` headers)
moved to :mod:`eventscript.task.codec`: the task uses them in every host. Re-exported here for
the tests and tools that import them from their old place."""

from ..task.codec import (  # noqa: F401
    HEADER_EVENT,
    HEADER_ID,
    HEADER_INPUT,
    HEADER_PROGRAM,
    HEADER_SEQ,
    HEADER_SOURCE,
    HEADER_SOURCE_KEY,
    HEADER_TICK,
    HEADER_TIME,
    REPUBLISH_HEADERS,
    BadRecord,
    Headers,
    RecordInfo,
    decode_record,
    emitted_error_value,
    encode_value,
    error_value,
    header,
    header_time,
    output_headers,
)
