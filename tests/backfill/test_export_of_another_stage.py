"""A backfill over an export that holds none of the program's input topics: the export of the first
stage's input given to the second stage read nothing, wrote "wrote 0 records" and exited 0. The
plan, made before Spark starts, now says what the export holds and what the program reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventscript.cli.main import main

BIG_TRADES = Path(__file__).resolve().parents[2] / "topologies" / "big-trades" / "topology.yaml"
TRADE = '{"topic":"trades","partition":0,"offset":0,"timestamp":0,"key":null,"value":"{}","headers":null}\n'


def _backfill(export: Path, tmp_path: Path) -> int:
    args = ["backfill", str(BIG_TRADES), "--program", "three-big-trades", "--input", str(export)]
    return main([*args, "--output", str(tmp_path / "out.jsonl"), "--no-ui"])


def test_an_export_of_another_stages_input_names_the_stage_that_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "trades.jsonl"
    export.write_text(TRADE, encoding="utf-8")
    assert _backfill(export, tmp_path) == 2
    err = capsys.readouterr().err
    assert "the export holds records of topic trades only, and program three-big-trades reads big-trades" in err
    assert "--topic big-trades" in err and "--program filter" in err
    assert not (tmp_path / "out.jsonl").exists()


def test_an_empty_export_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = tmp_path / "empty.jsonl"
    export.write_text("", encoding="utf-8")
    assert _backfill(export, tmp_path) == 2
    assert "the export holds no records; program three-big-trades reads big-trades" in capsys.readouterr().err
