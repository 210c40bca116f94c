"""A playground server in a thread for the tests (port chosen by the system), stopped after."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventscript.playground.limits import Limits
from eventscript.playground.server import Config, make_server


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
