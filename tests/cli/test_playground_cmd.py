"""``eventscript playground`` refuses what it cannot open before it listens, saying where: a
topology's ``source:`` naming a missing program is placed at its ``topology.yaml:line:col`` (it was
"cannot read filtr.es", with no place), and a port beyond 65535 is a usage error."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

CLI = [sys.executable, "-m", "eventscript.cli.main"]


def test_a_topology_naming_a_missing_program_is_refused_at_its_source_line(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "topologies" / "big-trades", tmp_path / "bt")
    topology = tmp_path / "bt" / "topology.yaml"
    text = topology.read_text()
    line = text[: text.index("source: filter.es")].count("\n") + 1
    col = text.splitlines()[line - 1].index("filter.es") + 1
    topology.write_text(text.replace("source: filter.es", "source: filtr.es"))
    done = subprocess.run(
        [*CLI, "playground", "bt/topology.yaml", "--port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"eventscript playground: bt/topology.yaml:{line}:{col}: error: cannot read the program bt/filtr.es: "
        "No such file or directory; fix 'source:' (it is relative to the topology file)\n"
    )


def test_a_port_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "playground", "--port", "70000"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "argument --port: a port is 0 to 65535, got 70000" in done.stderr
