"""Topology files: validation errors name the file, the path inside it and the fix."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from eventscript.kafka.config import TopologyError, load_topology, parse_topology

GOOD = {
    "kafka": {"bootstrap_servers": "${BROKERS:-localhost:9092}"},
    "programs": [
        {
            "name": "p",
            "source": "p.es",
            "inputs": [{"topic": "in", "event": "A"}, {"topic": "mixed", "event_from": {"header": "type"}}],
            "outputs": {"default": "out"},
        }
    ],
}


def test_defaults_and_environment() -> None:
    topo = parse_topology(GOOD, env={"BROKERS": "k1:9092,k2:9092"})
    assert topo.kafka.bootstrap_servers == "k1:9092,k2:9092"
    p = topo.programs[0]
    assert p.guarantee == "exactly_once" and p.clock == "wall" and p.timezone == "UTC"
    assert p.error_topic == "p-errors"
    assert p.output_topic("Anything") == "out"
    assert topo.group_id(p) == "eventscript.p"
    assert topo.changelog_topic(p) == "eventscript.p-changelog"
    assert parse_topology(GOOD, env={}).kafka.bootstrap_servers == "localhost:9092"


def test_missing_environment_variable_is_named() -> None:
    data = {**GOOD, "kafka": {"bootstrap_servers": "${NOPE}"}}
    with pytest.raises(TopologyError, match=r"t.yaml: kafka.bootstrap_servers: environment variable NOPE is not set"):
        parse_topology(data, "t.yaml", env={})


def test_a_missing_environment_variable_is_placed_at_its_line_and_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read from a file, the error names file:line:col of the ``${``: exact in a plain string,
    the string's start in a quoted one; a hint says how to set it or give a default."""
    monkeypatch.delenv("NOPE", raising=False)
    path = tmp_path / "t.yaml"
    text = (
        "kafka:\n  bootstrap_servers: host-${NOPE}:9092\nprograms:\n  - name: p\n    source: p.es\n"
        "    inputs: [{topic: in, event: A}]\n    outputs: {default: out}\n"
    )
    path.write_text(text)
    with pytest.raises(TopologyError) as plain:
        load_topology(path)
    first, hint = str(plain.value).splitlines()
    assert first == f"{path}:2:27: kafka.bootstrap_servers: environment variable NOPE is not set"
    assert text.splitlines()[1][26:33] == "${NOPE}"  # (column 27)
    assert hint.strip() == (
        "hint: set NOPE in the environment of the command reading this topology, or give a default: ${NOPE:-default}"
    )
    path.write_text(text.replace("host-${NOPE}:9092", "'host-${NOPE}:9092'"))
    with pytest.raises(TopologyError, match=rf"^{re.escape(str(path))}:2:22: kafka.bootstrap_servers: "):
        load_topology(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["programs"][0].update(clock="sundial"),
            r"programs\[0\]\.clock: Input should be 'wall' or 'record'",
        ),
        (
            lambda d: d["programs"][0]["inputs"][0].update(topik="x"),
            r"programs\[0\]\.inputs\[0\]\.topik: unknown setting",
        ),
        (lambda d: d["programs"][0]["inputs"][0].pop("event"), r"programs\[0\]\.inputs\[0\]: give the event name"),
        (lambda d: d["programs"][0].update(timezone="Mars/Olympus"), r"programs\[0\]\.timezone: unknown time zone"),
        (lambda d: d["programs"][0].update(name="bad name"), r"programs\[0\]\.name: use letters, digits"),
        (lambda d: d["programs"][0].pop("source"), r"programs\[0\]\.source: required setting is missing"),
        (
            lambda d: d.update(programs=[d["programs"][0], d["programs"][0]]),
            r"program names must be unique; repeated: p",
        ),
        (lambda d: d["kafka"].update(security={"protocol": "SASL_SSL"}), r"kafka.security: .*needs a 'sasl' section"),
        (
            lambda d: d["kafka"].update(producer={"partitioner": "consistent_random"}),
            r"kafka.producer.partitioner: 'consistent_random' is not allowed: .*murmur2",
        ),
        (
            lambda d: d["kafka"].update(extra={"partitioner": "random"}),
            r"kafka.extra.partitioner: 'random' is not allowed",
        ),
    ],
)
def test_errors_name_the_path(change, message) -> None:  # type: ignore[no-untyped-def]
    import copy

    data = copy.deepcopy(GOOD)
    change(data)
    with pytest.raises(TopologyError) as info:
        parse_topology(data, "topo.yaml")
    text = str(info.value)
    assert text.startswith("topo.yaml: invalid topology:")
    import re

    assert re.search(message, text), text


def test_yaml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text("programs:\n  - name: p\n    source: [unclosed\n")
    with pytest.raises(TopologyError, match=r"t.yaml:\d+:\d+: not valid YAML"):
        load_topology(f)


def test_relative_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    import yaml

    f = tmp_path / "sub" / "t.yaml"
    f.parent.mkdir()
    f.write_text(yaml.safe_dump(GOOD))
    topo = load_topology(f)
    assert topo.source_path(topo.programs[0]) == tmp_path / "sub" / "p.es"
    assert topo.state_path(topo.programs[0]) == tmp_path / "sub" / "state" / "p"


def recording_supplier(seen: list[dict[str, object]]) -> Any:
    """A client supplier whose clients only record their settings in ``seen``, in order of making."""
    from eventscript.kafka.clients import ClientSupplier

    class Recorder:
        def __init__(self, conf: dict[str, object]) -> None:
            seen.append(conf)

        def init_transactions(self, *args: object) -> None:
            pass

    class RecordingSupplier(ClientSupplier):
        def consumer(self, conf: dict[str, object]) -> Recorder:  # type: ignore[override]
            return Recorder(conf)

        def producer(self, conf: dict[str, object]) -> Recorder:  # type: ignore[override]
            return Recorder(conf)

    return RecordingSupplier()


def test_the_producers_murmur2_partitioner_may_be_named() -> None:
    import copy

    for value in ("murmur2_random", "murmur2"):
        data = copy.deepcopy(GOOD)
        data["kafka"]["producer"] = {"partitioner": value}
        assert parse_topology(data, "topo.yaml").kafka.producer == {"partitioner": value}


def test_static_membership_uses_the_worker_instance_id(tmp_path: Path) -> None:
    """A restarted worker rejoins as the same static member (group.instance.id), so a restart
    within the session timeout moves no task; it can be switched off."""
    from eventscript.kafka.worker import ProgramWorker

    seen: list[dict[str, object]] = []

    for static in (True, False):
        path = tmp_path / f"t{static}.yaml"
        path.write_text(f"""
application: app
kafka: {{bootstrap_servers: "127.0.0.1:1", static_membership: {str(static).lower()}}}
programs:
  - name: p
    source: p.es
    inputs: [{{topic: in, event: A}}]
""")
        (tmp_path / "p.es").write_text("in {} A out {} B ( A() { !>B({}); } )*")
        topo = load_topology(path)
        seen.clear()
        ProgramWorker(
            topo,
            topo.programs[0],
            None,
            1,
            "pod-7",  # type: ignore[arg-type]
            supplier=recording_supplier(seen),
        )._open()
        group_consumer = seen[0]
        assert group_consumer.get("group.instance.id") == ("pod-7" if static else None)


def clients_made(tmp_path: Path, kafka: str, guarantee: str = "at_least_once") -> list[dict[str, object]]:
    """The settings of the clients a worker makes at start (the group member, the producer, the
    restore reader, in that order), for a one-program topology with ``kafka`` (YAML flow mapping
    entries after the bootstrap servers) and ``guarantee``."""
    from eventscript.kafka.worker import ProgramWorker

    (tmp_path / "p.es").write_text("in {} A out {} B ( A() { !>B({}); } )*")
    path = tmp_path / "t.yaml"
    path.write_text(f"""
application: app
kafka: {{bootstrap_servers: "127.0.0.1:1", {kafka}}}
programs:
  - name: p
    source: p.es
    guarantee: {guarantee}
    inputs: [{{topic: in, event: A}}]
""")
    topo = load_topology(path)
    seen: list[dict[str, object]] = []
    ProgramWorker(topo, topo.programs[0], None, 1, "pod-7", supplier=recording_supplier(seen))._open()  # type: ignore[arg-type]
    return seen


def test_the_group_member_prefetches_a_bounded_number_of_records(tmp_path: Path) -> None:
    """The worker's group member stops prefetching at a few thousand records a partition (librdkafka's
    default of 100,000 held a whole backlog, ~30 MiB at 100,000 small records: bench/SPEED.md, "The
    worker's memory"); its restore reader keeps the large fetches; a topology's ``kafka.consumer``
    setting replaces the bound; librdkafka accepts the settings."""
    from confluent_kafka import Consumer

    from eventscript.kafka.clients import MEMBER_PREFETCH

    for consumer in ("{}", "{queued.min.messages: 50000}"):
        seen = clients_made(tmp_path, f"consumer: {consumer}")
        member, restorer = seen[0], seen[2]  # (the producer is made between them)
        assert member["group.id"] == "app.p" and str(restorer["group.id"]).startswith("app.p.restore.")
        expected = dict(MEMBER_PREFETCH, **({"queued.min.messages": 50000} if consumer != "{}" else {}))
        assert {k: member[k] for k in MEMBER_PREFETCH} == expected
        assert restorer["max.partition.fetch.bytes"] == 10_000_000
        assert restorer.get("queued.min.messages") == (None if consumer == "{}" else 50000)
        real = {k: v for k, v in member.items() if k not in ("logger", "on_commit", "stats_cb")}
        Consumer(real).close()  # librdkafka knows every setting


def test_program_names_differing_only_in_dot_and_underscore_are_refused() -> None:
    doc = {
        "programs": [{"name": n, "source": "p.es", "inputs": [{"topic": "in", "event": "A"}]} for n in ("a.b", "a_b")]
    }
    with pytest.raises(TopologyError, match=r"differ only in '\.' and '_'"):
        parse_topology(doc)


def test_key_formats_must_fit_the_group_key() -> None:
    from eventscript.automata.compile import compile_source
    from eventscript.kafka.keys import scheme_for

    two = compile_source("in {string a; long b;} E group(E.a, E.b)  out long N  ( E() { !>N(1); } )*").require()
    one = compile_source("in {time t;} E group(E.t)  out long N  ( E() { !>N(1); } )*").require()
    for fmt, program, problem in (("string", two, "has 2"), ("bytes", two, "has 2"), ("bytes", one, "string, long")):
        topo = parse_topology(
            {"programs": [{"name": "p", "source": "p.es", "inputs": [{"topic": "in", "event": "E", "key": fmt}]}]}
        )
        with pytest.raises(TopologyError, match=problem):
            scheme_for(topo.programs[0], program.program.key_types)


def test_key_schemes_write_keys_as_producers_do() -> None:
    import struct
    import zlib

    from eventscript.kafka.keys import KeyScheme
    from eventscript.kafka.partitioner import murmur2
    from eventscript.language.types import DOUBLE, LONG, STRING

    assert KeyScheme("string", "murmur2", (STRING,)).key_bytes(("sensor-1",)) == b"sensor-1"
    assert KeyScheme("string", "murmur2", (LONG,)).key_bytes((42,)) == b"42"
    assert KeyScheme("json", "murmur2", (STRING, LONG)).key_bytes(("T1", 7)) == b'["T1",7]'
    assert KeyScheme("bytes", "murmur2", (LONG,)).key_bytes((-2,)) == struct.pack(">q", -2)
    assert KeyScheme("bytes", "murmur2", (DOUBLE,)).key_bytes((1.5,)) == struct.pack(">d", 1.5)
    none = KeyScheme("none", "murmur2", (STRING,))
    assert none.key_bytes(("x",)) is None and none.routing_bytes(("x",)) == b'["x"]'
    crc = KeyScheme("string", "consistent_random", (STRING,))
    assert crc.partition(b"sensor-1", 7) == zlib.crc32(b"sensor-1") % 7
    java = KeyScheme("string", "murmur2", (STRING,))
    assert java.partition(b"sensor-1", 7) == (murmur2(b"sensor-1") & 0x7FFFFFFF) % 7


def test_a_session_timeout_given_alone_gets_heartbeats_at_a_third_of_it() -> None:
    """The 45 s default session heartbeats every 3 s; a short session given without a heartbeat
    interval (dev's 6 s) heartbeats at a third of it, not at the default's 3 s."""
    from eventscript.kafka.clients import consumer_config
    from eventscript.topology.config import KafkaConfig

    assert consumer_config(KafkaConfig(), "g")["session.timeout.ms"] >= 45_000
    short = consumer_config(KafkaConfig(consumer={"session.timeout.ms": 6000}), "g")
    assert short["heartbeat.interval.ms"] == 2000
    both = consumer_config(KafkaConfig(consumer={"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}), "g")
    assert both["heartbeat.interval.ms"] == 500


def test_the_upgrade_policy_is_one_of_three_and_refuse_by_default(tmp_path: Path) -> None:
    assert parse_topology(GOOD, env={}).programs[0].upgrade == "refuse"
    f = tmp_path / "t.yaml"
    f.write_text(
        "programs:\n  - name: p\n    source: p.es\n    inputs: [{topic: in, event: A}]\n    upgrade: migrate\n"
    )
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    text = str(info.value)
    assert re.search(r"t\.yaml:5:14: .*programs\[0\]\.upgrade: Input should be 'carry', 'restart' or 'refuse'", text), (
        text
    )
    f.write_text(f.read_text().replace("migrate", "carry"))
    assert load_topology(f).programs[0].upgrade == "carry"


def test_the_worker_producer_lingers_longer_and_a_topology_setting_replaces_it(tmp_path: Path) -> None:
    """The worker's producer waits 20 ms to fill a batch at least once and 100 ms exactly once
    (librdkafka's 5 ms made batches of a few dozen records, a microsecond a record in its broker
    threads: bench/SPEED.md, "librdkafka's threads and the client settings"); a topology's
    ``kafka.producer`` ``linger.ms`` replaces either; librdkafka accepts the settings."""
    from confluent_kafka import Producer

    from eventscript.kafka.clients import LINGER_MS, TRANSACTIONAL_LINGER_MS

    assert (LINGER_MS, TRANSACTIONAL_LINGER_MS) == (20, 100)
    for guarantee, producer, expected in (
        ("at_least_once", "{}", 20),
        ("exactly_once", "{}", 100),
        ("at_least_once", "{linger.ms: 2}", 2),
        ("exactly_once", "{linger.ms: 7}", 7),
    ):
        made = clients_made(tmp_path, f"producer: {producer}", guarantee)[1]  # (after the group member)
        assert ("transactional.id" in made) == (guarantee == "exactly_once")
        assert made["linger.ms"] == expected, (guarantee, producer)
        assert made["compression.type"] == "lz4"  # (kept: the changelog on disk is 5x smaller with it)
        real = {k: v for k, v in made.items() if k not in ("logger", "error_cb", "stats_cb")}
        Producer(real).flush(0)  # librdkafka knows every setting
