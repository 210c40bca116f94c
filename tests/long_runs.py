"""Which shipped topologies the slowest per-topology tests run on in ``make test``, and how to run
them on every one (``ALL_TOPOLOGIES=1``, as ``make test-all-topologies`` does).

Why a subset: ``make test`` must stay under 30 minutes on two cores, and the per-topology runs
that start a broker or kill workers take 15–30 s each; every topology still runs in the faster
tests (the simulated run, the in-process kill harness, the Apache Kafka run without faults). The
subset keeps one of each shape: the README's pipeline (``sensors``: stages of their own
partition counts), a stage that re-keys (``sector-divergence``), a single program
(``visitor-escort``), and for the faulted runs both guarantees.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

#: Every shipped topology, not only the subset (``ALL_TOPOLOGIES=1``).
ALL = os.environ.get("ALL_TOPOLOGIES", "") not in ("", "0")


def chosen(paths: Iterable[Path], names: Iterable[str]) -> list[Path]:
    """``paths`` (topology files) whose folder is one of ``names``, or all of them with ``ALL``;
    a name that is no shipped topology's is an error (a renamed folder must not empty the run)."""
    paths = list(paths)
    wanted = set(names)
    unknown = wanted - {p.parent.name for p in paths}
    assert not unknown, f"no shipped topology named {sorted(unknown)}"
    return paths if ALL else [p for p in paths if p.parent.name in wanted]
