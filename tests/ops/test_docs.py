"""observability/README.md lists exactly the eventscript_* series the worker exports, with their
labels (it once documented kind="outputs" while the worker exported "produced")."""

from __future__ import annotations

import re

from tools import ROOT

from eventscript.kafka.metrics import FAULTS, KINDS, REBALANCES, UPGRADE_OUTCOMES, Metrics

README = ROOT / "observability" / "README.md"
_SUFFIX = {"counter": "_total", "info": "_info"}


def exported() -> dict[str, set[str]]:
    """Exported eventscript_* names (as written in PromQL) and their labels (bucket le aside)."""
    m = Metrics()
    m.register("p", lambda: True, 2)
    m.state_sizes("p", lambda: {0: 1})
    m.restore_progress("p", {0: 1})
    m.event_times("p", {0: (1_000_000, 1)})
    m.count("p", "idle_partitions")
    m.count("p", "upgraded_carried")
    m.idle_now("p", lambda: 1)
    m.observe_commit("p", 0.1)
    m.observe_restore("p", 0.1)
    m.kafka.update(
        "p",
        "consumer",
        {
            "type": "consumer",
            "msg_cnt": 0,
            "brokers": {"b": {"nodeid": 1, "nodename": "b", "rtt": {"cnt": 1, "avg": 1}}},
            "topics": {
                "t": {"partitions": {"0": {"partition": 0, "fetch_state": "active", "ls_offset": 1, "app_offset": 0}}}
            },
        },
    )
    out: dict[str, set[str]] = {}
    for family in m.registry.collect():
        if family.name.startswith("eventscript_"):
            labels = {k for s in family.samples for k in s.labels} - {"le"}
            out[family.name + _SUFFIX.get(family.type, "")] = labels
    return out


def documented() -> dict[str, tuple[set[str], str]]:
    rows = re.findall(r"^\| `(eventscript_\w+)` \| (\w+) \| ([^|]*) \| (.*) \|$", README.read_text(), re.M)
    return {name: (set(re.findall(r"`(\w+)`", labels)), meaning) for name, _type, labels, meaning in rows}


def test_readme_lists_exactly_what_is_exported() -> None:
    docs = documented()
    assert set(docs) == set(exported())
    for name, labels in exported().items():
        assert docs[name][0] == labels, name


def test_readme_names_every_kind() -> None:
    docs = documented()
    meaning = {name: text for name, (_labels, text) in docs.items()}
    for kinds, name in (
        (KINDS, "eventscript_records_total"),
        (FAULTS, "eventscript_faults_total"),
        (REBALANCES, "eventscript_rebalances_total"),
        (UPGRADE_OUTCOMES, "eventscript_upgraded_instances_total"),
    ):
        assert set(re.findall(r"`(\w+)`", meaning[name])) >= set(kinds), name
    assert "`outputs`" not in meaning["eventscript_records_total"]
    assert "`commits`" not in meaning["eventscript_records_total"]
