"""``make unit PYTEST_WORKERS=2`` (tests/parallel_groups.py): in two processes, every test on the
session's Kafka broker runs in one process, every test with its own brokers in one, and the other
tests of a file all run in one process; the session broker's tests start first in one process and
those with their own brokers in the other, the files after them. Checked on a small suite of its
own, run by pytest-xdist in two worker processes."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import pytest
from parallel_groups import (
    pytest_collection_modifyitems,
    pytest_configure_node,
    pytest_unconfigure,
    pytest_xdist_make_scheduler,
)

@pytest.fixture(scope="session")
def broker():
    return "a broker"

@pytest.fixture(scope="session")
def spark():
    return "a Spark session"
"""

#: Several tests a file, so that a file shared out test by test would be split (almost surely).
TESTS = 6


def _file(body: str, tests: int = TESTS) -> str:
    return "\n".join(
        ["import pytest", *(body.format(i=i) for i in range(tests))],
    )


def test_kafka_tests_share_one_process_and_other_files_stay_whole(pytester: pytest.Pytester) -> None:
    """Also: the session broker's tests start first, though a plain file has more tests (xdist's
    own order), and the tests marked ``kafka`` without the session's broker (they start their own,
    as the fault harness) start first in the other process, before Spark's and the files."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_uses_broker=_file("def test_kafka_b{i}(broker): pass\ndef test_pure{i}(): pass"),
        test_marked_kafka=_file("@pytest.mark.kafka\ndef test_kafka_k{i}(): pass"),
        test_uses_spark=_file("def test_s{i}(spark): pass"),
        test_plain_a=_file("def test_a{i}(): pass", tests=TESTS * 3),
        test_plain_b=_file("def test_b{i}(): pass"),
        test_plain_c=_file("def test_c{i}(): pass"),
    )
    pytester.mkdir("chaos")  # (a test of its own folder, as the harness's, is grouped the same)
    (pytester.path / "chaos" / "test_harness.py").write_text(_file("@pytest.mark.kafka\ndef test_kafka_h{i}(): pass"))
    pytester.makeini("[pytest]\nmarkers =\n    kafka: needs Kafka\n")
    # (without hypothesis's plugin, which the suite does not use, three processes start in a third of the time)
    options = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-v", *options)
    result.assert_outcomes(passed=TESTS * 10)
    workers: dict[str, set[str]] = defaultdict(set)
    order: dict[str, list[str]] = defaultdict(list)  # each process's tests, in the order they ran
    for worker, path, name in re.findall(r"\[(gw\d)\][^\n]*PASSED ([\w/]+)\.py::(\w+)", result.stdout.str()):
        workers["kafka" if name.startswith("test_kafka_b") else "own" if name.startswith("test_kafka") else path].add(
            worker
        )
        order[worker].append(name)
    assert len(workers) == 7, result.stdout.str()
    assert all(len(w) == 1 for w in workers.values()), f"split between processes: {dict(workers)}"
    used = set().union(*workers.values())
    assert used == {"gw0", "gw1"}, f"one process ran everything: {dict(workers)}"
    (kafka_process,) = workers["kafka"]
    assert order[kafka_process][0].startswith("test_kafka_b"), f"the Kafka tests did not start first: {dict(order)}"
    (own_process,) = workers["own"]
    assert own_process != kafka_process, f"the two Kafka groups in one process: {dict(order)}"
    own_first = order[own_process][: TESTS * 2]
    assert all(n.startswith(("test_kafka_k", "test_kafka_h")) for n in own_first), f"not run first: {dict(order)}"
