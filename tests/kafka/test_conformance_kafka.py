"""Every single-program conformance case, run through Kafka with ``clock: record``, gives the
same events as the tester (issue: the Kafka worker, "Done when").

Each case's trace is published with ``produce`` (events keyed by their group key, plus ticks
that advance record time at every timestamp), the program runs on a one-partition topic, and the
output and error topics are compared with ``expected.jsonl``: the output events in order, and the
``$error`` events in order (they go to a different topic, so only their relative order is kept).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import Broker, read_many, run_in_thread, topology, unique

from eventscript.kafka.config import load_topology
from eventscript.kafka.supervisor import compile_programs
from eventscript.kafka.tools import produce_trace, record_to_json
from eventscript.tester.expect import compare
from eventscript.tester.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT.parent / "shared" / "conformance" / "cases"
SINGLE = sorted(p.parent.name for p in CASES.glob("*/program.es")) if CASES.exists() else []
BATCH = 14  # programs run side by side in one worker process


def _compare(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> str | None:
    """The tester's own comparison (eventscript test --expect), as one message or None."""
    return "\n".join(compare(want, got)) or None


@pytest.mark.kafka
@pytest.mark.skipif(not SINGLE, reason="../shared/conformance is not beside the checkout")
@pytest.mark.parametrize(
    "batch", [SINGLE[i : i + BATCH] for i in range(0, len(SINGLE), BATCH)], ids=lambda b: f"{b[0]}..{b[-1]}"
)
def test_conformance_cases_through_kafka(broker: Broker, tmp_path: Path, batch: list[str]) -> None:
    programs = []
    topics = {}
    names = {}
    for case in batch:
        n = unique("c")
        names[case] = n
        programs.append(
            {
                "name": n,
                "source": str(CASES / case / "program.es"),
                "inputs": [{"topic": f"{n}-in", "event_from": {"header": "es-event"}}],
                "outputs": {"default": f"{n}-out"},
                "errors": f"{n}-err",
                "clock": "record",
            }
        )
        topics[f"{n}-in"] = {"partitions": 1}
    path = topology(broker, tmp_path, programs, topics)
    topo = load_topology(path)
    compiled = compile_programs(topo, topo.programs)
    from eventscript.kafka.admin import Admin

    Admin(topo).prepare(topo.programs)
    for case in batch:
        cfg = topo.program(names[case])
        produce_trace(topo.kafka, cfg, compiled[cfg.name], read_trace(CASES / case / "input.trace"), 1)
    assert run_in_thread(path, until_idle=1.5) == 0
    failures = []
    records = read_many(broker, [t for n in names.values() for t in (f"{n}-out", f"{n}-err")])
    for case in batch:
        n = names[case]
        want = [json.loads(line) for line in (CASES / case / "expected.jsonl").read_text().splitlines() if line.strip()]
        outputs = [record_to_json(m) for m in records[f"{n}-out"]]
        errors = [record_to_json(m) for m in records[f"{n}-err"]]
        problem = _compare([w for w in want if w["event"] != "$error"], outputs) or _compare(
            [w for w in want if w["event"] == "$error"], errors
        )
        if problem:
            failures.append(f"{case}: {problem}")
    assert not failures, "\n".join(failures)
