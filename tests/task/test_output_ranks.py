"""Outputs of one cause past the ninth (issue 21): an ``es-id`` ends in the output's rank among its
cause's outputs, and the merges that take records of one time by their ids must read ranks as
numbers — as text, "/10" comes before "/2", and a stage downstream takes the tenth output of a
record before the second."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from kafka_helpers import stage_entry

from eventscript.backfill.markers import reading_order
from eventscript.task.codec import HEADER_ID, HEADER_SEQ
from eventscript.task.streams import WriterStreams
from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.config import load_topology
from eventscript.topology.model import load_graph

from .pipeline_log import PipelineRun
from .task_helpers import T0, PlainRecord

FAN = """
in {string k;} Tick group(Tick.k)
out {string site; long n;} Part

( Tick() {
    !>Part({site: "s1", n: 1}); !>Part({site: "s2", n: 2}); !>Part({site: "s3", n: 3});
    !>Part({site: "s4", n: 4}); !>Part({site: "s5", n: 5}); !>Part({site: "s6", n: 6});
    !>Part({site: "s7", n: 7}); !>Part({site: "s8", n: 8}); !>Part({site: "s9", n: 9});
    !>Part({site: "s10", n: 10}); !>Part({site: "s11", n: 11}); !>Part({site: "s12", n: 12});
  } )*
"""

RELAY = """
in {string site; long n;} Part group(Part.site)
out {string all; long n;} Seen

( Part(p) { !>Seen({all: "all", n: p.n}); } )*
"""

PAIRS = """
in {string all; long n;} Seen group(Seen.all)
out {long first; long second;} Pair

( Seen(a) Seen(b) { !>Pair({first: a.n, second: b.n}); } )*
"""


def fan_out_topology(tmp: Path) -> Path:
    """fan (twelve outputs per tick, one per site) → relay (grouped by site, 2 tasks, each
    site's output keyed by its site) → pairs (one instance, pairing what it takes in order)."""
    for name, text in (("fan", FAN), ("relay", RELAY), ("pairs", PAIRS)):
        (tmp / f"{name}.es").write_text(text)

    doc = {
        "application": "ranks",
        "programs": [
            stage_entry("fan", "ticks", "Tick", "parts", clock="record"),
            stage_entry("relay", "parts", "Part", "seen", clock="record"),
            stage_entry("pairs", "seen", "Seen", "pairs", clock="record"),
        ],
        "topics": {"ticks": {"partitions": 2}, "parts": {"partitions": 2}, "seen": {"partitions": 1}},
    }
    path = tmp / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_stage_takes_the_outputs_of_one_record_past_the_ninth_in_the_testers_order(seed: int, tmp_path: Path) -> None:
    path = fan_out_topology(tmp_path)
    (tmp_path / "sample.trace").write_text(
        '[2026-01-01 00:00:00]\nTick({k: "a"})\n[2026-01-01 00:00:05]\nTick({k: "b"})\n'
    )
    want: list[dict[str, Any]] = []
    simulate(load_graph(path), read_trace(str(tmp_path / "sample.trace")), lambda line: want.append(line.to_json()))
    pipeline = PipelineRun(load_topology(path), path, tmp_path / "store")
    pipeline.publish(tmp_path / "sample.trace")
    pipeline.run(seed)
    got = [line for lines in pipeline.results().values() for line in lines]
    pairs = [(x["time"], x["value"]) for x in want if x["event"] == "Pair"]
    assert pairs[:2] == [
        ("2026-01-01T00:00:00.000000Z", {"first": 1, "second": 2}),
        ("2026-01-01T00:00:00.000000Z", {"first": 3, "second": 4}),
    ]
    assert [(x["time"], x["value"]) for x in got if x["event"] == "Pair"] == pairs
    assert pipeline.held_back() == 0


def output(rank: int, key: bytes, cause: bytes = b"fan/ticks:0:5") -> PlainRecord:
    headers = [(HEADER_ID, b"%s/%d" % (cause, rank)), (HEADER_SEQ, b"7")]
    return PlainRecord("parts", 0, rank, T0, key, orjson.dumps({"n": rank}), headers)


def test_a_partition_several_tasks_write_takes_ranks_as_numbers() -> None:
    streams = WriterStreams()
    for rank in (10, 2, 11, 1):  # (each key its own queue: the heads tie up to their ids)
        streams.append(output(rank, b"s%d" % rank, cause=b"relay/fan/ticks:0:5/%d" % rank))
    taken = [streams.pop().offset() for _ in range(4)]
    assert taken == [1, 2, 10, 11]


def test_the_backfill_sink_keeps_the_outputs_of_one_record_in_their_order() -> None:
    records = [("parts", None, b"k", b"{}", output(rank, b"k").headers(), T0) for rank in range(1, 13)]
    ordered = list(reading_order(records, {"parts"}))  # type: ignore[arg-type]
    assert [r[4][0][1] for r in ordered] == [b"fan/ticks:0:5/%d" % rank for rank in range(1, 13)]
