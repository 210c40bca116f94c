"""Conformance traces as topic exports: the records ``eventscript produce`` would publish.

``produce_trace`` (the worker's own trace publisher) runs against a producer that only records
what it is asked to send, giving each record the offset the broker would give it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from eventscript.backfill.export import Row, jsonl_line
from eventscript.kafka import tools
from eventscript.kafka.config import Topology, parse_topology

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT.parent / "shared" / "conformance" / "cases"
SINGLE = sorted(p.parent.name for p in CASES.glob("*/program.es")) if CASES.exists() else []


class RecordingProducer:
    """Stands in for confluent_kafka.Producer: keeps the records, numbers them per partition."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows
        self.next_offset: dict[tuple[str, int], int] = {}

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = 0,
        timestamp: int = 0,
        headers: list[tuple[str, bytes]] | None = None,
        on_delivery: Any = None,
    ) -> None:
        off = self.next_offset.get((topic, partition), 0)
        self.next_offset[(topic, partition)] = off + 1
        self.rows.append((topic, partition, off, timestamp, key, value, list(headers) if headers else None))

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0


def case_topology(case: str, partitions: int = 1, name: str = "prog") -> Topology:
    """A one-program topology for a conformance case, as the worker's conformance test builds it."""
    return parse_topology(
        {
            "programs": [
                {
                    "name": name,
                    "source": str(CASES / case / "program.es"),
                    "inputs": [{"topic": f"{name}-in", "event_from": {"header": "es-event"}}],
                    "outputs": {"default": f"{name}-out"},
                    "errors": f"{name}-err",
                    "clock": "record",
                }
            ],
            "topics": {f"{name}-in": {"partitions": partitions}},
        }
    )


def trace_rows(topo: Topology, trace: Path, monkeypatch: Any, partitions: int = 1) -> list[Row]:
    """The records ``eventscript produce`` publishes for a trace (events and ticks)."""
    from eventscript.kafka.supervisor import compile_programs
    from eventscript.tester.trace import read_trace

    cfg = topo.programs[0]
    program = compile_programs(topo, [cfg])[cfg.name]
    rows: list[Row] = []
    monkeypatch.setattr(tools, "Producer", lambda conf: RecordingProducer(rows))
    tools.produce_trace(topo.kafka, cfg, program, read_trace(trace), partitions)
    return rows


def write_jsonl_export(rows: list[Row], path: Path) -> Path:
    path.write_bytes(b"".join(jsonl_line(r) for r in rows))
    return path


def write_parquet_export(rows: list[Row], path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from eventscript.backfill.records import input_batch

    pq.write_table(pa.Table.from_batches([input_batch(rows)]), str(path))
    return path


def expected_lines(case: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (CASES / case / "expected.jsonl").read_text().splitlines() if line.strip()]
