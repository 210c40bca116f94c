"""Every shipped topology passes ``topology check --strict``: the warnings their programs mean (a
grouped program on a fixed set of fridges that never ends an instance, ...) are accepted where
they are by ``// eventscript: allow CODE`` comments, so CI can run ``--strict`` on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventscript.cli.main import main

TOPOLOGIES = sorted((Path(__file__).resolve().parents[2] / "topologies").glob("*/topology.yaml"))


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.parent.name)
def test_a_shipped_topology_passes_topology_check_strict_with_no_finding(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["topology", "check", "--strict", str(path)])
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), out + err
    assert out.startswith(f"{path}: ok: ") and out.count("\n") == 1, out


def test_all_the_shipped_topologies_are_checked() -> None:
    assert len(TOPOLOGIES) >= 8
