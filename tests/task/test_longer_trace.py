"""The kill harness's longer traces (longer_trace.py) mean what the samples mean: one copy is the
sample itself, and each copy of a keyed topology gives its own copy of the sample's outputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .longer_trace import longer_trace
from .test_event_time import TOPOLOGIES, TOPOLOGY_FILES, shown, simulated


@pytest.mark.parametrize("path", TOPOLOGY_FILES, ids=lambda p: p.parent.name)
def test_one_copy_is_the_sample(path: Path, tmp_path: Path) -> None:
    folder = tmp_path / path.parent.name
    shutil.copytree(path.parent, folder)
    longer_trace(path.parent / "sample.trace", folder / "sample.trace", side_by_side=1, rounds=1, seed=1)
    assert {k: shown(v) for k, v in simulated(folder / path.name).items()} == {
        k: shown(v) for k, v in simulated(path).items()
    }


def test_each_copy_has_keys_and_times_of_its_own(tmp_path: Path) -> None:
    """fridge-alerts (one instance per fridge): 2 x 3 copies, 6 times the sample's outputs, on
    6 times its keys; big-trades' times in its values move with their copy, 9 hours a round."""
    path = TOPOLOGIES / "fridge-alerts" / "topology.yaml"
    folder = tmp_path / "fridge-alerts"
    shutil.copytree(path.parent, folder)
    longer_trace(path.parent / "sample.trace", folder / "sample.trace", side_by_side=2, rounds=3, seed=5)
    sample, longer = simulated(path), simulated(folder / path.name)
    assert len(longer) == 6 * len(sample)
    assert sum(map(len, longer.values())) == 6 * sum(map(len, sample.values()))
    trades = TOPOLOGIES / "big-trades" / "sample.trace"
    longer_trace(trades, tmp_path / "trades.trace", side_by_side=1, rounds=2, seed=5)
    text = (tmp_path / "trades.trace").read_text()
    # (the sample spans 5 hours: a round lasts 1.5 times that, rounded down to hours, and 2 more)
    first_of_copy_1 = '[2026-01-01 09:00:00.000000]\nTrade({traderID: "T1-c1", company: "IBM-c1"'
    assert first_of_copy_1 in text and 'when: "2026-01-01T09:00:00.000000Z"' in text
