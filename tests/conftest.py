"""Shared test fixtures and helpers.

``../shared`` (the language document and the conformance suite) sits beside the checkout, in
CI as here; tests that need it read it from there rather than copying it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# Property tests check behaviour, never speed (benchmarks do), so no per-example deadline on a
# busy two-core runner. In CI they are derandomized: a red build is a bug, reproducible from the
# seed printed with it, never a roll of the dice; local runs keep exploring new examples.
settings.register_profile("dev", deadline=None, print_blob=True)
settings.register_profile("ci", deadline=None, print_blob=True, derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parents[1]

# Test helpers are plain modules (tests/ has no packages, and this is its only conftest.py: a
# second one would be imported under the same module name and hide this one's helpers):
# tests/kafka/kafka_helpers.py and tests/test_deploy_files.py are importable from any test.
for _path in (Path(__file__).parent, Path(__file__).parent / "kafka"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
# `make unit`'s two processes: the Kafka tests in one, the rest beside them (see the module).
from parallel_groups import (  # noqa: E402
    pytest_collection_modifyitems,  # noqa: F401
    pytest_configure_node,  # noqa: F401
    pytest_unconfigure,  # noqa: F401
    pytest_xdist_make_scheduler,  # noqa: F401
)

SHARED = ROOT.parent / "shared"
CASES = SHARED / "conformance" / "cases"
LANGUAGE_DOCUMENT = next((SHARED / "seeds").glob("000_*.txt"), None) if (SHARED / "seeds").exists() else None


def run_program(
    source: str | list[str], trace: str, *, state_limit: int = 40_000, force_lazy: bool = False
) -> list[dict[str, Any]]:
    """Compile program text (or a pipeline of them), run a trace, return the output JSON lines."""
    from eventscript.automata.compile import compile_source
    from eventscript.language.source import SourceFile
    from eventscript.tester.pipeline import run_trace
    from eventscript.tester.trace import parse_trace

    sources = [source] if isinstance(source, str) else source
    programs = [
        compile_source(s, name=f"stage{i + 1}", state_limit=state_limit, force_lazy=force_lazy).require()
        for i, s in enumerate(sources)
    ]
    lines: list[dict[str, Any]] = []
    run_trace(programs, parse_trace(SourceFile("<trace>", trace)), lambda line: lines.append(line.to_json()))
    return lines


def check_source(source: str):
    """Compile program text and return its Compilation (diagnostics included)."""
    from eventscript.automata.compile import compile_source

    return compile_source(source, name="test")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def cases_dir() -> Path:
    if not CASES.exists():
        pytest.skip("../shared/conformance is not beside the checkout")
    return CASES


@pytest.fixture(scope="session")
def broker(request: pytest.FixtureRequest):
    """A real Kafka broker for the session (see tests/kafka/kafka_helpers.py for how it is chosen);
    its log is kept when a test failed."""
    from kafka_helpers import start_broker

    yield from start_broker(keep_logs=lambda: request.session.testsfailed > 0)


@pytest.fixture(scope="session")
def three_brokers_started(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Three Apache Kafka KRaft nodes (replication 3, min ISR 2) shared by the tests with a cluster
    of their own (the fault harness, the broker failover tests), which run one after the other in
    one process (tests/parallel_groups.py, "kafka-own"): a start and a stop took about 20 s per
    module. The nodes' logs are kept when a test failed."""
    from eventscript.brokers import KafkaCluster, KafkaNotFetched, kafka_jars

    try:
        jars = kafka_jars(fetch=True)
    except KafkaNotFetched as exc:
        pytest.skip(f"three brokers need Apache Kafka: {exc}")
    failed_before = request.session.testsfailed
    cluster = KafkaCluster(3, jars=jars).start(timeout=120)
    try:
        yield cluster
    finally:
        keep = request.session.testsfailed > failed_before
        cluster.close(keep=keep)
        if keep:
            print(f"\nthe three brokers' logs are kept in {cluster.directory}")


@pytest.fixture
def three_brokers(three_brokers_started: Any) -> Any:
    """The session's three brokers, every node running and listed: the test before may have
    killed or stopped one and not restarted it (or failed before it could)."""
    cluster = three_brokers_started
    for node in cluster.nodes:
        if not node.running:
            cluster.restart(node.node_id, timeout=120)
    cluster.wait_ready(timeout=120, brokers=len(cluster.nodes))
    return cluster


#: Kafka tests that ran (were not skipped), by the kind of broker they ran on.
_KAFKA_TESTS_RAN: dict[str, int] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # (a user property, not an attribute: pytest-xdist sends reports from its workers serialized)
    kind = dict(report.user_properties).get("kafka_kind")
    ran = not report.skipped or hasattr(report, "wasxfail")  # an expected failure ran too
    if report.when == "call" and kind is not None and ran:
        _KAFKA_TESTS_RAN[kind] = _KAFKA_TESTS_RAN.get(kind, 0) + 1


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """Notes the broker a Kafka test ran on: the session's, or, for a test marked ``kafka``
    without it, the Apache Kafka the test starts itself (three brokers, ``dev --broker kafka``)."""
    outcome = yield
    if call.when != "call":
        return
    kind = None
    if "broker" in getattr(item, "fixturenames", ()):
        from kafka_helpers import SESSION_BROKER

        kind = SESSION_BROKER[0].kind if SESSION_BROKER else None
    elif item.get_closest_marker("kafka") is not None:
        kind = "apache"
    if kind is not None:
        outcome.get_result().user_properties.append(("kafka_kind", kind))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many Kafka tests ran on which broker: on this machine and in CI, all on Apache Kafka."""
    if not _KAFKA_TESTS_RAN:
        return
    from eventscript.brokers.apache import KAFKA_VERSION

    names = {
        "apache": f"Apache Kafka {KAFKA_VERSION} (started by the tests)",
        "tansu": "the embedded Tansu broker",
        "kafka": "the Kafka of KAFKA_BOOTSTRAP_SERVERS or a container",
    }
    ran = ", ".join(f"{n} on {names.get(kind, kind)}" for kind, n in sorted(_KAFKA_TESTS_RAN.items()))
    terminalreporter.write_line(f"Kafka tests run: {ran}")


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test session (starting one takes seconds)."""
    import shutil

    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("PySpark needs a Java runtime (java on PATH)")
    from eventscript.backfill.job import spark_session

    session = spark_session(
        "local[2]", ui=False, conf={"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"}
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
