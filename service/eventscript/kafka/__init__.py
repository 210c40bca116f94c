"""The Kafka worker: programs on keyed topics with durable state, timers and exactly-once output."""
