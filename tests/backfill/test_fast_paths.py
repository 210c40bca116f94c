"""The backfill's fast paths give what the plain paths give: Parquet ranges read by Arrow (no
row in Python) and outputs encoded by the tasks (``sink.pack``, what the driver appends)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from test_backfill_tasks import export_of, random_trace, topology
from test_key_parallel import scrambled_rows, two_input_topology
from trace_export import write_jsonl_export, write_parquet_export

from eventscript.backfill import export
from eventscript.backfill.export import ExportError
from eventscript.backfill.job import export_plan, packed, run_locally
from eventscript.backfill.plan import OffsetRange
from eventscript.backfill.records import input_batch
from eventscript.backfill.sink import FileSink, output_json, read_parquet_outputs
from eventscript.backfill.source import slice_batches
from eventscript.backfill.stages import run_partition


def row_path(paths: list[str], ranges: list[OffsetRange]) -> pa.Table:
    return pa.Table.from_batches([input_batch(list(export.read_ranges(paths, ranges)))])


@pytest.mark.parametrize("bounds", [(None, None), ("3", "40"), ("2026-01-01T00:01:00Z", None)])
def test_parquet_ranges_read_by_arrow_equal_the_row_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bounds: tuple[str | None, str | None]
) -> None:
    topo = topology(tmp_path, 3)
    path = str(export_of(tmp_path, topo, random_trace(8, events=200), monkeypatch, 3, fmt="parquet"))
    plan = export_plan(topo, topo.programs[0], [path], start=bounds[0], stop=bounds[1], batch_size=17)
    for piece in plan.slices:
        direct = export.range_batches([path], piece.ranges, 17)
        assert direct is not None
        batches = list(direct)
        assert max(b.num_rows for b in batches) <= 17
        assert pa.Table.from_batches(batches).equals(row_path([path], piece.ranges))


def test_parquet_ranges_read_by_arrow_say_what_is_wrong(tmp_path: Path) -> None:
    unordered = write_parquet_export(
        [("t", 0, 5, 1, None, b"{}", None), ("t", 0, 3, 2, None, b"{}", None)], tmp_path / "u.parquet"
    )
    with pytest.raises(ExportError, match="offset 3 comes after offset 5"):
        list(export.range_batches([str(unordered)], [OffsetRange("t", 0, 0, 9)], 100) or [])
    short = write_parquet_export(
        [("t", 0, 0, 1, None, b"{}", None), ("t", 0, 1, 2, None, b"{}", None)], tmp_path / "s.parquet"
    )
    with pytest.raises(ExportError, match=r"t:0: the export ends \(its last record at offset 1\) before the end"):
        list(export.range_batches([str(short)], [OffsetRange("t", 0, 0, 5)], 100) or [])
    assert export.range_batches([str(short)], [OffsetRange("t", 0, 0, 2)], 9) is not None
    assert export.range_batches([str(short).replace("parquet", "jsonl")], [OffsetRange("t", 0, 0, 2)], 9) is None


def of_topic(table: pa.Table, topic: str) -> list[dict[str, object]]:
    return table.filter(pc.equal(table.column("topic"), topic)).to_pylist()


def test_several_parquet_ranges_read_by_arrow_give_the_tasks_the_row_paths_outputs(tmp_path: Path) -> None:
    """Co-partitioned inputs: batches interleaved by their first timestamps instead of rows by
    theirs; each range's records in offset order, then its end marker; the task's merge gives
    the same outputs (late records, ties across topics, small batches)."""
    topo = two_input_topology(tmp_path, 2)
    rows = scrambled_rows(topo.programs[0], 2, 11)
    jsonl = export_plan(topo, topo.programs[0], [str(write_jsonl_export(rows, tmp_path / "e.jsonl"))], batch_size=13)
    path = str(write_parquet_export(rows, tmp_path / "e.parquet"))
    parquet = export_plan(topo, topo.programs[0], [path], batch_size=13)
    for piece in parquet.slices:
        direct = export.range_batches([path], piece.ranges, 13)
        assert direct is not None
        got = pa.Table.from_batches(list(direct))
        want = row_path([path], piece.ranges)
        for r in piece.ranges:
            assert of_topic(got, r.topic) == of_topic(want, r.topic)
        assert got.num_rows == want.num_rows
    assert [output_json(r) for r in run_locally(parquet)] == [output_json(r) for r in run_locally(jsonl)]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_packed_outputs_write_the_same_file_as_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    topo = topology(tmp_path, 2)
    plan = export_plan(
        topo, topo.programs[0], [str(export_of(tmp_path, topo, random_trace(6, events=150), monkeypatch, 2))]
    )
    rows = list(run_locally(plan))
    with FileSink(tmp_path / f"rows.{fmt}") as sink:
        sink.write_all(rows)
        sink.commit()

    class TaskOutputs:
        """What ``job.JobOutputs.packed`` gives, from the tasks run here."""

        def packed(self, pack_format: str):  # type: ignore[no-untyped-def]
            for i, piece in enumerate(plan.slices):
                for batch in packed(
                    run_partition(plan, i, slice_batches(plan, piece)), pack_format, plan.program.repartition_topic
                ):
                    if batch.column("kind")[0].as_py() == "packed":
                        yield batch.column("value")[0].as_py(), batch.column("partition")[0].as_py()

    with FileSink(tmp_path / f"packed.{fmt}") as sink:
        assert sink.write_all(TaskOutputs()) == len(rows) > 150  # type: ignore[arg-type]
        sink.commit()
    if fmt == "jsonl":
        assert (tmp_path / "packed.jsonl").read_bytes() == (tmp_path / "rows.jsonl").read_bytes()
    else:
        assert read_parquet_outputs(tmp_path / "packed.parquet") == read_parquet_outputs(tmp_path / "rows.parquet")
