"""Traces are read strictly and by one rule in every command (issue 27; the conformance README's
trace format): integer → double is the only promotion, a ``time`` is ISO text, a structure has only
its declared fields, 1e400 is not Infinity, and a timestamp going back is refused by ``test``,
``dev`` and ``produce`` alike. Each runs the command in a subprocess, as a user does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "eventscript.cli.main"]
PROGRAM = """in long N, time T, {string a;} P, double D, {string a; long[] xs;} Q
out string O
( N(n) { !>O("n"); } | T(t) { !>O("t"); } | P(p) { !>O(p.a); } | D(d) { !>O("d"); } | Q(q) { !>O(q.a); } )*
"""


def eventscript(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def run_trace(tmp_path: Path, events: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:  # type: ignore[type-arg]
    (tmp_path / "p.es").write_text(PROGRAM)
    (tmp_path / "t.trace").write_text(f"[2026-01-01 00:00:00]\n{events}\n")
    result = eventscript("test", "--trace", "t.trace", "p.es", cwd=tmp_path)
    return result, [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize(
    ("event", "says"),
    [
        ("N(3.0)", "t.trace:2:3: N: expected a long (an integer such as 3), got the number 3.0"),
        (
            "T(1767225600000)",
            't.trace:2:3: T: expected a time as ISO-8601 text, e.g. "2026-01-01T09:00:00Z", '
            "got the number 1767225600000",
        ),
        ('P({a: "x", b: 1})', "t.trace:2:12: P: unknown field 'b': the structure {string a;} has a"),
        (
            "D(true)",
            't.trace:2:3: D: expected a double (a number such as 1.5, or "NaN", "Infinity", "-Infinity"), got true',
        ),
        (
            'D("nan")',
            't.trace:2:3: D: expected a double (a number such as 1.5, or "NaN", "Infinity", "-Infinity"), '
            "got the string 'nan'",
        ),
        # inside an array of a structure, and a structure written positionally
        (
            'Q({a: "x", xs: [1, 2, "3"]})',
            "t.trace:2:23: Q: xs[2]: expected a long (an integer such as 3), got the string '3'",
        ),
        ('Q("x", 5)', "t.trace:2:8: Q: xs: expected an array long[], got the number 5"),
        ("  P(7)", "t.trace:2:5: P: a: expected a string in double quotes, got the number 7"),
    ],
)
def test_a_value_that_does_not_conform_is_error_6_at_its_place_in_the_trace(
    tmp_path: Path, event: str, says: str
) -> None:
    result, lines = run_trace(tmp_path, event)
    assert result.returncode == 0, result.stderr
    assert [(line["event"], line["value"]["code"]) for line in lines] == [("$error", 6)]
    assert lines[0]["value"]["message"] == says


def test_conforming_values_and_the_integer_promotion_still_run(tmp_path: Path) -> None:
    result, lines = run_trace(
        tmp_path, 'N(3) T("2026-01-01T09:00:00Z") P({a: "x"}) P("y") D(2) D(2.5) D("NaN") D("-Infinity")'
    )
    assert result.returncode == 0, result.stderr
    assert [line["value"] for line in lines] == ["n", "t", "x", "y", "d", "d", "d", "d"]


@pytest.mark.parametrize("number", ["1e400", "-1e400"])
def test_a_number_beyond_a_double_is_a_trace_error(tmp_path: Path, number: str) -> None:
    result, lines = run_trace(tmp_path, f"D({number})")
    assert result.returncode == 2 and lines == []
    assert (
        result.stderr.splitlines()[0] == f"t.trace:2:{3 if number[0] == '1' else 4}: error: 1e400 is beyond the "
        f"range of a double (at most about 1.8e308)"
    )


TOPOLOGY = """\
programs:
  - name: p
    source: p.es
    inputs:
      - {topic: numbers, event: N}
    outputs:
      default: out
topics:
  numbers: {external: true, events: [N]}
"""


@pytest.mark.parametrize(
    "command",
    [
        ["test", "--trace", "t.trace", "p.es"],
        ["test", "--trace", "t.trace", "topology.yaml"],
        ["produce", "topology.yaml", "--trace", "t.trace", "--bootstrap-servers", "127.0.0.1:1"],
        ["dev", "topology.yaml", "--trace", "t.trace"],
    ],
)
def test_every_command_refuses_a_timestamp_going_back(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "p.es").write_text(PROGRAM)
    (tmp_path / "topology.yaml").write_text(TOPOLOGY)
    (tmp_path / "t.trace").write_text("[2026-01-01 00:01:00]\nN(1)\n[00:00:30]\nN(2)\n")
    result = eventscript(*command, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""  # refused before anything ran
    assert result.stderr.splitlines() == [
        "t.trace:3:1: error: time 2026-01-01T00:00:30.000000Z goes back in time: the "
        "clock is already at 2026-01-01T00:01:00.000000Z; a timestamp may not be earlier "
        "than the one before it (line 1)",
        "    [00:00:30]",
        "    ^",
    ]


def test_json_lines_as_printed_replay_like_the_trace_they_came_from(tmp_path: Path) -> None:
    """Captured traffic replays: the first stage's output, saved as JSON lines, fed to the second
    stage gives what the two-stage pipeline gives."""
    import shutil

    from conftest import ROOT

    shutil.copytree(ROOT / "topologies" / "big-trades", tmp_path / "bt")
    cwd = tmp_path / "bt"
    first = eventscript("test", "--trace", "sample.trace", "filter.es", cwd=cwd)
    assert first.returncode == 0 and first.stdout.count("\n") > 5, first.stderr
    (cwd / "filtered.jsonl").write_text(first.stdout)
    pipeline = eventscript("test", "--trace", "sample.trace", "filter.es", "three_big_trades.es", cwd=cwd)
    replay = eventscript("test", "--trace", "filtered.jsonl", "three_big_trades.es", cwd=cwd)
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == pipeline.stdout and '"ThreeBigTrades"' in replay.stdout


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        (
            '{"time": "2026-01-01T00:00:00Z", "event": "N", "value": 1}\n{"time": "2026-01-01T00:00:01Z", "event": ',
            "t.jsonl:2:1: error: not a JSON object",
        ),
        ('{"event": "N", "value": 1}', 't.jsonl:1:1: error: expected an object with "time" (ISO-8601 text)'),
        (
            '{"time": "2026-01-01T00:00:01Z", "event": "N", "value": 1}\n'
            '{"time": "2026-01-01T00:00:00Z", "event": "N", "value": 2}',
            "t.jsonl:2:1: error: time 2026-01-01T00:00:00.000000Z goes back in time",
        ),
        ('{"time": "yesterday", "event": "N", "value": 1}', "t.jsonl:1:1: error: invalid time 'yesterday'"),
    ],
)
def test_bad_json_lines_traces_are_one_message(tmp_path: Path, lines: str, says: str) -> None:
    (tmp_path / "p.es").write_text(PROGRAM)
    (tmp_path / "t.jsonl").write_text(lines + "\n")
    result = eventscript("test", "--trace", "t.jsonl", "p.es", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(says), result.stderr
    message, line, caret, *hint = result.stderr.splitlines()  # one message: the line quoted, a caret
    assert all(h.startswith("    hint: ") for h in hint)
    assert line == "    " + lines.splitlines()[message.count("t.jsonl:2:")] and caret == "    ^"


def test_json_lines_values_are_checked_as_strictly_as_a_trace(tmp_path: Path) -> None:
    (tmp_path / "p.es").write_text(PROGRAM)
    (tmp_path / "t.jsonl").write_text(
        '{"time":"2026-01-01T00:00:00.000000Z","event":"N","value":3.0,"key":[1]}\n'
        '{"time":"2026-01-01T00:00:00.000000Z","event":"N","value":3}\n'
    )
    result = eventscript("test", "--trace", "t.jsonl", "p.es", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["event"], line["value"]) for line in lines][1] == ("O", "n")
    assert lines[0]["value"]["code"] == 6 and lines[0]["value"]["message"].startswith("t.jsonl:1:1: N: expected a long")


DOOR = "in {} DoorOpened, {} DoorClosed\nout {} Left\n( DoorOpened() DoorClosed() )*\n"


def test_a_misspelt_event_in_the_trace_is_warned_about_where_it_is(tmp_path: Path) -> None:
    """``DoorClosd()`` in a hand-written trace: the output keeps its $error 1 (the language's rule),
    and stderr says once, at the first occurrence, which declared event was probably meant."""
    (tmp_path / "door.es").write_text(DOOR)
    (tmp_path / "t.trace").write_text("[2026-01-01 00:00:00]\nDoorOpened()  DoorClosd()\nDoorClosd()\nBell()\n")
    result = eventscript("test", "--trace", "t.trace", "door.es", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["value"]["code"] for line in lines if line["event"] == "$error"] == [1, 1, 1]
    assert result.stderr.splitlines() == [
        "t.trace:2:15: warning: door.es declares no input event 'DoorClosd'; did you mean 'DoorClosed'? "
        "(each such event is an $error 1 in the output)",
        "t.trace:4:1: warning: door.es declares no input event 'Bell'; the events read are: DoorClosed, "
        "DoorOpened (each such event is an $error 1 in the output)",
    ]


def test_a_topologys_trace_event_no_program_reads_is_warned_about(tmp_path: Path) -> None:
    (tmp_path / "door.es").write_text(DOOR)
    (tmp_path / "topology.yaml").write_text(
        "application: t\nprograms:\n  - name: door\n    source: door.es\n"
        "    inputs: [{topic: doors, event_from: {header: es-event}}]\n"
        "    outputs: {Left: left}\ntopics:\n  doors: {external: true, events: [DoorOpened, DoorClosed]}\n"
    )
    (tmp_path / "t.trace").write_text("[2026-01-01 00:00:00]\nDoorOpend()\nDoorOpened()\n")
    result = eventscript("test", "--trace", "t.trace", "topology.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "t.trace:2:1: warning: no program of topology.yaml reads event 'DoorOpend' from a source topic; "
        "did you mean 'DoorOpened'? (each such event is an $error 1 in the output)\n"
    )


def test_json_lines_out_of_time_order_say_how_to_sort_tails_output(tmp_path: Path) -> None:
    """Lines from `tail` of a topic of several partitions come a partition at a time; the error
    said only that time went back."""
    (tmp_path / "p.es").write_text(PROGRAM)
    (tmp_path / "t.jsonl").write_text(
        '{"time": "2026-01-01T00:00:01Z", "event": "N", "value": 1}\n'
        '{"time": "2026-01-01T00:00:00Z", "event": "N", "value": 2}\n'
    )
    result = eventscript("test", "--trace", "t.jsonl", "p.es", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.endswith(
        "(line 1)\n"
        '    {"time": "2026-01-01T00:00:00Z", "event": "N", "value": 2}\n'
        "    ^\n"
        "    hint: 'eventscript tail' prints a topic of several partitions one partition after the other: "
        "sort its lines by time first, e.g. jq -c -s 'sort_by(.time)[]' FILE\n"
    ), result.stderr


def test_a_run_that_emits_nothing_says_so_and_where_to_look(tmp_path: Path) -> None:
    """A program that never emitted printed nothing at all: no sign of a run, of a mistake or of a
    timer the trace ended before."""
    (tmp_path / "p.es").write_text(PROGRAM)
    (tmp_path / "t.trace").write_text("[2026-01-01 00:00:00]\n")
    result = eventscript("test", "--trace", "t.trace", "p.es", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr == (
        "note: no output: nothing was emitted over this trace (no output event, no $error); 'eventscript test "
        "--explain --trace t.trace p.es' shows, event by event, the state each key is in and what it waits for "
        "(a timer fires only if the trace reaches its time: end the trace with a later [timestamp])\n"
    )


DOORS = """in {string door;} Opened group(Opened.door), {string door;} Closed group(Closed.door)
out {string door;} LeftOpen
( Opened() ( Closed() | elapse[5 minutes]() { !>LeftOpen({door: group[0]}); } Closed() ) )*
"""


def test_a_timer_left_pending_by_the_trace_s_end_is_noted_after_the_output(tmp_path: Path) -> None:
    """The back door left open at 08:03 when the trace ends: its LeftOpen due 08:08 never came, and
    nothing said why (the note of an empty run said it, a run with some output did not)."""
    (tmp_path / "doors.es").write_text(DOORS)
    (tmp_path / "t.trace").write_text('[2026-01-01 08:00:00] Opened("front")\n[08:03:00] Opened("back")\n[08:06:00]\n')
    result = eventscript("test", "--trace", "t.trace", "doors.es", cwd=tmp_path)
    assert result.returncode == 0 and '"door": "front"' in result.stdout
    assert result.stderr == (
        "note: a timer was still pending when the trace ended (the first due 2026-01-01T08:08:00.000000Z); "
        "a timer fires only when the trace reaches its time: end the trace with a later [timestamp] to see it\n"
    )
    (tmp_path / "t.trace").write_text('[2026-01-01 08:00:00] Opened("front")\n[08:06:00] Closed("front")\n')
    assert eventscript("test", "--trace", "t.trace", "doors.es", cwd=tmp_path).stderr == ""  # nothing pending
