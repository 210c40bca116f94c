"""Credentials from files mounted from Secrets (issue 25, item 9): the topology's
kafka.security.sasl.password_file is read when a client is created (an environment variable never
changes in a running pod; a mounted Secret's files do), and the chart mounts Secrets for the workers
and the backfill (secretMounts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from test_chart import BACKFILL_VALUES, _backfill_container, one, render

from eventscript.kafka import clients
from eventscript.kafka.config import KafkaConfig, TopologyError

VALUES = Path(__file__).parent / "values" / "secret-files.yaml"


def _sasl(**fields: str) -> KafkaConfig:
    return KafkaConfig(
        security={"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "u", **fields}}
    )


def test_the_password_is_read_from_its_file_at_each_client(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("first\n")  # kubectl create secret --from-file keeps the newline of the file
    kafka = _sasl(password_file=str(secret))
    assert clients.common(kafka)["sasl.password"] == "first"
    secret.write_text("rotated")  # the kubelet updates a mounted Secret's files in place
    assert clients.common(kafka)["sasl.password"] == "rotated"


def test_a_missing_password_file_says_which_setting_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(
        TopologyError,
        match=r"kafka\.security\.sasl\.password_file: cannot read .*/nope "
        r"\(No such file or directory\): mount the Secret there",
    ):
        clients.common(_sasl(password_file=str(tmp_path / "nope")))


def test_password_and_password_file_are_exclusive() -> None:
    with pytest.raises(ValidationError, match="give 'password' or 'password_file', not both"):
        _sasl(password="x", password_file="/p")


def test_the_chart_mounts_the_secrets_for_workers_and_backfill() -> None:
    docs = render(VALUES)
    wanted = yaml.safe_load(VALUES.read_text())["secretMounts"]
    pod = one(docs, "StatefulSet")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m for m in pod["containers"][0]["volumeMounts"]}
    for want in wanted:
        (name,) = [n for n, v in volumes.items() if v.get("secret", {}).get("secretName") == want["secretName"]]
        assert mounts[name]["mountPath"] == want["mountPath"] and mounts[name]["readOnly"] is True
        assert "subPath" not in mounts[name]  # a subPath mount is never updated when the Secret rotates
    # No credential in the environment: the topology reads the mounted files.
    env = {e["name"] for e in pod["containers"][0]["env"]}
    assert not {"KAFKA_PASSWORD", "KAFKA_USERNAME"} & env
    topology = yaml.safe_load(one(docs, "ConfigMap")["data"]["topology.yaml"])
    sasl = topology["kafka"]["security"]["sasl"]
    assert any(sasl["password_file"].startswith(w["mountPath"] + "/") for w in wanted)
    # The backfill's pods get the same files.
    backfill = render_both()
    job_pod = one(backfill, "Job")["spec"]["template"]["spec"]
    job_mounts = {m["mountPath"] for m in _backfill_container(job_pod)["volumeMounts"]}
    assert {w["mountPath"] for w in wanted} <= job_mounts


def render_both() -> list[dict[str, Any]]:
    """The secret-files values with the backfill values on top."""
    from test_chart import helm
    from tools import CHART

    proc = helm("template", "demo", str(CHART), "--namespace", "streams", "-f", str(VALUES), "-f", str(BACKFILL_VALUES))
    return [d for d in yaml.safe_load_all(proc.stdout) if d]
