"""A playground server in a thread for the tests (port chosen by the system), stopped after."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventscript.playground.limits import Limits
from eventscript.playground.server import Config, make_server

BIG_TRADES = Path(__file__).resolve().parents[2] / "topologies" / "big-trades"

#: Where ``nested_topology`` puts big-trades' programs, below the topology's folder.
NESTED_SOURCES = {"filter.es": "stages/filter.es", "three_big_trades.es": "stages/grouped/three_big_trades.es"}


@pytest.fixture
def playground(tmp_path: Path) -> Iterator[tuple[str, Config]]:
    """The base URL of a running playground, and its configuration (cases go to tmp_path)."""
    config = Config(Limits(), tmp_path / "cases")
    server = make_server(config, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", config
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def nested_topology(tmp_path: Path) -> Path:
    """The shipped big-trades topology with its programs in subfolders (``NESTED_SOURCES``), its
    ``source:`` lines saying so; returns its topology.yaml."""
    folder = tmp_path / "nested"
    shutil.copytree(BIG_TRADES, folder)
    text = (folder / "topology.yaml").read_text()
    for flat, nested in NESTED_SOURCES.items():
        (folder / nested).parent.mkdir(parents=True, exist_ok=True)
        (folder / flat).rename(folder / nested)
        assert f"source: {flat}\n" in text
        text = text.replace(f"source: {flat}\n", f"source: {nested}\n")
    (folder / "topology.yaml").write_text(text)
    return folder / "topology.yaml"
