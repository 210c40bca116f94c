"""Sources fed from outside the topology: ``topics: NAME: {external: true, events: ...}``.

One negative test per finding about sources, each message checked; the declaration's own
mistakes (``events`` without ``external``, an unquoted type) are refused when the file is read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eventscript.cli.main import main
from eventscript.language.types import DOUBLE, LONG, STRING, ArrayType, StructType
from eventscript.topology.check import Severity
from eventscript.topology.sources import parse_event_type

from .conftest import ALARM, OK, READINGS, findings, only, two_stage

READING_TYPE = "{string site; string sensor; double celsius;}"
#: The second stage with one more input, Reset, that nothing in the two-stage topology writes.
SECOND_WITH_RESET = ALARM.replace(
    "Hot group(Hot.site)", "Hot group(Hot.site),\n   {string site;} Reset group(Reset.site)"
)


def with_source(**spec: Any) -> dict[str, Any]:
    """The two-stage topology with its source topic 'readings' declared as given."""
    return two_stage(topics={"readings": {"partitions": 2, "external": True, **spec}})


def test_a_source_declared_with_typed_events_that_fit_has_no_findings(write_topology: Callable[..., Path]) -> None:
    assert findings(write_topology, with_source(events={"Reading": READING_TYPE})) == []
    assert findings(write_topology, with_source(events=["Reading"])) == []


def test_a_misspelt_link_is_an_error_that_names_the_likely_topic(write_topology: Callable[..., Path]) -> None:
    topo = two_stage()
    topo["programs"][1]["inputs"][0]["topic"] = "hott"
    found = findings(write_topology, topo)
    f = only(found, "unwritten-topic")
    assert f.severity is Severity.ERROR
    assert "topic hott is read by program second but written by no program of the topology" in f.message
    assert f.hint is not None and "did you mean hot, written by program first?" in f.hint
    assert f.where.endswith("topology.yaml:13:12")  # programs[1].inputs[0].topic


def test_a_topic_declared_external_that_a_program_writes(write_topology: Callable[..., Path]) -> None:
    topo = two_stage()
    topo["topics"]["hot"] = {"partitions": 2, "external": True}
    f = only(findings(write_topology, topo), "external-written")
    assert f.severity is Severity.ERROR
    assert (
        "topic hot is declared external (written from outside the topology), but program first writes it" in f.message
    )
    assert f.where.endswith("topology.yaml:24:15")  # topics.hot.external


def test_a_declared_source_nobody_reads_is_a_warning(write_topology: Callable[..., Path]) -> None:
    topo = two_stage()
    topo["topics"]["calibrations"] = {"external": True, "events": ["Calibration"]}
    f = only(findings(write_topology, topo), "unread-external")
    assert f.severity is Severity.WARNING
    assert "topic calibrations is declared as an external source, but no program reads it" in f.message


def test_reading_an_event_the_declaration_does_not_list(write_topology: Callable[..., Path]) -> None:
    f = only(findings(write_topology, with_source(events=["Quote", "Trade"])), "external-event")
    assert f.severity is Severity.ERROR
    assert "program first reads event Reading from topic readings, but the topic's declaration" in f.message
    assert "lists only Quote, Trade" in f.message and "topology.yaml:23:5)" in f.message  # topics.readings.events
    assert f.where.endswith("topology.yaml:7:12")  # programs[0].inputs[0].event


def _second_reads_a_source_by_header(**spec: Any) -> dict[str, Any]:
    topo = two_stage()
    topo["programs"][1]["inputs"] = [{"topic": "hot-feed", "event_from": {"header": "es-event"}}]
    topo["programs"][0]["outputs"] = {"default": "hot-copy"}
    topo["topics"]["hot-feed"] = {"partitions": 2, "external": True, **spec}
    return topo


def test_a_declared_event_the_header_reader_does_not_declare(write_topology: Callable[..., Path]) -> None:
    found = findings(write_topology, _second_reads_a_source_by_header(events=["Hot", "Reset"]))
    f = only(found, "undeclared-input")
    assert "topic hot-feed carries event Reset (its declaration lists Hot, Reset)" in f.message
    assert "second.es declares no input Reset: each such record would become an $error event" in f.message


def test_an_input_no_declared_event_feeds_is_a_warning(write_topology: Callable[..., Path]) -> None:
    second = SECOND_WITH_RESET
    found = findings(
        write_topology, _second_reads_a_source_by_header(events=["Hot"]), {"first.es": READINGS, "second.es": second}
    )
    f = only(found, "unfed-input")
    assert "program second declares input Reset (" in f.message
    assert "no external topic's 'events:' lists it" in f.message
    # Without 'events:' a source may carry any event, so nothing is reported.
    assert [
        x
        for x in findings(
            write_topology, _second_reads_a_source_by_header(), {"first.es": READINGS, "second.es": second}
        )
        if x.code == "unfed-input"
    ] == []


def test_a_declared_type_that_differs_from_the_readers(write_topology: Callable[..., Path]) -> None:
    declared = "{string site; string sensor; long celsius;}"
    f = only(findings(write_topology, with_source(events={"Reading": declared})), "type")
    assert f.severity is Severity.ERROR
    assert "type mismatch on topic readings: its declaration gives Reading the type " + declared in f.message
    assert "program first reads it as " + READING_TYPE in f.message and "first.es:2:" in f.message
    assert "field 3 is 'long celsius' in the declaration but 'double celsius' in the reader" in f.message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{string site; strin sensor;}", "unknown type 'strin'"),
        ("{string site", "expected"),
        ("double extra", "unexpected 'extra' after the type"),
    ],
)
def test_a_declared_type_that_is_not_a_type(write_topology: Callable[..., Path], text: str, problem: str) -> None:
    f = only(findings(write_topology, with_source(events={"Reading": text})), "event-type")
    assert (
        f"topic readings declares event Reading with the type {text!r}, which is not an EventScript type" in f.message
    )
    assert problem in f.message
    assert f.where.endswith("topology.yaml:23:16")  # topics.readings.events.Reading


def test_types_in_a_declaration_are_parsed_as_in_a_program() -> None:
    assert parse_event_type("long") == (LONG, None)
    assert parse_event_type("{string s; double[][] m;}") == (
        StructType((("s", STRING), ("m", ArrayType(ArrayType(DOUBLE))))),
        None,
    )
    assert parse_event_type("{long a; long a;}")[1] == "field 'a' appears twice in this structure type"
    assert parse_event_type("")[0] is None and parse_event_type("{long a;} ;")[0] is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"events": ["Reading"]}, "'events' lists what producers outside the topology write: add 'external: true'"),
        (
            {"external": True, "events": {"Reading": {"string site; double celsius;": None}}},
            "the type of Reading is read as a YAML mapping: quote it",
        ),
    ],
)
def test_a_bad_declaration_is_refused_when_the_file_is_read(
    write_topology: Callable[..., Path], capsys: pytest.CaptureFixture[str], spec: dict[str, Any], message: str
) -> None:
    path = write_topology(two_stage(topics={"readings": spec}), OK)
    assert main(["topology", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "topics.readings" in err


def test_the_simulation_feeds_a_source_only_the_events_it_declares(
    write_topology: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trace event the source's declaration does not list reaches no program: an $error line."""
    path = write_topology(
        _second_reads_a_source_by_header(events=["Hot"]), {"first.es": READINGS, "second.es": SECOND_WITH_RESET}
    )
    trace = tmp_path / "t.trace"
    trace.write_text('[2026-01-01 00:00:00]\nHot("s", "a", 1.5)\nReset("s")\n', encoding="utf-8")
    assert main(["test", "--trace", str(trace), str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any('"event": "Alarm"' in x and '"peak": 1.5' in x for x in lines), lines
    assert any("no program reads Reset from a source topic" in x for x in lines), lines


def test_a_misspelt_source_names_the_declared_one(write_topology: Callable[..., Path]) -> None:
    """'readings' declared external, 'reading' read: the hint said only "check its spelling"."""
    topo = with_source(events=["Reading"])
    topo["programs"][0]["inputs"][0]["topic"] = "reading"
    f = only(findings(write_topology, topo), "unwritten-topic")
    assert f.hint is not None and f.hint.endswith(
        "topology.yaml:20:5?)"  # topics.readings
    ), f.hint
    assert "otherwise check its spelling (did you mean readings, declared external at " in f.hint
