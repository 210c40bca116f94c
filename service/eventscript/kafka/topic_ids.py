"""The id Kafka gives a topic when it is created (KIP-516): a topic deleted and made again under the
same name gets another. A task's local store keeps the id of the changelog it was written from
(``TaskStore.changelog_id``), so that a restore or a standby can tell a recreated changelog from
the one the store follows even when the new log is already longer than the store's checkpoint
(issue 20 fault 5), which comparing offsets cannot."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection

from .admin import await_result

#: Seconds to wait for a topic's description.
DESCRIBE_TIMEOUT = 10.0
#: The id a broker gives when it has none (a broker before topic ids): nothing to compare.
NO_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def topic_id(admin: Any, topic: str, timeout: float = DESCRIBE_TIMEOUT) -> str | None:
    """The topic's id as Kafka prints it (base64), or None when the broker has no topic ids.
    Raises KafkaException when the broker does not answer or the topic does not exist."""
    futures = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout)
    try:
        # (polling the client meanwhile: with a Python logger on it, an admin request's result may
        # arrive only while it is polled, kafka/admin.await_result)
        description = await_result(admin, futures[topic], timeout + 5)
    except TimeoutError as exc:  # (the request's own timeout answers first, as a KafkaException)
        raise KafkaException(
            KafkaError(KafkaError._TIMED_OUT, f"no description of topic {topic} within {timeout} s")
        ) from exc
    found = str(description.topic_id) if description.topic_id is not None else ""
    return found if found and found != NO_ID else None
