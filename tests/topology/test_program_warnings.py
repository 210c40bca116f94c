"""A program's compiler warnings reach the user through its topology: ``topology check`` (and
``--strict``) and ``test -W TOPOLOGY.yaml`` once showed none, so a misspelt variable that
``eventscript check`` warns of passed the check CI runs before deploying."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from eventscript.cli.main import main
from eventscript.topology.check import Severity, check
from eventscript.topology.model import load_graph

#: ``ipp`` for ``ip``: each read is $error 3 (warned of at 3:30), and ``ip`` is never read (3:12).
MISSPELT = """in {string ip;} Hit
out string Seen
( Hit(h) { ip = h.ip; !>Seen(ipp); } )*
"""
WARNING = "'ipp' is never given a value"
QUOTE = "    ( Hit(h) { ip = h.ip; !>Seen(ipp); } )*\n                                 ^\n"

TOPOLOGY = {
    "application": "t",
    "programs": [
        {
            "name": "seen",
            "source": "seen.es",
            "inputs": [{"topic": "hits", "event": "Hit"}],
            "outputs": {"Seen": "seen"},
        }
    ],
    "topics": {"hits": {"partitions": 1, "external": True}},
}


@pytest.fixture
def topology(write_topology: Callable[..., Path]) -> Path:
    return write_topology(TOPOLOGY, {"seen.es": MISSPELT})


def test_a_program_warning_is_a_warning_of_the_topology_at_its_place_in_the_program(topology: Path) -> None:
    unread, misspelt = check(load_graph(topology))
    assert {(f.severity, f.code) for f in (unread, misspelt)} == {(Severity.WARNING, "program-warning")}
    assert (unread.where, misspelt.where) == (
        f"{topology.parent / 'seen.es'}:3:12",
        f"{topology.parent / 'seen.es'}:3:30",
    )
    rendered = misspelt.render()
    assert rendered.startswith(
        f"{misspelt.where}: warning: program seen: {WARNING}: each read is $error 3 and gives the default value "
        "[program-warning: never-set]\n" + QUOTE + "    hint: did you mean 'ip'? Otherwise, set it in an action"
    )


def test_topology_check_prints_it_and_strict_fails_on_it(topology: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "check", str(topology)]) == 0
    out = capsys.readouterr().out
    assert f"seen.es:3:30: warning: program seen: {WARNING}" in out
    assert f"{topology}: ok: 1 program, 3 topics, 2 warnings\n" in out
    assert main(["topology", "check", "--strict", str(topology)]) == 1
    seen = capsys.readouterr()
    assert WARNING in seen.out and f"{topology}: 0 errors, 2 warnings (--strict fails on warnings)" in seen.err
    assert main(["topology", "check", "-q", str(topology)]) == 0
    assert WARNING not in capsys.readouterr().out


def test_test_w_on_a_topology_prints_it_as_for_a_program(topology: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = topology.parent / "hits.trace"
    trace.write_text('[2026-01-01 00:00:00]\nHit({ip: "10.0.0.1"})\n', encoding="utf-8")
    assert main(["test", "--trace", str(trace), str(topology)]) == 0
    assert WARNING not in capsys.readouterr().err  # only with -W, as for programs
    assert main(["test", "-W", "--trace", str(trace), str(topology)]) == 0
    on_topology = capsys.readouterr().err
    assert main(["test", "-W", "--trace", str(trace), str(topology.parent / "seen.es")]) == 0
    on_program = capsys.readouterr().err
    assert f"seen.es:3:30: warning: program seen: {WARNING}" in on_topology
    assert f"seen.es:3:30: warning: {WARNING}" in on_program
    assert QUOTE in on_topology and QUOTE in on_program


def test_a_finding_shows_its_code_as_the_docs_list_it(
    write_topology: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/topologies.md lists the findings by code; the printed finding says which it is."""
    topo = {**TOPOLOGY, "programs": [{**TOPOLOGY["programs"][0], "outputs": {}}]}
    path = write_topology(topo, {"seen.es": MISSPELT.replace("ip = h.ip; ", "").replace("ipp", "h.ip")})
    assert main(["topology", "check", str(path)]) == 0
    assert "warning: program seen declares output Seen (" in capsys.readouterr().out
    (found,) = check(load_graph(path))
    assert found.render().splitlines()[0].endswith("its events are dropped [unrouted-output]")


def test_an_allow_comment_in_the_program_lets_strict_pass(
    write_topology: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The warnings a program means (here: 'ip' set but not read, 'ipp' never set) are accepted
    by allow comments in the program, and ``--strict`` passes; without them it fails."""
    allowed = MISSPELT.replace(")*\n", ")* // meant: eventscript: allow never-read, never-set\n")
    assert main(["topology", "check", "--strict", str(write_topology(TOPOLOGY, {"seen.es": allowed}))]) == 0
    out = capsys.readouterr().out
    assert "warning" not in out and ": ok: 1 program, 3 topics\n" in out
    assert main(["topology", "check", "--strict", str(write_topology(TOPOLOGY, {"seen.es": MISSPELT}))]) == 1
