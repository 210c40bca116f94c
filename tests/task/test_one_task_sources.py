"""A program on one task that reads several source topics merges them in record-time order, as
the same program on several tasks does (forwarding ahead) and as ``eventscript test`` does: a
record of one source waits until every other source has given what comes before it, or is read
to its end (``PartitionGroup.order_sources``). Before, one task took its sources' records as
they were fetched, so a source fetched ahead of another put its later records first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.model import load_graph

from .pipeline_log import PipelineRun

#: 2026-01-01T08:00:00Z (ms).
T0 = 1_767_254_400_000

SEEN = """
in {string k;} A group(A.k), {string k;} B group(B.k)
out {string k; string what;} Seen

( A() { !>Seen({k: group[0], what: "A"}); }
| B() { !>Seen({k: group[0], what: "B"}); }
)*
"""

#: A and B of one key in turns, ten seconds apart.
TRACE = """[2026-01-01 08:00:00]
A({k: "x"})
[2026-01-01 08:00:10]
B({k: "x"})
[2026-01-01 08:00:20]
A({k: "x"})
[2026-01-01 08:00:30]
B({k: "x"})
"""


def one_task_topology(tmp: Path) -> Path:
    """Program "seen" on one task, reading source topics "a" and "b" (one partition each)."""
    (tmp / "seen.es").write_text(SEEN)
    doc = {
        "application": "sources",
        "programs": [
            {
                "name": "seen",
                "source": "seen.es",
                "clock": "record",
                "inputs": [{"topic": "a", "event": "A"}, {"topic": "b", "event": "B"}],
                "outputs": {"default": "seen"},
                "errors": "errors",
            }
        ],
        "topics": {
            "a": {"partitions": 1, "external": True, "events": ["A"]},
            "b": {"partitions": 1, "external": True, "events": ["B"]},
            "seen": {"partitions": 1},
        },
    }
    path = tmp / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    (tmp / "sample.trace").write_text(TRACE)
    return path


def seen(lines: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(x["time"], x["value"]["what"]) for x in lines if x["event"] == "Seen"]


def fetch(pipeline: PipelineRun, topic: str) -> None:
    """The one task fetches every record of ``topic`` (to its end) and processes what it may."""
    task, cursors = pipeline.tasks[0]
    part = pipeline.log.partition_list(topic)[0]
    for rec in part[cursors[topic] :]:
        task.add(rec)
    cursors[topic] = len(part)
    task.mark_eof(topic, 0)
    task.process(0)


def test_a_source_fetched_ahead_of_another_waits_for_it(tmp_path: Path) -> None:
    path = one_task_topology(tmp_path)
    want: list[dict[str, Any]] = []
    simulate(load_graph(path), read_trace(str(tmp_path / "sample.trace")), lambda line: want.append(line.to_json()))
    assert seen(want) == [
        ("2026-01-01T08:00:00.000000Z", "A"),
        ("2026-01-01T08:00:10.000000Z", "B"),
        ("2026-01-01T08:00:20.000000Z", "A"),
        ("2026-01-01T08:00:30.000000Z", "B"),
    ]
    pipeline = PipelineRun(load_graph(path).topology, path, tmp_path / "store")
    pipeline.publish(tmp_path / "sample.trace")
    task, _ = pipeline.tasks[0]
    fetch(pipeline, "b")  # every B first: "a" has given nothing yet, so they wait
    assert pipeline.log.topics.get("seen", [[]])[0] == []
    assert task.held_back == len(pipeline.log.partition_list("b")[0])
    fetch(pipeline, "a")
    got = [line for lines in pipeline.results().values() for line in lines]
    assert seen(got) == seen(want)
    assert task.held_back == 0


def test_a_source_read_to_its_end_holds_the_others_back_no_more(tmp_path: Path) -> None:
    path = one_task_topology(tmp_path)
    pipeline = PipelineRun(load_graph(path).topology, path, tmp_path / "store")
    for ts in (T0 + 10_000, T0 + 30_000):  # Bs only: "a" is empty
        pipeline.log.send("b", 0, b'["x"]', b'{"k": "x"}', None, ts, False)
    task, _ = pipeline.tasks[0]
    fetch(pipeline, "b")
    assert task.held_back == 2  # "a" not read to its end yet: more may come before them
    task.mark_eof("a", 0)  # read to its end, nothing in it (idle_timeout_ms 0: idle at once)
    task.process(0)
    got = [line for lines in pipeline.results().values() for line in lines]
    assert seen(got) == [("2026-01-01T08:00:10.000000Z", "B"), ("2026-01-01T08:00:30.000000Z", "B")]
    assert task.held_back == 0
