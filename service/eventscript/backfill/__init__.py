"""``eventscript backfill``: a topology's program over historical records, on PySpark.

The third host of the one engine: the records of a program's input topics (read from Kafka, or
from Parquet / JSON-lines exports of topics) go through the worker's own task logic
(``eventscript.task.task.Task``), one Spark partition per Kafka partition, so that the outputs
— keys, headers and ``es-id`` included — are the ones the worker writes with ``clock: record``.
See docs/backfill.md.
"""
