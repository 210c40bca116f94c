"""/healthz, /readyz and /metrics of a running worker."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kafka_helpers import Broker, free_port, program_topology, serve_in_thread, wait_for

PROGRAM = "in {string k;} A group(A.k)\nout {string k;} B\n( A(a) { !>B(a); } )*\n"


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except urllib.error.URLError:
        return 0, ""  # not listening (yet)


@pytest.mark.kafka
def test_health_readiness_and_metrics(broker: Broker, tmp_path: Path) -> None:
    name, path = program_topology(broker, tmp_path, PROGRAM, "health", "A", partitions=2)
    port = free_port()
    runner, t = serve_in_thread(path, port)
    try:
        wait_for(lambda: _get(port, "/healthz")[0] == 200, 20, what="/healthz")
        wait_for(lambda: _get(port, "/readyz")[0] == 200, 60, what="/readyz")
        code, text = _get(port, "/metrics")
        assert code == 200 and "eventscript_tasks" in text and "eventscript_commit_seconds" in text
        assert f'eventscript_ready{{program="{name}"}} 1.0' in text
        assert f'eventscript_records_total{{kind="consumed",program="{name}"}} 0.0' in text
        assert _get(port, "/nope")[0] == 404
    finally:
        runner.stop()
        t.join(60)
    assert not t.is_alive()
    time.sleep(0.2)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)


@pytest.mark.kafka
def test_readyz_lists_the_idle_source_partitions(broker: Broker, tmp_path: Path) -> None:
    """A record-clock program with progress markers whose source partitions are read to their end
    (nothing written): they hold no record time back, and /readyz and the metrics say so."""
    name, path = program_topology(
        broker, tmp_path, PROGRAM, "idle", "A", partitions=2, settings={"clock": "record"}, event_time_markers=True
    )
    port = free_port()
    runner, t = serve_in_thread(path, port)
    idle = f"{name}-in:0, {name}-in:1"
    try:
        wait_for(lambda: idle in _get(port, "/readyz")[1], 60, what="the idle partitions in /readyz")
        code, text = _get(port, "/readyz")
        assert code == 200 and text.startswith("ready\n") and f"{name}: ready; idle source partitions" in text, text
        assert f'eventscript_idle_source_partitions{{program="{name}"}} 2.0' in _get(port, "/metrics")[1]
    finally:
        runner.stop()
        t.join(60)
