"""Topic management (issue: Kafka as users run it): with create_topics: false the worker creates
nothing and only checks that every topic exists with the partitions it needs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_helpers import Broker, create_topics, program_topology

from eventscript.kafka.admin import Admin
from eventscript.kafka.config import TopologyError, load_topology

PROGRAM = "in {string k;} Hit group(Hit.k)  out long N  ( Hit() { !>N(1); } )*"


@pytest.mark.kafka
def test_topics_managed_elsewhere_are_checked_not_created(broker: Broker, tmp_path: Path) -> None:
    name, path = program_topology(broker, tmp_path, PROGRAM, "managed", "Hit", create_topics=False)
    topo = load_topology(path)
    create_topics(broker, [NewTopic(f"{name}-in", 2, 1)])
    with pytest.raises(TopologyError) as err:
        Admin(topo).prepare(topo.programs)
    message = str(err.value)
    for topic in (
        f"{name}-out",
        f"{name}-err",
        topo.changelog_topic(topo.programs[0]),
        topo.repartition_topic(topo.programs[0]),
    ):
        assert topic in message
    assert "create_topics" in message
    assert f"{name}-out" not in Admin(topo).partition_counts(), "a topic was created although create_topics is false"

    # An internal topic with the wrong partition count is refused; with the right ones it starts.
    wrong = [
        NewTopic(f"{name}-out", 2, 1),
        NewTopic(f"{name}-err", 1, 1),
        NewTopic(topo.changelog_topic(topo.programs[0]), 3, 1),
        NewTopic(topo.repartition_topic(topo.programs[0]), 2, 1),
    ]
    create_topics(broker, wrong)
    with pytest.raises(TopologyError, match="has 3 partitions but the inputs have 2"):
        Admin(topo).prepare(topo.programs)


@pytest.mark.kafka
def test_created_internal_topics_have_the_configuration_state_needs(broker: Broker, tmp_path: Path) -> None:
    """Read back from the broker: the changelog is compacted (a delete policy would lose the state
    of keys quiet for longer than the retention) and the repartition topic deletes."""
    from confluent_kafka.admin import ConfigResource

    broker.require_real("reading topic configs back (Tansu 0.6 returns none)")
    _, path = program_topology(broker, tmp_path, PROGRAM, "configs", "Hit", partitions=2)
    topo = load_topology(path)
    Admin(topo).prepare(topo.programs)
    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    changelog = ConfigResource(ConfigResource.Type.TOPIC, topo.changelog_topic(topo.programs[0]))
    repartition = ConfigResource(ConfigResource.Type.TOPIC, topo.repartition_topic(topo.programs[0]))
    configs = {r.name: fut.result(30) for r, fut in client.describe_configs([changelog, repartition]).items()}
    assert configs[changelog.name]["cleanup.policy"].value == "compact"
    assert not configs[changelog.name]["cleanup.policy"].is_default, "the policy is the broker's, not the topic's"
    assert configs[repartition.name]["cleanup.policy"].value == "delete"
    md = client.list_topics(changelog.name, timeout=10)
    assert len(md.topics[changelog.name].partitions) == 2


@pytest.mark.kafka
def test_the_repartition_topic_keeps_records_until_they_are_committed(broker: Broker, tmp_path: Path) -> None:
    """Issue 20 fault 4: the repartition topic is created with infinite retention (re-published
    records keep their original timestamps, so a finite retention deletes old history before a
    lagging task reads it); the workers delete what was committed. Was 7 days."""
    from confluent_kafka.admin import ConfigResource

    broker.require_real("reading topic configs back (Tansu 0.6 returns none)")
    _, path = program_topology(broker, tmp_path, PROGRAM, "repretention", "Hit", partitions=2)
    topo = load_topology(path)
    Admin(topo).prepare(topo.programs)
    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    repartition = ConfigResource(ConfigResource.Type.TOPIC, topo.repartition_topic(topo.programs[0]))
    config = client.describe_configs([repartition])[repartition].result(30)
    assert config["retention.ms"].value == "-1", config["retention.ms"].value
    assert config["cleanup.policy"].value == "delete"


@pytest.mark.kafka
def test_a_changelog_that_deletes_by_time_is_refused_at_start(broker: Broker, tmp_path: Path) -> None:
    """Issue 20 fault 10: with create_topics false, a changelog created elsewhere with
    cleanup.policy=delete loses the state of quiet keys after its retention, silently; the start
    refuses it, naming the topic, the setting and the fix."""
    broker.require_real("reading topic configs back (Tansu 0.6 returns none)")
    name, path = program_topology(broker, tmp_path, PROGRAM, "badchangelog", "Hit", create_topics=False)
    topo = load_topology(path)
    changelog = topo.changelog_topic(topo.programs[0])
    made = [
        NewTopic(f"{name}-in", 2, 1),
        NewTopic(f"{name}-out", 2, 1),
        NewTopic(f"{name}-err", 2, 1),
        NewTopic(topo.repartition_topic(topo.programs[0]), 2, 1),
        NewTopic(changelog, 2, 1, config={"cleanup.policy": "delete"}),
    ]
    create_topics(broker, made)
    with pytest.raises(TopologyError) as err:
        Admin(topo).prepare(topo.programs)
    assert f"changelog topic {changelog} has cleanup.policy=delete" in str(err.value)
    assert "cleanup.policy=compact" in str(err.value)


class _RecordingAdminClient:
    """An AdminClient stand-in: records the topics asked for, which then exist."""

    def __init__(self) -> None:
        self.created: list[NewTopic] = []

    def list_topics(self, timeout: float) -> object:
        topic = SimpleNamespace(error=None, partitions={0: None, 1: None})
        return SimpleNamespace(topics={t.topic: topic for t in self.created}, cluster_id="stand-in")

    def create_topics(self, topics: list[NewTopic], **_: object) -> dict[str, object]:
        self.created.extend(topics)
        return {}


@pytest.mark.parametrize(("replication", "want"), [(3, "2"), (5, "2"), (2, "1"), (1, None), (None, None)])
def test_created_topics_get_min_insync_replicas_with_their_replication(
    tmp_path: Path, replication: int | None, want: str | None
) -> None:
    """Issue 20 fault 10: with three replicas or more a record acknowledged (acks=all) is on two
    brokers (min.insync.replicas 2); with the broker's default replication nothing is assumed."""
    from eventscript.kafka import admin as admin_module

    (tmp_path / "p.es").write_text(PROGRAM)
    doc = {
        "application": "a",
        "kafka": {"bootstrap_servers": "localhost:1"},
        "replication": replication,
        "programs": [
            {"name": "p", "source": "p.es", "inputs": [{"topic": "in", "event": "Hit"}], "outputs": {"default": "out"}}
        ],
    }
    import yaml

    (tmp_path / "t.yaml").write_text(yaml.safe_dump(doc))
    admin = Admin.__new__(Admin)
    admin.topo = load_topology(tmp_path / "t.yaml")
    admin.client = _RecordingAdminClient()
    admin.listed = {}
    admin.create(
        {
            "x": admin_module.TopicSpec(partitions=2),
            "y": admin_module.TopicSpec(partitions=2, config={"min.insync.replicas": "1"}),
        }
    )
    made = {t.topic: t for t in admin.client.created}
    assert made["x"].config.get("min.insync.replicas") == want
    assert made["y"].config["min.insync.replicas"] == "1", "a given setting was overridden"


@pytest.mark.kafka
def test_a_repartition_topic_with_a_finite_retention_is_warned_of(
    broker: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 20 fault 4: a repartition topic made by an earlier version (7 days) still deletes
    unprocessed records; the start says so and how to fix it."""
    import logging

    broker.require_real("reading topic configs back (Tansu 0.6 returns none)")
    _, path = program_topology(broker, tmp_path, PROGRAM, "oldrep", "Hit", partitions=2)
    topo = load_topology(path)
    repartition = topo.repartition_topic(topo.programs[0])
    create_topics(broker, [NewTopic(repartition, 2, 1, config={"retention.ms": "604800000"})])
    caplog.set_level(logging.WARNING, "eventscript.kafka.admin")
    Admin(topo).prepare(topo.programs)
    assert any(
        f"repartition topic {repartition} has retention.ms=604800000" in r.getMessage() for r in caplog.records
    ), [r.getMessage() for r in caplog.records]
