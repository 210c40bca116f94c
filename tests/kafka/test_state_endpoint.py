"""``GET /state/<program>?key=...`` with live workers (issue 23): 200 with the key's committed
state in program terms, 404 for a key without an instance, 400 for bad parameters, 401 without
the token, 403 when the endpoint is off; two workers of one application with standbys: every key
asked through either worker gets its own key's answer, from the owner or a standby, and the
answers agree once the standby has caught up; ``eventscript state`` prints it for a person.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from confluent_kafka import Producer
from kafka_helpers import Broker, endpoint_json, free_port, topology, unique, wait_for

from eventscript.cli.main import main
from eventscript.kafka import clients
from eventscript.kafka.admin import Admin
from eventscript.kafka.config import KafkaConfig, load_topology
from eventscript.kafka.partitioner import partition_of
from eventscript.kafka.supervisor import TopologyRunner

PROGRAM = """
in {string k; long n;} Opened group(Opened.k), {string k; long n;} Closed group(Closed.k)
out {string k; long n;} LeftOpen
{ times = 0; }
( Opened(o) { times = times + 1; } ( Closed() | elapse[5 minutes]() { !>LeftOpen(o); } Closed() ) )*
"""
PARTITIONS = 4
T0 = 1_767_225_600_000
TOKEN = "s3cret"
DOORS = ["front", "back", "side", "garage", "attic", "cellar"]


def _setup(
    broker: Broker,
    tmp_path: Path,
    file: str = "topology.yaml",
    state: str = "state",
    application: str | None = None,
    name: str | None = None,
    standby: int = 0,
    program: str = PROGRAM,
) -> tuple[str, Path]:
    name = name or unique("ste")
    (tmp_path / "p.es").write_text(program)
    inputs = [{"topic": f"{name}-opened", "event": "Opened"}, {"topic": f"{name}-closed", "event": "Closed"}]
    topo = topology(
        broker,
        tmp_path,
        [
            {
                "name": name,
                "source": "p.es",
                "clock": "record",
                "num_standby": standby,
                "commit_interval_ms": 50,
                "inputs": [i for i in inputs if i["event"] in program],
                "outputs": {"default": f"{name}-out"},
            }
        ],
        {f"{name}-opened": {"partitions": PARTITIONS}, f"{name}-closed": {"partitions": PARTITIONS}},
        file=file,
        state=state,
        application=application,
        health={"port": free_port()},
        state_query={"enabled": True, "token": TOKEN},
    )
    # The topics exist, with their partitions, before the records are sent: Apache Kafka creates
    # a topic first produced to with its default of one partition (auto.create.topics.enable).
    t = load_topology(topo)
    Admin(t).prepare(t.programs)
    return name, topo


def _send(broker: Broker, topic: str, keys: list[str], ms: int) -> None:
    p = Producer(clients.producer_config(KafkaConfig(bootstrap_servers=broker.bootstrap)))
    failed: list[Any] = []
    for i, k in enumerate(keys):
        p.produce(
            topic,
            key=k.encode(),
            value=orjson.dumps({"k": k, "n": i}),
            partition=partition_of(k.encode(), PARTITIONS),
            timestamp=T0 + ms,
            on_delivery=lambda err, _msg: failed.append(err) if err else None,
        )
    assert p.flush(30) == 0 and not failed, f"records to {topic} were not delivered: {failed}"


class Running:
    """A topology's runner in a thread, stopped on exit."""

    def __init__(self, path: Path) -> None:
        self.runner = TopologyRunner(load_topology(path))
        self.runner.prepare()
        self.thread = threading.Thread(target=self.runner.run, kwargs={"install_signals": False}, daemon=True)

    def __enter__(self) -> TopologyRunner:
        self.thread.start()
        wait_for(lambda: self.runner.health is not None, timeout=30, what="the HTTP server")
        return self.runner

    def __exit__(self, *exc: object) -> None:
        self.runner.stop()
        self.thread.join(60)


def _get(runner: TopologyRunner, path: str, token: str | None = TOKEN) -> tuple[int, Any]:
    assert runner.health is not None
    return endpoint_json(runner.health.port, path, token, timeout=30)


@pytest.mark.kafka
def test_the_endpoint_answers_about_a_key(broker: Broker, tmp_path: Path, capsys) -> None:
    name, topo = _setup(broker, tmp_path)
    _send(broker, f"{name}-opened", DOORS, 0)
    _send(broker, f"{name}-closed", ["back"], 1_000)
    with Running(topo) as runner:

        def answered(key: str, times: int) -> bool:
            status, body = _get(runner, f"/state/{name}?key={key}")
            return status == 200 and body["instance"]["variables"][0]["value"] == times

        wait_for(lambda: all(answered(k, 1) for k in DOORS), timeout=90, what="every door committed")
        status, front = _get(runner, f"/state/{name}?key=front")
        assert status == 200 and front["status"] == "present" and front["key"] == ["front"]
        assert front["served_by"] == {"worker": runner.workers[0].instance_id, "role": "owner"}
        assert {m["text"] for m in front["instance"]["waiting"]} == {"Closed()", "elapse[5 minutes]"}
        assert front["instance"]["timer"]["deadline"] == "2026-01-01T00:05:00.000000Z"
        assert front["instance"]["origin"].startswith(f"{name}-opened:")
        assert front["committed"]["position"][f"{name}-opened:{front['task']}"] >= 1
        status, back = _get(runner, f"/state/{name}?key=back")
        assert status == 200 and [m["text"] for m in back["instance"]["waiting"]] == ["Opened(o)"]
        assert back["instance"]["timer"] is None

        status, body = _get(runner, f"/state/{name}?key=nobody")
        assert status == 404 and body["status"] == "absent"
        for bad in (
            f"/state/{name}",
            f"/state/{name}?key=front&key=back",
            f"/state/{name}?key=front&colour=red",
            f"/state/{name}?key=front&task=1",
        ):
            status, body = _get(runner, bad)
            assert status == 400 and body["error"], bad
        assert _get(runner, "/state/no-such-program?key=front")[0] == 404
        assert _get(runner, f"/state/{name}?key=front", token=None)[0] == 401
        assert _get(runner, f"/state/{name}?key=front", token="wrong")[0] == 401

        # eventscript state: the same answer, for a person and as JSON
        url = f"http://127.0.0.1:{runner.health.port}"
        assert main(["state", str(topo), "--program", name, "--key", "front", "--url", url, "--token", TOKEN]) == 0
        text = capsys.readouterr().out
        assert f'{name} key ["front"]' in text and "waits for" in text and "elapse[5 minutes]@" in text
        assert "times (long) = 1" in text and "timer: due 2026-01-01T00:05:00.000000Z" in text
        assert (
            main(["state", str(topo), "--program", name, "--key", "nobody", "--url", url, "--token", TOKEN, "--json"])
            == 1
        )
        assert orjson.loads(capsys.readouterr().out)["status"] == "absent"

        runner.topo.state_query.enabled = False  # what a topology without state_query gets
        status, body = _get(runner, f"/state/{name}?key=front")
        assert status == 403 and "state_query" in body["error"]


@pytest.mark.kafka
def test_two_workers_answer_every_key_from_the_owner_or_a_standby(broker: Broker, tmp_path: Path) -> None:
    application = unique("app")
    name = unique("ste")
    _, topo_a = _setup(broker, tmp_path, "a.yaml", "state-a", application, name, standby=1)
    _, topo_b = _setup(broker, tmp_path, "b.yaml", "state-b", application, name, standby=1)
    _send(broker, f"{name}-opened", DOORS, 0)
    with Running(topo_a) as a, Running(topo_b) as b:

        def owned() -> bool:
            tasks = [set(a.workers[0].tasks), set(b.workers[0].tasks)]
            return bool(tasks[0]) and bool(tasks[1]) and not tasks[0] & tasks[1] and len(tasks[0] | tasks[1]) == 4

        wait_for(lambda: owned() and a.ready() and b.ready(), timeout=120, what="both workers owning tasks")

        def agree(key: str) -> bool:
            answers = [_get(w, f"/state/{name}?key={key}") for w in (a, b)]
            if any(s != 200 for s, _ in answers):
                return False
            roles = sorted(body["served_by"]["role"] for _, body in answers)
            return roles == ["owner", "standby"] and answers[0][1]["instance"] == answers[1][1]["instance"]

        wait_for(lambda: all(agree(k) for k in DOORS), timeout=120, what="owner and standby answers to agree")
        for k in DOORS:
            for w in (a, b):
                status, body = _get(w, f"/state/{name}?key={k}")
                assert status == 200 and body["key"] == [k]  # never another key's state
                assert body["instance"]["variables"][1]["value"]["k"] == k
                if body["served_by"]["role"] == "standby":
                    assert "changelog applied to offset" in body["served_by"]["freshness"]


def test_topology_files_without_state_query_keep_it_off(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        yaml.safe_dump({"programs": [{"name": "p", "source": "p.es", "inputs": [{"topic": "in", "event": "Hit"}]}]})
    )
    assert load_topology(path).state_query.enabled is False


@pytest.mark.kafka
def test_answers_during_a_rebalance_are_the_asked_keys_committed_state(broker: Broker, tmp_path: Path) -> None:
    """Worker b joins while every key is asked through both workers: each answer is the key's
    own committed state (200), or says the task is moving (503) or owned elsewhere (421, naming
    the owner as far as the broker tells); never another key's, never a state not committed."""
    application = unique("app")
    name = unique("ste")
    _, topo_a = _setup(broker, tmp_path, "a.yaml", "state-a", application, name)
    _, topo_b = _setup(broker, tmp_path, "b.yaml", "state-b", application, name)
    _send(broker, f"{name}-opened", DOORS, 0)
    seen: list[tuple[str, int, Any]] = []
    stop = threading.Event()
    with Running(topo_a) as a:
        wait_for(
            lambda: all(_get(a, f"/state/{name}?key={k}")[0] == 200 for k in DOORS),
            timeout=90,
            what="every door committed on worker a",
        )
        workers = [a]

        def ask() -> None:
            while not stop.is_set():
                for w in list(workers):
                    for k in DOORS:
                        status, body = _get(w, f"/state/{name}?key={k}")
                        seen.append((k, status, body))

        asking = threading.Thread(target=ask, daemon=True)
        asking.start()
        try:
            with Running(topo_b) as b:
                workers.append(b)

                def split() -> bool:
                    tasks = [set(a.workers[0].tasks), set(b.workers[0].tasks)]
                    return all(tasks) and a.ready() and b.ready()

                wait_for(split, timeout=120, what="worker b to take tasks")
                wait_for(
                    lambda: all(_get(w, f"/state/{name}?key={k}")[0] in (200, 421) for w in workers for k in DOORS),
                    timeout=60,
                    what="the moved tasks to be restored",
                )
                stop.set()
                asking.join(60)
                for k in DOORS:  # the worker that does not own the key's task points to the owner
                    statuses = sorted(_get(w, f"/state/{name}?key={k}")[0] for w in workers)
                    assert statuses == [200, 421], (k, statuses)
                    owner_less = [body for w in workers for s, body in [_get(w, f"/state/{name}?key={k}")] if s == 421]
                    assert owner_less[0]["owner"] is not None and owner_less[0]["task"] >= 0
        finally:
            stop.set()
    assert {s for _, s, _ in seen} <= {200, 421, 503}, {s for _, s, _ in seen}
    answered = [(k, body) for k, s, body in seen if s == 200]
    assert answered and len(seen) > len(DOORS) * 2
    for k, body in answered:
        assert body["key"] == [k] and body["instance"]["variables"][1]["value"]["k"] == k
        assert body["instance"]["variables"][0]["value"] == 1  # each door opened once: committed, whole


COUNTER = """
in {string k; long n;} Opened group(Opened.k)
out {string k; long n;} Never
{ times = 0; }
( Opened(o) { times = times + 1; } )*
"""


def _variables(body: Any) -> dict[str, Any]:
    return {v["name"]: v["value"] for v in body["instance"]["variables"]}


@pytest.mark.kafka
def test_three_workers_answer_every_key_with_whole_committed_state_through_rebalances(
    broker: Broker, tmp_path: Path
) -> None:
    """Issue 23's check on three workers (with standbys): rounds of records keep coming while b
    joins, c joins and b leaves; every key is asked through every worker all along. Round r sends
    every key a record with n = r, so a committed state is whole when ``times == o.n + 1`` and
    ``o.k`` is the key: a torn read (a count from one commit, a record from another) or another
    key's data breaks it. Each answer is 200 (owner or standby), 421 (owned elsewhere) or 503
    (moving); at the end every worker's answers reach the last round."""
    broker.require_real("static members and standbys through rebalances")
    application, name = unique("app"), unique("ste")
    topos = []
    for w in "abc":
        topos.append(
            _setup(broker, tmp_path, f"{w}.yaml", f"state-{w}", application, name, standby=1, program=COUNTER)[1]
        )
    sent = [0]  # rounds delivered
    seen: list[tuple[str, str, int, Any]] = []
    stop_sending, stop_asking = threading.Event(), threading.Event()

    def send_rounds() -> None:
        producer = Producer(clients.producer_config(KafkaConfig(bootstrap_servers=broker.bootstrap)))
        while not stop_sending.wait(0.05):  # a pace, not a wait: rounds keep coming through the rebalances
            _send_round(producer, f"{name}-opened", sent[0])
            sent[0] += 1

    def ask() -> None:
        while not stop_asking.is_set():
            for label, w in list(workers.items()):
                for k in DOORS:
                    try:
                        status, body = _get(w, f"/state/{name}?key={k}")
                    except (urllib.error.URLError, ConnectionError):
                        if label in workers:
                            raise
                        break  # a worker taken out meanwhile closed its server under this query
                    seen.append((label, k, status, body))

    def owning(*runners: TopologyRunner) -> bool:
        tasks = [set(r.workers[0].tasks) for r in runners]
        every = set().union(*tasks)
        return (
            all(tasks)
            and len(every) == PARTITIONS
            and sum(map(len, tasks)) == PARTITIONS
            and all(r.ready() for r in runners)
        )

    workers: dict[str, TopologyRunner] = {}
    sender = threading.Thread(target=send_rounds, daemon=True)
    asking = threading.Thread(target=ask, daemon=True)
    b = Running(topos[1])
    try:
        with Running(topos[0]) as a:
            workers["a"] = a
            sender.start()
            wait_for(
                lambda: all(_get(a, f"/state/{name}?key={k}")[0] == 200 for k in DOORS),
                timeout=90,
                what="every door committed on worker a",
            )
            asking.start()
            workers["b"] = b.__enter__()
            wait_for(lambda: owning(a, b.runner), timeout=120, what="a and b to share the tasks")
            with Running(topos[2]) as c:
                workers["c"] = c
                wait_for(lambda: owning(a, b.runner, c), timeout=120, what="a, b and c to share the tasks")
                del workers["b"]
                b.__exit__(None, None, None)  # a static member: the group rebalances when its session ends
                wait_for(lambda: owning(a, c), timeout=120, what="a and c to take b's tasks")
                stop_sending.set()
                sender.join(60)
                last = sent[0]

                def caught_up() -> bool:
                    for w in (a, c):
                        for k in DOORS:
                            status, body = _get(w, f"/state/{name}?key={k}")
                            if status == 200 and _variables(body)["times"] != last:
                                return False
                            if status not in (200, 421):
                                return False
                    return True

                wait_for(caught_up, timeout=120, what="every worker's answers to reach the last round")
                stop_asking.set()
                asking.join(60)
    finally:
        stop_sending.set()
        stop_asking.set()
        if b.thread.is_alive():
            b.__exit__(None, None, None)
    statuses = {s for _, _, s, _ in seen}
    assert statuses <= {200, 421, 503}, [
        (label, k, s, body["served_by"], body["committed"], body.get("note"))
        for label, k, s, body in seen
        if s not in (200, 421, 503)
    ][:3]
    answered = [(label, k, body) for label, k, s, body in seen if s == 200]
    assert {label for label, _, _, _ in seen} == {"a", "b", "c"}  # asked through every worker
    assert "owner" in {body["served_by"]["role"] for _, _, body in answered}
    for label, k, body in answered:
        v = _variables(body)
        assert body["key"] == [k] and v["o"]["k"] == k, (label, k, body)  # never another key's data
        assert v["times"] == v["o"]["n"] + 1, (label, k, body)  # never a torn read
        assert v["times"] <= last
    assert len(answered) > len(DOORS) * 6


def _send_round(p: Producer, topic: str, n: int) -> None:
    """One record with ``n`` for every door (n = the round, so a key's count is n + 1)."""
    failed: list[Any] = []
    for k in DOORS:
        p.produce(
            topic,
            key=k.encode(),
            value=orjson.dumps({"k": k, "n": n}),
            partition=partition_of(k.encode(), PARTITIONS),
            timestamp=T0 + n,
            on_delivery=lambda err, _msg: failed.append(err) if err else None,
        )
    assert p.flush(30) == 0 and not failed, f"round {n} was not delivered: {failed}"
