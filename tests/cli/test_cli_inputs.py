"""The command line answers bad arguments and unreachable services with one clear line and a
non-zero status, never a traceback or pages of librdkafka noise (issue 9)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventscript.cli.main import main

ECHO = """in string S
out string O
( S(x) { !>O(x); } )*
"""
TRACE = '[2026-01-01 00:00:00]\nS("a")\n[00:01]\nS("b")\n'


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "echo.es").write_text(ECHO)
    (tmp_path / "echo.trace").write_text(TRACE)
    return tmp_path


def test_compile_into_a_missing_directory_is_a_clean_error(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = files / "missing" / "dir" / "echo.json"
    assert main(["compile", str(files / "echo.es"), "-o", str(target)]) == 1
    err = capsys.readouterr().err
    assert f"{target}: error: cannot write the compiled program" in err and "create the directory first" in err
    assert not target.parent.exists()  # a typo in -o does not make directories


@pytest.mark.parametrize("name", ["echo.json", "echo.compiled"])
def test_test_runs_what_compile_writes(files: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(files / "echo.trace")
    assert main(["test", "--trace", trace, str(files / "echo.es")]) == 0
    from_source = capsys.readouterr().out
    assert main(["compile", str(files / "echo.es"), "-o", str(files / name)]) == 0
    capsys.readouterr()
    assert main(["test", "--trace", trace, str(files / name)]) == 0  # by extension, or by content
    assert capsys.readouterr().out == from_source
    assert from_source.count('"event": "O"') == 2


def test_a_damaged_compiled_program_is_a_clean_error(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(files / "echo.es"), "-o", str(files / "echo.json")]) == 0
    text = (files / "echo.json").read_text()
    (files / "cut.json").write_text(text.replace('"machine"', '"mashine"'))
    (files / "junk.json").write_text("{not json")
    for bad in ("cut.json", "junk.json"):
        assert main(["test", "--trace", str(files / "echo.trace"), str(files / bad)]) == 2
        err = capsys.readouterr().err
        assert f"{files / bad}: error: not a valid compiled program" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["check", "compile", "graph", "test"])
@pytest.mark.parametrize("limit", ["-5", "0", "many"])
def test_state_limit_must_be_positive(
    files: Path, command: str, limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = {
        "check": [],
        "compile": [],
        "graph": ["-o", str(files / "g.dot")],
        "test": ["--trace", str(files / "echo.trace")],
    }[command]
    with pytest.raises(SystemExit) as info:
        main([command, *args, "--state-limit", limit, str(files / "echo.es")])
    assert info.value.code == 2
    assert "argument --state-limit:" in capsys.readouterr().err


@pytest.mark.parametrize(("option", "value"), [("--idle", "nan"), ("--idle", "-1")])
def test_tail_refuses_endless_idle_times(option: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["tail", "some-topic", "--bootstrap-servers", "127.0.0.1:1", option, value])
    assert f"argument {option}:" in capsys.readouterr().err


def test_a_trace_that_is_not_utf8_is_a_clean_error(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "latin1.trace").write_bytes(b'[2026-01-01 00:00:00]\nS("caf\xe9")\n')
    assert main(["test", "--trace", str(files / "latin1.trace"), str(files / "echo.es")]) == 2
    assert "not UTF-8 text: byte 0xE9 at byte offset 28" in capsys.readouterr().err


def test_expected_lines_that_are_not_objects_are_a_clean_error(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "expected.jsonl").write_text('{"time": "2026-01-01T00:00:00.000000Z", "event": "O", "value": "a"}\n7\n')
    assert (
        main(
            [
                "test",
                "--trace",
                str(files / "echo.trace"),
                str(files / "echo.es"),
                "--expect",
                str(files / "expected.jsonl"),
            ]
        )
        == 2
    )
    assert "expected.jsonl:2:1: error: expected a JSON object" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Kafka commands with no broker: port 1 on 127.0.0.1 refuses at once; the commands give up after
# their metadata timeout (10 s), so the three run side by side.

NO_BROKER = "127.0.0.1:1"
TOPOLOGY = """kafka:
  bootstrap_servers: {broker}
programs:
  - name: echo
    source: echo.es
    inputs:
      - topic: strings
        event: S
    outputs:
      O: echoed
"""


def test_kafka_commands_say_cannot_reach_kafka_once(files: Path) -> None:
    (files / "topology.yaml").write_text(TOPOLOGY.format(broker=NO_BROKER))
    cli = [sys.executable, "-m", "eventscript.cli.main"]
    commands = {
        "tail": [*cli, "tail", "echoed", "--bootstrap-servers", NO_BROKER],
        "run": [*cli, "run", str(files / "topology.yaml")],
        "produce": [*cli, "produce", str(files / "topology.yaml"), "--trace", str(files / "echo.trace")],
    }
    procs = {
        name: subprocess.Popen(cmd, cwd=files, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, cmd in commands.items()
    }
    said: dict[str, str] = {}
    for name, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"{name} did not give up within 60 s")
        lines = err.strip().splitlines()
        assert proc.returncode == 2, (name, err)
        assert len(lines) == 1, (name, err[:2000])  # no librdkafka lines, no traceback
        assert lines[0].startswith(f"error: cannot reach Kafka at {NO_BROKER}"), (name, lines[0])
        assert out == ""
        said[name] = lines[0]
    # tail after 'dev' has ended is a new user's likely case: where the address came from, and
    # that dev's broker is gone
    assert "check the address (from --bootstrap-servers)" in said["tail"], said["tail"]
    assert "it is stopped when dev ends" in said["tail"], said["tail"]
    # ... and so is tail beside a running dev without its address: dev's broker is not on 9092
    assert (
        "while dev runs, pass the address its 'embedded Kafka-compatible broker (Tansu) on HOST:PORT'" in (said["tail"])
    ), said["tail"]
    # run names the setting's place in the topology file, and how to get a broker to try things
    assert f"check bootstrap_servers ({files / 'topology.yaml'}:2:22)" in said["run"], said["run"]
    assert "'eventscript dev' starts a broker of its own" in said["run"], said["run"]


def test_an_unset_bootstrap_servers_is_not_placed_in_the_file(files: Path) -> None:
    """A topology without a ``kafka:`` section uses the default address: the message says the file
    does not set it, where it pointed at the file's first line (a new user's walk)."""
    from confluent_kafka import KafkaError

    from eventscript.kafka.admin import KafkaUnavailable
    from eventscript.topology.config import load_topology

    err = KafkaError(KafkaError._TRANSPORT)
    (files / "topology.yaml").write_text("programs:" + TOPOLOGY.split("programs:", 1)[1])
    said = str(KafkaUnavailable.of(load_topology(files / "topology.yaml"), "listing topics", err))
    assert "check bootstrap_servers (not set in " in said and "topology.yaml, which uses the default; set it" in said
    assert "topology.yaml:1:1" not in said
    (files / "topology.yaml").write_text(TOPOLOGY.format(broker=NO_BROKER))
    said = str(KafkaUnavailable.of(load_topology(files / "topology.yaml"), "listing topics", err))
    assert f"check bootstrap_servers ({files / 'topology.yaml'}:2:22)" in said


def test_produce_reads_the_trace_before_contacting_kafka(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "topology.yaml").write_text(TOPOLOGY.format(broker=NO_BROKER))
    (files / "deep.trace").write_text("[2026-01-01 00:00:00]\nS(" + "[" * 500 + ")\n")
    for trace, says in (
        ("missing.trace", "cannot read the trace: No such file or directory"),
        ("deep.trace", "nests too deeply"),
    ):
        started = time.monotonic()
        assert main(["produce", str(files / "topology.yaml"), "--trace", str(files / trace)]) == 2
        assert says in capsys.readouterr().err
        assert time.monotonic() - started < 5  # no wait for the (absent) broker


@pytest.mark.parametrize(("value", "parsed"), [("auto", "auto"), ("1", 1), ("4", 4)])
def test_backfill_split_takes_auto_or_a_positive_count(value: str, parsed: object) -> None:
    from eventscript.cli.main import build_parser

    args = build_parser().parse_args(["backfill", "t.yaml", "--split", value])
    assert args.split == parsed
    assert build_parser().parse_args(["backfill", "t.yaml"]).split == "auto"


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_backfill_split_refuses_other_values(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    from eventscript.cli.main import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["backfill", "t.yaml", "--split", value])
    assert "--split" in capsys.readouterr().err


def test_ctrl_c_while_contacting_kafka_is_one_line(
    files: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during the wait for a broker that does not answer (10-30 s) ends `run` with one
    line and status 130, not a traceback."""
    from eventscript.kafka.supervisor import TopologyRunner

    def interrupted(self: TopologyRunner) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(TopologyRunner, "prepare", interrupted)
    (files / "topology.yaml").write_text(TOPOLOGY.format(broker=NO_BROKER))
    assert main(["run", str(files / "topology.yaml")]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["interrupted while contacting Kafka"]


SOURCE_TOPIC = """topics:
  strings: {external: true, partitions: 1}
"""


@pytest.mark.parametrize("command", ["test", "test-topology", "dev", "produce", "export"])
def test_every_command_taking_a_trace_says_why_it_cannot_read_it(
    command: str, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One way of reading ``--trace`` for every command (cli/trace_file.py): a file that is not
    there, and a trace with a mistake named by file:line:col, each one line and status 2, before
    any broker is looked for."""
    topology = str(files / "topology.yaml")
    (files / "topology.yaml").write_text(TOPOLOGY.format(broker=NO_BROKER) + SOURCE_TOPIC)
    (files / "bad.trace").write_text("[2026-01-01 00:00:00]\nS(]\n")
    args = {
        "test": ["test", str(files / "echo.es"), "--trace"],
        "test-topology": ["test", topology, "--trace"],
        "dev": ["dev", topology, "--trace"],
        "produce": ["produce", topology, "--trace"],
        "export": ["export", topology, "-o", str(files / "out.jsonl"), "--trace"],
    }[command]
    missing = files / "missing.trace"
    assert main([*args, str(missing)]) == 2
    assert capsys.readouterr().err == f"{missing}: error: cannot read the trace: No such file or directory\n"
    assert main([*args, str(files / "bad.trace")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"{files / 'bad.trace'}:2:"), lines
    assert lines[1:] == ["    S(]", "      ^"], lines  # the line and a caret, as a program's errors


def test_an_address_given_on_the_command_line_is_the_one_the_message_names(files: Path) -> None:
    """With ``--bootstrap-servers``, the file's address is not used: the message does not point at
    its setting (a new user's walk: ``produce`` and ``state dump`` did)."""
    from confluent_kafka import KafkaError

    from eventscript.cli.topology_args import load_with_address
    from eventscript.kafka.admin import KafkaUnavailable

    (files / "topology.yaml").write_text(TOPOLOGY.format(broker=NO_BROKER))
    topo = load_with_address(str(files / "topology.yaml"), "127.0.0.1:1")
    said = str(KafkaUnavailable.of(topo, "listing topics", KafkaError(KafkaError._TRANSPORT)))
    assert said.startswith("cannot reach Kafka at 127.0.0.1:1 (listing topics: "), said
    assert "check the address --bootstrap-servers gave, that the brokers are up" in said, said
    assert "topology.yaml:2:22" not in said, said


def test_a_topology_that_names_no_address_says_the_variable_set_beside_it_is_not_read(
    files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With $KAFKA_BOOTSTRAP_SERVERS set (as 'eventscript tail' reads it, and README's "on your
    Kafka (KAFKA_BOOTSTRAP_SERVERS)"), 'eventscript run' on README's doors topology, which has no
    kafka: section, tried localhost:9092 and said nothing of the variable."""
    from confluent_kafka import KafkaError

    from eventscript.kafka.admin import KafkaUnavailable
    from eventscript.topology.config import load_topology

    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "kafka.example:9092")
    (files / "topology.yaml").write_text("programs:" + TOPOLOGY.split("programs:", 1)[1])
    said = str(KafkaUnavailable.of(load_topology(files / "topology.yaml"), "listing topics", KafkaError(-195)))
    assert said.startswith("cannot reach Kafka at localhost:9092 (")
    assert (
        "which uses the default; set it under kafka:, e.g. bootstrap_servers: ${KAFKA_BOOTSTRAP_SERVERS} for the "
        "variable set here (kafka.example:9092), which a topology reads only where it names it)"
    ) in said
