"""``eventscript upgrade plan OLD NEW``: exit codes 0/1/2, the text and ``--json`` forms, compiled
programs and topologies (programs paired by name)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_plan import CHECKED, DOORS

from eventscript.cli.main import main


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_every_state_carried_exits_0_and_says_where_each_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path, "old.es", DOORS)
    new = write(tmp_path, "new.es", DOORS.replace("5 minutes", "10 minutes"))
    assert main(["upgrade", "plan", old, new]) == 0
    out = capsys.readouterr().out
    assert "state 1: carried to state 1" in out
    assert f"now waits for Closed() at {new}:5:5; elapse[10 minutes]() at {new}:6:5" in out
    assert "due 10 minutes after the state was entered" in out
    assert "3 states: 3 carried, 0 restarted, 0 ended (exit 0)" in out


def test_a_restart_exits_1_with_the_reason_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write(tmp_path, "old.es", CHECKED)
    new = write(tmp_path, "new.es", CHECKED.replace(" Checked()\n", "\n"))
    assert main(["upgrade", "plan", old, new, "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    plan = result["programs"]["program"]
    assert result["exit"] == plan["exit"] == 1
    assert plan["counts"] == {"carried": 3, "restarted": 1, "ended": 0}
    restarted = [s for s in plan["states"] if s["verdict"] == "restarted"]
    assert "no longer has" in restarted[0]["reason"] and "Checked()" in restarted[0]["reason"]


def test_a_group_key_change_exits_2_and_compiled_programs_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path, "old.es", DOORS)
    assert main(["compile", old, "-o", str(tmp_path / "old.json")]) == 0
    new = write(tmp_path, "new.es", DOORS.replace("group(Opened.door)", 'group(Opened.door + "!")'))
    assert main(["upgrade", "plan", str(tmp_path / "old.json"), new]) == 2
    assert "error: input Opened: its group clause changed" in capsys.readouterr().out


def test_a_program_that_does_not_compile_exits_2_with_its_diagnostic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path, "old.es", DOORS)
    new = write(tmp_path, "new.es", DOORS.replace("Closed()\n", "Closed(\n", 1))
    assert main(["upgrade", "plan", old, new]) == 2
    assert f"{new}:" in capsys.readouterr().err


TOPOLOGY = """application: doors
kafka: {{bootstrap_servers: localhost:9092}}
programs:
{programs}
topics:
  opened: {{partitions: 1, external: true, events: [Opened]}}
"""
PROGRAM = """  - name: {name}
    source: {source}
    inputs: [{{topic: opened, event: Opened}}]
"""


def test_topologies_pair_their_programs_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "doors.es", DOORS)
    write(tmp_path, "doors2.es", DOORS.replace("( Opened()", "// edited\n( Opened()"))
    old = write(
        tmp_path,
        "old.yaml",
        TOPOLOGY.format(
            programs=PROGRAM.format(name="doors", source="doors.es") + PROGRAM.format(name="gone", source="doors.es")
        ),
    )
    new = write(tmp_path, "new.yaml", TOPOLOGY.format(programs=PROGRAM.format(name="doors", source="doors2.es")))
    assert main(["upgrade", "plan", old, new, "--json"]) == 1  # 'gone' is removed: its instances are dropped
    result = json.loads(capsys.readouterr().out)
    assert result["programs"]["doors"]["exit"] == 0
    assert result["programs"]["doors"]["old"]["fingerprint"] == result["programs"]["doors"]["new"]["fingerprint"]
    assert result["unpaired"] == {"gone": "removed: its instances are dropped"}
    assert main(["upgrade", "plan", old, str(tmp_path / "doors.es")]) == 2


def test_a_program_on_the_lazy_dfa_cannot_be_planned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write(tmp_path, "old.es", DOORS)
    assert main(["upgrade", "plan", old, old, "--state-limit", "1"]) == 2
    assert "runs on the lazy DFA" in capsys.readouterr().out


def test_a_variable_whose_type_changed_is_shown_where_the_new_program_sets_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path, "old.es", DOORS.replace("( Opened()", "{ n = 0; }\n( Opened() { n = n + 1; }"))
    new = write(tmp_path, "new.es", DOORS.replace("( Opened()", '{ n = ""; }\n( Opened() { n = n + "o"; }'))
    assert main(["upgrade", "plan", old, new]) == 2
    out = capsys.readouterr().out
    assert f"  {new}:4:3: error: variable n: long in the old program, string in the new one" in out
    assert '      { n = ""; }\n        ^\n' in out  # the source line and a caret under n
    assert main(["upgrade", "plan", old, new, "--json"]) == 2
    (problem,) = json.loads(capsys.readouterr().out)["programs"]["program"]["problems"]
    assert problem.startswith(f"{new}:4:3: variable n:")


def test_a_changed_group_clause_and_a_new_variable_say_where_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path, "old.es", DOORS)
    new = write(
        tmp_path,
        "new.es",
        DOORS.replace("group(Opened.door)", 'group(Opened.door + "!")').replace("( Opened()", "( Opened() { k = 1; }"),
    )
    assert main(["upgrade", "plan", old, new]) == 2
    out = capsys.readouterr().out
    assert f"{new}:1:" in out and "error: input Opened: its group clause changed" in out
    assert f"  variable k at {new}:4:14 (long): new, unset until an action sets it" in out
    assert f"timer elapse[5 minutes]() at {new}:6:5 (pending: elapse[5 minutes]() at {old}:6:5)" in out
