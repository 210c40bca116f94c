"""``eventscript dev`` and ``run`` as a new user meets them (issue 27): a second run works and says
where its state is, Ctrl-C shows what was collected and exits 130, a wrong --program is one line,
outputs stream with --follow, and the workers say when they are ready and what they did. Each runs
the command in a subprocess, as a user does; the embedded broker is the command's own."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT

CLI = [sys.executable, "-m", "eventscript.cli.main"]
TIMEOUT = 180

ECHO = "in string S\nout string O\n( S(x) { !>O(x); } )*\n"
TRACE = '[2026-01-01 00:00:00]\nS("a")\n[00:01]\nS("b")\n'
TOPOLOGY = """\
application: devtest
programs:
  - name: echo
    source: echo.es
    inputs:
      - topic: words
        event: S
    outputs:
      O: echoed
topics:
  words: {external: true, events: [S]}
"""


#: For ``run`` on the embedded broker: Tansu makes a group's first join wait half the session
#: timeout (22.5 s at the worker's 45 s: most of such a test's time); ``dev`` sets 6 s itself.
SHORT_SESSION = "kafka:\n  consumer: {session.timeout.ms: 6000}\n"


@pytest.fixture
def echo(tmp_path: Path) -> Path:
    (tmp_path / "echo.es").write_text(ECHO)
    (tmp_path / "echo.trace").write_text(TRACE)
    (tmp_path / "topology.yaml").write_text(TOPOLOGY)
    return tmp_path


def eventscript(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)


def _state_folder(stderr: str) -> Path:
    match = re.search(r"^state in (\S+) \(fresh, removed at the end; --state-dir DIR to choose\)$", stderr, re.M)
    assert match, stderr
    return Path(match.group(1))


def test_dev_twice_on_the_readme_topology_each_with_a_fresh_state(tmp_path: Path) -> None:
    """The README's big-trades topology run twice in a row: the second run hung on the state the
    first left in the shipped state_dir."""
    shutil.copytree(ROOT / "topologies" / "big-trades", tmp_path / "big-trades")
    cwd = tmp_path / "big-trades"
    runs = [
        eventscript("dev", "topology.yaml", "--trace", "sample.trace", "--until-idle", "2", "--show", cwd=cwd)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert "Traceback" not in run.stderr
    first, second = (_state_folder(r.stderr) for r in runs)
    assert first != second and not first.exists() and not second.exists()  # fresh each time, removed at the end
    expected = (cwd / "expected.jsonl").read_text().count("\n")
    for run in runs:
        shown = run.stdout.split("== three-big-trades\n", 1)[1].split("==", 1)[0]
        assert shown.count('"event":"ThreeBigTrades"') == expected, run.stdout


def test_dev_keeps_the_state_where_it_is_told(echo: Path) -> None:
    run = eventscript(
        "dev", "topology.yaml", "--trace", "echo.trace", "--until-idle", "1", "--state-dir", "kept", cwd=echo
    )
    assert run.returncode == 0, run.stderr
    assert f"state in {echo / 'kept'}\n" in run.stderr
    assert (echo / "kept" / "echo").is_dir()


def test_dev_with_an_unknown_program_is_one_line_before_any_broker(echo: Path) -> None:
    run = eventscript("dev", "topology.yaml", "--trace", "echo.trace", "--program", "nosuch", cwd=echo)
    assert run.returncode == 2
    assert run.stderr.strip() == "error: no program named 'nosuch' in topology.yaml (programs: echo)"


def test_dev_with_a_missing_program_says_where_before_any_broker(echo: Path) -> None:
    """A typo in ``source:`` is reported at its place in the topology, as ``topology check`` does,
    and no broker is started for a topology that cannot run."""
    (echo / "topology.yaml").write_text(TOPOLOGY.replace("source: echo.es", "source: ecno.es"))
    run = eventscript("dev", "topology.yaml", "--trace", "echo.trace", "--until-idle", "1", cwd=echo)
    assert run.returncode == 2, run.stderr
    assert "topology.yaml:4:13: error: program echo: ecno.es: cannot read the program" in run.stderr
    assert "hint: fix 'source:'" in run.stderr
    assert "broker" not in run.stderr and "state in" not in run.stderr


@pytest.mark.parametrize("command", [["run"], ["produce", "--trace", "echo.trace"]])
def test_run_and_produce_with_a_missing_program_say_where_before_kafka(echo: Path, command: list[str]) -> None:
    (echo / "topology.yaml").write_text(TOPOLOGY.replace("source: echo.es", "source: ecno.es"))
    run = eventscript(command[0], "topology.yaml", *command[1:], "--bootstrap-servers", "127.0.0.1:1", cwd=echo)
    assert run.returncode == 2, run.stderr
    assert run.stderr == (
        "topology.yaml:4:13: error: program echo: ecno.es: cannot read the program: No such file or directory\n"
        "    hint: fix 'source:' (it is relative to the topology file)\n"
    )


def test_dev_with_a_program_that_does_not_compile_shows_the_program_error(echo: Path) -> None:
    (echo / "echo.es").write_text(ECHO.replace("!>O(x)", "!>Q(x)"))
    run = eventscript("dev", "topology.yaml", "--until-idle", "1", cwd=echo)
    assert run.returncode == 2, run.stderr
    assert "echo.es:3:12: error: undeclared output event 'Q'" in run.stderr, run.stderr
    assert "broker" not in run.stderr


@pytest.fixture
def taken_port():  # type: ignore[no-untyped-def]
    """A port something else listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_dev_with_the_health_port_in_use_says_so_before_any_broker(echo: Path, taken_port: int) -> None:
    """It ended in a traceback (OSError: [Errno 98]) after the broker and workers had started."""
    run = eventscript("dev", "topology.yaml", "--until-idle", "1", "--health-port", str(taken_port), cwd=echo)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip() == (
        f"error: the health server cannot listen on 127.0.0.1:{taken_port} (Address already in use); "
        "stop what uses that port, or choose another port (--health-port)"
    )


def test_run_with_the_topologys_health_port_in_use_names_the_setting(echo: Path, taken_port: int) -> None:
    (echo / "topology.yaml").write_text(TOPOLOGY + f"health:\n  port: {taken_port}\n")
    run = eventscript("run", "topology.yaml", "--bootstrap-servers", "127.0.0.1:1", cwd=echo)
    assert run.returncode == 2, run.stderr
    assert f"cannot listen on 127.0.0.1:{taken_port} (Address already in use)" in run.stderr
    assert "(health.port at topology.yaml:13:9)" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and "cannot reach Kafka" not in run.stderr


def _port_closed(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) != 0


def _read_until(stream, prefix: str, deadline: float) -> list[str]:  # type: ignore[no-untyped-def]
    lines = []
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(prefix):
            return lines
    pytest.fail(f"no line starting with {prefix!r}: {''.join(lines)}")


def _interrupted(cwd: Path, args: list[str], interrupts: int = 1) -> tuple[int, str, str]:
    """Run ``eventscript ARGS`` until it is ready, then Ctrl-C it (SIGINT to its whole process
    group, as a terminal does) ``interrupts`` times; its exit status, stdout and stderr."""
    proc = subprocess.Popen(
        [*CLI, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        err = _read_until(proc.stderr, "ready:", time.monotonic() + TIMEOUT)
        for i in range(interrupts):
            if i:
                time.sleep(0.3)  # (two signals sent at once arrive as one)
            os.killpg(proc.pid, signal.SIGINT)
        out, rest = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, out, "".join(err) + rest


def test_ctrl_c_on_dev_show_prints_what_was_collected_and_exits_130(echo: Path) -> None:
    """SIGINT to the whole process group, as a terminal's Ctrl-C: the broker used to die first, and
    --show then failed with a traceback and printed nothing."""
    status, out, stderr = _interrupted(echo, ["dev", "topology.yaml", "--trace", "echo.trace", "--show"])
    port = int(re.search(r"on 127\.0\.0\.1:(\d+)", stderr).group(1))  # type: ignore[union-attr]
    assert status == 130, stderr
    assert "Traceback" not in stderr
    assert "stopped:\n  echo: " in stderr
    assert out.startswith("== echoed\n") and "== echo-errors\n" in out
    assert _port_closed(port)  # the broker, in its own process group, was still stopped


def test_dev_follow_prints_outputs_while_running(echo: Path) -> None:
    """Without --until-idle the command runs until stopped: both outputs must come while it runs,
    before the Ctrl-C that ends it."""
    proc = subprocess.Popen(
        [*CLI, "dev", "topology.yaml", "--trace", "echo.trace", "--follow"],
        cwd=echo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        got = [lines.get(timeout=TIMEOUT) for _ in range(2)]
        running = proc.poll() is None
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(TIMEOUT)  # stdout is the reader's; stderr holds a few lines only
        err = proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(TIMEOUT)
    assert running, f"the command ended before printing its outputs: {err}"
    assert proc.returncode == 130, err
    assert lines.empty()  # nothing more came at the end
    assert [line.count('"topic":"echoed"') for line in got] == [1, 1]
    assert '"value":"a"' in got[0] and '"value":"b"' in got[1]


def test_run_says_when_it_is_ready_and_what_it_did(echo: Path) -> None:
    from eventscript.kafka.broker import EmbeddedBroker

    (echo / "topology.yaml").write_text(TOPOLOGY + SHORT_SESSION)
    with EmbeddedBroker() as broker:
        bootstrap = ["--bootstrap-servers", broker.bootstrap]
        produced = eventscript("produce", "topology.yaml", "--trace", "echo.trace", *bootstrap, cwd=echo)
        assert produced.returncode == 0, produced.stderr
        run = eventscript("run", "topology.yaml", "--until-idle", "1", *bootstrap, cwd=echo)
    assert run.returncode == 0, run.stderr
    assert f"ready: echo on {broker.bootstrap}; stops after 1 s without input\n" in run.stderr
    summary = run.stderr.split("stopped:\n", 1)[1]
    # Two events and the trace's two timestamps, published as tick records (kafka/tools.py).
    assert re.match(
        r"  echo: 4 records in \(events, ticks and progress markers\), 4 processed, [1-9]\d* records written", summary
    ), summary


DOORS = """\
in {string door;} Opened group(Opened.door), {string door;} Closed group(Closed.door)
out {string door;} LeftOpen
( Opened() ( Closed() | elapse[5 minutes]() { !>LeftOpen({door: group[0]}); } Closed() ) )*
"""
DOORS_TRACE = """\
[2026-01-01 08:00:00] Opened("front") Opened("back") [08:01:00] Closed("back")
[08:10:00] Closed("front")
"""
DOORS_TOPOLOGY = """\
application: doors
programs:
  - name: left-open
    source: doors.es
    inputs:
      - topic: door-events
        event_from: {header: es-event}
    outputs:
      default: alerts
topics:
  door-events: {external: true, events: [Opened, Closed]}
"""


@pytest.mark.parametrize("clock", ["wall", "record"])
def test_dev_says_when_a_programs_timers_run_on_the_wall_clock(tmp_path: Path, clock: str) -> None:
    """A newcomer's first topology for the README's doors program: `eventscript test` prints
    LeftOpen, `dev --trace` on the default wall clock printed nothing and said nothing (the timer
    fires five real minutes later). dev now says so, where, and what to write; with that setting
    the output is the tester's."""
    (tmp_path / "doors.es").write_text(DOORS)
    (tmp_path / "doors.trace").write_text(DOORS_TRACE)
    setting = "" if clock == "wall" else "    clock: record\n"
    (tmp_path / "topology.yaml").write_text(DOORS_TOPOLOGY.replace("topics:\n", setting + "topics:\n"))
    run = eventscript("dev", "topology.yaml", "--trace", "doors.trace", "--until-idle", "1", "--show", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    left_open = run.stdout.split("== alerts\n", 1)[1].split("==", 1)[0]
    if clock == "wall":
        assert (
            "note: left-open (topology.yaml:3:5) runs on the wall clock (clock: wall, the default): its timers "
            "fire in real time from now, not at the trace's times, so the output can differ from 'eventscript "
            "test'; to replay the trace's time as the tester does, add 'clock: record' to the program in the "
            "topology\n"
        ) in run.stderr
        assert left_open == ""
    else:
        assert "note:" not in run.stderr
        assert left_open.count('"event":"LeftOpen"') == 1 and '"door":"front"' in left_open


def _second_while_first_is_ready(first: list[str], second: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Start ``first`` (a command that runs until stopped), wait until it is ready, run ``second``
    to its end, then stop the first with Ctrl-C; returns the second's result."""
    proc = subprocess.Popen(
        [*CLI, *first], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _read_until(proc.stderr, "ready:", time.monotonic() + TIMEOUT)
        return eventscript(*second, cwd=cwd)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_dev_twice_on_one_state_dir_says_it_is_in_use(echo: Path) -> None:
    """The second dev on the first's --state-dir died on RocksDB's lock of task-0 with a Python
    traceback (and said it was ready after that)."""
    dev = ["dev", "topology.yaml", "--trace", "echo.trace", "--state-dir", "kept"]
    second = _second_while_first_is_ready(dev, dev, echo)
    assert second.returncode == 2, second.stderr
    assert "Traceback" not in second.stderr
    assert re.fullmatch(
        rf"error: the state folder of program echo, {re.escape(str(echo / 'kept' / 'echo'))}, is in use by process "
        r"\d+: another worker on this machine runs it \(two workers cannot share a program's state folder\); "
        r"stop that dev, or choose another --state-dir \(without it, dev takes a fresh one\)\n",
        second.stderr,
    ), second.stderr


def test_run_twice_on_one_topology_says_the_state_folder_is_in_use(echo: Path) -> None:
    """A newcomer trying a second worker: both read the topology's state_dir, shared the stores and
    the instance id kept there, and fenced each other or died on RocksDB's lock."""
    from eventscript.kafka.broker import EmbeddedBroker

    (echo / "topology.yaml").write_text(TOPOLOGY + "state_dir: here\n" + SHORT_SESSION)
    with EmbeddedBroker() as broker:
        run = ["run", "topology.yaml", "--bootstrap-servers", broker.bootstrap]
        second = _second_while_first_is_ready(run, run, echo)
    assert second.returncode == 2, second.stderr
    assert "Traceback" not in second.stderr
    assert second.stderr.startswith(
        f"error: the state folder of program echo, {echo / 'here' / 'echo'}, is in use by process "
    ), second.stderr
    assert second.stderr.endswith(
        "stop that worker, or give this one a state folder of its own: state_dir (topology.yaml:12:12), which may "
        "read the environment, e.g. 'state_dir: ${EVENTSCRIPT_STATE_DIR:-state}' and EVENTSCRIPT_STATE_DIR=state-2 "
        "for a second worker\n"
    ), second.stderr


def test_dev_warns_of_trace_events_the_program_does_not_declare(echo: Path) -> None:
    """`test` warned of a misspelt event name at its place in the trace; dev published it without a
    word, and the user found only an $error 1 on the error topic."""
    (echo / "echo.trace").write_text(TRACE + 'Z("c")\n')
    run = eventscript("dev", "topology.yaml", "--trace", "echo.trace", "--until-idle", "1", cwd=echo)
    assert run.returncode == 0, run.stderr
    assert (
        "echo.trace:5:1: warning: program echo declares no input event 'Z'; the events read are: S "
        "(each such event is an $error 1 in the output)\n"
    ) in run.stderr


def test_produce_warns_of_trace_events_the_program_does_not_declare(echo: Path) -> None:
    from eventscript.kafka.broker import EmbeddedBroker

    (echo / "echo.trace").write_text(TRACE + 'Z("c")\n')
    with EmbeddedBroker() as broker:
        run = eventscript(
            "produce", "topology.yaml", "--trace", "echo.trace", "--bootstrap-servers", broker.bootstrap, cwd=echo
        )
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith(
        "echo.trace:5:1: warning: program echo declares no input event 'Z'; the events read are: S "
        "(each such event is an $error 1 in the output)\n"
    ), run.stderr


def test_tail_of_a_traced_input_leaves_ticks_out_and_names_events_as_the_topology_reads_them(echo: Path) -> None:
    """`tail` of the topic `produce` wrote printed the trace's ticks as events named null, and every
    event as null (its name is the input's `event: S`, not a header): `test --trace` refused the
    lines that the README says it takes."""
    from eventscript.kafka.broker import EmbeddedBroker

    with EmbeddedBroker() as broker:
        address = ["--bootstrap-servers", broker.bootstrap]
        produced = eventscript("produce", "topology.yaml", "--trace", "echo.trace", *address, cwd=echo)
        assert produced.returncode == 0, produced.stderr
        bare = eventscript("tail", "words", *address, cwd=echo)
        named = eventscript("tail", "words", "--topology", "topology.yaml", *address, cwd=echo)
        ticks = eventscript("tail", "words", "--markers", *address, cwd=echo)
    assert bare.returncode == named.returncode == ticks.returncode == 0
    assert bare.stdout.splitlines() == [
        '{"time":"2026-01-01T00:00:00.000000Z","event":null,"value":"a"}',
        '{"time":"2026-01-01T00:01:00.000000Z","event":null,"value":"b"}',
    ]
    assert bare.stderr == (
        "note: records of words carry no event name in an es-event header (records written outside the "
        "topology): give --topology FILE to name them as the programs reading the topic do\n"
    )
    assert named.stdout == bare.stdout.replace('"event":null', '"event":"S"') and named.stderr == ""
    tick_lines = [line for line in ticks.stdout.splitlines() if line.startswith('{"tick":')]
    assert len(tick_lines) >= 2 and '"2026-01-01T00:01:00.000000Z"' in tick_lines[-1]  # one a time and partition
    (echo / "t.jsonl").write_text(named.stdout)
    replay = eventscript("test", "--trace", "t.jsonl", "echo.es", cwd=echo)
    assert replay.returncode == 0, replay.stderr
    assert [json.loads(line)["value"] for line in replay.stdout.splitlines()] == ["a", "b"]


def test_a_second_ctrl_c_still_removes_devs_temporary_state(echo: Path) -> None:
    """An impatient second Ctrl-C, once the workers had stopped, interrupted the broker's stop and
    skipped the removal of dev's fresh state folder (and one while they stopped exited at once,
    past every finally): one folder left in /tmp each time."""
    status, _, stderr = _interrupted(echo, ["dev", "topology.yaml", "--trace", "echo.trace"], interrupts=2)
    assert status == 130, stderr
    assert not _state_folder(stderr).exists(), stderr


def test_show_prints_a_topic_in_time_order_across_its_partitions() -> None:
    """``tail`` reads a topic partition by partition; ``dev --show`` sorts each topic's lines by
    time (stable: one time's lines, and a line without one, keep their order)."""
    from eventscript.cli.kafka_cmds import in_time_order

    def line(t: str, k: str) -> str:
        return f'{{"time":"2026-03-01T08:{t}:00.000000Z","event":"E","value":{{}},"key":["{k}"]}}\n'

    read = [line("03", "a"), line("20", "a"), line("11", "b"), line("20", "b"), line("03", "c"), "not json\n"]
    assert in_time_order(read) == [
        "not json\n",
        line("03", "a"),
        line("03", "c"),
        line("11", "b"),
        line("20", "a"),
        line("20", "b"),
    ]
