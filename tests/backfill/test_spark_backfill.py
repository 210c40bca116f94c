"""``eventscript backfill`` end to end on Spark (local mode): exports and Kafka in, files out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_backfill_tasks import PROGRAM, by_key, export_of, random_trace, run_tester
from trace_export import CASES, SINGLE, case_topology, expected_lines

from eventscript.backfill.job import export_plan, run_locally
from eventscript.backfill.sink import output_json, read_parquet_outputs
from eventscript.cli.main import main
from eventscript.kafka.config import Topology

pytestmark = pytest.mark.spark


def topology_file(tmp: Path, partitions: int, bootstrap: str = "localhost:9092") -> Path:
    (tmp / "ticks.es").write_text(PROGRAM)
    path = tmp / "topology.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "kafka": {"bootstrap_servers": bootstrap},
                "programs": [
                    {
                        "name": "ticks",
                        "source": "ticks.es",
                        "inputs": [{"topic": "ticks-in", "event": "Tick"}],
                        "outputs": {"default": "ticks-out"},
                        "errors": "ticks-err",
                    }
                ],
                "topics": {"ticks-in": {"partitions": partitions}},
            }
        )
    )
    return path


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_command_backfills_an_export_like_the_tester_and_the_task_stage(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from eventscript.kafka.config import load_topology

    topo_path = topology_file(tmp_path, 3)
    topo: Topology = load_topology(topo_path)
    trace = random_trace(21, events=400)
    export = export_of(tmp_path, topo, trace, monkeypatch, 3, fmt="parquet")
    out = tmp_path / "out.jsonl"
    assert (
        main(
            [
                "backfill",
                str(topo_path),
                "--input",
                str(export),
                "--output",
                str(out),
                "--master",
                "local[2]",
                "--no-ui",
            ]
        )
        == 0
    )
    got = read_lines(out)
    assert by_key(got) == by_key(run_tester(PROGRAM, trace))
    # Same records, same ids as the worker's task gives them (called here without Spark).
    plan = export_plan(topo, topo.programs[0], [str(export)])
    assert sorted(json.dumps(x, sort_keys=True) for x in got) == sorted(
        json.dumps(output_json(r), sort_keys=True) for r in run_locally(plan)
    )
    err = capsys.readouterr().err
    # 3 partitions on 2 slots: key-split mode, two partitions whole and the third in 2 tasks (docs/backfill.md)
    assert f"4/4 tasks done, {plan.records} records read" in err and f"wrote {len(got)} records" in err

    parquet = tmp_path / "out.parquet"
    assert (
        main(
            [
                "backfill",
                str(topo_path),
                "--input",
                str(export),
                "--output",
                str(parquet),
                "--until",
                "2030-01-01T00:00:00Z",
                "--no-ui",
            ]
        )
        == 0
    )
    rows = read_parquet_outputs(parquet)
    quiet_before = sum(1 for x in got if x["event"] == "Quiet")
    waiting = sum(1 for lines in by_key(got).values() if lines[-1][1] == "Count")  # a timer still pending
    assert waiting > 0
    assert sum(1 for r in rows if r["event"] == "Quiet") == quiet_before + waiting
    assert {r["id"] for r in rows} >= {x["id"] for x in got}


def test_a_failed_backfill_says_why_and_writes_nothing(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trace_export import write_jsonl_export

    topo_path = topology_file(tmp_path, 2)
    rows = [("ticks-in", p, 0, 1_767_225_600_000, b'["x"]', b'{"k": "a", "n": 1}', None) for p in (0, 1)]
    export = write_jsonl_export(rows, tmp_path / "e.jsonl")  # key "a" belongs to one partition only
    out = tmp_path / "out.jsonl"
    assert main(["backfill", str(topo_path), "--input", str(export), "--output", str(out), "--no-ui"]) == 1
    assert "on a partition their group key does not hash to" in capsys.readouterr().err
    assert not out.exists()
    assert (
        main(["backfill", str(topo_path), "--input", str(tmp_path / "missing.jsonl"), "--output", str(out), "--no-ui"])
        == 2
    )
    assert "missing.jsonl: no such export file" in capsys.readouterr().err


@pytest.mark.kafka
@pytest.mark.skipif(not SINGLE, reason="../shared/conformance is not beside the checkout")
def test_kafka_topics_read_to_the_cut(spark: Any, broker: Any, tmp_path: Path) -> None:
    """The conformance case key-debounce published with ``produce`` on 2 partitions, read back
    by the Kafka source (the embedded broker's watermarks are wrong: the cut must not trust them)."""
    from eventscript.kafka.admin import Admin
    from eventscript.kafka.supervisor import compile_programs
    from eventscript.kafka.tools import produce_trace
    from eventscript.tester.trace import read_trace

    case = "key-debounce"
    topo = case_topology(case, partitions=2, name=f"bf{tmp_path.name[-6:].replace('_', '')}")
    topo.kafka.bootstrap_servers = broker.bootstrap
    cfg = topo.programs[0]
    Admin(topo).prepare([cfg])
    produce_trace(topo.kafka, cfg, compile_programs(topo, [cfg])[cfg.name], read_trace(CASES / case / "input.trace"), 2)
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(json.loads(topo.model_dump_json(exclude={"base_dir"}))))
    out = tmp_path / "out.jsonl"
    assert main(["backfill", str(path), "--output", str(out), "--no-ui"]) == 0
    assert by_key(read_lines(out)) == by_key(expected_lines(case))


def test_the_fused_source_gives_the_same_rows_as_map_in_arrow(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eventscript.backfill.job import output_frame
    from eventscript.kafka.config import load_topology

    topo = load_topology(topology_file(tmp_path, 2))
    plan = export_plan(
        topo, topo.programs[0], [str(export_of(tmp_path, topo, random_trace(4, events=60), monkeypatch, 2))]
    )
    fused = [r.asDict(recursive=True) for r in output_frame(spark, plan, fused=True).collect()]
    mapped = [r.asDict(recursive=True) for r in output_frame(spark, plan).collect()]
    assert fused == mapped and len(fused) > 60


def test_outputs_of_every_task_at_once_come_in_task_order_each_computed_once(spark: Any, tmp_path: Path) -> None:
    """More slots than two: one job computes every partition into Spark's cache while the
    iterator reads them in order (job.JobOutputs._rows)."""
    from eventscript.backfill.job import JobOutputs

    log = tmp_path / "runs.log"
    log_path = str(log)

    def logged_partition(batches: Any) -> Any:
        """Notes each run of a partition in the log (a closure: pickled whole to the workers)."""
        import pyarrow as pa

        ids = [i for b in batches for i in b.column(0).to_pylist()]
        if not ids:
            raise ValueError("an empty partition: the test's failing task")
        with open(log_path, "a") as f:
            f.write(f"{ids[0]}\n")
        yield pa.RecordBatch.from_pydict({"first": [ids[0]]})

    frame = spark.range(0, 50, numPartitions=5).mapInArrow(logged_partition, "first long")
    assert [r.first for r in JobOutputs._rows(frame, all_at_once=True)] == [0, 10, 20, 30, 40]
    assert sorted(int(x) for x in log.read_text().split()) == [0, 10, 20, 30, 40]  # once each: read from the cache
    failing = spark.range(0, 1, numPartitions=3).mapInArrow(logged_partition, "first long")
    with pytest.raises(Exception, match="the test's failing task"):
        list(JobOutputs._rows(failing, all_at_once=True))


def test_the_command_in_key_parallel_mode_gives_every_key_the_partition_modes_outputs(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eventscript.kafka.config import load_topology

    topo_path = topology_file(tmp_path, 2)
    topo: Topology = load_topology(topo_path)
    export = export_of(tmp_path, topo, random_trace(12, events=200), monkeypatch, 2, fmt="parquet")
    out = tmp_path / "out.jsonl"
    assert (
        main(["backfill", str(topo_path), "--input", str(export), "--output", str(out), "--key-groups", "3", "--no-ui"])
        == 0
    )
    got = read_lines(out)
    want = [output_json(r) for r in run_locally(export_plan(topo, topo.programs[0], [str(export)]))]
    assert by_key(got) == by_key(want) and len(got) == len(want) > 200
    assert sorted(x["id"] for x in got) == sorted(x["id"] for x in want)
