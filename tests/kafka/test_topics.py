"""Topic management (issue: Kafka as users run it): with create_topics: false the worker creates
nothing and only checks that every topic exists with the partitions it needs."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_helpers import Broker, topology, unique

from eventscript.kafka.admin import Admin
from eventscript.kafka.config import TopologyError, load_topology

PROGRAM = "in {string k;} Hit group(Hit.k)  out long N  ( Hit() { !>N(1); } )*"


@pytest.mark.kafka
def test_topics_managed_elsewhere_are_checked_not_created(broker: Broker, tmp_path: Path) -> None:
    name = unique("managed")
    (tmp_path / "p.es").write_text(PROGRAM)
    path = topology(broker, tmp_path, [{"name": name, "source": "p.es",
                                        "inputs": [{"topic": f"{name}-in", "event": "Hit"}],
                                        "outputs": {"default": f"{name}-out"}, "errors": f"{name}-err"}],
                    create_topics=False)
    topo = load_topology(path)
    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    for fut in client.create_topics([NewTopic(f"{name}-in", 2, 1)]).values():
        fut.result(30)
    with pytest.raises(TopologyError) as err:
        Admin(topo).prepare(topo.programs)
    message = str(err.value)
    for topic in (f"{name}-out", f"{name}-err", topo.changelog_topic(topo.programs[0]),
                  topo.repartition_topic(topo.programs[0])):
        assert topic in message
    assert "create_topics" in message
    assert f"{name}-out" not in Admin(topo).partition_counts(), "a topic was created although create_topics is false"

    # An internal topic with the wrong partition count is refused; with the right ones it starts.
    wrong = [NewTopic(f"{name}-out", 2, 1), NewTopic(f"{name}-err", 1, 1),
             NewTopic(topo.changelog_topic(topo.programs[0]), 3, 1),
             NewTopic(topo.repartition_topic(topo.programs[0]), 2, 1)]
    for fut in client.create_topics(wrong).values():
        fut.result(30)
    with pytest.raises(TopologyError, match="has 3 partitions but the inputs have 2"):
        Admin(topo).prepare(topo.programs)


@pytest.mark.kafka
def test_created_internal_topics_have_the_configuration_state_needs(broker: Broker, tmp_path: Path) -> None:
    """Read back from the broker: the changelog is compacted (a delete policy would lose the state
    of keys quiet for longer than the retention) and the repartition topic deletes."""
    from confluent_kafka.admin import ConfigResource

    broker.require_real("reading topic configs back (Tansu 0.6 returns none)")
    name = unique("configs")
    (tmp_path / "p.es").write_text(PROGRAM)
    path = topology(broker, tmp_path, [{"name": name, "source": "p.es",
                                        "inputs": [{"topic": f"{name}-in", "event": "Hit"}],
                                        "outputs": {"default": f"{name}-out"}, "errors": f"{name}-err"}],
                    {f"{name}-in": {"partitions": 2}})
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
