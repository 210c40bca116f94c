"""Partitions added to an input topic while the program runs (issue 20 fault 6).

A program's tasks are fixed when it starts: one per partition of its (co-partitioned) inputs,
each with a changelog and a repartition partition of its own, and each key's state lives in the
task its key hashed to. A partition added to an input later is read by no task (the worker
assigns input partitions by task number), and it moves keys to other partitions, away from their
state. Kafka Streams stops the application in this case; so does the worker: it reads the
inputs' partition counts now and then, and stops with a message that says what happened and
what to do, instead of running on with records nobody reads.

A reader on record time also stops when an input of a program writing a topic it is gated on
changes its partition count: that program's task count changes with it (once it is started over
on the new count), and the reader waits on the markers of the tasks it counted when it started:
a new task's records would be released without waiting on its progress (``topology/progress.py``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import KafkaException

log = logging.getLogger("eventscript.kafka.worker")

#: Seconds between reads of the inputs' partition counts (a metadata request per input topic).
CHECK_INTERVAL = 30.0
#: Seconds to wait for the metadata of one topic.
METADATA_TIMEOUT = 5.0


class InputPartitionsChanged(Exception):
    """An input topic's partition count is no longer the one the program started with."""


class InputPartitionWatch:
    """Checks a program's input topics against the partition count its tasks were made for, and
    the inputs of the programs writing a topic it is gated on against the counts it started with."""

    def __init__(
        self,
        program: str,
        topics: list[str],
        partitions: int,
        internal: list[str],
        upstream: dict[str, tuple[int, str, str]] | None = None,
    ) -> None:
        self.program = program
        self.topics = topics
        self.partitions = partitions
        #: The program's changelog and repartition topics (named in the message: they keep the old count).
        self.internal = internal
        #: Inputs of the programs writing a topic the program is gated on: topic -> (partition
        #: count when it started, the writing program, the gated topic).
        self.upstream = dict(upstream or {})
        self._last = time.monotonic()

    def check(self, client: Any) -> None:
        """Raise :class:`InputPartitionsChanged` if an input has another partition count now (at
        most every CHECK_INTERVAL seconds; a broker that does not answer is asked again later).
        ``client``: anything with librdkafka's ``list_topics`` (the worker's consumer)."""
        if time.monotonic() - self._last < CHECK_INTERVAL:
            return
        self._last = time.monotonic()
        for topic in [*self.topics, *(t for t in self.upstream if t not in self.topics)]:
            try:
                md = client.list_topics(topic, timeout=METADATA_TIMEOUT).topics.get(topic)
            except KafkaException as exc:
                log.debug("%s: cannot read the partitions of topic %s now: %s", self.program, topic, exc)
                return
            if md is None or md.error is not None or not md.partitions:
                continue  # being recreated, or not visible now: asked again later
            have = len(md.partitions)
            if topic in self.topics:
                if have != self.partitions:
                    raise InputPartitionsChanged(_message(self.program, topic, have, self.partitions, self.internal))
            elif have != self.upstream[topic][0]:
                had, writer, gated = self.upstream[topic]
                raise InputPartitionsChanged(_upstream_message(self.program, topic, have, had, writer, gated))


def _message(program: str, topic: str, have: int, tasks: int, internal: list[str]) -> str:
    if have > tasks:
        lost = (
            f"partitions {tasks}..{have - 1} are read by no task, and keys now hash to other partitions than "
            f"the ones holding their state"
        )
    else:
        lost = "the topic was recreated with fewer partitions"
    return (
        f"program {program}: input topic {topic} now has {have} partitions, but the program's {tasks} tasks "
        f"(and its topics {', '.join(internal)}) were made for {tasks}: {lost}. Stopped. To go on, either "
        f"give {topic} {tasks} partitions again (recreate it) or start the program over with {have} partitions: "
        f"stop every worker, give every input {have} partitions, run `eventscript reset TOPOLOGY --program "
        f"{program}` (it deletes the changelog, the repartition topic and this machine's state; `--local-only` "
        f"on the others) and start the workers"
    )


def _upstream_message(program: str, topic: str, have: int, had: int, writer: str, gated: str) -> str:
    return (
        f"program {program}: topic {topic}, an input of program {writer}, now has {have} partitions, but this "
        f"program reads {gated}, which {writer} writes, waiting on the progress of {writer}'s {had} tasks, as "
        f"many as {topic} had when it started: {writer} started over on {have} partitions would write records "
        f"it does not wait for. Stopped. Start it again once {writer} runs on {have} partitions"
    )
