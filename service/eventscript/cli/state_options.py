"""The options of ``state`` and ``reset`` (``state_cmds`` runs them), apart from what runs them so
that building the parser (``eventscript --help``, any command) imports no HTTP client."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

#: The environment variable holding the bearer token of the state endpoint (else --token, else
#: the topology's state_query.token).
TOKEN_ENV = "EVENTSCRIPT_STATE_TOKEN"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--program", metavar="NAME", help="the program (default: the topology's only program)")
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="override the topology's Kafka address")
    p.add_argument("-v", "--verbose", action="store_true", help="log what is done, and librdkafka's own lines")


def setup_state(p: argparse.ArgumentParser) -> None:
    p.usage = (
        "eventscript state TOPOLOGY.yaml --program P --key K [--json] [--url URL]\n"
        "       eventscript state dump TOPOLOGY.yaml --program P [--output FILE.jsonl|FILE.parquet]"
    )
    p.add_argument(
        "target",
        nargs="+",
        metavar="[dump] TOPOLOGY.yaml",
        help="the topology; 'dump TOPOLOGY.yaml' writes every instance from the changelog",
    )
    _common(p)
    p.add_argument(
        "--key",
        metavar="K",
        help="the group key: its value (front, 42), or a JSON array of its components in the group's "
        "order ('[\"lab\", 3]'); a key that does not fit the program's group is refused. A one-string key "
        "that itself looks like a JSON array is written as a one-element array ('[\"[1, 2]\"]')",
    )
    p.add_argument("--json", action="store_true", help="print the answer as JSON (for tools)")
    p.add_argument(
        "--url", metavar="URL", help="a worker's HTTP address (default: the topology's health host and port)"
    )
    p.add_argument(
        "--token", metavar="TOKEN", help=f"bearer token (default: ${TOKEN_ENV}, else the topology's state_query.token)"
    )
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        type=Path,
        help="dump: write JSON lines (.jsonl) or Parquet (.parquet) here instead of standard output",
    )
    p.add_argument(
        "--spark",
        metavar="MASTER",
        help="dump: on PySpark (local[4], spark://...), one task per changelog "
        "partition, into a Parquet dataset (--output DIR.parquet); for large changelogs",
    )


def setup_reset(p: argparse.ArgumentParser) -> None:
    p.add_argument("topology", metavar="TOPOLOGY.yaml")
    _common(p)
    to = p.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="inputs from their first records (the default)")
    to.add_argument(
        "--to-datetime",
        metavar="T",
        type=_datetime,
        help="inputs from their first records at or after T (ISO-8601; UTC unless it says otherwise)",
    )
    to.add_argument(
        "--to-offsets",
        metavar="TOPIC:PARTITION=OFFSET",
        action="append",
        help="inputs from these offsets (repeatable or comma-separated; partitions not named: earliest)",
    )
    p.add_argument(
        "--local-only",
        action="store_true",
        help="only delete this machine's local state (on the other machines, after a reset)",
    )
    p.add_argument("--dry-run", action="store_true", help="print what would be done, change nothing")
    p.add_argument(
        "--wait",
        metavar="SECONDS",
        type=float,
        default=0.0,
        help="wait up to SECONDS for the consumer group to have no members (workers stopped with "
        "static membership stay members until their session times out); default: refuse at once",
    )


def _datetime(text: str) -> datetime:
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO-8601 date-time such as 2026-01-01T08:00:00Z, got {text!r}"
        ) from None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)
