"""``eventscript state`` and ``eventscript reset`` without a broker or a worker: one clear line
and a non-zero status (the answers themselves are tested in tests/kafka/test_state_*.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_cli_inputs import ECHO, NO_BROKER, TOPOLOGY

from eventscript.cli.main import build_parser, main


@pytest.fixture
def topo(tmp_path: Path) -> Path:
    (tmp_path / "echo.es").write_text(ECHO)
    path = tmp_path / "topology.yaml"
    path.write_text(TOPOLOGY.format(broker=NO_BROKER))
    return path


def json_server(reply: Any, asked: list[tuple[str, str, str | None]]) -> Any:
    """A stand-in worker on a free port answering every GET with ``reply()`` (status, JSON body),
    noting in ``asked`` who was asked (its ``name``), the path and the Authorization header."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import orjson

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append((self.server.name, self.path, self.headers.get("Authorization")))  # type: ignore[attr-defined]
            status, body = reply()
            raw = orjson.dumps(body)
            self.send_response(status)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_dump_and_reset_say_cannot_reach_kafka_once(topo: Path) -> None:
    cli = [sys.executable, "-m", "eventscript.cli.main"]
    commands = {"dump": [*cli, "state", "dump", str(topo)], "reset": [*cli, "reset", str(topo), "--dry-run"]}
    procs = {
        name: subprocess.Popen(cmd, cwd=topo.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, cmd in commands.items()
    }
    for name, proc in procs.items():
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"{name} did not give up within 60 s")
        lines = err.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, (name, err[:2000])
        assert lines[0].startswith(f"error: cannot reach Kafka at {NO_BROKER}"), (name, lines[0])


def test_asking_without_an_address_or_a_worker(topo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["state", str(topo), "--key", "a"]) == 2  # health.port is 0: nothing to ask
    assert capsys.readouterr().err == (
        "error: the topology serves no HTTP port (health.port is 0): give a worker's address with --url, e.g. "
        "--url http://127.0.0.1:8080 for a run or dev started with --health-port 8080 (the topology also needs "
        "state_query: {enabled: true})\n"
    )
    assert main(["state", str(topo), "--url", "http://127.0.0.1:1"]) == 2  # (echo is ungrouped: no key)
    assert "cannot reach http://127.0.0.1:1" in capsys.readouterr().err
    assert main(["state", "dump", str(topo), str(topo)]) == 2
    assert "give one topology" in capsys.readouterr().err
    assert main(["state", str(topo), "--program", "nope", "--key", "a"]) == 2
    assert f"no program named 'nope' in {topo}" in capsys.readouterr().err


def test_asking_a_grouped_program_without_a_key(topo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A grouped program's key is needed: said before any worker is asked (a new user's walk got "cannot
    reach http://...?" instead); an ungrouped program is asked without one, and no empty query."""
    assert main(["state", str(topo), "--url", "http://127.0.0.1:1"]) == 2  # echo: ungrouped
    assert "cannot reach http://127.0.0.1:1/state/echo: " in capsys.readouterr().err
    (topo.parent / "echo.es").write_text(ECHO.replace("in string S", "in string S group(S)"))
    assert main(["state", str(topo), "--url", "http://127.0.0.1:1"]) == 2
    assert capsys.readouterr().err.startswith("error: program echo is grouped: name the key to ask about with --key K")


def test_a_key_that_does_not_fit_the_group_is_refused_before_asking(
    topo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A JSON array of two values for a program grouped by one string was sent as the string
    '["front", 2]' (answer: absent); it is refused, saying what the program groups by and how to
    write its key, before any worker is asked (none listens at the URL: no "cannot reach")."""
    url = ["--url", "http://127.0.0.1:1"]
    assert main(["state", str(topo), "--key", "a", *url]) == 2  # echo is ungrouped: no key
    assert capsys.readouterr().err == "error: program echo is not grouped (it has one instance): ask without a key\n"
    (topo.parent / "echo.es").write_text(ECHO.replace("in string S", "in string S group(S)"))
    assert main(["state", str(topo), "--key", '["front", 2]', *url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "error: program echo is grouped by one string, and --key '[\"front\", 2]' is a JSON array of 2"
    )
    assert "one-element array" in err and "cannot reach" not in err
    for fits in ("front", '["front"]', "42", '["[1, 2]"]'):  # a string key written as documented
        assert main(["state", str(topo), "--key", fits, *url]) == 2
        assert "cannot reach http://127.0.0.1:1/state/echo?key=" in capsys.readouterr().err, fits


def test_a_key_of_several_components_must_be_an_array_of_as_many(
    topo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two = "in {string site; long n;} S group(S.site, S.n)\nout string O\n( S(x) { !>O(x.site); } )*\n"
    (topo.parent / "echo.es").write_text(two)
    assert main(["state", str(topo), "--key", "front", "--url", "http://127.0.0.1:1"]) == 2
    assert "program echo is grouped by 2 components (string, long)" in capsys.readouterr().err
    assert main(["state", str(topo), "--key", '["lab", 3]', "--url", "http://127.0.0.1:1"]) == 2
    assert "cannot reach http://127.0.0.1:1/state/echo?key=" in capsys.readouterr().err


def test_reset_options(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["reset", "t.yaml", "--to-datetime", "2026-01-01T08:00:00"])
    assert args.to_datetime.isoformat() == "2026-01-01T08:00:00+00:00"  # UTC unless it says otherwise
    with pytest.raises(SystemExit):
        build_parser().parse_args(["reset", "t.yaml", "--to-datetime", "yesterday"])
    assert "ISO-8601" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        build_parser().parse_args(["reset", "t.yaml", "--to-earliest", "--to-offsets", "in:0=1"])


def test_state_asks_the_owner_a_worker_points_to(topo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A worker that neither owns the key's task nor stands by for it answers 421 naming the owner's
    URL (on Apache Kafka, which lists the group's members); ``eventscript state`` asks it once."""
    answer = {
        "program": "echo",
        "key": ["a"],
        "task": 1,
        "status": "present",
        "note": None,
        "instance": {
            "state": 1,
            "ended": False,
            "accepting": False,
            "waiting": [{"marker": 0, "text": "S(x)", "line": 3, "col": 3, "time": False}],
            "variables": [{"name": "x", "type": "string", "value": "a"}],
            "timer": None,
            "origin": None,
            "origin_why": "not kept: a program without timers",
        },
        "last_record": {"known": False, "why": "not kept"},
        "committed": {"position": {"strings:1": 7}, "changelog_offset": 3, "record_clock": None},
        "served_by": {"worker": "w2", "role": "owner"},
        "owner": {"worker": "w2"},
    }
    (topo.parent / "echo.es").write_text(ECHO.replace("in string S", "in string S group(S)"))
    asked: list[tuple[str, str, str | None]] = []
    owner = json_server(lambda: (200, answer), asked)
    owner.name = "owner"  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{owner.server_address[1]}"
    other = json_server(
        lambda: (421, {"error": "ask its owner", "task": 1, "owner": {"known": True, "url": url}}), asked
    )
    other.name = "other"  # type: ignore[attr-defined]
    try:
        assert (
            main(
                [
                    "state",
                    str(topo),
                    "--key",
                    "a",
                    "--url",
                    f"http://127.0.0.1:{other.server_address[1]}",
                    "--token",
                    "t0k",
                ]
            )
            == 0
        )
    finally:
        owner.shutdown()
        other.shutdown()
    assert [(who, path) for who, path, _ in asked] == [("other", "/state/echo?key=a"), ("owner", "/state/echo?key=a")]
    assert all(auth == "Bearer t0k" for _, _, auth in asked)
    text = capsys.readouterr().out
    assert 'echo key ["a"] (task 1): present' in text and "waits for S(x)@3:3" in text
    assert "as of the commit at strings:1=7" in text and 'x (string) = "a"' in text


def test_a_worker_that_names_no_owner_is_not_an_absent_key(topo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Asked while it was still joining its group, a worker answered 421 with no owner known; the
    command printed "ask its owner" naming none, with exit status 1, the status of ``absent``. And
    ``--url 127.0.0.1:8080`` (no scheme) was refused as "unknown url type: 127.0.0.1"."""
    (topo.parent / "echo.es").write_text(ECHO.replace("in string S", "in string S group(S)"))
    asked: list[tuple[str, str, str | None]] = []
    why = "no member of group echo.echo lists task 1 (a rebalance, or a broker that does not list members)"
    refusal = {"error": "this worker neither owns task 1 (the key's) nor stands by for it: ask its owner"}
    worker = json_server(lambda: (421, {**refusal, "task": 1, "owner": {"known": False, "why": why}}), asked)
    worker.name = "worker"
    try:
        status = main(["state", str(topo), "--key", "a", "--url", f"127.0.0.1:{worker.server_address[1]}"])
    finally:
        worker.shutdown()
    assert status == 2
    assert [(who, path) for who, path, _ in asked] == [("worker", "/state/echo?key=a")]
    assert capsys.readouterr().err == (
        f"error: {refusal['error']}; the owner is not known ({why}): ask again once the workers are ready "
        "(/readyz), or ask each worker with --url\n"
    )


def test_an_ended_key_is_printed_with_when_and_why_and_its_last_record() -> None:
    from eventscript.cli.state_cmds import answer_text

    text = "\n".join(
        answer_text(
            {
                "program": "doors",
                "key": ["front"],
                "task": 0,
                "status": "ended",
                "instance": None,
                "ended": {
                    "at": "2026-01-01T08:10:00.000000Z",
                    "why": "terminated",
                    "explained": "the program reached its end for this key",
                    "kept_until": "2026-01-02T08:10:01.000000Z",
                },
                "last_record": {"known": True, "record": "closed:2:41", "time": "2026-01-01T08:10:00.000000Z"},
                "committed": {"position": {"closed:2": 42}, "changelog_offset": 9, "record_clock": None},
                "served_by": {"worker": "w1", "role": "owner"},
            }
        )
    )
    assert 'doors key ["front"] (task 0): ended' in text
    assert "ended at 2026-01-01T08:10:00.000000Z (terminated: the program reached its end" in text
    assert "remembered until 2026-01-02T08:10:01.000000Z" in text
    assert "last record taken: closed:2:41 at 2026-01-01T08:10:00.000000Z" in text


def test_the_owner_is_said_in_words_and_only_when_another_worker_owns_the_key() -> None:
    """The owner's own answer printed "owner: worker w1, this_worker True" under "answered by
    worker w1 from its owner store" (docs/operations.md shows no such line); a standby's printed
    the raw fields; an absent key printed a "last record taken: not kept: ..." of no instance."""
    from eventscript.cli.state_cmds import answer_text

    base = {
        "program": "doors",
        "key": ["front"],
        "task": 0,
        "instance": None,
        "committed": {"position": {"opened:0": 5}, "changelog_offset": 2, "record_clock": None},
        "last_record": {"known": False, "why": "not kept: the instance was last written without it"},
    }
    by_owner = answer_text(
        {
            **base,
            "status": "absent",
            "served_by": {"worker": "w1", "role": "owner"},
            "owner": {"worker": "w1", "this_worker": True},
        }
    )
    assert by_owner == [
        'doors key ["front"] (task 0): absent',
        "  answered by worker w1 from its owner store",
        "  as of the commit at opened:0=5",
    ]
    by_standby = answer_text(
        {
            **base,
            "status": "present",
            "instance": {"state": 1, "ended": False, "waiting": [], "variables": [], "timer": None, "origin": "x"},
            "served_by": {"worker": "w2", "role": "standby", "freshness": "applied to changelog offset 2"},
            "owner": {
                "known": True,
                "member": "m-1",
                "client_id": "eventscript",
                "host": "10.0.0.7",
                "url": "http://10.0.0.7:8080",
                "url_assumes": "every worker serves its HTTP port on the same number",
            },
        }
    )
    assert (
        "  owner: m-1 (client eventscript) on 10.0.0.7, http://10.0.0.7:8080 "
        "(assuming every worker serves its HTTP port on the same number)"
    ) in by_standby
    assert "  last record taken: not kept: the instance was last written without it" in by_standby
    unknown = answer_text(
        {**base, "status": "present", "served_by": {}, "owner": {"known": False, "why": "a rebalance"}}
    )
    assert "  owner: not known (a rebalance)" in unknown


def test_reset_refuses_a_state_folder_a_running_worker_holds(topo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A worker of this machine holds its program's state folder (``cli/state_lock.py``): reset
    deleted its stores under it where the group's members were not seen (it ran without them)."""
    from eventscript.cli.state_lock import lock_state_folders
    from eventscript.topology.config import load_topology

    t = load_topology(topo)
    folder = t.state_path(t.programs[0])
    (folder / "task-0").mkdir(parents=True)
    with lock_state_folders(t, None, "stop it"):  # (as `run` holds it)
        assert main(["reset", str(topo), "--local-only"]) == 2
        err = capsys.readouterr().err
        assert "is in use" in err and "stop the worker running it on this machine, then reset" in err, err
        assert (folder / "task-0").is_dir()
    assert main(["reset", str(topo), "--local-only"]) == 0
    assert not folder.exists()


def test_a_state_folder_that_cannot_be_made_is_one_line_not_a_traceback(
    topo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = topo.read_text()
    (topo.parent / "taken").write_text("a file where the state folder should be")
    topo.write_text(text + "\nstate_dir: taken\n")
    assert main(["run", str(topo)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot use the state folder of program") and "state_dir" in err, err


@pytest.mark.parametrize(
    ("state", "members", "refused"), [("STABLE", ["eventscript@/10.0.0.7"], True), ("EMPTY", [], False)]
)
def test_a_dry_run_says_when_the_reset_would_be_refused_now(
    topo: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    state: str,
    members: list[str],
    refused: bool,
) -> None:
    """A dry run beside running workers printed its plan and 'nothing changed' only; the reset
    itself was then refused for the group's members (an operator's walk)."""
    from eventscript.kafka import reset

    monkeypatch.setattr(reset, "plan_reset", lambda topo, cfg, **_: reset.ResetPlan(cfg.name, topo.group_id(cfg)))
    monkeypatch.setattr(reset, "group_members", lambda topo, cfg: (state, members))
    assert main(["reset", str(topo), "--dry-run"]) == 0
    out = capsys.readouterr().out
    said = "note: run now, the reset would be refused: group eventscript.echo is stable with members eventscript@/"
    assert (said in out) is refused, out
    assert out.endswith("(dry run: nothing changed)\n")


@pytest.mark.parametrize(
    ("consumer", "said"),
    [
        ("", "session.timeout.ms: 45 s by default, 6 s for the workers of 'eventscript dev', after they stopped"),
        ("  consumer: {session.timeout.ms: 10000}\n", "session.timeout.ms: 10 s, after they stopped"),
    ],
)
def test_a_refusal_quotes_the_session_timeout_that_applies(
    topo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, consumer: str, said: str
) -> None:
    """A reset aimed at 'eventscript dev''s broker quoted 45 s where dev's workers leave after 6 s:
    without a timeout in the topology, both are said; a timeout it sets applies to every worker."""
    from eventscript.kafka import reset

    topo.write_text(topo.read_text().replace("programs:\n", consumer + "programs:\n", 1))
    monkeypatch.setattr(reset, "plan_reset", lambda topo, cfg, **_: reset.ResetPlan(cfg.name, topo.group_id(cfg)))
    monkeypatch.setattr(reset, "group_members", lambda topo, cfg: ("STABLE", ["eventscript@/10.0.0.7 (static: w-0)"]))
    assert main(["reset", str(topo), "--dry-run"]) == 0
    assert f"stay members until their session times out ({said})" in capsys.readouterr().out


def test_a_reset_refused_on_a_broker_that_lists_no_members_does_not_blame_a_crash(topo: Path) -> None:
    """On dev's broker (Tansu lists no members) a reset after 'eventscript run' was stopped cleanly
    said "A worker that crashed leaves when its session times out": a stopped static member stays
    too. A broker that lists its members still tells the two apart."""
    from eventscript.kafka.reset import _members_refusal
    from eventscript.topology.config import load_topology

    unlisted = _members_refusal(load_topology(topo), "g", "STABLE", [])
    assert "crashed leaves" not in unlisted
    assert "The broker lists no members: workers stopped with static membership (as 'eventscript run'" in unlisted
    listed = _members_refusal(load_topology(topo), "g", "STABLE", ["eventscript@/10.0.0.1"])
    assert "with members eventscript@/10.0.0.1" in listed and "A worker that crashed leaves" in listed


def test_a_refused_token_says_where_the_command_takes_it(topo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A worker with state_query.token refused the request with "send Authorization: Bearer
    <state_query.token>": the HTTP header, not the command's --token or $EVENTSCRIPT_STATE_TOKEN."""
    (topo.parent / "echo.es").write_text(ECHO.replace("in string S", "in string S group(S)"))
    asked: list[tuple[str, str, str | None]] = []
    refusal = {"error": "missing or wrong bearer token: send Authorization: Bearer <state_query.token>"}
    worker = json_server(lambda: (401, refusal), asked)
    worker.name = "worker"
    url = f"http://127.0.0.1:{worker.server_address[1]}"
    try:
        assert main(["state", str(topo), "--key", "a", "--url", url]) == 2
        unsent = capsys.readouterr().err
        assert main(["state", str(topo), "--key", "a", "--url", url, "--token", "wrong"]) == 2
        wrong = capsys.readouterr().err
    finally:
        worker.shutdown()
    assert unsent == (
        f"error: {refusal['error']}; no token was sent: give the worker's state_query.token with --token or "
        "$EVENTSCRIPT_STATE_TOKEN (else the topology's is sent)\n"
    )
    assert "; the token sent is not the one the worker expects: give the worker's state_query.token" in wrong
