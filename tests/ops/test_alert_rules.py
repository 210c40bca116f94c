"""The alert rules (observability/prometheus/rules.yaml, the chart's files/prometheus-rules.yaml):
promtool accepts them, every alert has a firing and a silent unit test in rules_test.yaml and
those pass, and the tests bite (dropping an alert fails them)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tools import CHART, RULES, need

HERE = Path(__file__).resolve().parent
UNIT_TESTS = HERE / "rules_test.yaml"


def _alerts() -> dict[str, dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    return {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}


def test_the_observability_rules_are_the_charts() -> None:
    """One file, two ways in: the chart renders it, plain Prometheus loads the link."""
    assert RULES.resolve() == (CHART / "files" / "prometheus-rules.yaml").resolve()


def test_every_alert_has_a_runbook_and_aggregates_by_release() -> None:
    operations = (RULES.parents[2] / "docs" / "operations.md").read_text(encoding="utf-8").lower()
    for name, rule in _alerts().items():
        url = rule["annotations"].get("runbook_url", "")
        assert url == f"docs/operations.md#{name.lower()}", f"{name}: runbook_url {url!r}"
        assert f"### {name.lower()}" in operations, f"{name}: no '### {name}' section in docs/operations.md"
        expr = " ".join(rule["expr"].split())
        if " by (" in expr:
            assert "by (namespace, job" in expr, f"{name}: aggregate by namespace and job (release) too"


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    cases = yaml.safe_load(UNIT_TESTS.read_text(encoding="utf-8"))["tests"]
    fires: set[str] = set()
    silent: set[str] = set()
    for case in cases:
        for check in case.get("alert_rule_test", []):
            (fires if check.get("exp_alerts") else silent).add(check["alertname"])
    alerts = set(_alerts())
    assert alerts - fires == set(), "alerts without a test in which they fire"
    assert alerts - silent == set(), "alerts without a test in which they stay silent"


def test_promtool_checks_the_rules() -> None:
    promtool = need("promtool")
    proc = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_promtool_unit_tests_pass() -> None:
    promtool = need("promtool")
    proc = subprocess.run([promtool, "test", "rules", str(UNIT_TESTS)], capture_output=True, text=True, cwd=HERE)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "dropped",
    [
        "EventScriptJobAbsent",
        "EventScriptLagGrowing",
        "EventScriptTimersLate",
        "EventScriptRestoreStuck",
        "EventScriptStateVolumeFilling",
        "EventScriptEventTimeStuck",
        "EventScriptRolloutStuck",
    ],
)
def test_promtool_unit_tests_fail_without_an_alert(tmp_path: Path, dropped: str) -> None:
    """The unit tests can fail: without the alert (as before issue 13), its firing case fails."""
    promtool = need("promtool")
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    for group in rules["groups"]:
        group["rules"] = [r for r in group["rules"] if r.get("alert") != dropped]
    (tmp_path / "observability" / "prometheus").mkdir(parents=True)
    (tmp_path / "observability" / "prometheus" / "rules.yaml").write_text(yaml.safe_dump(rules))
    (tmp_path / "tests" / "ops").mkdir(parents=True)
    shutil.copy(UNIT_TESTS, tmp_path / "tests" / "ops" / "rules_test.yaml")
    proc = subprocess.run(
        [promtool, "test", "rules", "rules_test.yaml"], capture_output=True, text=True, cwd=tmp_path / "tests" / "ops"
    )
    assert proc.returncode != 0
    assert dropped in proc.stdout + proc.stderr
