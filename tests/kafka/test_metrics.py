"""The worker's Prometheus series, without a broker."""

from __future__ import annotations

from prometheus_client import generate_latest

from eventscript.kafka.metrics import KINDS, Metrics


def _sample(m: Metrics, name: str, labels: dict[str, str]) -> float | None:
    for family in m.registry.collect():
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return s.value
    return None


def test_register_creates_every_series_at_zero() -> None:
    m = Metrics()
    m.register("p", lambda: False)
    for kind in KINDS:
        assert _sample(m, "eventscript_records_total", {"program": "p", "kind": kind}) == 0.0
    for gauge in ("eventscript_tasks", "eventscript_instances", "eventscript_consumer_lag", "eventscript_ready"):
        assert _sample(m, gauge, {"program": "p"}) == 0.0


def test_ready_is_read_from_the_worker_when_scraped() -> None:
    """/metrics and /readyz must agree at every instant, so the gauge asks the worker."""
    state = {"ready": False}
    m = Metrics()
    m.register("p", lambda: state["ready"])
    assert 'eventscript_ready{program="p"} 0.0' in generate_latest(m.registry).decode()
    state["ready"] = True
    assert 'eventscript_ready{program="p"} 1.0' in generate_latest(m.registry).decode()
    m.status("p", instances=3, lag=7)
    assert _sample(m, "eventscript_instances", {"program": "p"}) == 3.0
    assert _sample(m, "eventscript_consumer_lag", {"program": "p"}) == 7.0
    assert _sample(m, "eventscript_ready", {"program": "p"}) == 1.0
