"""``eventscript state`` and ``eventscript reset`` without a broker or a worker: one clear line
and a non-zero status (the answers themselves are tested in tests/kafka/test_state_*.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_inputs import ECHO, NO_BROKER, TOPOLOGY

from eventscript.cli.main import build_parser, main


@pytest.fixture
def topo(tmp_path: Path) -> Path:
    (tmp_path / "echo.es").write_text(ECHO)
    path = tmp_path / "topology.yaml"
    path.write_text(TOPOLOGY.format(broker=NO_BROKER))
    return path


def test_dump_and_reset_say_cannot_reach_kafka_once(topo: Path) -> None:
    cli = [sys.executable, "-m", "eventscript.cli.main"]
    commands = {"dump": [*cli, "state", "dump", str(topo)], "reset": [*cli, "reset", str(topo), "--dry-run"]}
    procs = {name: subprocess.Popen(cmd, cwd=topo.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, cmd in commands.items()}
    for name, proc in procs.items():
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"{name} did not give up within 60 s")
        lines = err.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, (name, err[:2000])
        assert lines[0].startswith(f"error: cannot reach Kafka at {NO_BROKER}"), (name, lines[0])


def test_asking_without_an_address_or_a_worker(topo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["state", str(topo), "--key", "a"]) == 2  # health.port is 0: nothing to ask
    assert "give a worker's address with --url" in capsys.readouterr().err
    assert main(["state", str(topo), "--key", "a", "--url", "http://127.0.0.1:1"]) == 2
    assert "cannot reach http://127.0.0.1:1" in capsys.readouterr().err
    assert main(["state", "dump", str(topo), str(topo)]) == 2
    assert "give one topology" in capsys.readouterr().err
    assert main(["state", str(topo), "--program", "nope", "--key", "a"]) == 2
    assert "no program named 'nope'" in capsys.readouterr().err


def test_reset_options(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["reset", "t.yaml", "--to-datetime", "2026-01-01T08:00:00"])
    assert args.to_datetime.isoformat() == "2026-01-01T08:00:00+00:00"  # UTC unless it says otherwise
    with pytest.raises(SystemExit):
        build_parser().parse_args(["reset", "t.yaml", "--to-datetime", "yesterday"])
    assert "ISO-8601" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        build_parser().parse_args(["reset", "t.yaml", "--to-earliest", "--to-offsets", "in:0=1"])
