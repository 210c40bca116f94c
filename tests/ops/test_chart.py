"""The Helm chart, rendered by the real helm: lint --strict, every manifest valid for Kubernetes
1.25 to 1.35 (kubernetes-validate), the schema refusing typos, the alerts selecting the job the
ServiceMonitor produces whatever the names, names short enough for StatefulSet pods, the NOTES
warning about idle replicas. Values files: the defaults and tests/ops/values/*.yaml."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tools import CHART, need

from eventscript.kafka.config import parse_topology

VALUES = sorted((Path(__file__).parent / "values").glob("*.yaml"))
CASES = [None, *VALUES]
IDS = ["defaults", *(p.stem for p in VALUES)]
KUBERNETES = ["1.25", "1.30", "1.35"]
#: Kinds whose schemas come from CRDs (prometheus-operator, KEDA), not from Kubernetes itself.
CUSTOM = {"ServiceMonitor", "PrometheusRule", "ScaledObject"}
TOPOLOGY_ENV = {"KAFKA_BOOTSTRAP_SERVERS": "k:9092", "EVENTSCRIPT_STATE_DIR": "/tmp/x",
                "KAFKA_USERNAME": "u", "KAFKA_PASSWORD": "p"}


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([need("helm"), *args], capture_output=True, text=True, check=check)


def render(values: Path | None = None, *sets: str, release: str = "demo") -> list[dict[str, Any]]:
    args = ["template", release, str(CHART), "--namespace", "streams"]
    if values is not None:
        args += ["-f", str(values)]
    for s in sets:
        args += ["--set", s]
    proc = helm(*args, check=False)
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind]
    return doc


@pytest.mark.parametrize("values", CASES, ids=IDS)
def test_helm_lint_strict(values: Path | None) -> None:
    args = ["lint", "--strict", str(CHART)] + (["-f", str(values)] if values else [])
    proc = helm(*args, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("values", CASES, ids=IDS)
def test_manifests_validate(values: Path | None) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate")
    docs = render(values)
    assert {"StatefulSet", "Service", "ConfigMap", "ServiceAccount"} <= {d["kind"] for d in docs}
    for doc in docs:
        if doc["kind"] in CUSTOM:
            assert doc["apiVersion"] in {"monitoring.coreos.com/v1", "keda.sh/v1alpha1"} and doc["spec"]
            continue
        for version in KUBERNETES:
            kubernetes_validate.validate(doc, version, strict=True)
        for name in [doc["metadata"]["name"]]:
            assert len(name) <= 63
    # The topology the workers get parses with the worker's own parser.
    cm = one(docs, "ConfigMap")
    parse_topology(yaml.safe_load(cm["data"]["topology.yaml"]), "configmap", Path("/etc/eventscript"),
                   env=TOPOLOGY_ENV)


def test_sasl_ssl_takes_every_secret_from_existing_secrets() -> None:
    docs = render(CHART.parents[1] / "tests" / "ops" / "values" / "sasl-ssl.yaml")
    pod = one(docs, "StatefulSet")["spec"]["template"]["spec"]
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env["KAFKA_BOOTSTRAP_SERVERS"]["valueFrom"]["secretKeyRef"] == {"name": "kafka-connection",
                                                                           "key": "bootstrap"}
    assert env["KAFKA_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "kafka-user"
    assert "kafka-ca" in {v["name"] for v in pod["volumes"]}
    topology = yaml.safe_load(one(docs, "ConfigMap")["data"]["topology.yaml"])
    assert topology["kafka"]["security"]["protocol"] == "SASL_SSL"
    assert topology["create_topics"] is False
    sa = one(docs, "ServiceAccount")
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::")
    assert pod["serviceAccountName"] == sa["metadata"]["name"]
    # The ConfigMap holds a reference to the password, never the password.
    assert topology["kafka"]["security"]["sasl"]["password"] == "${KAFKA_PASSWORD}"


@pytest.mark.parametrize("typo", ["autoscaling.enable=true", "serviceAccount.creat=true", "replicaCount=-1",
                                  "logging.format=xml", "persistance.enabled=false"])
def test_schema_refuses_typos(typo: str) -> None:
    proc = helm("template", "demo", str(CHART), "--set", typo, check=False)
    assert proc.returncode != 0 and "schema" in proc.stderr, proc.stderr


def _job_of(docs: list[dict[str, Any]]) -> str:
    """The job label prometheus-operator gives the ServiceMonitor's targets: the jobLabel's value
    on the Service when set, else the Service's name."""
    sm = one(docs, "ServiceMonitor")
    svc = one(docs, "Service")
    label = sm["spec"].get("jobLabel")
    return svc["metadata"]["labels"][label] if label else svc["metadata"]["name"]


@pytest.mark.parametrize("sets", [(), ("nameOverride=streams",), ("fullnameOverride=sensors-prod",)],
                         ids=["defaults", "nameOverride", "fullnameOverride"])
def test_alerts_select_the_servicemonitors_job(sets: tuple[str, ...], tmp_path: Path) -> None:
    docs = render(None, "serviceMonitor.enabled=true", "prometheusRule.enabled=true", *sets)
    job = _job_of(docs)
    rule = one(docs, "PrometheusRule")
    selector = f'job="{job}", namespace="streams"'
    exprs = [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert all("job=" not in e or selector in e for e in exprs), (selector, exprs)
    assert all('job="eventscript"' not in e for e in exprs if job != "eventscript")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    promtool = need("promtool")
    proc = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_runbook_urls_get_the_base_url() -> None:
    docs = render(None, "prometheusRule.enabled=true", "prometheusRule.runbookBaseUrl=https://h.example/r/")
    alerts = [r for g in one(docs, "PrometheusRule")["spec"]["groups"] for r in g["rules"] if "alert" in r]
    assert alerts and all(a["annotations"]["runbook_url"].startswith("https://h.example/r/docs/operations.md#")
                          for a in alerts)


def test_long_release_names_keep_pod_names_within_limits() -> None:
    release = "a-long-release-name-for-the-sensor-pipeline-plant-7"  # helm allows 53 characters
    for docs in (render(None, release=release), render(None, "fullnameOverride=" + "x" * 70)):
        name = one(docs, "StatefulSet")["metadata"]["name"]
        # controller-revision-hash=<name>-<10 characters> is a label value (63 at most).
        assert len(name) + 1 + 10 <= 63, name
        assert len(f"{name}-99") <= 63
        assert not name.endswith("-")


def test_notes_warn_when_replicas_exceed_partitions() -> None:
    def notes(*sets: str) -> str:
        args = ["install", "demo", str(CHART), "--dry-run=client", "--namespace", "streams"]
        for s in sets:
            args += ["--set", s]
        return helm(*args).stdout.split("NOTES:", 1)[1]

    assert "WARNING" not in notes()
    warned = notes("replicaCount=5")
    assert "WARNING: 5 replicas but no program reads more than 3 input partitions" in warned
    assert "WARNING" in notes("autoscaling.enabled=true", "autoscaling.maxReplicas=4")


def test_autoscaling_leaves_replicas_to_the_autoscaler() -> None:
    docs = render(CHART.parents[1] / "tests" / "ops" / "values" / "autoscaling-monitoring.yaml")
    assert "replicas" not in one(docs, "StatefulSet")["spec"]
    hpa = one(docs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == one(docs, "StatefulSet")["metadata"]["name"]
    policy = one(docs, "NetworkPolicy")
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]


def test_keda_scales_on_each_programs_consumer_group() -> None:
    docs = render(CHART.parents[1] / "tests" / "ops" / "values" / "keda.yaml")
    assert not [d for d in docs if d["kind"] == "HorizontalPodAutoscaler"]
    so = one(docs, "ScaledObject")
    groups = [t["metadata"]["consumerGroup"] for t in so["spec"]["triggers"]]
    assert groups == ["sensors.overheat", "sensors.site-alarm"]
    assert all(t["authenticationRef"] == {"name": "kafka-auth"} for t in so["spec"]["triggers"])
    assert so["spec"]["triggers"][0]["metadata"]["lagThreshold"] == "5000"
