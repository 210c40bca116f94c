"""A topology read as a graph: its programs compiled, and who writes and reads each topic.

``check``, ``plan``, ``graph`` and ``simulate`` all need the same facts — each program's declared
inputs and outputs with their types, where each output event goes (the ``outputs:`` map), and
which input settings read each topic — so they are worked out once here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..automata.compile import DEFAULT_STATE_LIMIT, Compilation, compile_file
from ..language.checker import InputEvent, OutputEvent
from .config import InputConfig, ProgramConfig, Topology, UnsetVariable, load_topology
from .headers import HEADER_EVENT
from .positions import YamlPositions


@dataclass
class Stage:
    """One program of the topology, compiled (``compilation`` is None when it cannot be read)."""

    index: int
    config: ProgramConfig
    path: Path
    compilation: Compilation | None
    read_error: str | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def ok(self) -> bool:
        return self.compilation is not None and self.compilation.ok

    @property
    def inputs(self) -> dict[str, InputEvent]:
        checked = self.compilation.checked if self.compilation else None
        return dict(checked.inputs) if checked else {}

    @property
    def outputs(self) -> dict[str, OutputEvent]:
        checked = self.compilation.checked if self.compilation else None
        return dict(checked.outputs) if checked else {}

    @property
    def grouped(self) -> bool:
        checked = self.compilation.checked if self.compilation else None
        return bool(checked and checked.grouped)


@dataclass(frozen=True)
class Write:
    """Program ``stage`` writes its output ``event`` to ``topic``."""

    stage: Stage
    event: str
    topic: str


@dataclass(frozen=True)
class Read:
    """Program ``stage`` reads ``topic`` through its input setting number ``input_index``."""

    stage: Stage
    input_index: int
    config: InputConfig

    @property
    def topic(self) -> str:
        return self.config.topic

    def name_of(self, written: str) -> str | None:
        """The event name this input gives a record written as event ``written`` by a program
        (the worker's output record carries the name in the ``es-event`` header and the bare
        value as JSON), or None when this input cannot decode such a record."""
        c = self.config
        if c.format != "json":
            return None
        if c.event is not None:
            return c.event
        if c.event_from is not None and c.event_from.header == HEADER_EVENT:
            return written
        return None


@dataclass
class TopologyGraph:
    topology: Topology
    file: Path
    stages: list[Stage]
    positions: YamlPositions
    writes: dict[str, list[Write]] = field(default_factory=dict)
    reads: dict[str, list[Read]] = field(default_factory=dict)
    #: $error topics, with the programs writing to each.
    error_writers: dict[str, list[Stage]] = field(default_factory=dict)
    #: ``${VAR}``s without a default whose variable is not set, left as written (read for the
    #: structure only: ``load_graph(..., structure_only=True)``).
    unset_variables: list[UnsetVariable] = field(default_factory=list)

    def where_program(self, stage: Stage, *path: str | int) -> str:
        return self.positions.where("programs", stage.index, *path)

    @property
    def external_topics(self) -> list[str]:
        """Topics read by some program but written by none: the pipeline's sources."""
        return [t for t in self.reads if t not in self.writes and t not in self.error_writers]

    def source_events(self, topic: str) -> list[str] | None:
        """The events a source topic's declaration says outside producers write there; None when
        it lists none (any event may come)."""
        spec = self.topology.topics.get(topic)
        return list(spec.events) if spec is not None and spec.events else None

    @property
    def sink_topics(self) -> list[str]:
        """Topics written by some program and read by none: the pipeline's results."""
        written = [*self.writes, *(t for t in self.error_writers if t not in self.writes)]
        return [t for t in written if t not in self.reads]

    def all_topics(self) -> list[str]:
        seen: dict[str, None] = {}
        for t in [*self.reads, *self.writes, *self.error_writers, *self.topology.topics]:
            seen.setdefault(t, None)
        return list(seen)


def build_graph(
    topology: Topology, file: Path, state_limit: int = DEFAULT_STATE_LIMIT, resolve_externals: bool = True
) -> TopologyGraph:
    """Compile every program of ``topology`` and record who writes and reads each topic.
    ``resolve_externals=False`` checks external function declarations without importing their
    modules (the playground checks untrusted programs so)."""
    stages: list[Stage] = []
    for i, cfg in enumerate(topology.programs):
        path = topology.source_path(cfg)
        try:
            comp: Compilation | None = compile_file(path, state_limit=state_limit, resolve_externals=resolve_externals)
            problem = None
        except OSError as exc:
            comp, problem = None, f"cannot read the program: {exc.strerror or exc}"
        except UnicodeDecodeError:
            comp, problem = None, "the program is not UTF-8 text"
        stages.append(Stage(i, cfg, path, comp, problem))
    graph = TopologyGraph(topology, file, stages, YamlPositions.read(file))
    for st in stages:
        for j, inp in enumerate(st.config.inputs):
            graph.reads.setdefault(inp.topic, []).append(Read(st, j, inp))
        for event in st.outputs:
            topic = st.config.output_topic(event)
            if topic is not None:
                graph.writes.setdefault(topic, []).append(Write(st, event, topic))
        graph.error_writers.setdefault(st.config.error_topic, []).append(st)
    return graph


def load_graph(
    path: str | Path,
    state_limit: int = DEFAULT_STATE_LIMIT,
    resolve_externals: bool = True,
    *,
    structure_only: bool = False,
) -> TopologyGraph:
    """Read a topology file and compile its programs (raises ``TopologyError`` for a bad file).
    ``structure_only``: the caller checks the wiring and contacts nothing (``topology check``),
    so a ``${VAR}`` whose variable is not set (the deployment's environment: the Kafka address, a
    password) is left as written and listed in ``unset_variables`` rather than an error."""
    p = Path(path)
    unset: list[UnsetVariable] | None = [] if structure_only else None
    graph = build_graph(load_topology(p, unset=unset), p, state_limit, resolve_externals)
    graph.unset_variables = unset or []
    return graph
