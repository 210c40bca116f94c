"""What an operator meets after the quick start (the deploy-and-operate walk): the numbers the
guides quote are the ones the commands print, and the errors of the commands say what to do."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

CLI = [sys.executable, "-m", "eventscript.cli.main"]


def test_backfill_quick_start_quotes_the_records_its_export_writes(tmp_path: Path) -> None:
    guide = (ROOT / "docs" / "backfill.md").read_text(encoding="utf-8")
    quoted = re.search(r"would publish\s+\((\d+):\s+(\d+)\s+events\s+and\s+(\d+)\s+ticks", guide)
    assert quoted, "docs/backfill.md's quick start no longer says how many records the export writes"
    shutil.copytree(ROOT / "topologies" / "big-trades", tmp_path / "big-trades")
    done = subprocess.run(
        [*CLI, "export", "topology.yaml", "--trace", "sample.trace", "-o", "trades.jsonl"],
        cwd=tmp_path / "big-trades",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    written = re.search(r"wrote (\d+) records to trades.jsonl \((\d+) events, (\d+) ticks", done.stderr + done.stdout)
    assert written, done.stderr
    assert quoted.groups() == written.groups()


def test_the_operators_guide_quotes_the_workers_session_timeout() -> None:
    """How long a stopped static member stays in its group decides when a reset may run; the
    guide said 10 s (the old default) in one place and 45 s in another."""
    from eventscript.kafka.clients import consumer_config
    from eventscript.topology.config import KafkaConfig

    default_s = int(consumer_config(KafkaConfig(), "-")["session.timeout.ms"]) // 1000
    guide = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    quoted = re.findall(r"`session\.timeout\.ms`,\s+(\d+) s|session timeout\s+\((\d+) s by default\)", guide)
    assert len(quoted) >= 2, quoted
    assert {int(a or b) for a, b in quoted} == {default_s}


#: The guides whose YAML an operator copies into topologies, values and rules.
YAML_GUIDES = ("README.md", "docs/worker.md", "docs/operations.md", "docs/topologies.md", "observability/README.md")


def test_every_yaml_block_of_the_guides_is_valid_yaml() -> None:
    """docs/worker.md's reference topology had ``{..., password: ${KAFKA_PASSWORD}}``: a '{' in a
    flow mapping's plain value, so the file a user copied from it was not YAML at all."""
    broken = []
    for guide in YAML_GUIDES:
        text = (ROOT / guide).read_text(encoding="utf-8")
        for block in re.finditer(r"^( *)```ya?ml\n(.*?)^\1```", text, re.S | re.M):
            try:
                yaml.safe_load(textwrap.dedent(block.group(2)))
            except yaml.YAMLError as exc:
                broken.append(f"{guide}:{text.count(chr(10), 0, block.start()) + 1}: {str(exc).splitlines()[0]}")
    assert broken == []


class _Record:
    """A consumed record as confluent-kafka gives it, as far as ``dev --follow`` reads one."""

    def __init__(self, headers: list[tuple[str, bytes]], value: bytes | None = None) -> None:
        self._headers, self._value = headers, value

    def headers(self) -> list[tuple[str, bytes]]:
        return self._headers

    def topic(self) -> str:
        return "strikes"

    def value(self) -> bytes | None:
        return self._value

    def key(self) -> bytes | None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_772_355_660_000)


def test_dev_follow_leaves_progress_markers_and_ticks_out() -> None:
    """On a two-stage topology ``dev --follow`` printed a line of event null for every progress
    marker the first stage wrote on the link topic, dozens of them around the two events."""
    from eventscript.cli.progress import followed_line

    marker = _Record([("es-progress", b"strikes/0/1772355660000")])
    tick = _Record([("es-tick", b"1")])
    strike = _Record([("es-event", b"Strike")], b'{"user": "ann", "ip": "10.0.0.1"}')
    assert followed_line(marker) is None and followed_line(tick) is None
    assert followed_line(strike) == (
        '{"topic":"strikes","time":"2026-03-01T09:01:00.000000Z","event":"Strike",'
        '"value":{"user":"ann","ip":"10.0.0.1"}}\n'
    )


def test_a_worker_with_its_state_endpoint_off_says_to_enable_it_and_restart() -> None:
    """Asked beside a running ``dev`` whose topology had no ``state_query``, the answer said to set
    it "(and a token)": the token is optional, and the worker reads the setting only at start."""
    from eventscript.kafka.state_endpoint import StateEndpoint
    from eventscript.topology.config import parse_topology

    topo = parse_topology({"programs": [{"name": "p", "source": "p.es", "inputs": [{"topic": "t", "event": "E"}]}]})
    status, body, _ = StateEndpoint(topo, [], lambda: 8080).answer("/state/p", "key=a", None)
    assert status == 403
    assert yaml.safe_load(body)["error"] == (
        "the state endpoint of this worker is off: set state_query: {enabled: true} in the topology it runs "
        "(a token is optional) and restart it to ask it about keys"
    )


@pytest.mark.parametrize(
    ("argv", "command", "hint"),
    [
        (["reset", "t.yaml", "--dryrun"], "eventscript reset", "(did you mean --dry-run?)"),
        (["dev", "t.yaml", "--until-idel", "2"], "eventscript dev", "(did you mean --until-idle?)"),
        (["run", "t.yaml", "--health_port=8080"], "eventscript run", "(did you mean --health-port?)"),
        (["topology", "plan", "t.yaml", "--boostrap-servers", "k:9092"], "eventscript topology plan", "--bootstrap"),
        (["state", "t.yaml", "--keys", "front"], "eventscript state", "(did you mean --key?)"),
    ],
)
def test_a_misspelt_option_is_refused_by_its_command_with_the_option_meant(
    argv: list[str], command: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse refused a misspelt option of a command with the top-level usage ("usage:
    eventscript [-h] ... COMMAND ...") and no hint: the operator had to find the command's options."""
    from eventscript.cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"usage: {command} " in err or f"usage: {command}\n" in err
    assert f"{command}: error: unrecognized arguments: " in err
    assert hint in err
    assert f"'{command} --help' lists its options" in err


def test_a_worker_still_joining_its_group_says_so_when_asked_about_a_key() -> None:
    """Asked before the group had assigned it anything, a worker said "neither owns task 0 nor
    stands by for it: ask its owner", and no owner existed yet to ask (the walk's first query
    beside a starting ``run``)."""
    from types import SimpleNamespace

    from eventscript.api import compile_program
    from eventscript.kafka.state_endpoint import StateEndpoint
    from eventscript.topology.config import parse_topology

    topo = parse_topology(
        {
            "programs": [{"name": "p", "source": "p.es", "inputs": [{"topic": "t", "event": "E"}]}],
            "state_query": {"enabled": True},
        }
    )
    joining = SimpleNamespace(
        cfg=topo.programs[0],
        program=compile_program("in string E group(E)\nE()*\n"),
        partitions=1,
        tasks={},
        task_manager=SimpleNamespace(standby=lambda p: None),
        instance_id="w0",
        assigned_once=False,
        assignment_lost=False,
    )
    status, body, _ = StateEndpoint(topo, [joining], lambda: 8080).answer("/state/p", "key=a", None)
    assert status == 503
    assert yaml.safe_load(body)["error"] == (
        "this worker holds no tasks of p yet: it is joining its consumer group (or rejoining after losing its "
        "assignment), and /readyz says not ready: ask again shortly"
    )


def test_the_guide_quotes_the_refused_upgrade_as_the_worker_prints_it() -> None:
    """The runner prints ``program NAME: `` before the refusal, which starts ``task N: ``
    (task/versions.py); the guide had them the other way round."""
    import inspect

    from eventscript.kafka import supervisor
    from eventscript.task import versions

    assert 'print(f"program {w.cfg.name}: {w.failure}"' in inspect.getsource(supervisor)
    assert 'UpgradeRefused(f"task {self.partition}: ' in inspect.getsource(versions)
    guide = " ".join((ROOT / "docs" / "operations.md").read_text(encoding="utf-8").split())
    assert "stops (exit 1) with `program doors: task N: the stored state was written by version" in guide


def test_the_upgrade_guides_reset_is_the_reset_command() -> None:
    """ "Reset a program" under "Upgrade with state" had the operator delete the consumer group and
    the changelog and repartition topics by hand, beside the 'eventscript reset' that does it (and
    refuses while workers run) in "A key did not alert"."""
    guide = " ".join((ROOT / "docs" / "operations.md").read_text(encoding="utf-8").split())
    reset = guide.split("**Reset a program**", 1)[1].split("###", 1)[0]
    assert "`eventscript reset topology.yaml --program P --dry-run`" in reset
    assert "delete its consumer group" not in reset


def test_the_backfill_by_hand_names_the_kafka_it_reads() -> None:
    """The guide's 'kubectl run ... backfill' on the image's sensors topology gave no Kafka address:
    the topology's ${KAFKA_BOOTSTRAP_SERVERS:-localhost:9092} sent the pod to localhost."""
    import shlex

    from eventscript.cli.main import build_parser

    guide = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    block = guide.split("By hand, without the chart:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    words = shlex.split(block.replace("\\\n", " "))
    args = build_parser().parse_args(words[words.index("--") + 1 :])
    topology = (ROOT / "topologies" / "sensors" / "topology.yaml").read_text(encoding="utf-8")
    assert "${KAFKA_BOOTSTRAP_SERVERS:-localhost:9092}" in topology
    assert args.bootstrap_servers == "kafka.kafka:9092"
