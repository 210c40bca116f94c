"""The playground's requests without a browser: diagnostics, runs (same outputs as the tester),
topologies, saved cases, the limits and the HTTP layer."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from eventscript.cli.playground_cmd import initial
from eventscript.playground import cases, examples, service
from eventscript.playground.limits import LimitExceeded, Limits

from .conftest import NESTED_SOURCES

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = ROOT / "topologies"
RUNNER = ROOT.parent / "shared" / "conformance" / "run"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _outputs(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in o.items() if k != "step"} for o in result["outputs"]]


def test_check_gives_errors_and_warnings_with_positions() -> None:
    text = 'in {string door;} Opened group(Opened.door)\nout long N\n( Opened() { !>N("one"); } )*\n'
    (prog,) = service.check({"programs": [{"name": "p.es", "text": text}]}, Limits())["programs"]
    assert not prog["ok"]
    (err,) = [d for d in prog["diagnostics"] if d["severity"] == "error"]
    assert (err["line"], err["col"]) == (3, 18) and "'string'" in err["message"]
    fixed = text.replace('!>N("one")', "!>N(1)")
    (prog,) = service.check({"programs": [{"name": "p.es", "text": fixed}]}, Limits())["programs"]
    assert prog["ok"] and [d["severity"] for d in prog["diagnostics"]] == ["warning"]


@pytest.mark.parametrize("example", [e["id"] for e in examples.catalogue() if e["kind"] == "topology"])
def test_every_shipped_topology_runs_as_the_tester_expects(example: str) -> None:
    ex = examples.load(example)
    assert ex is not None
    result = service.run(ex, Limits())
    assert "error" not in result, result.get("error")
    expected = _lines(TOPOLOGIES / example.split("/")[1] / "expected.jsonl")
    # (a topology's expected lines name the program and topic when its README's command runs it whole)
    assert [{k: v for k, v in o.items() if k in e} for o, e in zip(_outputs(result), expected)] == expected
    assert len(result["outputs"]) == len(expected)
    if ex["topology"] is not None:
        assert "<svg" in result["pipeline"]["svg"] and len(result["stages"]) == len(ex["programs"])
    for stage in result["stages"]:
        assert "<svg" in stage["automaton"]["svg"] and "0" in stage["automaton"]["nodes"]


def test_document_examples_are_offered_and_run() -> None:
    document = [e for e in examples.catalogue() if e["kind"] == "document"]
    assert len(document) >= 20
    ex = examples.load("document/three-big-trades")
    assert ex is not None and "section" in ex["title"]
    result = service.run(ex, Limits())
    assert "error" not in result and result["outputs"]


def test_a_step_names_its_outputs_and_states_are_explained() -> None:
    ex = examples.load("topologies/doors")
    result = service.run(ex, Limits())
    stage = result["stages"][0]
    timer = next(s for s in result["steps"] if s["kind"] == "timer")
    assert [result["outputs"][i]["event"] for i in timer["outputs"]] == ["LeftOpen"]
    before = next(s for s in reversed(result["steps"][: timer["i"]]) if s["key"] == timer["key"])
    waiting = stage["states"][json.dumps(before["after"]["state"])]["waiting"]
    assert {m["text"] for m in waiting} >= {"Closed()", "elapse[5 minutes]"}
    assert [stage["units"][u]["line"] for u in timer["actions"]] == [7]


def test_a_trace_error_says_where() -> None:
    ex = examples.load("topologies/doors")
    result = service.run({**ex, "trace": '[2026-01-01 08:00:00]\nOpened("front"\n'}, Limits())
    where = result["trace_error"]
    assert where["line"] in (2, 3) and f"trace:{where['line']}:{where['col']}:" in result["error"]


def test_a_trace_event_no_program_reads_is_a_placed_warning_naming_the_meant_one() -> None:
    """A misspelt name in the trace was an $error 1 output saying neither where it stood nor the
    name meant; ``eventscript test`` warned so on stderr, the page said nothing."""
    text = "in string Start, string Stop\nout string O\n( Start(x) { !>O(x); } | Stop() )*\n"
    trace = '[2026-01-01 00:00:00] Start("a")\nStrat("b") Strat("c") U("d")\n'
    result = service.run({"programs": [{"name": "p.es", "text": text}], "trace": trace}, Limits())
    consequence = "(each such event is an $error 1 in the output)"
    assert result["trace_warnings"] == [
        {"line": 2, "col": 1, "message": f"p.es declares no input event 'Strat'; did you mean 'Start'? {consequence}"},
        {
            "line": 2,
            "col": 23,
            "message": f"p.es declares no input event 'U'; the events read are: Start, Stop {consequence}",
        },
    ]
    fine = service.run({"programs": [{"name": "p.es", "text": text}], "trace": trace.split("\n")[0]}, Limits())
    assert "trace_warnings" not in fine


def test_a_topology_trace_event_no_program_reads_is_a_placed_warning() -> None:
    folder = TOPOLOGIES / "big-trades"
    body = {
        "programs": [{"name": p.name, "text": p.read_text()} for p in sorted(folder.glob("*.es"))],
        "topology": (folder / "topology.yaml").read_text(),
        "trace": '[2026-01-01 00:00:00]\nTrad({traderID: "T1"})\n',
    }
    (warning,) = service.run(body, Limits())["trace_warnings"]
    assert (warning["line"], warning["col"]) == (2, 1)
    assert warning["message"].startswith(
        "no program of the topology reads event 'Trad' from a source topic; did you mean 'Trade'?"
    )


def test_programs_with_errors_do_not_run() -> None:
    result = service.run({"programs": [{"name": "p.es", "text": "in {} A\nA( {"}], "trace": ""}, Limits())
    assert "fix the errors" in result["error"] and result["programs"][0]["diagnostics"]


EXTERNAL = 'function double fact(long): "math:factorial"\nin {} Go\nout double D\nGo() { !>D(fact(5)); }\n'


def test_externals_are_refused_unless_allowed() -> None:
    body = {"programs": [{"name": "p.es", "text": EXTERNAL}], "trace": "[2026-01-01 00:00:00] Go()"}
    refused = service.run(body, Limits())
    assert "--allow-externals" in refused["error"] and "fact" in refused["error"]
    allowed = service.run(body, Limits(allow_externals=True))
    assert _outputs(allowed) == [{"time": "2026-01-01T00:00:00.000000Z", "event": "D", "value": 120.0}]


COUNTER = "in {} Tick\nout long N\n{ n = 0; }\n( Tick() { n = n + 1; !>N(n); } )*\n"


def _ticks(n: int) -> str:
    return "[2026-01-01 00:00:00]\n" + "Tick()\n" * n


@pytest.mark.parametrize(
    ("limits", "words"),
    [
        (Limits(outputs=5), "more than 5 events"),
        (Limits(steps=7), "more than 7 steps"),
        (Limits(run_seconds=0.0), "longer than 0 s"),
        (Limits(trace_bytes=100), "over the playground's limit of 100"),
    ],
)
def test_limits_stop_a_run_with_a_message(limits: Limits, words: str) -> None:
    result = service.run({"programs": [{"name": "p.es", "text": COUNTER}], "trace": _ticks(50)}, limits)
    assert words in result["error"]


TIMER_EVERY_MILLISECOND = """in {} Start
out {} Tick
Start() ( elapse[1 millisecond]() { !>Tick({}); } )*
"""


def test_a_stopped_run_says_where_in_the_trace_it_stopped_and_shows_what_it_did() -> None:
    """A program whose timer fires every millisecond, over a day of trace, never gets to the
    trace's end in the playground: the page showed only that a limit stopped it. The message says
    how far in the trace's time it got, and that timers firing often are a cause; the steps and
    outputs up to there are shown."""
    trace = "[2026-01-01 00:00:00] Start()\n[2026-01-02 00:00:00]\n"
    result = service.run({"programs": [{"name": "p.es", "text": TIMER_EVERY_MILLISECOND}], "trace": trace}, Limits())
    assert "more than 20000 events" in result["error"]
    assert "stopped at 2026-01-01T00:00:20.001000Z, after 20003 steps and 20001 outputs" in result["error"]
    assert "if timers fire often" in result["error"]
    assert len(result["steps"]) == 20003 and len(result["outputs"]) == 20001
    assert [s["kind"] for s in result["steps"][:3]] == ["start", "event", "timer"]
    assert result["outputs"][0] == {"time": "2026-01-01T00:00:00.001000Z", "event": "Tick", "value": {}, "step": 2}
    assert result["stages"][0]["name"] == "p"


def test_a_stopped_topology_run_shows_what_it_did_and_its_pipeline() -> None:
    ex = examples.load("topologies/big-trades")
    assert ex is not None
    result = service.run(ex, Limits(steps=6))
    assert "more than 6 steps" in result["error"] and len(result["steps"]) == 6
    assert "<svg" in result["pipeline"]["svg"] and [s["name"] for s in result["stages"]] == [
        "filter",
        "three-big-trades",
    ]


def test_a_run_stopped_inside_a_step_shows_whole_steps_only() -> None:
    """The step limit met by stage two's step, fed from inside stage one's: stage one's step was
    shown as one no instance took (its `after` unset), its outputs half there (review)."""
    one = "in {long x;} A\nout long B\n( A(a) { !>B(a.x); !>B(a.x + 1); } )*\n"
    two = "in long B\nout long C\n( B(b) { !>C(b); } )*\n"
    trace = "[2026-01-01 00:00:00]\n" + "\n".join(f"A({{x: {i}}})" for i in range(1, 6))
    body = {"programs": [{"name": "one.es", "text": one}, {"name": "two.es", "text": two}], "trace": trace}
    for steps in (4, 5, 7):
        result = service.run(body, Limits(steps=steps))
        shown = result["steps"]
        assert "steps, the playground's limit" in result["error"]
        assert f"after {len(shown)} steps and {len(result['outputs'])} outputs" in result["error"]
        assert all(s["after"] is not None for s in shown), steps
        indices = {s["i"] for s in shown}
        assert all(s["parent"] is None or s["parent"] in indices for s in shown)
        assert all(o.get("step", -1) in indices for o in result["outputs"])


def test_program_size_and_count_limits() -> None:
    with pytest.raises(LimitExceeded, match="over the playground's limit of 10"):
        service.check({"programs": [{"name": "p.es", "text": COUNTER}]}, Limits(program_bytes=10))
    with pytest.raises(LimitExceeded, match="3 programs"):
        service.check({"programs": [{"name": f"p{i}.es", "text": COUNTER} for i in range(3)]}, Limits(programs=2))


def test_save_case_writes_a_conformance_case_that_passes(tmp_path: Path) -> None:
    ex = examples.load("topologies/doors")
    saved = cases.save_case({**ex, "name": "doors-left-open"}, Limits(), tmp_path)
    folder = Path(saved["path"])
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "expected.jsonl", "input.trace", "program.es"]
    assert _lines(folder / "expected.jsonl") == _lines(TOPOLOGIES / "doors" / "expected.jsonl")
    again = cases.save_case({**ex, "name": "doors-left-open"}, Limits(), tmp_path)
    assert "exists" in again["error"]
    if RUNNER.exists():
        done = _conformance(folder)
        assert done.returncode == 0 and "1 passed, 0 failed" in done.stdout, done.stdout + done.stderr


def test_a_saved_case_s_readme_reads_as_written(tmp_path: Path) -> None:
    """It said "The the expected output is what ..." (a sentence pasted after its own article)."""
    ex = examples.load("topologies/doors")
    cases.save_case({**ex, "name": "doors-readme"}, Limits(), tmp_path)
    text = (tmp_path / "doors-readme" / "README.md").read_text()
    assert "The the" not in text
    assert "\n\nThe expected output is what `eventscript test` emitted when it was saved" in text


def _conformance(*folders: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ES_TEST_CMD": f"{sys.executable} -m eventscript.cli.main test"}
    return subprocess.run(
        [sys.executable, str(RUNNER), *map(str, folders)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("example", "outputs"), [("topologies/doors", "1 event"), ("document/three-big-trades-pipeline", "5 events")]
)
def test_a_saved_case_s_command_replays_it_from_its_folder(tmp_path: Path, example: str, outputs: str) -> None:
    """The page told to run a saved case with ``../shared/conformance/run FOLDER``: a path valid only
    from the project's folder, and not beside an installed package."""
    ex = examples.load(example)
    saved = cases.save_case({**ex, "name": "saved"}, Limits(), tmp_path / "cases")
    folder = Path(saved["path"])
    assert saved["kind"] == "conformance" and saved["command"] in (folder / "README.md").read_text()
    done = _replay(folder, saved["command"])
    assert done.returncode == 0 and f"ok: {outputs} as expected" in done.stdout, done.stdout + done.stderr


def test_save_case_of_a_pipeline_writes_stages(tmp_path: Path) -> None:
    ex = examples.load("document/three-big-trades-pipeline")
    saved = cases.save_case({**ex, "name": "trades"}, Limits(), tmp_path)
    names = saved["files"]
    assert "stage1.es" in names and "stage2.es" in names and "program.es" not in names
    if RUNNER.exists():
        assert _conformance(Path(saved["path"])).returncode == 0


def test_save_case_of_a_topology_writes_a_topology_test_that_passes(tmp_path: Path) -> None:
    """A topology does not fit the conformance format: it is saved as the shipped topologies are,
    and ``eventscript test`` replays it from its folder with the saved expected output."""
    ex = examples.load("topologies/big-trades")
    saved = cases.save_case({**ex, "name": "big-trades"}, Limits(), tmp_path)
    folder = Path(saved["path"])
    assert saved["kind"] == "topology" and saved["command"] == cases.TOPOLOGY_COMMAND
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "expected.jsonl",
        "filter.es",
        "sample.trace",
        "three_big_trades.es",
        "topology.yaml",
    ]
    assert _lines(folder / "expected.jsonl") == _lines(TOPOLOGIES / "big-trades" / "expected.jsonl")
    assert cases.TOPOLOGY_COMMAND in (folder / "README.md").read_text()
    done = _replay(folder)
    assert done.returncode == 0 and "ok: 5 events as expected" in done.stdout, done.stdout + done.stderr
    # the replay compares: an expected line changed makes it fail
    (folder / "expected.jsonl").write_text((folder / "expected.jsonl").read_text().replace("15000.0", "15001.0"))
    assert _replay(folder).returncode == 1


def _replay(folder: Path, command: str = cases.TOPOLOGY_COMMAND) -> subprocess.CompletedProcess[str]:
    """The saved README's command, run in the saved folder."""
    args = command.split()[1:]
    return subprocess.run(
        [sys.executable, "-m", "eventscript.cli.main", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_initial_content_of_a_topology_file() -> None:
    opened = initial([str(TOPOLOGIES / "big-trades" / "topology.yaml")], None)
    assert [p["name"] for p in opened["programs"]] == ["filter.es", "three_big_trades.es"]
    assert opened["topology"].startswith("#") and "Trade(" in opened["trace"]


def test_a_topology_with_programs_in_subfolders_opens_runs_and_saves(nested_topology: Path, tmp_path: Path) -> None:
    """A topology's ``source:`` may name a program in a folder below it: the page gets the program
    under that name, the run finds it there (same outputs as the flat topology), each stage names
    its file, and the saved topology test keeps the folders and replays."""
    opened = initial([str(nested_topology)], None)
    assert [p["name"] for p in opened["programs"]] == list(NESTED_SOURCES.values())
    assert service.check(opened, Limits())["topology"] == {"diagnostics": []}
    result = service.run(opened, Limits())
    assert "error" not in result, result.get("error")
    assert _outputs(result) == _lines(TOPOLOGIES / "big-trades" / "expected.jsonl")
    assert [st["source"] for st in result["stages"]] == list(NESTED_SOURCES.values())
    saved = cases.save_case({**opened, "name": "nested"}, Limits(), tmp_path / "cases")
    folder = Path(saved["path"])
    assert set(NESTED_SOURCES.values()) <= set(saved["files"])
    assert all(
        (folder / name).read_text() == (nested_topology.parent / name).read_text() for name in NESTED_SOURCES.values()
    )
    done = _replay(folder)
    assert done.returncode == 0 and "ok: 5 events as expected" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("source", ["../filter.es", "/tmp/filter.es", "stages/../../filter.es"])
def test_a_topology_source_outside_its_folder_is_refused_with_what_to_do(nested_topology: Path, source: str) -> None:
    text = nested_topology.read_text().replace("source: stages/filter.es", f"source: {source}")
    nested_topology.write_text(text)
    with pytest.raises(ValueError) as refused:
        initial([str(nested_topology)], None)
    message = str(refused.value)
    assert f"program source {source!r}" in message and "in its folder or in folders below it" in message, message
    assert "copy the program there" in message


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _post(url: str, body: bytes) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _announce_large_body(url: str, length: int) -> tuple[int, dict[str, Any]]:
    """A request whose headers announce a body over the limit: answered before it is sent."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.putrequest("POST", "/api/run")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(length))
        conn.endheaders()
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_http_serves_the_page_and_answers_json(playground: tuple[str, Any]) -> None:
    url, config = playground
    status, page = _get(url + "/")
    assert status == 200 and b"app.js" in page
    assert _get(url + "/static/app.js")[0] == 200
    assert _get(url + "/static/../server.py")[0] == 404
    assert _get(url + "/api/examples/../../server.py")[0] == 404
    status, listed = _get(url + "/api/examples")
    assert status == 200 and any(e["id"] == "topologies/big-trades" for e in json.loads(listed))
    status, answer = _post(
        url + "/api/check", json.dumps({"programs": [{"name": "p.es", "text": "in {} A\nA("}]}).encode()
    )
    assert status == 200 and answer["programs"][0]["diagnostics"][0]["line"] == 2
    status, answer = _post(url + "/api/check", b"not json")
    assert status == 400 and "not JSON" in answer["error"]
    status, answer = _announce_large_body(url, config.max_body + 1)
    assert status == 413 and "limit" in answer["error"]
    for name in ("../x.es", "topology.yaml", ".es", "sub/../x.es", "/x.es", "sub//x.es", "./x.es"):
        status, answer = _post(url + "/api/check", json.dumps({"programs": [{"name": name, "text": ""}]}).encode())
        assert status == 400 and "file name ending in .es" in answer["error"]
    twice = [{"name": "a.es", "text": ""}, {"name": "a.es", "text": ""}]
    status, answer = _post(url + "/api/check", json.dumps({"programs": twice}).encode())
    assert status == 400 and "two programs" in answer["error"]


def test_the_command_prints_its_address_and_serves(tmp_path: Path) -> None:
    """``eventscript playground FILE --port 0`` prints the address it listens on; the page it
    serves opens with the file named."""
    program = TOPOLOGIES / "doors" / "left_open.es"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "eventscript.cli.main",
            "playground",
            str(program),
            "--port",
            "0",
            "--cases-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("EventScript playground on http://127.0.0.1:"), line + (
            proc.stderr.read() if proc.stderr else ""
        )
        url = line.split()[3].rstrip("/")
        status, body = _get(url + "/api/initial")
        opened = json.loads(body)
        assert status == 200 and [p["name"] for p in opened["programs"]] == ["left_open.es"]
        assert opened["trace"] == (TOPOLOGIES / "doors" / "sample.trace").read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_command_says_when_a_file_cannot_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from eventscript.cli.main import main

    assert main(["playground", str(tmp_path / "missing.es")]) == 2
    err = capsys.readouterr().err
    assert "missing.es" in err and "cannot read" in err
    assert main(["playground", str(tmp_path / "compiled.json")]) == 2
    assert "program sources (.es)" in capsys.readouterr().err


def test_an_external_that_cannot_load_is_a_message() -> None:
    text = 'function double f(long): "no_such_module_here:f"\nin {} Go\nout double D\nGo() { !>D(f(5)); }\n'
    body = {"programs": [{"name": "p.es", "text": text}], "trace": "[2026-01-01 00:00:00] Go()"}
    result = service.run(body, Limits(allow_externals=True))  # (allowed: resolved when compiled, so reported there)
    (told,) = result["programs"][0]["diagnostics"]
    assert "fix the errors" in result["error"] and "no_such_module_here" in told["message"] + (told["hint"] or "")


def _topology_check_output(ex: dict[str, Any], yaml_text: str, folder: Path, capsys: Any) -> str:
    """What ``eventscript topology check`` prints for the same files, paths relative to them."""
    from eventscript.cli.main import main

    for p in ex["programs"]:
        (folder / p["name"]).write_text(p["text"])
    (folder / "topology.yaml").write_text(yaml_text)
    capsys.readouterr()
    main(["topology", "check", str(folder / "topology.yaml")])
    seen = capsys.readouterr()
    return (seen.out + seen.err).replace(str(folder) + "/", "")


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (("event: FilteredTrade", "event: FilteredTrades"), ["topology.yaml:27:16"]),
        (("partitions: 3}", "partitions: 3x}"), ["topology.yaml:35:28", "topology.yaml:36:34", "topology.yaml:37:31"]),
        (("source: filter.es", "source: filtr.es"), ["topology.yaml:14:13"]),  # the missing program only
        (("programs:", "programs: ["), ["topology.yaml:13:3"]),
    ],
    ids=["wiring", "schema", "file", "yaml"],
)
def test_check_gives_a_topologys_errors_placed_as_topology_check_prints_them(
    change: tuple[str, str], where: list[str], tmp_path: Path, capsys: Any
) -> None:
    ex = examples.load("topologies/big-trades")
    assert service.check(ex, Limits())["topology"] == {"diagnostics": []}
    broken = ex["topology"].replace(*change)
    found = service.check({**ex, "topology": broken}, Limits())["topology"]["diagnostics"]
    errors = [d for d in found if d["severity"] == "error"]
    assert [d["where"] for d in errors] == where
    printed = _topology_check_output(ex, broken, tmp_path, capsys)
    for d in found:
        assert f"{d['where']}: " in printed
        assert d["message"].split(": ", 1)[-1] in printed  # (a schema error's "invalid topology:" heads its list)
        assert d["hint"] is None or d["hint"] in printed


def test_an_unset_environment_variable_is_a_warning_placed_where_topology_check_places_it(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``${VAR}`` with no default and VAR unset: a warning of ``topology check`` (its structure
    needs no deployment environment), so of the live check too, underlined at the variable with the
    hint that says how to set it or default it."""
    monkeypatch.delenv("PLAYGROUND_NO_SUCH_VARIABLE", raising=False)
    ex = examples.load("topologies/big-trades")
    default = "${KAFKA_BOOTSTRAP_SERVERS:-localhost:9092}"
    assert default in ex["topology"]
    broken = ex["topology"].replace(default, "${PLAYGROUND_NO_SUCH_VARIABLE}")
    (found,) = service.check({**ex, "topology": broken}, Limits())["topology"]["diagnostics"]
    line, col = _place_of(broken, "${PLAYGROUND_NO_SUCH_VARIABLE}")
    assert (found["severity"], found["line"], found["col"]) == ("warning", line, col)
    assert found["message"].startswith(
        "kafka.bootstrap_servers: environment variable PLAYGROUND_NO_SUCH_VARIABLE is not set"
    )
    assert "set PLAYGROUND_NO_SUCH_VARIABLE where the workers run" in found["hint"] and ":-default}" in found["hint"]
    shown = f"topology.yaml:{line}:{col}: warning: " + found["message"]
    assert shown in _topology_check_output(ex, broken, tmp_path, capsys)
    monkeypatch.setenv("PLAYGROUND_NO_SUCH_VARIABLE", "localhost:9092")  # set: no finding
    assert service.check({**ex, "topology": broken}, Limits())["topology"] == {"diagnostics": []}


def _place_of(text: str, what: str) -> tuple[int, int]:
    before = text[: text.index(what)]
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


def test_a_topologys_check_does_not_import_external_functions_unless_allowed() -> None:
    ex = examples.load("topologies/big-trades")
    declared = 'function double nothing(long): "no_such_module_for_the_playground:f"\n'
    programs = [{**p, "text": declared + p["text"]} if p["name"] == "filter.es" else p for p in ex["programs"]]
    body = {**ex, "programs": programs}
    assert service.check(body, Limits())["topology"] == {"diagnostics": []}
    allowed = service.check(body, Limits(allow_externals=True))["topology"]["diagnostics"]
    assert any("program filter does not compile" in d["message"] for d in allowed), allowed


def test_a_program_warning_stays_in_its_program_panel_not_the_topology_s() -> None:
    """``topology check`` reports the programs' warnings too (code ``program-warning``); the page
    shows them in each program's editor, so the topology's panel, whose lines they are not on,
    leaves them out."""
    ex = examples.load("topologies/windows-alarm")
    assert ex is not None and ex["topology"] is not None
    programs = [{**p, "text": p["text"].replace("eventscript: allow", "")} for p in ex["programs"]]
    answer = service.check({"programs": programs, "topology": ex["topology"]}, Limits())
    warned = [d for p in answer["programs"] for d in p["diagnostics"] if d["severity"] == "warning"]
    assert warned, "the windows-alarm programs have warnings without their allow comments"
    assert not [d for d in answer["topology"]["diagnostics"] if "program " in d["message"] and d["line"] == 1]


def test_a_program_panel_gives_each_warning_s_code_and_leaves_out_the_accepted() -> None:
    """The page shows the code an allow comment names; an accepted warning is not shown."""
    ex = examples.load("topologies/windows-alarm")
    assert ex is not None
    (alarm,) = [p for p in ex["programs"] if p["name"] == "alarm.es"]
    assert "eventscript: allow ambiguous" in alarm["text"]
    (shipped,) = service.check({"programs": [alarm]}, Limits())["programs"]
    assert shipped["diagnostics"] == []
    bare = {**alarm, "text": alarm["text"].replace("eventscript: allow ambiguous", "")}
    (warned,) = service.check({"programs": [bare]}, Limits())["programs"]
    assert [(d["code"], d["line"]) for d in warned["diagnostics"]] == [("ambiguous", 8)]
