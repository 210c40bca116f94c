"""What a command imports: only what it runs. The embedding API is loaded on first use
(eventscript/__init__.py): importing any submodule loaded the compiler and the engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import eventscript

SERVICE = str(Path(eventscript.__file__).resolve().parent.parent)


def test_importing_a_submodule_does_not_load_the_embedding_api() -> None:
    code = "import sys, eventscript.task.task; print('eventscript.api' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": SERVICE}
    ).stdout
    assert out.strip() == "False"


def test_the_embedding_api_is_still_the_package_s() -> None:
    from eventscript import Engine, SimulatedTimeProvider, compile_program  # (loaded on first use)

    assert (compile_program.__module__, Engine.__name__, SimulatedTimeProvider.__name__) == (
        "eventscript.api",
        "Engine",
        "SimulatedTimeProvider",
    )
    assert set(eventscript.__all__) <= set(dir(eventscript))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        eventscript.no_such_name  # noqa: B018
