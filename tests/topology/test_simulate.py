"""``eventscript test TOPOLOGY.yaml``: the whole topology in simulated time."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eventscript.cli.main import main
from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.model import load_graph

from .conftest import ALARM, READINGS, two_stage

TRACE = """[2026-01-01 00:00:00]
Reading({site: "A", sensor: "s1", celsius: 90.0})
[00:01:00]
Reading({site: "B", sensor: "s2", celsius: 70.0})
"""

COUNT = """
in {string site; string sensor; double peak;} Hot
out {long n;} Count
{ n = 0; }
( Hot() { n = n + 1; !>Count({n: n}); } )*
"""

MERGE = """
in {string site; double peak;} Alarm, {long n;} Count
out {string what;} Seen
( Alarm(a) { !>Seen({what: a.site}); } | Count(c) { !>Seen({what: "count"}); } )*
"""


def run(path: Path, trace: str, tmp_path: Path) -> list[dict[str, Any]]:
    t = tmp_path / "t.trace"
    t.write_text(trace, encoding="utf-8")
    out: list[dict[str, Any]] = []
    simulate(load_graph(path), read_trace(t), lambda line: out.append(line.to_json()))
    return out


def test_two_stages_route_by_the_topic_map(write_topology: Callable[..., Path], tmp_path: Path) -> None:
    out = run(write_topology(two_stage(), {"first.es": READINGS, "second.es": ALARM}), TRACE, tmp_path)
    assert [(o["time"], o["event"], o["value"], o["key"], o["topic"], o["program"]) for o in out] == [
        ("2026-01-01T00:00:00.000000Z", "Alarm", {"site": "A", "peak": 90.0}, ["A"], "alarms", "second"),
        ("2026-01-01T00:01:00.000000Z", "Alarm", {"site": "B", "peak": 70.0}, ["B"], "alarms", "second"),
    ]


def test_fan_out_and_fan_in(write_topology: Callable[..., Path], tmp_path: Path) -> None:
    topo = two_stage()
    topo["programs"][1]["outputs"] = {"default": "merged-in"}
    topo["programs"].append(
        {
            "name": "count",
            "source": "count.es",
            "inputs": [{"topic": "hot", "event": "Hot"}],
            "outputs": {"default": "merged-in"},
        }
    )
    topo["programs"].append(
        {
            "name": "merge",
            "source": "merge.es",
            "inputs": [{"topic": "merged-in", "event_from": {"header": "es-event"}}],
            "outputs": {"default": "seen"},
        }
    )
    path = write_topology(topo, {"first.es": READINGS, "second.es": ALARM, "count.es": COUNT, "merge.es": MERGE})
    out = run(path, TRACE, tmp_path)
    # each Hot goes to both readers of 'hot' (in topology order); both feed 'merge'
    assert [o["value"]["what"] for o in out] == ["A", "count", "B", "count"]
    assert {o["topic"] for o in out} == {"seen"}


def test_errors_of_every_program_are_output_with_their_topic(
    write_topology: Callable[..., Path], tmp_path: Path
) -> None:
    second = ALARM.replace("!>Alarm({site: h.site, peak: h.peak});", "!>Alarm({site: h.site, peak: 1.0 / 0.0});")
    second = second.replace("double peak;} Alarm", "long peak;} Alarm").replace("1.0 / 0.0", "1 / 0")
    out = run(write_topology(two_stage(), {"first.es": READINGS, "second.es": second}), TRACE, tmp_path)
    errors = [o for o in out if o["event"] == "$error"]
    assert [(o["event"], o["value"]["code"], o["program"], o["topic"]) for o in errors] == [
        ("$error", 4, "second", "second-errors"),
        ("$error", 4, "second", "second-errors"),
    ]


def test_timers_of_all_programs_share_one_clock(write_topology: Callable[..., Path], tmp_path: Path) -> None:
    late = """
in {string site; double peak;} Alarm group(Alarm.site)
out {string site;} Quiet
( Alarm(a) elapse[5 min]() { !>Quiet({site: a.site}); } )*
"""
    topo = two_stage()
    topo["programs"].append(
        {
            "name": "late",
            "source": "late.es",
            "inputs": [{"topic": "alarms", "event": "Alarm"}],
            "outputs": {"default": "quiet"},
        }
    )
    path = write_topology(topo, {"first.es": READINGS, "second.es": ALARM, "late.es": late})
    out = run(path, TRACE + "[00:10:00]\n", tmp_path)
    assert [(o["time"], o["event"]) for o in out] == [
        ("2026-01-01T00:05:00.000000Z", "Quiet"),
        ("2026-01-01T00:06:00.000000Z", "Quiet"),
    ]


def test_the_test_command_takes_a_topology(
    write_topology: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_topology(two_stage(), {"first.es": READINGS, "second.es": ALARM})
    trace = tmp_path / "t.trace"
    trace.write_text(TRACE, encoding="utf-8")
    assert main(["test", "--trace", str(trace), str(path)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["value"]["site"] for x in lines] == ["A", "B"]
    expect = tmp_path / "expected.jsonl"
    expect.write_text(json.dumps(lines[0]) + "\n", encoding="utf-8")
    assert main(["test", "--trace", str(trace), str(path), "--expect", str(expect)]) == 1
    assert "1 event expected, 2 emitted" in capsys.readouterr().out


def test_the_test_command_refuses_a_miswired_topology(
    write_topology: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topo = two_stage()
    topo["programs"][0]["inputs"][0]["event"] = "Readng"
    path = write_topology(topo, {"first.es": READINGS, "second.es": ALARM})
    trace = tmp_path / "t.trace"
    trace.write_text(TRACE, encoding="utf-8")
    assert main(["test", "--trace", str(trace), str(path)]) == 2
    err = capsys.readouterr().err
    assert "declares no input Readng" in err and "wiring errors" in err
    assert "'eventscript topology check " in err  # names the file to check
