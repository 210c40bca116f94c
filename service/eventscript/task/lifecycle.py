"""Where a task is in its life, one enum instead of flags the hosts set (as Kafka Streams'
``Task.State``)."""

from __future__ import annotations

import enum


class TaskState(enum.Enum):
    #: Made, its committed state not loaded: it takes records but processes none.
    CREATED = "created"
    #: Its inputs are being moved back to its committed positions (a rewind, or a restore of its
    #: store from the changelog): records fetched meanwhile are dropped, none is processed.
    RESTORING = "restoring"
    #: Its committed state is loaded: it processes records and fires timers.
    RUNNING = "running"
    #: Closed: its store is closed; it must not be used again.
    CLOSED = "closed"
