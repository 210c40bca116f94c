"""What every host runs around the engine for one partition (as Kafka Streams' StreamTask): the
``Record`` protocol, the input merge, the task clock, routing with one key-group hash, output ids,
the record collector and the ``Task`` composed of them. It knows no client: the worker
(``kafka/``), the backfill (``backfill/``) and the tests drive it with records of their own.

The package's ``__init__`` imports nothing, so that ``topology/`` and ``state/`` can use its
record formats (``task.codec``) without loading the engine.
"""
