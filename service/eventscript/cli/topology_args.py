"""The topology a Kafka command was given, and the program ``--program`` names in it.

``dev``, ``produce``, ``run``, ``export`` and ``backfill`` read their topology file the same way:
``--bootstrap-servers`` in place of the file's Kafka address when given (so one file serves a
laptop and a cluster), and the program ``--program`` names, or the first one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from ..topology.config import ProgramConfig, Topology


def load_with_address(path: str, bootstrap_servers: str | None) -> Topology:
    """The topology file at ``path``, its Kafka address replaced by ``bootstrap_servers`` when
    given; raises ``TopologyError`` (which names the file and what is wrong)."""
    from ..topology.config import load_topology  # when used, as the commands import what they run

    topo = load_topology(path)
    if bootstrap_servers:
        topo.use_address(bootstrap_servers, "--bootstrap-servers")
    return topo


def program_or_first(topo: Topology, name: str | None) -> ProgramConfig:
    """The program named ``name`` (``TopologyError`` listing the programs when there is none), or
    the topology's first program when no name is given."""
    return topo.program(name) if name else topo.programs[0]


def report_wiring_errors(topo: Topology, path: str, out: TextIO = sys.stderr) -> bool:
    """Print the errors ``eventscript topology check`` would find in ``topo`` (a program that cannot
    be read or does not compile, a link that does not fit), each at its ``file:line:col`` with what
    to do, and return whether there were any. Commands that start a broker or workers call it
    first, so that a typo in ``source:`` is said where it is before anything is started."""
    from ..topology.check import check, errors
    from ..topology.model import build_graph

    problems = errors(check(build_graph(topo, Path(path))))
    for finding in problems:
        print(finding.render(), file=out)
    if problems:
        print(f"{path}: the topology has errors; see 'eventscript topology check {path}'", file=out)
    return bool(problems)


def report_unreadable_programs(topo: Topology, path: str, out: TextIO = sys.stderr) -> bool:
    """Print, as ``topology check`` does, each program whose ``source:`` cannot be read, at its
    ``topology.yaml:line:col``; return whether there was one. The cheap part of
    :func:`report_wiring_errors` (nothing is compiled), for ``run`` and ``produce``: the workers
    compile the programs themselves and would otherwise name the file without its place."""
    from ..topology.findings import Finding, Severity
    from ..topology.positions import YamlPositions

    unreadable = []
    for i, cfg in enumerate(topo.programs):
        source = topo.source_path(cfg)
        try:
            with open(source, "rb"):
                pass
        except OSError as exc:
            where = YamlPositions.read(Path(path)).where("programs", i, "source")
            message = f"program {cfg.name}: {source}: cannot read the program: {exc.strerror or exc}"
            unreadable.append(
                Finding(Severity.ERROR, where, message, "fix 'source:' (it is relative to the topology file)")
            )
    for finding in unreadable:
        print(finding.render(), file=out)
    return bool(unreadable)
