"""`eventscript dev --broker kafka` runs a topology on Apache Kafka (one KRaft node it starts and
stops) and prints what the embedded broker's run prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from eventscript.brokers import KafkaNotFetched, kafka_jars

ROOT = Path(__file__).resolve().parents[2]
SENSORS = ROOT / "topologies" / "sensors"


def _dev(broker: str, tmp: Path) -> tuple[list[str], str]:
    """The --show output of a dev run, each topic's lines sorted (order across keys may differ),
    and what it printed on stderr."""
    env = {**os.environ, "EVENTSCRIPT_STATE_DIR": str(tmp / broker)}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "eventscript.cli.main",
            "dev",
            "--broker",
            broker,
            str(SENSORS / "topology.yaml"),
            "--trace",
            str(SENSORS / "sample.trace"),
            "--until-idle",
            "2",
            "--show",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"dev --broker {broker} exited with {done.returncode}: {done.stderr[-3000:]}"
    sections: list[str] = []
    lines: list[str] = []
    for line in done.stdout.splitlines():
        if line.startswith("== "):
            sections += sorted(lines)
            lines = []
            sections.append(line)
        else:
            lines.append(line)
    return sections + sorted(lines), done.stderr


@pytest.mark.kafka
@pytest.mark.slow
def test_dev_on_apache_kafka_prints_what_the_embedded_broker_prints(tmp_path: Path) -> None:
    try:
        kafka_jars()
    except KafkaNotFetched as exc:
        pytest.skip(f"Apache Kafka is not available: {exc}")
    # The two runs side by side (each its own broker, port and state folder): one after the other
    # they took 25 s, mostly waits (a JVM's start, group joins, --until-idle).
    with ThreadPoolExecutor(2) as pool:
        kafka_run, embedded_run = (pool.submit(_dev, broker, tmp_path) for broker in ("kafka", "embedded"))
        (on_kafka, said_on_kafka), (on_embedded, said_on_embedded) = kafka_run.result(), embedded_run.result()
    assert any(not line.startswith("== ") for line in on_kafka), "the run printed no records"
    assert on_kafka == on_embedded
    # Each says which broker it ran on (the Apache Kafka run said "on the embedded broker").
    assert re.search(r"^ready: overheat, site-alarm on Apache Kafka \(127\.0\.0\.1:\d+\);", said_on_kafka, re.M)
    assert "ready: overheat, site-alarm on the embedded broker;" in said_on_embedded


def test_dev_says_what_to_do_when_kafka_is_not_fetched(tmp_path: Path) -> None:
    env = {**os.environ, "EVENTSCRIPT_KAFKA_JARS": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "eventscript.cli.main", "dev", "--broker", "kafka", str(SENSORS / "topology.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 2
    assert "holds no kafka_2.13 jar" in done.stderr, done.stderr
