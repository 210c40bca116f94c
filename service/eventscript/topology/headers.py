"""The ``es-*`` record headers: what the records on a topology's topics carry besides their key
and value (a program's outputs name their event in ``es-event``, which the next program's input
reads with ``event_from: {header: es-event}``). Defined here, with the topology, so that its
checks and the task's record formats (``task/codec.py``) share one list and import one way."""

HEADER_EVENT = "es-event"
HEADER_PROGRAM = "es-program"
HEADER_ID = "es-id"
HEADER_TIME = "es-time"
#: A record with this header only advances record time (see ``eventscript produce``).
HEADER_TICK = "es-tick"
#: The producer's order of a record among those of one record time on other partitions (a
#: decimal number; ``eventscript produce`` writes the event's position in the trace). Kafka keeps
#: no order across partitions, and records of one timestamp spread over several have none of
#: their own: a task's merge takes such ties by it, and every output carries its cause's, so that
#: later stages take them in that order too (``task/streams.py``).
HEADER_SEQ = "es-seq"
#: On an output of a timer firing, of a task whose outputs other programs read: what set the
#: timer, "time,kind,seq,cause" (time in microseconds; kind 0 a timer firing, 1 a record; the
#: record's ``es-seq``, -1 for none; its cause's name). Timers of one deadline in different tasks
#: of a program fire in the tester in the order they were set; a reader takes their outputs of
#: one record time in that order by it (``task/streams.py``).
HEADER_ARMED = "es-armed"
#: Headers of re-published (repartitioned) records: the original record's coordinates, and the
#: input topic whose configuration decodes it.
HEADER_SOURCE = "es-source"
HEADER_INPUT = "es-input"
#: The original record's key, when re-publishing changed it (the copy is keyed by its group key).
HEADER_SOURCE_KEY = "es-source-key"
#: On a copy of a record of a partition several upstream tasks write (re-published in record-time
#: order, not offset order): the offset below which every record of its source partition has
#: been re-published before it, which the reader's deduplication needs (``task/copies.py``).
HEADER_SOURCE_BELOW = "es-source-below"
#: Headers the worker adds to a re-published copy (not part of the original record).
REPUBLISH_HEADERS = frozenset((HEADER_SOURCE, HEADER_INPUT, HEADER_SOURCE_KEY, HEADER_SOURCE_BELOW))
#: A progress marker (task/progress.py): "task p of program P has written everything before this
#: record time"; no key, no value. Programs never see it; other consumers skip records with it.
HEADER_PROGRESS = "es-progress"
#: On an idle progress marker (which holds nothing back): the record time its writer's clock has
#: reached, how far a reader's clock may follow it (task/progress.py).
HEADER_REACHED = "es-reached"
#: On the first progress markers a task writes after it started from a commit (a new owner, a
#: restore, a rewind): the records it writes next may repeat some it wrote before (at-least-once),
#: which readers drop (task/repeats.py).
HEADER_RESTARTED = "es-restarted"
