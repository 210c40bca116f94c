"""Timers of one deadline in different tasks on Apache Kafka (issue 21): each key of a site times
out 3 s after its tick, the two keys of a site on two tasks of the first program, and the second
program pairs each site's timeouts in the order it takes them. The tester fires timers of one
deadline in the order they were set (the ticks' order in the trace, which the trace turns about);
the worker's timer outputs say what set them (``es-armed``) and the reader takes them so, also
through its repartition topic (the second program on two tasks). tests/task/test_writer_ties.py
runs the same in memory, with kills."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import run_in_thread
from test_event_time_kafka import assert_simulated_with_memory_ids, on_broker, produce

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from task.test_writer_ties import QUIET, pipeline_topology, trace_text  # noqa: E402

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_timers_of_one_deadline_in_two_tasks_reach_the_reader_in_the_order_they_were_set(
    guarantee: str, broker: Any, tmp_path: Path
) -> None:
    path = pipeline_topology(tmp_path, seen_partitions=2, relay=QUIET)
    (tmp_path / "sample.trace").write_text(trace_text("turns"))
    topology = on_broker(path, broker, tmp_path, guarantee)
    produce(topology, path)
    assert run_in_thread(topology, until_idle=6.0, timeout=240) == 0
    assert_simulated_with_memory_ids(broker, topology, path, tmp_path)
