"""Wiring errors found once the programs are compiled (after the topology file was read) name the
setting's place in the topology file, file:line:col, as the file's schema errors do."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from eventscript.kafka.supervisor import compile_programs
from eventscript.topology.config import load_topology
from eventscript.topology.errors import TopologyError

PROGRAM = "in {string k;} Tick group(Tick.k)\nout {string k;} Seen\n( Tick() { !>Seen({k: group[0]}); } )*\n"

TOPOLOGY = """\
kafka:
  bootstrap_servers: localhost:9092
programs:
  - name: first
    source: p.es
    inputs:
      - topic: a
        event: Tick
  - name: second
    source: {source}
    inputs:
      - topic: b
        event: Tick
      - topic: c
        event: {event}
    outputs:
      {outputs}
"""


def _topology(tmp_path: Path, source: str = "p.es", event: str = "Tick", outputs: str = "default: out") -> Path:
    (tmp_path / "p.es").write_text(PROGRAM)
    path = tmp_path / "topology.yaml"
    path.write_text(TOPOLOGY.format(source=source, event=event, outputs=outputs))
    return path


def test_an_input_naming_an_undeclared_event_is_placed(tmp_path: Path) -> None:
    path = _topology(tmp_path, event="Tock")
    topo = load_topology(path)
    with pytest.raises(TopologyError) as err:
        compile_programs(topo, topo.programs, out=io.StringIO())
    assert str(err.value).startswith(f"{path}:15:16: program second: inputs[1] names event 'Tock'"), err.value


def test_an_unreadable_source_is_placed(tmp_path: Path) -> None:
    path = _topology(tmp_path, source="nosuch.es")
    topo = load_topology(path)
    with pytest.raises(TopologyError) as err:
        compile_programs(topo, topo.programs, out=io.StringIO())
    assert str(err.value).startswith(f"{path}:10:13: program second: cannot read"), err.value


def test_an_output_without_a_topic_is_placed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _topology(tmp_path, outputs="Other: x")
    topo = load_topology(path)
    compile_programs(topo, topo.programs, out=io.StringIO())
    assert f"{path}:17:7: program second: output event Seen has no topic" in caplog.text


def test_a_topology_not_read_from_a_file_names_its_source() -> None:
    from eventscript.topology.config import parse_topology

    topo = parse_topology(
        {
            "kafka": {"bootstrap_servers": "x:1"},
            "programs": [{"name": "p", "source": "p.es", "inputs": [{"topic": "a", "event": "T"}]}],
        },
        "inline",
    )
    assert topo.where_of(topo.programs[0], "inputs", 0) == "inline"
