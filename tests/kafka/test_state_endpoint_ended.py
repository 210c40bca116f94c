"""An ended key and a key's last record through ``GET /state/<program>?key=`` on Apache Kafka
(issue 23): a key whose instance ended answers 200 ``ended`` with when and why — not 404 like a
key never seen — and every key names the input record its instance last took; both hold for a
worker that restored its tasks from the changelog without its local store (a restart on another
machine), and ``eventscript state dump`` reads the same from the changelog.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from kafka_helpers import Broker, wait_for
from test_state_endpoint import PARTITIONS, T0, TOKEN, Running, _get, _send, _setup

from eventscript.cli.main import main
from eventscript.engine.timeutil import format_time
from eventscript.kafka.partitioner import partition_of

#: Each door's instance ends when it closes.
ONCE = """
in {string k; long n;} Opened group(Opened.k), {string k; long n;} Closed group(Closed.k)
out {string k; long n;} Shut
Opened(o) Closed(c) { !>Shut(c); }
"""


@pytest.mark.kafka
def test_an_ended_key_says_when_and_why_before_and_after_a_restore(broker: Broker, tmp_path: Path, capsys) -> None:
    name, topo = _setup(broker, tmp_path, program=ONCE)
    _send(broker, f"{name}-opened", ["front", "back"], 0)
    _send(broker, f"{name}-closed", ["back"], 2_000)
    back_task = partition_of(b"back", PARTITIONS)

    def check(runner) -> None:
        status, back = _get(runner, f"/state/{name}?key=back")
        assert status == 200 and back["status"] == "ended" and back["instance"] is None, back
        assert back["ended"]["at"] == format_time((T0 + 2_000) * 1000) and back["ended"]["why"] == "terminated"
        assert back["last_record"] == {
            "known": True,
            "record": f"{name}-closed:{back_task}:0",
            "time": format_time((T0 + 2_000) * 1000),
        }
        status, front = _get(runner, f"/state/{name}?key=front")
        assert status == 200 and front["status"] == "present" and front["ended"] is None
        assert front["last_record"]["record"] == f"{name}-opened:{partition_of(b'front', PARTITIONS)}:0"
        status, nobody = _get(runner, f"/state/{name}?key=nobody")
        assert status == 404 and nobody["status"] == "absent" and nobody["ended"] is None

    with Running(topo) as runner:
        wait_for(
            lambda: all(_get(runner, f"/state/{name}?key={k}")[0] == 200 for k in ("back", "front")),
            timeout=90,
            what="back's end and front's instance committed (two tasks, each committing on its own)",
        )
        check(runner)
        url = f"http://127.0.0.1:{runner.health.port}"
        assert main(["state", str(topo), "--program", name, "--key", "back", "--url", url, "--token", TOKEN]) == 0
        text = capsys.readouterr().out
        assert f"ended at {format_time((T0 + 2_000) * 1000)} (terminated" in text
        assert f"last record taken: {name}-closed:{back_task}:0" in text

    shutil.rmtree(tmp_path / "state")  # the next worker restores every task from the changelog
    with Running(topo) as runner:
        wait_for(
            lambda: all(_get(runner, f"/state/{name}?key={k}")[0] == 200 for k in ("back", "front")),
            timeout=90,
            what="both tasks restored",
        )
        check(runner)

    out = tmp_path / "dump.jsonl"
    assert main(["state", "dump", str(topo), "--program", name, "--output", str(out)]) == 0
    rows = {tuple(r["key"]): r for r in map(orjson.loads, out.read_text().splitlines())}
    assert rows[("back",)]["status"] == "ended" and rows[("back",)]["ended"]["why"] == "terminated"
    assert rows[("back",)]["last_record"]["record"] == f"{name}-closed:{back_task}:0"
    assert rows[("front",)]["status"] == "present" and rows[("front",)]["last_record"]["known"] is True
