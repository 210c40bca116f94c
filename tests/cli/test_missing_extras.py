"""After ``make run`` (the package with its ``broker`` extra only), the backfill guide's first
commands say which extra to install: ``eventscript export`` ended in ``ModuleNotFoundError:
No module named 'pyarrow'`` with a traceback. The missing packages are simulated by modules that
fail to import, placed first on the path of the command's process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

CLI = [sys.executable, "-m", "eventscript.cli.main"]


@pytest.fixture
def without_backfill_packages(tmp_path: Path) -> dict[str, str]:
    """An environment in which pyarrow and pyspark cannot be imported."""
    blocked = tmp_path / "blocked"
    for name in ("pyarrow", "pyspark"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{name}'\")\n")
    path = os.pathsep.join(filter(None, [str(blocked), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["export", "topology.yaml", "--trace", "sample.trace", "-o", "trades.jsonl"], "the export writes"),
        (
            ["backfill", "topology.yaml", "--program", "filter", "--input", "trades.jsonl", "--output", "f.jsonl"],
            "the backfill needs PySpark",
        ),
    ],
)
def test_a_command_of_the_backfill_extra_says_how_to_install_it(
    tmp_path: Path, without_backfill_packages: dict[str, str], command: list[str], says: str
) -> None:
    work = tmp_path / "big-trades"
    shutil.copytree(ROOT / "topologies" / "big-trades", work)
    (work / "trades.jsonl").write_text("")
    done = subprocess.run(
        [*CLI, *command], cwd=work, env=without_backfill_packages, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {says}"), done.stderr
    assert "pip install 'eventscript[backfill]'" in lines[0] and ".venv/bin/pip install -e '.[backfill]'" in lines[0]
