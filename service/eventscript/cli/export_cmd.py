"""``eventscript export``: a backfill export (JSON lines, docs/backfill.md "Topic exports") of a
program's input topics, written from a trace — the records ``produce`` would publish, keyed and
placed the same way — or read from Kafka topics. It lets a user try ``eventscript backfill
--input`` without a broker, or keep a topic's history in a file."""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from .arguments import seconds


def setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("topology", metavar="TOPOLOGY.yaml")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--trace",
        metavar="FILE",
        help="the records 'eventscript produce' would publish for this trace (no broker needed)",
    )
    source.add_argument(
        "--topic", action="append", metavar="TOPIC", help="read this Kafka topic from its beginning (repeatable)"
    )
    p.add_argument(
        "--program", metavar="NAME", help="with --trace: the program whose inputs receive it (default: the first)"
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE.jsonl", help="the export to write (JSON lines)")
    p.add_argument(
        "--bootstrap-servers", metavar="HOST:PORT", help="with --topic: override the topology's Kafka address"
    )
    p.add_argument(
        "--idle",
        type=seconds,
        default=2.0,
        metavar="SECONDS",
        help="with --topic: stop when every partition is at its end and nothing came for this long",
    )


class _FileProducer:
    """Takes what ``produce_trace`` publishes and keeps it as export rows, offsets counted per
    partition from 0 (as on a new topic)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self._next: dict[tuple[str, int], int] = defaultdict(int)

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = 0,
        timestamp: int = 0,
        headers: list[tuple[str, bytes]] | None = None,
        **_: Any,
    ) -> None:
        offset = self._next[(topic, partition)]
        self._next[(topic, partition)] += 1
        self.rows.append((topic, partition, offset, timestamp, key, value, headers or None))

    def poll(self, _timeout: float = 0) -> int:
        return 0

    def flush(self, _timeout: float = 0) -> int:
        return 0


def run(args: argparse.Namespace) -> int:
    try:
        from ..backfill.export import jsonl_line
    except ImportError as exc:
        from .extras import missing_extra

        print(missing_extra(exc, "the export writes the backfill's input and needs its packages"), file=sys.stderr)
        return 2
    from ..topology.config import TopologyError
    from .topology_args import load_with_address, program_or_first
    from .trace_file import read_trace_or_report

    out = Path(args.output)
    if out.suffix.lower() not in (".jsonl", ".json", ".ndjson"):
        print(f"error: {out}: write the export as JSON lines, FILE.jsonl", file=sys.stderr)
        return 2
    try:
        topo = load_with_address(args.topology, args.bootstrap_servers)
        cfg = program_or_first(topo, args.program)
    except TopologyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    items = read_trace_or_report(args.trace) if args.trace else None
    if args.trace and items is None:
        return 2
    try:
        rows = _from_trace(topo, cfg, items) if items is not None else _from_topics(topo, args.topic, args.idle)
    except TopologyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if rows is None:
        return 2
    try:
        with out.open("wb") as f:
            for row in rows:
                f.write(jsonl_line(row))
    except OSError as exc:
        print(f"{out}: error: cannot write the export: {exc.strerror or exc}", file=sys.stderr)
        return 1
    ticks = sum(1 for row in rows if row[6] and any(name == "es-tick" for name, _ in row[6]))
    print(
        f"wrote {len(rows)} records to {out}"
        + (f" ({len(rows) - ticks} events, {ticks} ticks: the trace's timestamps)" if ticks else ""),
        file=sys.stderr,
    )
    return 0


def _from_trace(topo: Any, cfg: Any, items: list[Any]) -> list[tuple[Any, ...]]:
    from ..kafka.supervisor import compile_programs
    from ..kafka.tools import produce_trace

    program = compile_programs(topo, [cfg])[cfg.name]
    spec = topo.topics.get(cfg.inputs[0].topic)
    partitions = spec.partitions if spec is not None else 1
    producer = _FileProducer()
    produce_trace(topo.kafka, cfg, program, items, partitions, producer=producer)
    return producer.rows


def _from_topics(topo: Any, topics: list[str], idle: float) -> list[tuple[Any, ...]] | None:
    from confluent_kafka import KafkaException

    from ..kafka.tools import ProduceError, read_topic

    rows: list[tuple[Any, ...]] = []
    try:
        for topic in topics:
            for m in read_topic(topo.kafka, topic, idle=idle, timeout=3600):
                rows.append(
                    (
                        m.topic(),
                        m.partition(),
                        m.offset(),
                        m.timestamp()[1],
                        m.key(),
                        m.value(),
                        list(m.headers() or []) or None,
                    )
                )
    except ProduceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    except KafkaException as exc:
        print(
            f"error: cannot read from Kafka at {topo.kafka.bootstrap_servers} ({exc}); check the address "
            f"(--bootstrap-servers) and that the broker is running",
            file=sys.stderr,
        )
        return None
    return rows
