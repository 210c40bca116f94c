"""``backfill --time-order``: a backfill's output file rewritten in record-time order.

Key-split and key-parallel mode write key group after key group: each key's records in the
worker's order, but not in time order across keys (docs/backfill.md). A reader that wants the
order a worker's topic has — by record time — asks for it here. The sort is stable, so records of
one time keep the order the backfill gave them, and each key's records stay in the worker's
order. The whole output is held in memory while it is sorted.
"""

from __future__ import annotations

import os
from pathlib import Path


def sort_output_by_time(path: Path) -> int:
    """Rewrite ``path`` (JSON lines: by ``time``; Parquet: by ``timestamp``) in time order, through
    a file beside it renamed over it; the number of records."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.sorting")
    if path.suffix.lower() == ".parquet":
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        table = table.take(pc.sort_indices(table, sort_keys=[("timestamp", "ascending")]))
        pq.write_table(table, tmp)
        count = table.num_rows
    else:
        import orjson

        from ..engine.timeutil import parse_time

        lines = path.read_bytes().splitlines(keepends=True)
        lines.sort(key=lambda line: parse_time(orjson.loads(line)["time"]))  # list.sort is stable
        tmp.write_bytes(b"".join(lines))
        count = len(lines)
    tmp.replace(path)
    return count
