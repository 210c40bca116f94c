"""Brokers the project starts itself: Apache Kafka from the jars ``scripts/get-kafka`` fetches
(``apache``), for the tests and ``eventscript dev --broker kafka``. The embedded Tansu broker
stays in ``eventscript.kafka.broker``: it installs from PyPI alone and needs no Java."""

from eventscript.brokers.apache import KafkaCluster, KafkaNode, KafkaNotFetched, kafka_jars

__all__ = ["KafkaCluster", "KafkaNode", "KafkaNotFetched", "kafka_jars"]
