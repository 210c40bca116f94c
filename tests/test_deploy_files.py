"""The deployment files agree with the worker: the Dockerfile, the Helm chart (helm/eventscript),
the Grafana dashboard and the Prometheus rules (observability/).

- every PromQL expression uses only metric names the worker exports (read from the metrics
  registry of ``eventscript.kafka.metrics``), ``up``, and the rules' own recorded series, and only
  the ``kind`` values metrics.py documents;
- the chart's templates are well formed (balanced ``{{ }}`` and blocks, defined includes, existing
  ``.Values`` paths), and the topology in values.yaml validates with the worker's own parser and
  compiles its programs from the paths the image has;
- the Dockerfile runs ``eventscript run`` on the chart's health port.

The chart is rendered for real with ``helm`` (scripts/install-helm puts it in .venv/bin; tests/ops
has the full chart tests); the PromQL is fully parsed only where promql-parser is.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from eventscript.kafka import metrics as metrics_module
from eventscript.kafka.config import parse_topology
from eventscript.kafka.metrics import Metrics

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
CHART = ROOT / "helm" / "eventscript"
DASHBOARD = ROOT / "observability" / "grafana" / "eventscript.json"
RULES = ROOT / "observability" / "prometheus" / "rules.yaml"
#: Where the worker counts what it does: the Kafka loop (consumed, produced, commits) and, since the
#: restructure, the task it drives (processed, errors, repartitioned, markers).
COUNTING_SOURCES = (ROOT / "service" / "eventscript" / "kafka", ROOT / "service" / "eventscript" / "task")

#: Where the Dockerfile puts the repository's topologies/ in the image.
IMAGE_TOPOLOGIES = "/app/topologies/"
TOPOLOGY_ENV = {"KAFKA_BOOTSTRAP_SERVERS": "k:9092", "EVENTSCRIPT_STATE_DIR": "/tmp/x"}
#: Labels that Prometheus adds to every scraped series (job, instance; Kubernetes discovery).
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service"}


# -- what the worker exports --------------------------------------------------------------------


def _exported() -> tuple[set[str], set[str], set[str]]:
    """The metric family names, sample names and label names of the worker's metrics, from its registry."""
    m = Metrics()
    # Labelled metrics export no samples until a child exists: make one of each.
    m.register("p", lambda: True, 2)
    m.state_sizes("p", lambda: {0: 1})
    m.restore_progress("p", {0: 1})
    m.event_times("p", {0: (1_000_000, 1)})
    m.count("p", "idle_partitions")
    m.count("p", "consumed")
    m.observe_commit("p", 0.01)
    m.observe_restore("p", 0.01)
    m.tasks("p", 1)
    m.kafka.update(
        "p",
        "consumer",
        {
            "type": "consumer",
            "msg_cnt": 0,
            "brokers": {"b": {"nodeid": 1, "nodename": "b", "rtt": {"cnt": 1, "avg": 1, "p99": 1}}},
            "topics": {
                "t": {"partitions": {"0": {"partition": 0, "fetch_state": "active", "ls_offset": 1, "app_offset": 0}}}
            },
        },
    )
    families: set[str] = set()
    names: set[str] = set()
    labels: set[str] = set()
    for family in m.registry.collect():
        families.add(family.name)
        for sample in family.samples:
            names.add(sample.name)
            labels.update(sample.labels)
    return families, names, labels


FAMILIES, EXPORTED, EXPORTED_LABELS = _exported()
#: Series of Kubernetes that the rules read (kube-state-metrics and the kubelet), with their labels:
#: the state volume, pods, the StatefulSet's rollout and the backfill Job.
KUBERNETES_SERIES = {
    "kubelet_volume_stats_used_bytes": {"persistentvolumeclaim"},
    "kubelet_volume_stats_available_bytes": {"persistentvolumeclaim"},
    "kubelet_volume_stats_capacity_bytes": {"persistentvolumeclaim"},
    "kube_pod_status_phase": {"pod", "phase"},
    "kube_pod_container_status_last_terminated_reason": {"pod", "container", "reason"},
    "kube_pod_container_status_restarts_total": {"pod", "container"},
    "kube_statefulset_replicas": {"statefulset"},
    "kube_statefulset_status_replicas_updated": {"statefulset"},
    "kube_statefulset_status_replicas_ready": {"statefulset"},
    "kube_job_failed": {"job_name", "condition"},
}
METRICS = EXPORTED | {"up"} | set(KUBERNETES_SERIES)
LABELS = EXPORTED_LABELS | TARGET_LABELS | set().union(*KUBERNETES_SERIES.values())


def _kinds() -> set[str]:
    """The ``kind`` values of eventscript_records_total, _faults_total and _rebalances_total."""
    return set(metrics_module.KINDS) | set(metrics_module.FAULTS) | set(metrics_module.REBALANCES)


KINDS = _kinds()


def test_the_worker_exports_what_the_files_rely_on() -> None:
    for name in (
        "eventscript_records_total",
        "eventscript_commits_total",
        "eventscript_commit_seconds_bucket",
        "eventscript_restore_seconds_bucket",
        "eventscript_restore_seconds_count",
        "eventscript_tasks",
        "eventscript_kafka_consumer_lag",
        "eventscript_ready",
        "eventscript_build_info",
        "process_resident_memory_bytes",
        "eventscript_state_bytes",
        "eventscript_partitions",
        "eventscript_restore_remaining_records",
    ):
        assert name in EXPORTED, f"{name} is not exported (exported: {sorted(EXPORTED)})"
    assert {"program", "kind", "le", "topic", "partition", "task"} <= EXPORTED_LABELS
    assert {"consumed", "processed", "produced", "errors", "repartitioned"} <= KINDS
    assert "commits" not in metrics_module.KINDS, "batches are counted in eventscript_commits_total"
    # ... and the worker still counts them under those names.
    sources = "".join(
        p.read_text(encoding="utf-8")
        for folder in COUNTING_SOURCES
        for p in folder.glob("*.py")
        if p.name != "metrics.py"
    )
    assert [k for k in sorted(KINDS | {metrics_module.COMMITS}) if f'"{k}"' not in sources] == []


# -- PromQL -------------------------------------------------------------------------------------------

_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "atan2",
    "inf",
    "nan",
}
_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
_GRAFANA_VAR = re.compile(r"\$\{?\w+(?::\w+)?\}?")
_MATCHERS = re.compile(r"\{([^{}]*)\}")
_MATCHER = re.compile(r"""([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')""")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")


def promql_metric_names(expr: str) -> set[str]:
    """The metric names an expression selects (not functions, keywords, labels or variables)."""
    s = _STRING.sub('""', expr)
    s = _GRAFANA_VAR.sub(" ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)  # range and subquery durations
    s = _MATCHERS.sub(" ", s)
    s = _GROUPING.sub(" ", s)
    s = re.sub(r"\boffset\s+-?\w+", " ", s)
    names = set()
    for m in re.finditer(r"(?<![\w.:])([A-Za-z_:][\w:]*)(\s*\()?", s):
        if m.group(2) is None and m.group(1).lower() not in _KEYWORDS:
            names.add(m.group(1))
    return names


def promql_labels(expr: str) -> tuple[set[str], dict[str, set[str]]]:
    """Label names an expression matches or groups on, and the values it matches per label."""
    labels: set[str] = set()
    values: dict[str, set[str]] = {}
    for body in _MATCHERS.findall(expr):
        for name, _op, value in _MATCHER.findall(body):
            labels.add(name)
            values.setdefault(name, set()).update(value[1:-1].split("|"))
    for group in _GROUPING.findall(_STRING.sub('""', expr)):
        labels.update(x.strip() for x in group.split(",") if x.strip())
    return labels, values


def promql_problems(expr: str, known: set[str]) -> list[str]:
    problems = [f"unknown metric {n}" for n in sorted(promql_metric_names(expr) - known)]
    labels, values = promql_labels(expr)
    problems += [f"unknown label {n}" for n in sorted(labels - LABELS)]
    problems += [f"unknown kind {k!r}" for k in sorted(values.get("kind", set()) - KINDS)]
    if expr.count("(") != expr.count(")") or expr.count("{") != expr.count("}") or expr.count("[") != expr.count("]"):
        problems.append("unbalanced brackets")
    return problems


def test_promql_checks_catch_unknown_names() -> None:
    expr = (
        "histogram_quantile(0.99, sum by (program, le) (rate(eventscript_commit_seconds_bucket"
        '{job=~"$job", program=~"${program}"}[$__rate_interval] offset 1h))) > 1e3 '
        "unless on (program) count(up == 0) or vector(0)"
    )
    assert promql_metric_names(expr) == {"eventscript_commit_seconds_bucket", "up"}
    assert promql_problems(expr, METRICS) == []
    assert promql_problems('rate(eventscript_records{kind="processed"}[5m])', METRICS) == [
        "unknown metric eventscript_records"
    ]
    assert promql_problems('sum by (programme) (rate(eventscript_records_total{kind="procesed"}[5m]))', METRICS) == [
        "unknown label programme",
        "unknown kind 'procesed'",
    ]
    assert promql_problems("sum(rate(eventscript_tasks[5m])", METRICS) == ["unbalanced brackets"]


# -- Grafana dashboard ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in dashboard["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))  # collapsed rows hold their panels
    return out


def _exprs(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in _panels(dashboard) for t in p.get("targets", [])]


def test_dashboard_queries_use_exported_metrics(dashboard: dict[str, Any]) -> None:
    exprs = _exprs(dashboard)
    assert len(exprs) >= 10
    problems = [f"{title}: {expr!r}: {problem}" for title, expr in exprs for problem in promql_problems(expr, METRICS)]
    assert problems == []


def test_dashboard_variables(dashboard: dict[str, Any]) -> None:
    assert 36 <= dashboard["schemaVersion"] <= 41
    assert dashboard["uid"] and dashboard["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    program = variables["program"]
    query = program["query"]["query"] if isinstance(program["query"], dict) else program["query"]
    assert re.fullmatch(r"label_values\(eventscript_tasks(\{[^}]*\})?,\s*program\)", query), query
    for v in variables.values():
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else q or ""
        for inner in re.findall(r"label_values\((.*),\s*\w+\)", q):
            assert promql_problems(inner, METRICS) == [], q
    # Every query is filtered by the selected programs and data source.
    for p in _panels(dashboard):
        if p["type"] == "row":
            continue
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}", p["title"]
            for sel in re.findall(r"(eventscript_\w+)\{([^}]*)\}", t["expr"]):
                assert 'program=~"$program"' in sel[1], (p["title"], t["expr"])


def test_dashboard_has_the_panels_operators_need(dashboard: dict[str, Any]) -> None:
    exprs = [re.sub(r"\s+", " ", e) for _, e in _exprs(dashboard)]

    def some(pattern: str) -> bool:
        return any(re.search(pattern, e) for e in exprs)

    assert some(r"sum by \(program, kind\) \(rate\(eventscript_records_total\{"), "records/s by kind"
    assert some(r'rate\(eventscript_records_total\{[^}]*kind="errors"'), "error rate"
    assert some(r'kind="errors"[^/]*/ sum by \(program\) \(rate\(eventscript_records_total\{[^}]*kind="processed"'), (
        "error ratio (errors / processed)"
    )
    for q in ("0.5", "0.99"):
        assert some(rf"histogram_quantile\({q}, sum by \(program, le\) \(rate\(eventscript_commit_seconds_bucket"), (
            f"commit latency p{q}"
        )
    assert some(r"histogram_quantile\(0.99, .*eventscript_restore_seconds_bucket"), "restore time p99"
    assert some(r"sum by \(program\) \(eventscript_tasks\{"), "tasks per program"
    assert some(r"sum by \(program\) \(eventscript_kafka_consumer_lag\{"), "lag per program"
    assert some(r"sum by \(program\) \(eventscript_ready\{"), "ready workers per program"
    assert some(r"eventscript_instances\{"), "instances"
    assert some(r"rate\(eventscript_commits_total\{"), "commits/s from their own counter"
    # Restore p99 shows no NaN in hours without a restore: the quantile is kept only where one happened.
    restore = [e for e in exprs if "eventscript_restore_seconds_bucket" in e]
    assert restore and all(
        re.search(
            r"and on \(program\) \(sum by \(program\) \(increase\("
            r"eventscript_restore_seconds_count\{[^}]*\}\[1h\]\)\) > 0\)",
            e,
        )
        for e in restore
    ), restore
    assert some(r'kind="consumed"') and some(r'kind="processed"'), "consumed vs processed"
    # The state disk (issue 25): the stores' size and the volume's use, and restores in progress.
    assert some(r"sum by \(program\) \(eventscript_state_bytes\{"), "state on disk per program"
    assert some(r"by \(program, task, instance\) \(eventscript_state_bytes\{"), "state on disk per task"
    assert some(r'kubelet_volume_stats_used_bytes\{persistentvolumeclaim=~"state-\(\$job\)-\[0-9\]\+"\}'), (
        "state volume used (the PVCs are state-<job>-N: the job label is the StatefulSet's name)"
    )
    assert some(r"eventscript_restore_remaining_records\{"), "restore: records to go"


def test_the_guides_name_the_dashboards_rows_and_panels(dashboard: dict[str, Any]) -> None:
    """observability/README.md listed seven of the nine rows, and the runbooks sent the operator to
    panels by titles the dashboard does not have (`Event time lag`, `Timer lateness p99`)."""
    titles = {p["title"] for p in _panels(dashboard)}
    rows = [p["title"] for p in dashboard["panels"] if p.get("type") == "row"]
    readme = (ROOT / "observability" / "README.md").read_text(encoding="utf-8")
    assert [r for r in rows if f"- **{r}**:" not in readme] == []
    guide = " ".join((ROOT / "docs" / "operations.md").read_text(encoding="utf-8").split())
    quoted = re.findall(r"the `([^`]+)` panel", guide) + re.findall(r"`([^`]+)` and `[^`]+` panels", guide)
    quoted += re.findall(r"`[^`]+` and `([^`]+)` panels", guide)
    assert len(quoted) >= 4, quoted
    assert [q for q in quoted if q not in titles] == []


def test_dashboard_layout(dashboard: dict[str, Any]) -> None:
    panels = _panels(dashboard)
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    boxes = []
    for p in panels:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24, p["title"]
        boxes.append((p["title"], g["x"], g["y"], g["x"] + g["w"], g["y"] + g["h"]))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            overlap = a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]
            assert not overlap, f"panels {a[0]!r} and {b[0]!r} overlap"


# -- Prometheus rules ---------------------------------------------------------------------------------------

_BY = r"by \(namespace, job, program\)"
ALERTS = {  # alert: (for, what its expression compares, what it computes once recorded series are expanded)
    "EventScriptJobAbsent": (
        "5m",
        r"^absent\(up\{[^}]*\}\) or sum by \(namespace, job\) \(up\{[^}]*\}\) == 0$",
        r"absent\(up",
    ),
    "EventScriptWorkerDown": ("5m", r"^up\{[^}]*\} == 0$", r"^up\{"),
    "EventScriptWorkerNotReady": (
        "15m",
        r"== 0$",
        r"max by \(namespace, job, instance, program\) \(eventscript_ready\{",
    ),
    "EventScriptLagGrowing": (
        "15m",
        r"> 1000 and deriv\(.*\[15m\]\) > 0$",
        rf"sum {_BY} \(eventscript_kafka_consumer_lag\{{",
    ),
    "EventScriptCommitsFailing": (
        "5m",
        r"> 3$",
        r'eventscript_faults_total\{[^}]*kind=~"commit_failed\|transaction_aborted"',
    ),
    "EventScriptRebalancing": (
        "10m",
        r"> 0$",
        r"^max by \(namespace, job, program\) \( ?increase\(eventscript_rebalances_total\{",
    ),
    "EventScriptRestoreSlow": (
        "1m",
        r"> 0\.5$",
        r'eventscript_restore_seconds_count\{.*\) - .*eventscript_restore_seconds_bucket\{[^}]*le="120\.0"',
    ),
    "EventScriptRestoreStuck": (
        "5m",
        r"delta\(.*\[10m\]\) >= 0$",
        r"eventscript_restore_remaining_records\{[^}]*\} > 0",
    ),
    "EventScriptPartitionsUnowned": ("10m", r"eventscript_partitions\{[^}]*\}\) > sum", r"eventscript_tasks\{"),
    "EventScriptStateVolumeFilling": ("5m", r"> 0\.85$", r"kubelet_volume_stats_used_bytes\{"),
    "EventScriptStateVolumeFullSoon": ("1h", r"predict_linear\(.*\[6h\], 2 \* 86400\) < 0$", r"available_bytes"),
    "EventScriptPodPending": ("15m", r"== 1$", r'phase="Pending"'),
    "EventScriptPodOOMKilled": ("1m", r"\[15m\]\) > 0$", r'reason="OOMKilled"'),
    "EventScriptRolloutStuck": ("15m", r"== 0$", r"kube_statefulset_status_replicas_ready\{"),
    "EventScriptBackfillFailed": ("1m", r"== 1$", r"kube_job_failed\{"),
    "EventScriptErrorsHigh": (
        "10m",
        r"> 0\.05$",
        rf'eventscript_records_total\{{[^}}]*kind="errors"[^/]*/ sum {_BY} '
        r'\(rate\(eventscript_records_total\{[^}]*kind="processed"',
    ),
    "EventScriptCommitSlow": ("10m", r"> 2$", r"histogram_quantile\(0\.99, .*eventscript_commit_seconds_bucket"),
    "EventScriptNoProgress": (
        "10m",
        r'kind="consumed"\} > 0\) unless on \(namespace, job, program\) '
        r'\(.*kind="processed"\} > 0\)',
        r"eventscript_records_total",
    ),
    "EventScriptTasksUnassigned": ("5m", r"== 0$", rf"^\(sum {_BY} \(eventscript_tasks\{{"),
}


def _flat(expr: str) -> str:
    return re.sub(r"\s+", " ", expr).strip()


@pytest.fixture(scope="module")
def rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    assert set(doc) == {"groups"}
    out = []
    for group in doc["groups"]:
        assert set(group) <= {"name", "interval", "rules", "limit", "query_offset", "labels"}, group["name"]
        out.extend(group["rules"])
    return out


def _recorded(rules: list[dict[str, Any]]) -> dict[str, str]:
    return {r["record"]: r["expr"] for r in rules if "record" in r}


def test_rules_use_exported_metrics(rules: list[dict[str, Any]]) -> None:
    recorded = _recorded(rules)
    assert recorded, "no recording rules"
    problems = []
    for r in rules:
        assert ("record" in r) != ("alert" in r), r
        known = METRICS | (set(recorded) if "alert" in r else set())
        problems += [f"{r.get('record') or r['alert']}: {p}" for p in promql_problems(r["expr"], known)]
    assert problems == []
    # Recorded series are named level:metric:operations after the metric they come from.
    for name in recorded:
        level, metric, ops = name.split(":")
        assert level and ops and metric in FAMILIES | {"eventscript_error_ratio"}, name


def test_alerts(rules: list[dict[str, Any]]) -> None:
    alerts = {r["alert"]: r for r in rules if "alert" in r}
    assert set(ALERTS) <= set(alerts), f"missing alerts: {sorted(set(ALERTS) - set(alerts))}"
    recorded = _recorded(rules)
    for name, alert in alerts.items():
        assert re.fullmatch(r"\d+[smh]", str(alert.get("for", ""))), f"{name}: 'for' missing"
        assert alert.get("labels", {}).get("severity") in {"info", "warning", "critical"}, f"{name}: severity"
        annotations = alert.get("annotations", {})
        assert annotations.get("summary") and annotations.get("description"), f"{name}: summary and description"
        for text in annotations.values():
            assert text.count("{{") == text.count("}}"), f"{name}: unbalanced {{{{ }}}} in an annotation"
    for name, (duration, compares, computes) in ALERTS.items():
        alert = alerts[name]
        assert alert["for"] == duration, name
        expr = _flat(alert["expr"])
        assert re.search(compares, expr), (name, expr)
        for rec, rec_expr in recorded.items():
            expr = expr.replace(rec, f"({_flat(rec_expr)})")
        assert re.search(computes, expr), (name, expr)


def test_alerts_on_recorded_series_select_the_release(rules: list[dict[str, Any]]) -> None:
    """A recorded series carries every release's job: an alert that reads it without the job
    selector (which the chart replaces with the release's) fires in every release's rules."""
    recorded = _recorded(rules)
    problems = []
    for r in rules:
        if "alert" not in r:
            continue
        for m in re.finditer(r"([a-z_]+:[a-z_0-9]+:[a-z_0-9]+)(\{[^}]*\})?", r["expr"]):
            if m.group(1) in recorded and 'job="eventscript"' not in (m.group(2) or ""):
                problems.append(f"{r['alert']}: {m.group(0)}")
    assert problems == []


def test_rules_parse_as_promql(rules: list[dict[str, Any]], dashboard: dict[str, Any]) -> None:
    promql_parser = pytest.importorskip("promql_parser", reason="a full PromQL parse needs promql-parser")
    for r in rules:
        promql_parser.parse(r["expr"])
    for _title, expr in _exprs(dashboard):
        promql_parser.parse(expr.replace("$__rate_interval", "5m").replace("$job", "j").replace("$program", "p"))


# -- Helm chart ---------------------------------------------------------------------------------------------------

TEMPLATES = [
    "_helpers.tpl",
    "configmap.yaml",
    "statefulset.yaml",
    "service.yaml",
    "pdb.yaml",
    "servicemonitor.yaml",
    "NOTES.txt",
    "serviceaccount.yaml",
    "hpa.yaml",
    "scaledobject.yaml",
    "networkpolicy.yaml",
    "prometheusrule.yaml",
]
_ACTION = re.compile(r"\{\{(.*?)\}\}", re.S)
_OPENERS = {"if", "range", "with", "define", "block"}


@pytest.fixture(scope="module")
def values() -> dict[str, Any]:
    return yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))


def _template_texts() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((CHART / "templates").iterdir()) if p.is_file()}


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "eventscript" == CHART.name
    assert chart["type"] == "application"
    assert re.fullmatch(r"\d+\.\d+\.\d+(-[\w.]+)?", str(chart["version"]))
    assert chart["appVersion"]
    assert set(TEMPLATES) <= set(_template_texts())


def template_problems(text: str) -> list[str]:
    """Unbalanced ``{{ }}`` and unbalanced blocks (if/range/with/define ... end) of a Go template."""
    problems = []
    if text.count("{{") != text.count("}}"):
        problems.append(f"{text.count('{{')} '{{{{' but {text.count('}}')} '}}}}'")
    stack: list[str] = []
    for m in _ACTION.finditer(text):
        body = m.group(1)
        if "{{" in body:
            problems.append(f"'{{{{' inside an action: {body.strip()[:40]!r}")
            continue
        body = body.strip().removeprefix("-").removesuffix("-").strip()
        if body.startswith("/*"):
            if not body.endswith("*/"):
                problems.append("unterminated comment")
            continue
        word = body.split(None, 1)[0] if body else ""
        if word in _OPENERS:
            stack.append(word)
        elif word == "end":
            if not stack:
                problems.append("'end' without a block")
            else:
                stack.pop()
        elif word == "else" and not stack:
            problems.append("'else' outside a block")
    problems += [f"'{w}' without an 'end'" for w in stack]
    return problems


def test_template_problems_are_found() -> None:
    assert template_problems("{{- if .Values.a }}x{{- else }}y{{- end }}{{/* note */}}") == []
    assert template_problems("{{- if .Values.a }}x{{ .Values.b }") != []
    assert template_problems("{{- range .Values.a }}{{- with . }}{{ end }}") == ["'range' without an 'end'"]
    assert template_problems("{{ end }}") == ["'end' without a block"]


@pytest.mark.parametrize("name", TEMPLATES)
def test_template_is_well_formed(name: str, values: dict[str, Any]) -> None:
    texts = _template_texts()
    text = texts[name]
    assert template_problems(text) == []
    defined = set(re.findall(r'\{\{-?\s*define\s+"([^"]+)"', texts["_helpers.tpl"]))
    for used in re.findall(r'(?:include|template)\s+"([^"]+)"', text):
        assert used in defined, f"{name}: include of undefined {used!r}"
    for path in re.findall(r"\.Values((?:\.[A-Za-z_]\w*)+)", text):
        node: Any = values
        for key in path.strip(".").split("."):
            assert isinstance(node, dict) and key in node, f"{name}: .Values{path} is not in values.yaml"
            node = node[key]


def _health_from_chart(topology: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """What _helpers.tpl's eventscript.topology does to the topology's health section."""
    health = dict(topology.get("health") or {})
    health["port"] = int(values["health"]["port"])
    health["host"] = health.get("host") or "0.0.0.0"
    return {**topology, "health": health}


def _image_path(source: str) -> Path:
    assert source.startswith(IMAGE_TOPOLOGIES), source
    return ROOT / "topologies" / source.removeprefix(IMAGE_TOPOLOGIES)


def test_values_topology_validates(values: dict[str, Any]) -> None:
    from eventscript.kafka.supervisor import compile_programs

    text = values["topology"]
    assert isinstance(text, str), "topology is YAML text (a string replaces the default instead of merging with it)"
    data = yaml.safe_load(text)
    assert data["kafka"]["bootstrap_servers"] == "${KAFKA_BOOTSTRAP_SERVERS}"
    assert data["state_dir"] == "${EVENTSCRIPT_STATE_DIR:-/var/lib/eventscript}"
    assert "instance_id" not in data, "each replica's instance id is its pod name"
    topo = parse_topology(
        _health_from_chart(data, values), "values.yaml topology", Path("/etc/eventscript"), env=TOPOLOGY_ENV
    )
    assert topo.kafka.bootstrap_servers == "k:9092"
    assert topo.state_dir == "/tmp/x"
    assert (topo.health.host, topo.health.port) == ("0.0.0.0", values["health"]["port"])
    # Each program's source is in the image (under /app/topologies) or in the chart's ConfigMap.
    for program in topo.programs:
        if Path(program.source).is_absolute():
            assert _image_path(program.source).is_file(), f"{program.name}: {program.source} is not in the image"
            program.source = str(_image_path(program.source))
        else:
            assert program.source in values["sources"], f"{program.name}: {program.source} is not in sources"
    assert any(Path(p.source).is_relative_to(ROOT / "topologies") for p in topo.programs)
    # ... and compiles, with inputs naming events the program declares.
    if not values["sources"]:
        assert set(compile_programs(topo, topo.programs)) == {p.name for p in topo.programs}
    assert set(values["programs"]) <= {p.name for p in topo.programs}


def test_statefulset_shape(values: dict[str, Any]) -> None:
    text = _template_texts()["statefulset.yaml"]
    flat = re.sub(r"\s+", " ", text)
    assert "kind: StatefulSet" in text
    assert re.search(r"- name: EVENTSCRIPT_INSTANCE_ID valueFrom: fieldRef: fieldPath: metadata.name", flat)
    assert re.search(r"- name: EVENTSCRIPT_STATE_DIR value: \{\{ .Values.stateDir", flat)
    assert re.search(r"- name: KAFKA_BOOTSTRAP_SERVERS .*secretKeyRef: name: \{\{ .Values.kafka.existingSecret", flat)
    assert re.search(r"livenessProbe: httpGet: path: /healthz", flat)
    assert re.search(r"readinessProbe: httpGet: path: /readyz", flat)
    assert "terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}" in text
    assert values["terminationGracePeriodSeconds"] == 45
    assert re.search(r"\{\{- if .Values.persistence.enabled \}\} volumeClaimTemplates:", flat)
    assert re.search(r"\{\{- if not .Values.persistence.enabled \}\}.*- name: state .*emptyDir", flat)
    assert values["stateDir"] == "/var/lib/eventscript"
    assert re.search(r"- run - /etc/eventscript/topology.yaml - --health-port - \{\{ .Values.health.port", flat)
    sm = _template_texts()["servicemonitor.yaml"].strip()
    assert sm.startswith("{{- if .Values.serviceMonitor.enabled }}") and sm.endswith("{{- end }}")
    assert values["serviceMonitor"]["enabled"] is False
    assert "clusterIP: None" in _template_texts()["service.yaml"]


# -- Dockerfile ------------------------------------------------------------------------------------------------


def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _one(instructions: list[tuple[str, str]], word: str) -> str:
    found = [rest for w, rest in instructions if w == word]
    assert found, f"no {word} in the Dockerfile"
    return found[-1]


def test_dockerfile(values: dict[str, Any]) -> None:
    ins = _instructions()
    port = values["health"]["port"]
    assert json.loads(_one(ins, "ENTRYPOINT")) == ["eventscript"]
    cmd = json.loads(_one(ins, "CMD"))
    assert cmd[:2] == ["run", "/etc/eventscript/topology.yaml"]
    assert cmd[cmd.index("--health-port") + 1] == str(port)
    assert _one(ins, "EXPOSE").split() == [str(port)]
    assert _one(ins, "STOPSIGNAL") == "SIGTERM"
    healthcheck = _one(ins, "HEALTHCHECK")
    assert "urllib" in healthcheck and "/healthz" in healthcheck and "curl" not in healthcheck
    assert f"'{port}'" in healthcheck or f":{port}/" in healthcheck
    assert re.search(rf"HEALTHCHECK_PORT={port}\b", " ".join(r for w, r in ins if w == "ENV"))
    froms = [rest for w, rest in ins if w == "FROM"]
    assert len(froms) >= 2, "multi-stage"
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in DOCKERFILE.read_text() or all("python:3.11-slim" in f for f in froms)
    assert _one(ins, "WORKDIR") == "/app"
    user = _one(ins, "USER").split(":")[0]
    args = dict(rest.partition("=")[::2] for w, rest in ins if w == "ARG" and "=" in rest)
    assert args.get(user.strip("${}"), user) not in {"root", "0", ""}, "runs as a non-root user"
    assert "/var/lib/eventscript" in _one(ins, "VOLUME")
    assert any(
        w == "COPY" and rest.split()[-1].rstrip("/") + "/" == IMAGE_TOPOLOGIES and "topologies" in rest.split()[0]
        for w, rest in ins
    ), "topologies/ is copied to /app/topologies"
    installs = [rest for w, rest in ins if w == "RUN" and "pip install" in rest]
    assert installs and not any("[dev]" in r or "-e " in r for r in installs)


def test_dockerignore_keeps_what_the_build_needs() -> None:
    patterns = {
        line.strip() for line in DOCKERIGNORE.read_text().splitlines() if line.strip() and not line.startswith("#")
    }
    assert {".venv", ".git", "**/__pycache__", "state", "tests"} <= patterns
    for needed in ("pyproject.toml", "README.md", "service", "topologies"):
        assert needed not in patterns and f"{needed}/" not in patterns and f"/{needed}" not in patterns
    for w, rest in _instructions():
        if w == "COPY" and "--from" not in rest:
            for src in rest.split()[:-1]:
                if not src.startswith("--"):
                    assert (ROOT / src).exists(), f"COPY {src}: not in the repository"


# -- real rendering (helm, or helm-python-sdk), when available ---------------------------------------------------


def _render(overrides: dict[str, Any]) -> list[dict[str, Any]]:
    beside = Path(sys.executable).parent / "helm"  # scripts/install-helm
    helm = str(beside) if beside.is_file() else shutil.which("helm")
    if helm:
        proc = subprocess.run(
            [helm, "template", "demo", str(CHART), "--namespace", "streams", "-f", "-"],
            input=json.dumps(overrides),
            capture_output=True,
            text=True,
            check=True,
        )
        texts = [proc.stdout]
    else:
        chart = pytest.importorskip("helm_python.chart", reason="rendering needs helm or helm-python-sdk")
        manifests = chart.Chart.load(str(CHART)).render(overrides, name="demo", namespace="streams", is_install=True)
        texts = [t for name, t in manifests.items() if not name.endswith("NOTES.txt")]
    return [doc for t in texts for doc in yaml.safe_load_all(t) if doc]


def _kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def test_rendered_chart(values: dict[str, Any]) -> None:
    docs = _render({})
    assert {d["kind"] for d in docs} == {"ConfigMap", "StatefulSet", "Service", "PodDisruptionBudget", "ServiceAccount"}
    (sts,) = _kind(docs, "StatefulSet")
    (cm,) = _kind(docs, "ConfigMap")
    (svc,) = _kind(docs, "Service")
    pod = sts["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["EVENTSCRIPT_INSTANCE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["EVENTSCRIPT_STATE_DIR"]["value"] == "/var/lib/eventscript"
    assert env["KAFKA_BOOTSTRAP_SERVERS"]["value"] == values["kafka"]["bootstrapServers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert pod["terminationGracePeriodSeconds"] == 45
    assert sts["spec"]["serviceName"] == svc["metadata"]["name"] and svc["spec"]["clusterIP"] == "None"
    assert [c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]] == ["state"]
    assert "state" not in {v["name"] for v in pod["volumes"]}
    topo = parse_topology(
        yaml.safe_load(cm["data"]["topology.yaml"]), "configmap", Path("/etc/eventscript"), env=TOPOLOGY_ENV
    )
    assert (topo.health.host, topo.health.port) == ("0.0.0.0", values["health"]["port"])
    assert container["args"] == [
        "run",
        "/etc/eventscript/topology.yaml",
        "--health-port",
        str(values["health"]["port"]),
    ]


def test_rendered_chart_options() -> None:
    docs = _render(
        {
            "persistence": {"enabled": False},
            "serviceMonitor": {"enabled": True},
            "kafka": {"existingSecret": "kafka"},
            "podDisruptionBudget": {"enabled": False},
            "programs": ["overheat"],
            "sources": {"x.es": "in {} A\n(A())*\n"},
        }
    )
    assert {d["kind"] for d in docs} == {"ConfigMap", "StatefulSet", "Service", "ServiceMonitor", "ServiceAccount"}
    (sts,) = _kind(docs, "StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    assert "volumeClaimTemplates" not in sts["spec"]
    assert {"name": "state", "emptyDir": {}} in pod["volumes"]
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env["KAFKA_BOOTSTRAP_SERVERS"]["valueFrom"]["secretKeyRef"]["name"] == "kafka"
    assert pod["containers"][0]["args"][-2:] == ["--program", "overheat"]
    (cm,) = _kind(docs, "ConfigMap")
    assert cm["data"]["x.es"].startswith("in {} A")
    (sm,) = _kind(docs, "ServiceMonitor")
    assert sm["spec"]["endpoints"][0]["path"] == "/metrics"
