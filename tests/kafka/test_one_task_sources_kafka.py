"""A program on one task reading several source topics, on Apache Kafka (issue 21): radiation
with room-exposure on one task (both its sources on one partition) gives per key the simulated
run's records, with the es-ids of the in-memory run of the same layout. The task merges its two
sources in record-time order, as several tasks do (``PartitionGroup.order_sources``); merging
them as fetched, it took one source's whole fetch before the other's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import run_in_thread

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_event_time_kafka import assert_simulated_with_memory_ids, on_broker, produce  # noqa: E402

from task.test_event_time import TOPOLOGY_FILES  # noqa: E402

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_a_one_task_program_merges_its_sources_in_record_time_order(broker: Any, tmp_path: Path) -> None:
    path = next(p for p in TOPOLOGY_FILES if p.parent.name == "radiation")
    counts = {"radiation-levels": 1, "badge-sightings": 1}
    topology = on_broker(path, broker, tmp_path, "exactly_once", counts=counts)
    produce(topology, path)
    assert run_in_thread(topology, until_idle=6.0, timeout=240) == 0
    assert_simulated_with_memory_ids(broker, topology, path, tmp_path, counts)
