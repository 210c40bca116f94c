"""Reading topic configurations right after creating the topics (the fault harness's start race):
on a cluster, the broker a DescribeConfigs goes to may not know a topic another broker just listed,
and answers UNKNOWN_TOPIC_OR_PART for a moment. No broker needed: the admin client is a stand-in."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from eventscript.kafka import admin as admin_module
from eventscript.kafka.admin import Admin
from eventscript.kafka.config import TopologyError, parse_topology

TOPOLOGY = {
    "kafka": {"bootstrap_servers": "localhost:1"},
    "programs": [{"name": "p", "source": "p.es", "inputs": [{"topic": "in", "event": "A"}]}],
}


class Entry:
    def __init__(self, value: str) -> None:
        self.value = value


class LateBroker:
    """Answers UNKNOWN_TOPIC_OR_PART to the first ``unknown_for`` DescribeConfigs, then the
    topics' configurations."""

    def __init__(self, unknown_for: int) -> None:
        self.unknown_for = unknown_for
        self.asked = 0

    def describe_configs(self, resources: list[Any], request_timeout: float) -> dict[Any, Future[Any]]:
        self.asked += 1
        out: dict[Any, Future[Any]] = {}
        for res in resources:
            fut: Future[Any] = Future()
            if self.asked <= self.unknown_for:
                fut.set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
            else:
                fut.set_result({"cleanup.policy": Entry("compact")})
            out[res] = fut
        return out


def admin_with(client: LateBroker) -> Admin:
    admin = Admin(parse_topology(TOPOLOGY, env={}))
    admin.client = client  # type: ignore[assignment]
    return admin


def test_a_topic_unknown_for_a_moment_to_the_broker_asked_is_asked_again() -> None:
    client = LateBroker(unknown_for=3)
    configs = admin_with(client).topic_configs(["t-changelog"])
    assert configs == {"t-changelog": {"cleanup.policy": "compact"}}
    assert client.asked == 4


def test_a_topic_that_stays_unknown_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_module, "METADATA_TIMEOUT", 0.5)
    with pytest.raises(TopologyError, match="t-changelog: Broker: Unknown topic or partition"):
        admin_with(LateBroker(unknown_for=10**6)).topic_configs(["t-changelog"])


class SlowLeaders:
    """Creates topics at once, but lists a new topic (with a leader for each partition) only
    from the ``leaderless_for``-th metadata request after its creation on."""

    def __init__(self, leaderless_for: int) -> None:
        self.leaderless_for = leaderless_for
        self.created: dict[str, int] = {}
        self.listed = 0

    def create_topics(self, topics: list[Any], **_: Any) -> dict[str, Future[Any]]:
        out: dict[str, Future[Any]] = {}
        for t in topics:
            self.created[t.topic] = self.listed
            fut: Future[Any] = Future()
            fut.set_result(None)
            out[t.topic] = fut
        return out

    def list_topics(self, timeout: float) -> Any:
        from types import SimpleNamespace

        self.listed += 1
        listed = {n for n, at in self.created.items() if self.listed - at > self.leaderless_for}
        return SimpleNamespace(
            topics={n: SimpleNamespace(error=None, partitions={0: None}) for n in listed}, cluster_id="stand-in"
        )


def test_a_created_topic_without_leaders_for_a_while_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """A three-broker cluster on a loaded machine once took more than 10 s to list a topic it had
    just created: the wait lasts as long as a creation may (before: 10 s, then "input topic ...
    does not exist" from a caller)."""
    monkeypatch.setattr(admin_module.time, "sleep", lambda s: None)
    client = SlowLeaders(leaderless_for=150)  # (150 requests 0.1 s apart: 15 s)
    admin = Admin(parse_topology(TOPOLOGY, env={}))
    admin.client = client  # type: ignore[assignment]
    clock = iter(range(10**6))
    monkeypatch.setattr(admin_module.time, "monotonic", lambda: next(clock) * 0.1)
    admin.create({"in": _spec()})
    assert client.listed > 150 and "in" in admin.partition_counts()


def test_a_created_topic_that_never_gets_leaders_is_an_error_saying_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_module.time, "sleep", lambda s: None)
    clock = iter(range(10**6))
    monkeypatch.setattr(admin_module.time, "monotonic", lambda: next(clock) * 0.1)
    admin = Admin(parse_topology(TOPOLOGY, env={}))
    admin.client = SlowLeaders(leaderless_for=10**9)  # type: ignore[assignment]
    with pytest.raises(TopologyError, match=r"created topic\(s\) in, but after 30 s .* no leader"):
        admin.create({"in": _spec()})


def _spec() -> Any:
    from eventscript.topology.config import TopicSpec

    return TopicSpec(partitions=1)


class TwoBrokers:
    """A cluster of two brokers that list topics apart: librdkafka sends each metadata request to
    either, and the second learns of a topic only once asked ``lag`` times after its creation.
    Creating a topic that exists answers TOPIC_ALREADY_EXISTS; every changelog is compacted."""

    def __init__(self, existing: dict[str, int], lag: int = 10**9, appears: dict[str, int] | None = None) -> None:
        self.topics = dict(existing)
        self.learnt = dict.fromkeys(existing, lag)  # topic -> the request from which the lagging broker lists it
        self.lag = lag
        #: topics created by another worker: listed (by both brokers) from their request on
        self.appears = appears or {}
        self.listed = 0

    def list_topics(self, timeout: float) -> Any:
        from types import SimpleNamespace

        self.listed += 1
        for name, at in list(self.appears.items()):
            if self.listed >= at:
                self.topics[name] = 3
                self.learnt[name] = 0
                del self.appears[name]
        lagging = self.listed % 2 == 0
        shown = {n: p for n, p in self.topics.items() if not lagging or self.listed >= self.learnt[n]}
        return SimpleNamespace(
            topics={n: SimpleNamespace(error=None, partitions=dict.fromkeys(range(p))) for n, p in shown.items()},
            cluster_id="stand-in",
        )

    def create_topics(self, topics: list[Any], **_: Any) -> dict[str, Future[Any]]:
        out: dict[str, Future[Any]] = {}
        for t in topics:
            fut: Future[Any] = Future()
            if t.topic in self.topics:
                fut.set_exception(KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS)))
            else:
                self.topics[t.topic] = t.num_partitions
                self.learnt[t.topic] = self.listed + self.lag
                fut.set_result(None)
            out[t.topic] = fut
        return out

    def describe_configs(self, resources: list[Any], request_timeout: float) -> dict[Any, Future[Any]]:
        out: dict[Any, Future[Any]] = {}
        for res in resources:
            fut: Future[Any] = Future()
            fut.set_result({"cleanup.policy": Entry("compact")})
            out[res] = fut
        return out


def prepared(topology: dict[str, Any], client: TwoBrokers, wait_for_inputs: bool = False) -> dict[str, int]:
    topo = parse_topology(topology, env={})
    admin = Admin(topo)
    admin.client = client  # type: ignore[assignment]
    return admin.prepare(topo.programs, wait_for_inputs=wait_for_inputs)


def test_a_topic_one_broker_listed_is_not_missing_when_the_next_answer_leaves_it_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """test_chaos's "input topic ... does not exist" on three brokers under load (it passed
    alone): ``create`` saw the declared input topic on one broker, ``prepare``'s next metadata
    request went to a broker that did not list it yet."""
    monkeypatch.setattr(admin_module.time, "sleep", lambda s: None)
    declared = {**TOPOLOGY, "topics": {"in": {"partitions": 3}}}
    client = TwoBrokers({"in": 3})  # (the second broker never lists it)
    assert prepared(declared, client) == {"p": 3}


def test_a_worker_waits_for_an_input_topic_that_does_not_exist_yet_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker started before the writer of its (undeclared) input topic created it waits for
    it, saying which and what to do, instead of exiting; a tool (no wait) says it is missing."""
    monkeypatch.setattr(admin_module.time, "sleep", lambda s: None)
    clock = iter(range(10**6))
    monkeypatch.setattr(admin_module.time, "monotonic", lambda: next(clock) * 1.0)
    with pytest.raises(TopologyError, match=r"input topic in \(programs\[p\]\.inputs\[0\]\) does not exist"):
        prepared(TOPOLOGY, TwoBrokers({}, lag=0))
    client = TwoBrokers({}, lag=0, appears={"in": 100})
    with caplog.at_level("WARNING", logger="eventscript.kafka.admin"):
        assert prepared(TOPOLOGY, client, wait_for_inputs=True) == {"p": 3}
    assert client.listed >= 100
    said = [r.getMessage() for r in caplog.records]
    assert said and "input topic(s) in (programs[p].inputs[0]) do not exist yet: waiting for them" in said[0]
    assert 1 < len(said) < 10  # (again now and then, not at every request)


def test_an_input_topic_a_program_of_the_worker_writes_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waiting for it would wait for ever: the worker itself would create it after the wait."""
    monkeypatch.setattr(admin_module.time, "sleep", lambda s: None)
    chained = {
        **TOPOLOGY,
        "programs": [
            {"name": "p", "source": "p.es", "inputs": [{"topic": "in", "event": "A"}], "outputs": {"default": "mid"}},
            {"name": "q", "source": "q.es", "inputs": [{"topic": "mid", "event": "A"}]},
        ],
    }
    with pytest.raises(TopologyError, match=r"input topic mid \(programs\[q\]\.inputs\[0\]\) does not exist"):
        prepared(chained, TwoBrokers({"in": 3}, lag=0), wait_for_inputs=True)


def test_the_wait_for_an_input_topic_ends_when_the_worker_is_asked_to_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    from eventscript.kafka.admin import StoppedWaiting

    monkeypatch.setattr(admin_module.time, "sleep", lambda s: None)
    asked = iter([False, False, True])
    with pytest.raises(StoppedWaiting, match=r"waiting for input topic\(s\) in \(programs\[p\]\.inputs\[0\]\)"):
        topo = parse_topology(TOPOLOGY, env={})
        admin = Admin(topo)
        admin.client = TwoBrokers({}, lag=0)  # type: ignore[assignment]
        admin.prepare(topo.programs, wait_for_inputs=True, stopping=lambda: next(asked))
