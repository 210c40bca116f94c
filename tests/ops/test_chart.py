"""The Helm chart, rendered by the real helm: lint --strict, every manifest valid for Kubernetes
1.25 to 1.35 (kubernetes-validate), the schema refusing typos, the alerts selecting the job the
ServiceMonitor produces whatever the names, names short enough for StatefulSet pods, the NOTES
warning about idle replicas, the backfill Job and CronJob. Values files: the defaults and
tests/ops/values/*.yaml. Lint and render run with helm 4 (`helm`) and helm 3 (`helm3`), both installed
by scripts/install-helm."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from tools import CHART, ROOT, need

from eventscript.cli.main import build_parser, main
from eventscript.kafka.config import parse_topology

VALUES = sorted((Path(__file__).parent / "values").glob("*.yaml"))
CASES = [None, *VALUES]
IDS = ["defaults", *(p.stem for p in VALUES)]
KUBERNETES = ["1.25", "1.30", "1.35"]
#: Kinds whose schemas come from CRDs (prometheus-operator, KEDA), not from Kubernetes itself.
CUSTOM = {"ServiceMonitor", "PrometheusRule", "ScaledObject"}
TOPOLOGY_ENV = {
    "KAFKA_BOOTSTRAP_SERVERS": "k:9092",
    "EVENTSCRIPT_STATE_DIR": "/tmp/x",
    "KAFKA_USERNAME": "u",
    "KAFKA_PASSWORD": "p",
}


#: The helm binaries the chart must work with: helm 4 and helm 3 (clusters are still deployed with it).
HELMS = ["helm", "helm3"]


def helm(*args: str, check: bool = True, tool: str = "helm") -> subprocess.CompletedProcess[str]:
    return subprocess.run([need(tool), *args], capture_output=True, text=True, check=check)


def render(values: Path | None = None, *sets: str, release: str = "demo", tool: str = "helm") -> list[dict[str, Any]]:
    args = ["template", release, str(CHART), "--namespace", "streams"]
    if values is not None:
        args += ["-f", str(values)]
    for s in sets:
        args += ["--set", s]
    proc = helm(*args, check=False, tool=tool)
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def one(docs: list[dict[str, Any]], kind: str, component: str = "worker") -> dict[str, Any]:
    """The one manifest of ``kind``; for ConfigMaps (the workers' and the backfill's), the component's."""
    found = [d for d in docs if d["kind"] == kind]
    if kind == "ConfigMap":
        found = [d for d in found if d["metadata"]["labels"]["app.kubernetes.io/component"] == component]
    (doc,) = found
    return doc


@pytest.mark.parametrize("tool", HELMS)
@pytest.mark.parametrize("values", CASES, ids=IDS)
def test_helm_lint_strict(values: Path | None, tool: str) -> None:
    args = ["lint", "--strict", str(CHART)] + (["-f", str(values)] if values else [])
    proc = helm(*args, check=False, tool=tool)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("tool", HELMS)
@pytest.mark.parametrize("values", CASES, ids=IDS)
def test_manifests_validate(values: Path | None, tool: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate")
    docs = render(values, tool=tool)
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
    parse_topology(yaml.safe_load(cm["data"]["topology.yaml"]), "configmap", Path("/etc/eventscript"), env=TOPOLOGY_ENV)


def test_sasl_ssl_takes_every_secret_from_existing_secrets() -> None:
    docs = render(CHART.parents[1] / "tests" / "ops" / "values" / "sasl-ssl.yaml")
    pod = one(docs, "StatefulSet")["spec"]["template"]["spec"]
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env["KAFKA_BOOTSTRAP_SERVERS"]["valueFrom"]["secretKeyRef"] == {
        "name": "kafka-connection",
        "key": "bootstrap",
    }
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


@pytest.mark.parametrize(
    "typo",
    [
        "autoscaling.enable=true",
        "serviceAccount.creat=true",
        "replicaCount=-1",
        "logging.format=xml",
        "persistance.enabled=false",
        "backfill.job.enable=true",
        "backfill.output=out.csv",
        "backfill.sparkConf.driver.memory=2g",
    ],
)
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


@pytest.mark.parametrize(
    "sets",
    [(), ("nameOverride=streams",), ("fullnameOverride=sensors-prod",)],
    ids=["defaults", "nameOverride", "fullnameOverride"],
)
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
    assert alerts and all(
        a["annotations"]["runbook_url"].startswith("https://h.example/r/docs/operations.md#") for a in alerts
    )


def test_long_release_names_keep_pod_names_within_limits() -> None:
    release = "a-long-release-name-for-the-sensor-pipeline-plant-7"  # helm allows 53 characters
    for docs in (render(None, release=release), render(None, "fullnameOverride=" + "x" * 70)):
        name = one(docs, "StatefulSet")["metadata"]["name"]
        # controller-revision-hash=<name>-<10 characters> is a label value (63 at most).
        assert len(name) + 1 + 10 <= 63, name
        assert len(f"{name}-99") <= 63
        assert not name.endswith("-")


def notes(*sets: str, values: Path | None = None) -> str:
    """What `helm install` prints after NOTES:."""
    args = ["install", "demo", str(CHART), "--dry-run=client", "--namespace", "streams"]
    if values is not None:
        args += ["-f", str(values)]
    for s in sets:
        args += ["--set", s]
    return helm(*args).stdout.split("NOTES:", 1)[1]


def test_notes_warn_when_replicas_exceed_partitions() -> None:
    assert "WARNING" not in notes()
    warned = notes("replicaCount=5")
    assert "WARNING: 5 replicas but no program reads more than 3 input partitions" in warned
    assert "WARNING" in notes("autoscaling.enabled=true", "autoscaling.maxReplicas=4")


def _topology_values(tmp_path: Path, topics: str) -> Path:
    """A values file whose topology reads ``a`` (program one) and ``b`` (program two), ``topics``
    its topics: section."""
    topology = (
        "application: t\n"
        "programs:\n"
        "  - {name: one, source: one.es, inputs: [{topic: a, event: A}], outputs: {X: b}}\n"
        "  - {name: two, source: two.es, inputs: [{topic: b, event: X}], outputs: {Y: c}}\n"
        f"topics:\n{topics}"
    )
    path = tmp_path / "values.yaml"
    sources = {"one.es": "in string A\nout string X\n( A(a) { !>X(a); } )*\n", "two.es": "in string X\nout string Y\n"}
    path.write_text(yaml.safe_dump({"topology": topology, "sources": sources}))
    return path


def test_notes_count_a_listed_topic_without_partitions_as_one(tmp_path: Path) -> None:
    """A topic listed without partitions: is made with one (the walk: the chart skipped it and
    warned of nothing while two of three replicas would sit idle); an external one's count is
    its producers', unknown: no warning then, rather than a wrong one."""
    listed = _topology_values(tmp_path, "  a: {}\n  b: {}\n")
    assert "WARNING: 3 replicas but no program reads more than 1 input partition:" in notes(
        "replicaCount=3", values=listed
    )
    external = _topology_values(tmp_path, "  a: {external: true}\n  b: {partitions: 1}\n")
    assert "WARNING" not in notes("replicaCount=3", values=external)
    unlisted = _topology_values(tmp_path, "  b: {partitions: 1}\n")
    assert "WARNING" not in notes("replicaCount=3", values=unlisted)


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


# -- the backfill Job and CronJob ------------------------------------------------------------------

BACKFILL_VALUES = CHART.parents[1] / "tests" / "ops" / "values" / "backfill.yaml"


def _backfill_container(pod_spec: dict[str, Any]) -> dict[str, Any]:
    (container,) = pod_spec["containers"]
    return container


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_backfill_is_off_by_default() -> None:
    assert not {"Job", "CronJob"} & {d["kind"] for d in render(None)}


def test_backfill_job_and_cronjob_run_the_command_on_the_charts_topology() -> None:
    docs = render(BACKFILL_VALUES)
    job, cron = one(docs, "Job"), one(docs, "CronJob")
    assert cron["spec"]["jobTemplate"]["spec"] == job["spec"]  # one pod, two ways to start it
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert cron["spec"]["schedule"] == "30 2 * * *" and cron["spec"]["timeZone"] == "Europe/Berlin"
    assert job["spec"]["backoffLimit"] == 2 and job["spec"]["activeDeadlineSeconds"] == 21600
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    container = _backfill_container(pod)
    assert container["image"] == "registry.example.com/eventscript-backfill:0.1.0"
    # The arguments are ones `eventscript backfill` accepts, meaning what the values say.
    args = build_parser().parse_args(container["args"])
    assert (args.command, args.topology, args.program) == ("backfill", "/etc/eventscript/topology.yaml", "overheat")
    assert (args.output, args.start, args.stop, args.until) == (
        "/data/overheat-2026-01.parquet",
        "2026-01-01T00:00:00Z",
        "2026-02-01T00:00:00Z",
        "2026-02-01T00:00:00Z",
    )
    assert (args.master, args.no_ui, args.batch_size, args.handover) == ("local[2]", False, 20000, False)
    # The topology is the workers' ConfigMap, mounted where the arguments say.
    cm = one(docs, "ConfigMap")
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/etc/eventscript")
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"]["name"] == cm["metadata"]["name"]
    topology = parse_topology(
        yaml.safe_load(cm["data"]["topology.yaml"]), "configmap", Path("/etc/eventscript"), env=TOPOLOGY_ENV
    )
    assert args.program in [p.name for p in topology.programs]
    env = {e["name"]: e for e in container["env"]}
    assert env["KAFKA_BOOTSTRAP_SERVERS"]["valueFrom"]["secretKeyRef"] == {
        "name": "kafka-connection",
        "key": "bootstrap",
    }
    assert env["PYSPARK_SUBMIT_ARGS"]["value"] == (
        "--conf spark.driver.memory=3g --conf spark.sql.shuffle.partitions=4 pyspark-shell"
    )
    assert {"name": "spark-ui", "containerPort": 4040, "protocol": "TCP"} in container["ports"]
    # Spark needs a writable /tmp under the read-only root filesystem.
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"]) and container["workingDir"] == "/tmp"


def test_backfill_to_kafka_with_handover() -> None:
    docs = render(
        None,
        "backfill.job.enabled=true",
        "backfill.image.tag=v1",
        "backfill.program=site-alarm",
        "backfill.from=0",
        "backfill.outputTopics.SiteAlarm=site-alarms-v2",
        "backfill.errorTopic=errors-v2",
        "backfill.handover=true",
        "backfill.force=true",
    )
    args = build_parser().parse_args(_backfill_container(one(docs, "Job")["spec"]["template"]["spec"])["args"])
    assert (args.program, args.output, args.error_topic, args.start, args.stop) == (
        "site-alarm",
        None,
        "errors-v2",
        "0",
        None,
    )
    assert (args.handover, args.force, args.master, args.no_ui) == (True, True, "local[*]", True)
    assert [tuple(x) for x in args.output_topic] == [("SiteAlarm", "site-alarms-v2")]


def test_backfill_pods_are_no_workers() -> None:
    """The workers' Service, PodDisruptionBudget, StatefulSet and NetworkPolicy select no backfill pod."""
    docs = render(BACKFILL_VALUES, "networkPolicy.enabled=true")
    labels = one(docs, "Job")["spec"]["template"]["metadata"]["labels"]
    worker_labels = one(docs, "StatefulSet")["spec"]["template"]["metadata"]["labels"]
    selectors = [
        one(docs, "Service")["spec"]["selector"],
        one(docs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        one(docs, "StatefulSet")["spec"]["selector"]["matchLabels"],
        one(docs, "NetworkPolicy")["spec"]["podSelector"]["matchLabels"],
    ]
    assert all(_selects(s, worker_labels) for s in selectors)
    assert not any(_selects(s, labels) for s in selectors)
    assert labels["app.kubernetes.io/component"] == "backfill"


def test_notes_say_how_to_follow_the_backfill() -> None:
    assert "Backfill" not in notes()
    said = notes(values=BACKFILL_VALUES)
    assert (
        "Job demo-eventscript-backfill runs once: kubectl --namespace streams logs -f job/demo-eventscript-backfill"
        in said
    )
    assert 'CronJob demo-eventscript-backfill runs on "30 2 * * *" (Europe/Berlin), never two at once.' in said
    assert "WARNING: backfill.handover" not in said
    assert "WARNING: backfill.handover" in notes("backfill.handover=true", values=BACKFILL_VALUES)
    assert "WARNING: backfill.handover" not in notes("backfill.handover=true", "replicaCount=0", values=BACKFILL_VALUES)


def test_backfill_names_fit_the_cronjob_limit() -> None:
    release = "a-long-release-name-for-the-sensor-pipeline-plant-7"
    for docs in (render(BACKFILL_VALUES, release=release), render(BACKFILL_VALUES, "fullnameOverride=" + "x" * 70)):
        for kind in ("Job", "CronJob"):
            name = one(docs, kind)["metadata"]["name"]
            # The controller appends -<11 characters> to the CronJob's name for each Job.
            assert len(name) <= 52 and name.endswith("-backfill"), name


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (
            ("backfill.job.enabled=true", "backfill.image.tag=v1"),
            "backfill.program: name the program to backfill (the topology has overheat, site-alarm)",
        ),
        (
            ("backfill.cronJob.enabled=true", "backfill.output=/data/x.jsonl", "backfill.program=overheet"),
            'backfill.program: the topology has no program "overheet" (it has overheat, site-alarm)',
        ),
        (
            (
                "backfill.job.enabled=true",
                "backfill.image.tag=v1",
                "backfill.program=overheat",
                "backfill.output=/data/x.jsonl",
                "backfill.errorTopic=e",
            ),
            "backfill.output writes a file; backfill.outputTopics and backfill.errorTopic",
        ),
        # Issue 25, item 2: a nightly run into the live output topics; a Job whose image follows the chart.
        (
            ("backfill.cronJob.enabled=true", "backfill.program=overheat"),
            "backfill.cronJob: set backfill.output (a file) or backfill.outputTopics (topics of their own)",
        ),
        (
            ("backfill.job.enabled=true", "backfill.program=overheat", "backfill.output=/data/x.jsonl"),
            "backfill.job: set backfill.image.tag: a Job cannot change once created",
        ),
        # Issue 25, item 7: what the schema cannot compare.
        (
            ("autoscaling.enabled=true", "autoscaling.minReplicas=4", "autoscaling.maxReplicas=3"),
            "autoscaling.minReplicas (4) is above autoscaling.maxReplicas (3)",
        ),
    ],
    ids=[
        "no-program",
        "unknown-program",
        "file-and-topics",
        "cronjob-into-live-topics",
        "job-without-tag",
        "min-above-max-replicas",
    ],
)
def test_backfill_values_that_cannot_run_fail_the_install(sets: tuple[str, ...], message: str) -> None:
    args = ["template", "demo", str(CHART)]
    for s in sets:
        args += ["--set", s]
    proc = helm(*args, check=False)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr


#: The selectors rules.yaml writes for Kubernetes' own series, for a release called "eventscript".
KUBERNETES_SELECTORS = [
    'statefulset="eventscript"',
    'pod=~"eventscript-[0-9]+"',
    'persistentvolumeclaim=~"state-eventscript-[0-9]+"',
    'job_name=~"eventscript-backfill(-[0-9]+)?"',
]


def test_alerts_on_kubernetes_series_select_the_releases_objects() -> None:
    """Issue 25, item 5: the volume, pod, rollout and backfill alerts read kube-state-metrics and the
    kubelet, whose job labels are their own: the chart selects this release's objects by name and
    namespace, so one release's rules do not alert on another's."""
    docs = render(
        None,
        "prometheusRule.enabled=true",
        "fullnameOverride=sensors-prod",
        "backfill.job.enabled=true",
        "backfill.output=/tmp/x.jsonl",
        "backfill.image.tag=v1",
        "backfill.program=overheat",
    )
    exprs = " ".join(r["expr"] for g in one(docs, "PrometheusRule")["spec"]["groups"] for r in g["rules"])
    assert [s for s in KUBERNETES_SELECTORS if s in exprs] == []
    for selector in [
        'statefulset="sensors-prod"',
        'pod=~"sensors-prod-[0-9]+"',
        'persistentvolumeclaim=~"state-sensors-prod-[0-9]+"',
    ]:
        assert f'namespace="streams", {selector}' in exprs, selector
    job = one(docs, "Job")["metadata"]["name"]
    assert f'namespace="streams", job_name=~"{job}(-[0-9]+)?"' in exprs
    # The PVC and pod names the selectors expect are those the StatefulSet makes.
    sts = one(docs, "StatefulSet")
    assert sts["metadata"]["name"] == "sensors-prod"
    assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "state"  # PVC state-<sts>-<n>


def _template_of_job(chart: Path, *sets: str) -> dict[str, Any]:
    args = ["template", "demo", str(chart), "--namespace", "streams", "-f", str(BACKFILL_VALUES)]
    for s in sets:
        args += ["--set", s]
    proc = helm(*args, check=False)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    return one(docs, "Job")["spec"]["template"]


def test_the_backfill_jobs_pod_template_survives_upgrades(tmp_path: Path) -> None:
    """Issue 25, item 2: a Job's pod template is immutable, so an enabled backfill.job made `helm
    upgrade` fail when the topology, the chart's version or the log level changed (its template
    carried the config checksum, the chart version label and the log settings). Now none of them
    reach it: the pod reads them at start."""
    before = _template_of_job(CHART)
    newer = tmp_path / "eventscript"
    shutil.copytree(CHART, newer)
    chart_yaml = yaml.safe_load((newer / "Chart.yaml").read_text())
    chart_yaml.update(version="9.9.9", appVersion="9.9.9")
    (newer / "Chart.yaml").write_text(yaml.safe_dump(chart_yaml))
    topology = yaml.safe_load(yaml.safe_load((CHART / "values.yaml").read_text())["topology"])
    topology["topics"]["sensor-events"]["partitions"] = 6
    (tmp_path / "topology.yaml").write_text(yaml.safe_dump({"topology": yaml.safe_dump(topology)}))
    after = _template_of_job(newer, "logging.level=DEBUG", "logging.format=text")
    assert json.dumps(after, sort_keys=True) == json.dumps(before, sort_keys=True)
    args = [
        "template",
        "demo",
        str(newer),
        "-f",
        str(BACKFILL_VALUES),
        "-f",
        str(tmp_path / "topology.yaml"),
        "--set",
        "logging.level=DEBUG",
    ]
    docs = [d for d in yaml.safe_load_all(helm(*args).stdout) if d]
    assert json.dumps(one(docs, "Job")["spec"]["template"], sort_keys=True) == json.dumps(before, sort_keys=True)
    # ... and the pod still gets them: the log settings from the backfill's ConfigMap, the topology
    # from the workers' (mounted).
    assert one(docs, "ConfigMap", "backfill")["data"] == {"log-format": "json", "log-level": "DEBUG"}
    env = {e["name"]: e for e in _backfill_container(before["spec"])["env"]}
    assert env["EVENTSCRIPT_LOG_LEVEL"]["valueFrom"]["configMapKeyRef"] == {
        "name": "demo-eventscript-backfill",
        "key": "log-level",
    }
    topology_now = yaml.safe_load(one(docs, "ConfigMap")["data"]["topology.yaml"])
    assert topology_now["topics"]["sensor-events"]["partitions"] == 6


def test_the_backfill_pod_template_has_no_version_label_nor_checksum() -> None:
    """What the template carried before issue 25 (the test above fails with any of them back)."""
    template = _template_of_job(CHART)
    assert "helm.sh/chart" not in template["metadata"]["labels"]
    assert "app.kubernetes.io/version" not in template["metadata"]["labels"]
    assert "checksum/config" not in template["metadata"].get("annotations", {})


@pytest.mark.parametrize(
    ("typo", "where"),
    [
        ("podSecurityContext.runAsUser=0", "/podSecurityContext/runAsUser"),
        ("securityContext.runAsNonRoot=false", "/securityContext/runAsNonRoot"),
        ("securityContext.privileged=true", "/securityContext/privileged"),
        ("terminationGracePeriodSeconds=20", "/terminationGracePeriodSeconds"),
        ("resources.limits.memory=1GB", "/resources/limits/memory"),
        ("resources.limit.memory=1Gi", "/resources"),
        ("backfill.resources.requests.cpu=two", "/backfill/resources/requests/cpu"),
    ],
)
def test_schema_refuses_unsafe_kubernetes_values(typo: str, where: str) -> None:
    """Issue 25, item 7: Kubernetes-typed values are checked: root, a grace shorter than the worker's
    stop, quantities that are no quantities, misspelt resource keys."""
    proc = helm("template", "demo", str(CHART), "--set", typo, check=False)
    assert proc.returncode != 0 and where in proc.stderr, proc.stderr


@pytest.mark.parametrize("tool", HELMS)
def test_a_program_source_that_is_no_text_is_refused_at_its_value(tool: str) -> None:
    """A ``sources`` entry that YAML read as a number (or a mapping) failed deep in the templates
    ("configmap.yaml:12:24: wrong type for value; expected string; got float64"), naming no value."""
    proc = helm("template", "demo", str(CHART), "--set", "sources.doors\\.es=42", check=False, tool=tool)
    assert proc.returncode != 0, proc.stdout
    assert "/sources/doors.es" in proc.stderr or "sources.doors.es" in proc.stderr, proc.stderr
    assert "configmap.yaml" not in proc.stderr, proc.stderr


def test_the_grace_period_covers_the_workers_stop() -> None:
    import json as json_module

    from eventscript.kafka.waiting import TXN_TIMEOUT

    schema = json_module.loads((CHART / "values.schema.json").read_text())
    assert schema["properties"]["terminationGracePeriodSeconds"]["minimum"] > TXN_TIMEOUT
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["terminationGracePeriodSeconds"] >= schema["properties"]["terminationGracePeriodSeconds"]["minimum"]


@pytest.mark.parametrize("tool", HELMS)
def test_the_chart_works_as_a_subchart(tmp_path: Path, tool: str) -> None:
    """Issue 25, item 7: helm gives every subchart the parent's `global` values; the schema refused
    them ("additional properties 'global' not allowed")."""
    parent = tmp_path / "platform"
    (parent / "charts").mkdir(parents=True)
    shutil.copytree(CHART, parent / "charts" / "eventscript")
    (parent / "Chart.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v2",
                "name": "platform",
                "version": "1.0.0",
                "dependencies": [{"name": "eventscript", "version": "0.1.0"}],
            }
        )
    )
    (parent / "values.yaml").write_text(
        yaml.safe_dump({"global": {"imageRegistry": "registry.example.com"}, "eventscript": {"replicaCount": 3}})
    )
    proc = helm("template", "p", str(parent), check=False, tool=tool)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    assert one(docs, "StatefulSet")["spec"]["replicas"] == 3


def test_a_topology_state_dir_off_the_volume_is_pointed_at_it(tmp_path: Path) -> None:
    """Issue 25, item 7: a literal state_dir (top level or a program's) bypassed the state volume;
    the chart points it at the volume and the notes say so. Paths on the volume are kept."""
    topology = yaml.safe_load(yaml.safe_load((CHART / "values.yaml").read_text())["topology"])
    topology["state_dir"] = "./state"
    topology["programs"][0]["state_dir"] = "/data/overheat"
    topology["programs"][1]["state_dir"] = "/var/lib/eventscript/alarms"
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"topology": yaml.safe_dump(topology)}))
    docs = render(values)
    written = yaml.safe_load(one(docs, "ConfigMap")["data"]["topology.yaml"])
    assert written["state_dir"] == "${EVENTSCRIPT_STATE_DIR:-/var/lib/eventscript}"
    assert "state_dir" not in written["programs"][0]
    assert written["programs"][1]["state_dir"] == "/var/lib/eventscript/alarms"
    said = notes(values=values)
    assert "WARNING: the topology's state_dir: ./state, programs[overheat].state_dir: /data/overheat" in said
    assert "WARNING: the topology's" not in notes()


def test_a_topology_without_a_state_dir_gets_the_volume_without_a_warning(tmp_path: Path) -> None:
    """A missing state_dir is the usual case (nothing to correct): the chart sets it to the volume
    and the notes stay quiet; docs/operations.md said they warned, so the guide is held to this."""
    topology = yaml.safe_load(yaml.safe_load((CHART / "values.yaml").read_text())["topology"])
    del topology["state_dir"]
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"topology": yaml.safe_dump(topology)}))
    written = yaml.safe_load(one(render(values), "ConfigMap")["data"]["topology.yaml"])
    assert written["state_dir"] == "${EVENTSCRIPT_STATE_DIR:-/var/lib/eventscript}"
    assert "WARNING" not in notes(values=values)
    guide = " ".join((CHART.parents[1] / "docs" / "operations.md").read_text().split())
    assert (
        "A missing one is the usual case (the volume is where the chart keeps state): it is set without a warning"
        in guide
    )


@pytest.mark.parametrize("kafka", [None, {"client_id": "me"}])
def test_a_topology_without_a_kafka_address_gets_the_charts(tmp_path: Path, kafka: dict[str, str] | None) -> None:
    """The README's doors topology, deployed as it is, has no kafka section: its workers tried
    localhost:9092 in the pod, whatever kafka.bootstrapServers said. An address given is kept."""
    topology = yaml.safe_load(yaml.safe_load((CHART / "values.yaml").read_text())["topology"])
    del topology["kafka"]
    if kafka is not None:
        topology["kafka"] = kafka
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"topology": yaml.safe_dump(topology)}))
    written = yaml.safe_load(one(render(values), "ConfigMap")["data"]["topology.yaml"])
    assert written["kafka"] == {**(kafka or {}), "bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}
    topology["kafka"] = {"bootstrap_servers": "${KAFKA_HOSTS}"}
    values.write_text(yaml.safe_dump({"topology": yaml.safe_dump(topology)}))
    written = yaml.safe_load(one(render(values), "ConfigMap")["data"]["topology.yaml"])
    assert written["kafka"] == {"bootstrap_servers": "${KAFKA_HOSTS}"}


def test_a_relative_source_missing_from_sources_fails_the_install(tmp_path: Path) -> None:
    """A topology pasted with its relative ``source: doors.es`` rendered, and its workers then
    crash-looped on a file the ConfigMap does not hold: helm says so, and what to do."""
    topology = yaml.safe_load(yaml.safe_load((CHART / "values.yaml").read_text())["topology"])
    topology["programs"][1]["source"] = "site_alarm.es"
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"topology": yaml.safe_dump(topology), "sources": {"other.es": "x"}}))
    proc = helm("template", "demo", str(CHART), "-f", str(values), check=False)
    assert proc.returncode != 0
    assert (
        "topology: program site-alarm has source: site_alarm.es, read from /etc/eventscript, where only the "
        "files under 'sources' are (other.es): add it there (sources: {site_alarm.es: <the program's text>}), "
        "or give the absolute path of a file in the image"
    ) in proc.stderr
    values.write_text(yaml.safe_dump({"topology": yaml.safe_dump(topology), "sources": {"site_alarm.es": "x"}}))
    assert "site_alarm.es" in one(render(values), "ConfigMap")["data"]


def test_the_guides_values_with_sources_deploy_a_topology_that_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/operations.md's my-values.yaml (a topology and its program under ``sources``) renders,
    and the files the ConfigMap holds pass ``topology check`` where the pod reads them."""
    guide = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    block = re.search(r"^  ```yaml\n(  # my-values.yaml\n.*?)^  ```$", guide, re.S | re.M)
    assert block, "docs/operations.md has no my-values.yaml example"
    values = tmp_path / "my-values.yaml"
    values.write_text(textwrap.dedent(block.group(1)))
    for name, text in one(render(values), "ConfigMap")["data"].items():
        (tmp_path / name).write_text(text)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "k:9092")
    monkeypatch.setenv("EVENTSCRIPT_STATE_DIR", str(tmp_path / "state"))
    assert main(["topology", "check", "-q", str(tmp_path / "topology.yaml")]) == 0


def test_keda_reads_the_broker_from_the_existing_secret_and_keeps_the_behavior() -> None:
    """Issue 25, item 4: with kafka.existingSecret KEDA got "kafka:9092" (the unused default), and
    it dropped autoscaling.behavior, so replicas flapped (cooldownPeriod only slows scaling to zero)."""
    keda = CHART.parents[1] / "tests" / "ops" / "values" / "keda.yaml"
    docs = render(keda, "kafka.existingSecret=kafka-connection")
    so = one(docs, "ScaledObject")
    for trigger in so["spec"]["triggers"]:
        assert "bootstrapServers" not in trigger["metadata"], trigger
        assert trigger["metadata"]["bootstrapServersFromEnv"] == "KAFKA_BOOTSTRAP_SERVERS"
    container = so["spec"]["scaleTargetRef"]["envSourceContainerName"]
    (worker,) = [
        c for c in one(docs, "StatefulSet")["spec"]["template"]["spec"]["containers"] if c["name"] == container
    ]
    env = {e["name"]: e for e in worker["env"]}
    assert env["KAFKA_BOOTSTRAP_SERVERS"]["valueFrom"]["secretKeyRef"]["name"] == "kafka-connection"
    behavior = so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 600
    assert behavior["scaleDown"]["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 300}]
    # Without the Secret, the address itself.
    plain = one(render(keda, "kafka.bootstrapServers=broker:9093"), "ScaledObject")
    assert {t["metadata"]["bootstrapServers"] for t in plain["spec"]["triggers"]} == {"broker:9093"}
    # The HPA (no KEDA) gets the same behavior.
    hpa = one(render(None, "autoscaling.enabled=true"), "HorizontalPodAutoscaler")
    assert hpa["spec"]["behavior"] == behavior


def _pod_spec(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return one(docs, "StatefulSet")["spec"]["template"]["spec"]


def test_replicas_are_spread_over_nodes_and_zones_by_default() -> None:
    """Issue 25, item 6: without anti-affinity two replicas (a task's active and its standby) could
    share a node. The default prefers one per node and spreads over zones; hard requires it."""
    docs = render(None)
    labels = one(docs, "StatefulSet")["spec"]["selector"]["matchLabels"]
    spec = _pod_spec(docs)
    (term,) = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == labels
    (spread,) = spec["topologySpreadConstraints"]
    assert (spread["topologyKey"], spread["whenUnsatisfiable"]) == ("topology.kubernetes.io/zone", "ScheduleAnyway")
    assert spread["labelSelector"]["matchLabels"] == labels
    hard = _pod_spec(render(None, "placement.antiAffinity=hard"))["affinity"]["podAntiAffinity"]
    assert hard["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]["matchLabels"] == labels
    off = _pod_spec(render(None, "placement.antiAffinity=none", "placement.zoneSpread=false"))
    assert "affinity" not in off and "topologySpreadConstraints" not in off
    # The user's own affinity and spread replace the defaults.
    own = _pod_spec(render(None, "affinity.nodeAffinity.x=1", "topologySpreadConstraints[0].maxSkew=2"))
    assert own["affinity"] == {"nodeAffinity": {"x": 1}}
    assert own["topologySpreadConstraints"] == [{"maxSkew": 2}]


def test_a_canary_holds_the_lower_replicas_at_their_revision() -> None:
    """Issue 25, item 6: rollout.partition is the StatefulSet's update partition (a canary)."""
    strategy = one(render(None), "StatefulSet")["spec"]["updateStrategy"]
    assert strategy == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    canary = one(render(None, "replicaCount=4", "rollout.partition=3"), "StatefulSet")["spec"]["updateStrategy"]
    assert canary["rollingUpdate"]["partition"] == 3
    assert "Canary: rollout.partition=3" in notes("replicaCount=4", "rollout.partition=3")
    assert "Canary" not in notes()
