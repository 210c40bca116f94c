"""``topology check``: one negative test per wiring error and warning, each message checked."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from eventscript.cli.main import main
from eventscript.topology.check import Severity

from .conftest import ALARM, OK, READINGS, findings, only, two_stage


def test_a_fitting_topology_has_no_findings(write_topology: Callable[..., Path]) -> None:
    assert findings(write_topology, two_stage()) == []


def test_a_program_that_does_not_compile(write_topology: Callable[..., Path]) -> None:
    f = only(
        findings(write_topology, two_stage(), {"first.es": READINGS, "second.es": "in {long x;} A\n( B() )*"}),
        "compile",
    )
    assert f.severity is Severity.ERROR
    assert "program second does not compile" in f.message and "second.es:2:" in f.message
    assert f.where.endswith("topology.yaml:11:11")  # programs[1].source


def test_a_missing_program_file(write_topology: Callable[..., Path]) -> None:
    f = only(findings(write_topology, two_stage(second="nowhere.es")), "unreadable")
    assert "program second" in f.message and "nowhere.es" in f.message and "cannot read" in f.message


def test_a_missing_first_program_is_the_only_error(write_topology: Callable[..., Path]) -> None:
    """The topic the unreadable program's ``outputs:`` route to is not also "written by no program":
    that second error followed from the first and sent the user looking for a spelling mistake."""
    found = findings(write_topology, two_stage(first="nowhere.es"))
    assert [f.code for f in found if f.severity is Severity.ERROR] == ["unreadable"], [f.render() for f in found]


def test_an_input_event_the_program_does_not_declare(write_topology: Callable[..., Path]) -> None:
    topo = two_stage()
    topo["programs"][0]["inputs"][0]["event"] = "Readng"
    f = only(findings(write_topology, topo), "unknown-input")
    assert "program first reads topic readings as event Readng" in f.message
    assert "declares no input Readng (its inputs: Reading)" in f.message
    assert f.where.endswith("topology.yaml:7:12")  # programs[0].inputs[0].event


def test_an_output_route_for_an_undeclared_event(write_topology: Callable[..., Path]) -> None:
    topo = two_stage()
    topo["programs"][1]["outputs"] = {"Alarms": "alarms"}
    found = findings(write_topology, topo)
    f = only(found, "unknown-output")
    assert (
        "routes output Alarms to topic alarms, but second.es declares no output Alarms (its outputs: Alarm)"
        in f.message
    )
    w = only(found, "unrouted-output")  # and Alarm itself now goes nowhere
    assert w.severity is Severity.WARNING and "declares output Alarm" in w.message and "dropped" in w.message


def test_a_reader_that_cannot_decode_program_records(write_topology: Callable[..., Path]) -> None:
    topo = two_stage()
    topo["programs"][1]["inputs"][0] = {"topic": "hot", "event_from": {"field": "type"}}
    f = only(findings(write_topology, topo), "undecodable")
    assert "program second reads topic hot with event_from: {field: type}, but programs (first) write it" in f.message
    assert "event_from: {header: es-event}" in (f.hint or "")


def test_a_fixed_event_name_nobody_writes_there(write_topology: Callable[..., Path]) -> None:
    second = ALARM.replace("Hot", "Warm")
    topo = two_stage()
    topo["programs"][1]["inputs"][0] = {"topic": "hot", "event": "Warm"}
    f = only(findings(write_topology, topo, {"first.es": READINGS, "second.es": second}), "not-written")
    assert (
        "program second reads event Warm from topic hot, but no program writes Warm there "
        "(written there: Hot (first))" in f.message
    )


def test_an_event_written_to_a_reader_that_does_not_declare_it(write_topology: Callable[..., Path]) -> None:
    first = READINGS.replace(
        "out {string site; string sensor; double peak;} Hot",
        "out {string site; string sensor; double peak;} Hot, {string sensor;} Cold",
    )
    f = only(findings(write_topology, two_stage(), {"first.es": first, "second.es": ALARM}), "undeclared-input")
    assert (
        "program first writes event Cold to topic hot, which program second reads, but second.es declares "
        "no input Cold" in f.message
    )


@pytest.mark.parametrize(
    ("reader_type", "difference"),
    [
        (
            "{string site; string sensor; long peak;}",
            "field 3 is 'double peak' in the writer but 'long peak' in the reader",
        ),
        ("{string site; string name; double peak;}", "field 2 is 'string sensor' in the writer but 'string name' in"),
        ("{string sensor; string site; double peak;}", "field 1 is 'string site' in the writer but 'string sensor' in"),
        ("{string site; string sensor;}", "the writer has an extra field 3 'double peak'"),
        ("{string site; string sensor; double peak; long n;}", "the reader expects a field 4 'long n'"),
    ],
)
def test_types_must_agree_field_by_field(
    write_topology: Callable[..., Path], reader_type: str, difference: str
) -> None:
    second = (
        "in " + reader_type + " Hot group(Hot.site)\nout {string site;} Alarm\n"
        "( Hot(h) { !>Alarm({site: h.site}); } )*\n"
    )
    f = only(findings(write_topology, two_stage(), {"first.es": READINGS, "second.es": second}), "type")
    assert (
        "type mismatch on topic hot: program first writes Hot as {string site; string sensor; double peak;}"
        in f.message
    )
    assert "first.es:3:" in f.message and "second.es:1:" in f.message  # both declarations
    assert f"program second reads it as Hot {reader_type}" in f.message
    assert difference in f.message


def test_a_grouped_reader_of_an_ungrouped_writer_needs_keyed_false(write_topology: Callable[..., Path]) -> None:
    first = READINGS.replace(" group(Reading.sensor)", "")
    found = findings(write_topology, two_stage(), {"first.es": first, "second.es": ALARM})
    f = only(found, "keys")
    assert (
        "program second is grouped, so its input records must be keyed, but program first is not grouped" in f.message
        and "$error 6" in f.message
    )
    assert "keyed: false" in (f.hint or "")
    topo = two_stage()
    topo["programs"][1]["inputs"][0]["keyed"] = False
    assert findings(write_topology, topo, {"first.es": first, "second.es": ALARM}) == []


def test_input_topics_must_be_co_partitioned(write_topology: Callable[..., Path]) -> None:
    topo = two_stage()
    topo["programs"][0]["inputs"].append({"topic": "more-readings", "event": "Reading"})
    topo["topics"]["more-readings"] = {"partitions": 3}
    f = only(findings(write_topology, topo), "partitions")
    assert "program first reads topics with different partition counts (readings: 2, more-readings: 3)" in f.message


def test_a_cycle(write_topology: Callable[..., Path]) -> None:
    topo = two_stage()
    back = """
in {string site; string sensor; double peak;} Hot group(Hot.site)
out {string site; string sensor; double celsius;} Reading
( Hot(h) { !>Reading({site: h.site, sensor: h.sensor, celsius: h.peak}); } )*
"""
    topo["programs"][1] = {
        "name": "second",
        "source": "second.es",
        "inputs": [{"topic": "hot", "event_from": {"header": "es-event"}}],
        "outputs": {"default": "readings"},
    }
    f = only(findings(write_topology, topo, {"first.es": READINGS, "second.es": back}), "cycle")
    assert "the programs form a cycle: first → second → first" in f.message


def test_an_input_nobody_writes(write_topology: Callable[..., Path]) -> None:
    second = ALARM.replace(
        "in {string site; string sensor; double peak;} Hot group(Hot.site)",
        "in {string site; string sensor; double peak;} Hot group(Hot.site),\n   {string site;} Reset group(Reset.site)",
    )
    f = only(findings(write_topology, two_stage(), {"first.es": READINGS, "second.es": second}), "unfed-input")
    assert f.severity is Severity.WARNING
    assert "program second declares input Reset (" in f.message and "second.es:3:" in f.message
    assert "none of its input topics carries it" in f.message


def test_an_undeclared_source_topic(write_topology: Callable[..., Path]) -> None:
    f = only(findings(write_topology, two_stage(topics={})), "unwritten-topic")
    assert f.severity is Severity.ERROR
    assert (
        "topic readings is read by program first but written by no program of the topology, and it is not "
        "declared as an external source"
    ) in f.message
    assert f.hint is not None and "readings: {external: true, partitions: N}" in f.hint
    assert f.where.endswith("topology.yaml:6:12")


def test_the_command_fails_on_errors_and_prints_where(
    write_topology: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    topo = copy.deepcopy(two_stage())
    topo["programs"][0]["inputs"][0]["event"] = "Readng"
    path = write_topology(topo, OK)
    assert main(["topology", "check", str(path)]) == 1
    out = capsys.readouterr()
    assert f"{path}:7:12: error: program first reads topic readings as event Readng" in out.out
    assert f"{path}: 1 error, " in out.err


def test_the_command_passes_and_strict_fails_on_warnings(
    write_topology: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    topo = two_stage()
    del topo["programs"][1]["outputs"]
    path = write_topology(topo, OK)
    assert main(["topology", "check", str(path)]) == 0
    assert "warning: program second declares output Alarm" in capsys.readouterr().out
    assert main(["topology", "check", "--strict", str(path)]) == 1


def test_a_bad_topology_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("programs: []\n", encoding="utf-8")
    assert main(["topology", "check", str(path)]) == 2
    assert "invalid topology" in capsys.readouterr().err


def test_a_variable_not_set_here_is_a_warning_of_the_check_and_an_error_of_a_run(
    write_topology: Callable[..., Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A topology for the chart reads its Kafka address as ${KAFKA_BOOTSTRAP_SERVERS}: checking
    its links needs no deployment environment, so the check warns (file:line:col, how to give a
    default) rather than failing; a command that runs it still stops."""
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    path = write_topology({"kafka": {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}, **two_stage()}, OK)
    assert main(["topology", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        f"{path}:2:22: warning: kafka.bootstrap_servers: environment variable KAFKA_BOOTSTRAP_SERVERS is not "
        f"set: checked with '${{KAFKA_BOOTSTRAP_SERVERS}}' as written [unset-variable]"
    ) in out
    assert "give a default (${KAFKA_BOOTSTRAP_SERVERS:-default})" in out
    assert main(["topology", "check", "--strict", str(path)]) == 1
    assert main(["run", str(path)]) == 2
    assert "environment variable KAFKA_BOOTSTRAP_SERVERS is not set" in capsys.readouterr().err


def test_a_misspelt_event_name_is_one_error_naming_what_the_topic_carries(write_topology: Callable[..., Path]) -> None:
    """``event: Hott`` gave two errors for one slip: unknown-input, and not-written, whose hint
    ("route Hott to hot in the writer's 'outputs:'") sent the user to change the wrong program."""
    topo = two_stage()
    topo["programs"][1]["inputs"][0] = {"topic": "hot", "event": "Hott"}
    found = findings(write_topology, topo)
    assert [f.code for f in found if f.severity is Severity.ERROR] == ["unknown-input"]
    assert "declares no input Hott (its inputs: Hot; topic hot carries Hot (first))" in found[0].message
