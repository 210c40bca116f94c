"""``upgrade plan`` ends each program's plan with the ``upgrade:`` setting it calls for: the guide
says to set the policy "as it says", and the plan printed only its exit status."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventscript.cli.main import main

DOORS = """in {string door;} Opened group(Opened.door), {string door;} Closed group(Closed.door)
out {string door;} LeftOpen
( Opened() ( Closed() | elapse[5 minutes]() { !>LeftOpen({door: group[0]}); } Closed() ) )*
"""
TOPOLOGY = "programs:\n  - {name: left-open, source: %s, inputs: [{topic: doors, event_from: {header: es-event}}]}\n"


def _plan(tmp_path: Path, new_program: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    (tmp_path / "old.es").write_text(DOORS, encoding="utf-8")
    (tmp_path / "new.es").write_text(new_program, encoding="utf-8")
    (tmp_path / "old.yaml").write_text(TOPOLOGY % "old.es", encoding="utf-8")
    (tmp_path / "new.yaml").write_text(TOPOLOGY % "new.es", encoding="utf-8")
    status = main(["upgrade", "plan", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml")])
    return status, capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "status", "advice"),
    [
        (("5 minutes", "10 minutes"), 0, "set 'upgrade: carry' for program left-open in the new topology"),
        (("( Opened()", "// edited\n( Opened()"), 0, "nothing: the stored state is the new program's own"),
        (
            ("group(Opened.door)", 'group(Opened.door + "!")'),
            2,
            "the plan cannot be applied to program left-open: deploy it as a new application",
        ),
    ],
    ids=["carries", "same machine", "cannot apply"],
)
def test_each_programs_plan_ends_with_what_to_set(
    change: tuple[str, str], status: int, advice: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got, out = _plan(tmp_path, DOORS.replace(*change), capsys)
    assert got == status
    assert f"  what to do: {advice}" in out
