"""``topology plan`` (with a stand-in for the admin client) and ``topology graph``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from eventscript.cli.main import main
from eventscript.kafka.config import TopicSpec
from eventscript.topology.graph import to_dot
from eventscript.topology.model import load_graph
from eventscript.topology.plan import PlanRefused, apply, plan, render

from .conftest import ALARM, READINGS, two_stage

PROGRAMS = {"first.es": READINGS, "second.es": ALARM}


class FakeAdmin:
    """The two admin calls the plan uses, over a dict of partition counts."""

    def __init__(self, existing: dict[str, int]) -> None:
        self.existing = dict(existing)
        self.created: dict[str, TopicSpec] = {}

    def partition_counts(self, timeout: float = 10.0) -> dict[str, int]:
        return dict(self.existing)

    def create(self, topics: dict[str, TopicSpec]) -> None:
        self.created.update(topics)
        self.existing.update({n: s.partitions for n, s in topics.items()})


def test_the_plan_lists_every_topic_with_its_role(write_topology: Callable[..., Path]) -> None:
    graph = load_graph(write_topology(two_stage(), PROGRAMS))
    rows = {t.name: (t.role, t.partitions, t.cleanup) for t in plan(graph)}
    assert rows == {
        "readings": ("source", 2, "delete"),
        "hot": ("link", 2, "delete"),
        "alarms": ("output", 2, "delete"),  # 'hot' is created with first's count, so second has 2 too
        "first-errors": ("errors", 2, "delete"),
        "second-errors": ("errors", 2, "delete"),
        "t.first-repartition": ("repartition", 2, "delete"),
        "t.first-changelog": ("changelog", 2, "compact"),
        "t.second-repartition": ("repartition", 2, "delete"),
        "t.second-changelog": ("changelog", 2, "compact"),
    }


def test_the_plan_compares_with_the_broker(write_topology: Callable[..., Path]) -> None:
    graph = load_graph(
        write_topology(two_stage(topics={"readings": {"partitions": 2}, "hot": {"partitions": 2}}), PROGRAMS)
    )
    topics = plan(graph, {"readings": 2, "hot": 4})
    text = render(topics, with_broker=True)
    assert "exists (2 partitions)" in text
    assert "exists with 4 partitions: CONFLICT (plan says 2)" in text
    assert "missing" in text


def test_apply_creates_what_is_missing(write_topology: Callable[..., Path]) -> None:
    graph = load_graph(
        write_topology(two_stage(topics={"readings": {"partitions": 2}, "hot": {"partitions": 2}}), PROGRAMS)
    )
    admin = FakeAdmin({"readings": 2})
    created = apply(graph, admin)
    assert (
        {t.name for t in created}
        == set(admin.created)
        == {
            "hot",
            "alarms",
            "first-errors",
            "second-errors",
            "t.first-repartition",
            "t.first-changelog",
            "t.second-repartition",
            "t.second-changelog",
        }
    )
    assert admin.created["t.first-changelog"].config == {"cleanup.policy": "compact"}
    assert admin.created["t.second-changelog"].partitions == 2
    assert apply(graph, admin) == []  # nothing left to create


def test_apply_refuses_to_change_partition_counts(write_topology: Callable[..., Path]) -> None:
    graph = load_graph(
        write_topology(two_stage(topics={"readings": {"partitions": 2}, "hot": {"partitions": 2}}), PROGRAMS)
    )
    admin = FakeAdmin({"readings": 2, "hot": 4})
    with pytest.raises(PlanRefused, match=r"refusing to change partition counts .*hot has 4 partitions, the plan 2"):
        apply(graph, admin)
    assert admin.created == {}


def test_apply_refuses_an_undeclared_missing_source(write_topology: Callable[..., Path]) -> None:
    graph = load_graph(write_topology(two_stage(topics={}), PROGRAMS))
    with pytest.raises(PlanRefused, match="source topics readings do not exist"):
        apply(graph, FakeAdmin({}))


def test_the_plan_command_without_a_broker(
    write_topology: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["topology", "plan", str(write_topology(two_stage(), PROGRAMS))]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["topic", "role", "partitions", "replication", "cleanup"]
    assert "t.first-changelog" in out and "? (from the broker)" not in out

    undeclared_source = write_topology(two_stage(topics={}), PROGRAMS)
    assert main(["topology", "plan", str(undeclared_source)]) == 1  # 'readings' is not declared
    out, err = capsys.readouterr()
    assert "? (from the broker)" in out  # the plan is still shown, then what is wrong with it
    assert "topology.yaml:6:12: error: topic readings is read by program first but written by no program" in err
    assert "1 error in the wiring (above): the plan above is of the topology as written" in err


def test_the_plan_says_the_wiring_errors_and_apply_creates_nothing(
    write_topology: Callable[..., Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A misspelt link made ``plan`` list the misspelling as a source and exit 0, and ``--apply``
    would have created topics for a topology that ``topology check`` refuses."""
    import eventscript.kafka.admin

    def no_broker(*_: object) -> None:
        raise AssertionError("the broker was contacted")

    monkeypatch.setattr(eventscript.kafka.admin, "Admin", no_broker)
    misspelt = two_stage()
    misspelt["programs"][1]["inputs"][0]["topic"] = "hott"
    path = str(write_topology(misspelt, PROGRAMS))
    assert main(["topology", "plan", path, "--apply", "--bootstrap-servers", "127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert "[unwritten-topic]" in err and "did you mean hot, written by program first?" in err
    assert "--apply created nothing; fix them, then apply again" in err


def test_the_graph_shows_topics_programs_keys_and_dashed_errors(write_topology: Callable[..., Path]) -> None:
    dot = to_dot(load_graph(write_topology(two_stage(), PROGRAMS)))
    assert '"program:first" [label="first\\ngroup(Reading.sensor)\\nexactly_once"' in dot
    assert '"program:second" [label="second\\ngroup(Hot.site)\\nexactly_once"' in dot
    assert '"topic:readings" -> "program:first" [label="Reading"]' in dot
    assert '"program:first" -> "topic:hot" [label="Hot"]' in dot
    assert '"topic:first-errors" [label="first-errors", shape=ellipse, style=dashed]' in dot
    assert '"program:first" -> "topic:first-errors" [label="$error", style=dashed]' in dot


def test_the_graph_command_writes_dot(write_topology: Callable[..., Path], tmp_path: Path) -> None:
    out = tmp_path / "g.dot"
    assert main(["topology", "graph", str(write_topology(two_stage(), PROGRAMS)), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith('digraph "t"')
    assert main(["topology", "graph", str(write_topology(two_stage(), PROGRAMS)), "-o", str(tmp_path / "g.txt")]) == 2


def test_the_graph_of_a_topology_with_wiring_errors_says_so(
    write_topology: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The picture of a misspelt link (drawn as a source) came with exit 0 and no word of it."""
    misspelt = two_stage()
    misspelt["programs"][1]["inputs"][0]["topic"] = "hott"
    path = write_topology(misspelt, PROGRAMS)
    assert main(["topology", "graph", str(path), "-o", str(tmp_path / "g.dot")]) == 0
    assert (tmp_path / "g.dot").exists()
    err = capsys.readouterr().err
    assert f"note: {path} has 1 wiring error (the first: {path}:" in err
    assert "the picture shows it as written ('eventscript topology check" in err


def test_one_partition_is_said_in_the_singular(write_topology: Callable[..., Path]) -> None:
    graph = load_graph(
        write_topology(two_stage(topics={"readings": {"partitions": 2}, "hot": {"partitions": 2}}), PROGRAMS)
    )
    text = render(plan(graph, {"readings": 1, "hot": 1}), with_broker=True)
    assert "exists with 1 partition: CONFLICT (plan says 2)" in text and "1 partitions" not in text
