"""What a worker's process imports: only what running programs on Kafka needs. A module loaded for
nothing costs every worker its memory for good (code objects, and native libraries' pages):
bench/SPEED.md, "The worker's memory"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import eventscript

SERVICE = str(Path(eventscript.__file__).resolve().parent.parent)

#: Modules the worker's steady state does not use: the other hosts (tester, backfill and its
#: Spark, playground), and what only a health port with state queries serves (imported when the
#: runner starts one).
NOT_ON_THE_WORKER_PATH = (
    "eventscript.tester",
    "eventscript.backfill",
    "eventscript.playground",
    "eventscript.kafka.state_endpoint",
    "eventscript.state.query",
    "eventscript.explain",
    "pyspark",
    "pyarrow",
)


def test_the_worker_entry_point_imports_no_other_host_nor_the_state_endpoint() -> None:
    code = (
        "import json, sys\n"
        "from eventscript.kafka.config import parse_topology\n"
        "from eventscript.kafka.supervisor import TopologyRunner\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": SERVICE}
    ).stdout
    loaded = json.loads(out)
    assert "eventscript.kafka.supervisor" in loaded  # (the tree under test was imported)
    unwanted = [m for m in loaded if m.startswith(NOT_ON_THE_WORKER_PATH)]
    assert unwanted == []
