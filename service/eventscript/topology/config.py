"""Topology files: YAML, validated with pydantic, with ``${VAR}`` / ``${VAR:-default}`` from the
environment. Errors name the file, the path inside it (``programs[0].inputs[1].topic``) and what
to do.

A topology names the Kafka cluster and the programs to run; each program reads its input topics,
keeps one instance per group key, and writes outputs and ``$error`` events to topics::

    kafka:
      bootstrap_servers: ${KAFKA_BOOTSTRAP_SERVERS:-localhost:9092}
    programs:
      - name: overheat
        source: overheat.es
        inputs:
          - topic: readings
            event: Reading
        outputs:
          default: alerts
        errors: alerts-errors
        clock: wall
    topics:
      readings: {partitions: 4}
"""

from __future__ import annotations

import os
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from ..language.hints import closest
from .errors import TopologyError

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


#: What Kafka accepts in a topic name (at most 249 characters); consumer groups and internal topics
#: are named from the application and program names, so those follow the same rule.
_KAFKA_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


def kafka_name(value: str) -> str:
    """A Kafka topic name, or ValueError saying what is wrong with it (Kafka would refuse it later)."""
    if not _KAFKA_NAME.fullmatch(value):
        raise ValueError(
            f"{value!r} cannot name a Kafka topic: use letters, digits, '.', '_' and '-' only, at most 249 of them"
        )
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class SaslConfig(_Model):
    mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"] = "PLAIN"
    username: str | None = None
    password: str | None = None
    #: A file holding the password (e.g. a Kubernetes Secret mounted as a volume), read each time a
    #: client is created, instead of ``password`` (an environment variable never changes in a pod).
    password_file: str | None = None

    @model_validator(mode="after")
    def _one_password(self) -> SaslConfig:
        if self.password is not None and self.password_file is not None:
            raise ValueError("give 'password' or 'password_file', not both")
        return self


class SslConfig(_Model):
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = None
    endpoint_identification: Literal["https", "none"] = "https"


class SecurityConfig(_Model):
    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl: SaslConfig | None = None
    ssl: SslConfig | None = None

    @model_validator(mode="after")
    def _consistent(self) -> SecurityConfig:
        if self.protocol.startswith("SASL") and self.sasl is None:
            raise ValueError(f"protocol {self.protocol} needs a 'sasl' section (mechanism, username, password)")
        return self


#: librdkafka's partitioners that place a keyed record as the Java client does.
MURMUR2_PARTITIONERS = ("murmur2_random", "murmur2")


class KafkaConfig(_Model):
    bootstrap_servers: str = "localhost:9092"
    client_id: str = "eventscript"
    security: SecurityConfig = Field(default_factory=SecurityConfig)
    #: Any other librdkafka settings, passed to consumers, producers and admin clients.
    extra: dict[str, Any] = Field(default_factory=dict)
    #: Extra settings for consumers only / producers only.
    consumer: dict[str, Any] = Field(default_factory=dict)
    producer: dict[str, Any] = Field(default_factory=dict)
    #: Static group membership (``group.instance.id`` = the worker's instance id): a worker back
    #: within the session timeout keeps its tasks, with no rebalance. Turn off where instance ids
    #: are not stable (then every restart rebalances).
    static_membership: bool = True

    @model_validator(mode="after")
    def _murmur2_producers(self) -> KafkaConfig:
        # The worker's routing, the keys a downstream program finds on its task's partition and
        # the proofs of topology/keyed.py all assume its producers place keys by murmur2
        # (docs/worker.md, "Keys and partitioners"): another partitioner would put records where
        # no reader looks for them, silently.
        for where, settings in (("producer", self.producer), ("extra", self.extra)):
            value = settings.get("partitioner")
            if value is not None and value not in MURMUR2_PARTITIONERS:
                raise ValueError(
                    f"kafka.{where}.partitioner: {value!r} is not allowed: the worker's producers place "
                    f"keys by murmur2 (murmur2_random, the Java client's partitioner), which its routing "
                    f"and every program downstream rely on; remove the setting (an input's own "
                    f"'partitioner:' says how an outside producer placed its records)"
                )
        return self


class NameFrom(_Model):
    """Where an input record's event name comes from, when the topic carries several events."""

    header: str | None = None
    field: str | None = None

    @model_validator(mode="after")
    def _one(self) -> NameFrom:
        if (self.header is None) == (self.field is None):
            raise ValueError("give exactly one of 'header' or 'field'")
        return self


class InputConfig(_Model):
    topic: Annotated[str, AfterValidator(kafka_name)]
    #: The event name of every record of this topic ...
    event: str | None = None
    #: ... or where to find it in each record (a header, or a top-level field of the JSON value,
    #: whose other field 'value' then holds the event value).
    event_from: NameFrom | None = None
    format: Literal["json", "cloudevents"] = "json"
    #: Records of a grouped program must be keyed (by anything: the worker routes by the group
    #: key it computes). A record without a key becomes $error 6 unless this is false.
    keyed: bool | None = None
    #: How this topic's producers write record keys (kafka/keys.py): string (default for a
    #: one-component group key), json (default otherwise), bytes, or none (unkeyed records).
    key: Literal["string", "json", "bytes", "none"] | None = None
    #: How they place records: murmur2 (Java client, Kafka Streams) or consistent_random
    #: (librdkafka's default: confluent-kafka and other librdkafka-based producers).
    partitioner: Literal["murmur2", "consistent_random"] = "murmur2"
    #: Fields of a record's value that the event's type does not declare: ignore them (producers
    #: add fields over time) or make the record an $error 6, as a trace's extra field is.
    extra_fields: Literal["ignore", "error"] = "ignore"
    #: A source partition read to its end with nothing new for this long stops holding back the
    #: record time of the program's tasks and of the programs downstream (task/progress.py).
    #: None (or 0): at once, as a task's merge takes what is fetched; longer waits for slow
    #: producers (Flink's ``withIdleness``), at the cost of that much latency when one is quiet.
    idle_timeout_ms: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _name_source(self) -> InputConfig:
        if self.format == "cloudevents":
            if self.event is not None or self.event_from is not None:
                raise ValueError(
                    "a CloudEvents input takes the event name from the 'type' attribute; "
                    "remove 'event' and 'event_from'"
                )
        elif self.event is not None and self.event_from is not None:
            raise ValueError(
                "give either 'event: Name' (every record is that event) or 'event_from: ...' (the name is in "
                "each record), not both"
            )
        elif self.event is None and self.event_from is None:
            raise ValueError(
                "give the event name of the topic's records ('event: Name') or where to find "
                "it ('event_from: {header: ...}' or '{field: ...}')"
            )
        return self


class TopicSpec(_Model):
    #: Kafka stores partition counts as 32-bit integers.
    partitions: int = Field(default=1, ge=1, le=2**31 - 1)
    #: Replication factor; None: the broker's default (default.replication.factor).
    replication: int | None = Field(default=None, ge=1)
    config: dict[str, str] = Field(default_factory=dict)
    #: Written by producers outside the topology. 'topology check' wants this on every topic a
    #: program reads and none writes, so that a misspelt link is not taken for a source.
    external: bool = False
    #: What those producers write, for 'topology check': event names (a list), or a map from each
    #: name to its EventScript type, quoted ("{string symbol; double price;}"), or null. Empty: any.
    events: dict[str, str | None] = Field(default_factory=dict)

    @field_validator("events", mode="before")
    @classmethod
    def _event_names(cls, v: Any) -> Any:
        if isinstance(v, list):
            return {name: None for name in v}
        if isinstance(v, dict):
            for name, ty in v.items():
                if isinstance(ty, dict):
                    raise ValueError(
                        f"the type of {name} is read as a YAML mapping: quote it, as in "
                        f'{name}: "{{string symbol; double price;}}"'
                    )
        return v

    @model_validator(mode="after")
    def _events_of_external(self) -> TopicSpec:
        if self.events and not self.external:
            raise ValueError(
                "'events' lists what producers outside the topology write: add 'external: true' (or remove 'events')"
            )
        return self


class StateConfig(_Model):
    """How much of a program's state a worker keeps in memory (the rest stays in its local store)."""

    #: Memory for the instances in memory, in MiB, shared by the program's tasks on one worker
    #: (instance sizes are estimated as they run: docs/worker.md, "State and memory sizing").
    cache_mib: float = Field(default=256, gt=0)
    #: Or a number of instances (shared likewise); when set, it replaces cache_mib.
    cache_instances: int | None = Field(default=None, ge=1)


class ProgramConfig(_Model):
    name: str
    source: str
    inputs: list[InputConfig] = Field(min_length=1)
    #: Output event name → topic; the key 'default' catches every other output event.
    outputs: dict[str, Annotated[str, AfterValidator(kafka_name)]] = Field(default_factory=dict)
    #: Topic for $error events (default: "<program>-errors").
    errors: Annotated[str, AfterValidator(kafka_name)] | None = None
    guarantee: Literal["exactly_once", "at_least_once"] = "exactly_once"
    #: How often a batch is committed (default: 100 ms with exactly_once, as outputs become
    #: visible only at commit; 1000 ms with at_least_once, where commits only bound re-processing).
    commit_interval_ms: int | None = Field(default=None, ge=1)
    #: wall: time is the machine's clock and timers fire on it; record: time is the record
    #: timestamps, and timers fire as record time passes them (deterministic replays).
    clock: Literal["wall", "record"] = "wall"
    timezone: str = "UTC"
    state_dir: str | None = None
    state: StateConfig = Field(default_factory=StateConfig)
    #: How long a task may wait for a record from every input partition before merging what it
    #: has by timestamp (0: never wait).
    max_task_idle_ms: int = Field(default=0, ge=0)
    #: DFA states built eagerly before the lazy DFA takes over.
    state_limit: int = Field(default=40_000, ge=1)
    #: Standby replicas: each worker keeps warm copies of this many other workers' tasks per task
    #: it owns, so that a fail-over replays only the changelog's tail (kafka/standby.py).
    num_standby: int = Field(default=0, ge=0)
    #: What a worker does with stored instances written by another version of the program
    #: (upgrade/loader.py): refuse to run over them (the default: check the change with
    #: 'eventscript upgrade plan OLD NEW' first), carry them by the plan (an instance the plan
    #: cannot carry restarts or ends, as it says), or restart every one of them afresh.
    upgrade: Literal["carry", "restart", "refuse"] = "refuse"

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9._-]+", v):
            raise ValueError("use letters, digits, '.', '_' and '-' only (it names consumer groups and topics)")
        return v

    @field_validator("timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {v!r}; use an IANA name such as UTC or Europe/Paris") from None
        return v

    @property
    def commit_interval(self) -> int:
        if self.commit_interval_ms is not None:
            return self.commit_interval_ms
        return 100 if self.guarantee == "exactly_once" else 1000

    @property
    def error_topic(self) -> str:
        return self.errors or f"{self.name}-errors"

    def output_topic(self, event: str) -> str | None:
        return self.outputs.get(event, self.outputs.get("default"))


class HealthConfig(_Model):
    #: Port of the HTTP server for /healthz, /readyz and /metrics (0: none).
    port: int = Field(default=0, ge=0, le=65535)
    host: str = "127.0.0.1"


class StateQueryConfig(_Model):
    #: Serve GET /state/<program>?key=... on the health port (read-only; kafka/state_endpoint.py).
    enabled: bool = False
    #: The bearer token requests must carry (write ${ENV_VAR}); None: none asked for.
    token: str | None = None


class Topology(_Model):
    #: Prefix of consumer groups and internal topics.
    application: Annotated[str, AfterValidator(kafka_name)] = "eventscript"
    kafka: KafkaConfig = Field(default_factory=KafkaConfig)
    programs: list[ProgramConfig] = Field(min_length=1)
    #: Topics to create when missing.
    topics: dict[Annotated[str, AfterValidator(kafka_name)], TopicSpec] = Field(default_factory=dict)
    #: Create missing topics (inputs listed under topics:, outputs, errors, internal topics).
    #: false: topics are managed elsewhere (Strimzi KafkaTopic, Terraform); the worker then only
    #: checks that they exist with the partition counts it needs.
    create_topics: bool = True
    #: Replication factor of the topics the worker creates and that topics: does not list
    #: (None: the broker's default).
    replication: int | None = Field(default=None, ge=1)
    #: retention.ms of repartition topics; -1 (the default): kept until consumed and committed,
    #: then deleted by the workers (DeleteRecords), as Kafka Streams does. A finite retention
    #: deletes records a lagging or restoring task has not processed yet (re-published records
    #: keep their original timestamps, so old history is deleted at once).
    repartition_retention_ms: int = Field(default=-1, ge=-1)
    health: HealthConfig = Field(default_factory=HealthConfig)
    state_query: StateQueryConfig = Field(default_factory=StateQueryConfig)
    #: Progress markers (docs/topologies.md, "Event time across topics"): record-clock programs
    #: mark how far they have written on the topics another program reads (and on their
    #: repartition topic), and a later stage's tasks wait for every writer before they move their
    #: clock, so pipelines on several partitions give the simulated answer. On by default; false
    #: gives the merge of what was fetched (a later stage on several partitions may then process
    #: upstream records late), for readers of those topics that cannot skip the markers.
    event_time_markers: bool = True
    state_dir: str = "state"
    #: Identifies this worker for transactions (stable across restarts of the same worker).
    instance_id: str | None = None

    @field_validator("repartition_retention_ms")
    @classmethod
    def _retention_not_zero(cls, v: int) -> int:
        if v == 0:
            raise ValueError("0 would delete every record at once; give -1 (kept until committed) or milliseconds")
        return v

    #: Where the file was read from (sources and state directories are relative to it).
    base_dir: Path = Field(default=Path("."), exclude=True)
    #: ``file:line:col`` of a setting by its path (``YamlPositions.where``), when read from a file.
    _where: Callable[..., str] | None = PrivateAttr(default=None)
    _source: str = PrivateAttr(default="<topology>")
    #: What gave the Kafka address in place of the file's (``use_address``; None: the file's).
    _address_from: str | None = PrivateAttr(default=None)

    @property
    def source(self) -> str:
        """The file the topology was read from, as messages name it ("<topology>": not a file)."""
        return self._source

    @property
    def address_from(self) -> str | None:
        """What gave the Kafka address in place of the file's (``--bootstrap-servers``), else None."""
        return self._address_from

    def use_address(self, bootstrap_servers: str, given_by: str) -> None:
        """Talk to Kafka at ``bootstrap_servers`` instead of the file's address, as ``given_by``
        says (``--bootstrap-servers``): a broker that does not answer is then said to be that one."""
        self.kafka.bootstrap_servers = bootstrap_servers
        self._address_from = given_by

    def where(self, *path: str | int) -> str:
        """``file:line:col`` of the setting at ``path`` (e.g. ``"programs", 0, "inputs", 1``), for
        messages about the wiring found after the file was read; the file's name when not known."""
        return self._where(*path) if self._where is not None else self._source

    def where_of(self, program: ProgramConfig, *path: str | int) -> str:
        """``file:line:col`` of a setting of ``program`` (``path`` within its entry)."""
        index = next((i for i, p in enumerate(self.programs) if p is program), None)
        return self.where("programs", index, *path) if index is not None else self._source

    @model_validator(mode="after")
    def _unique(self) -> Topology:
        names = [p.name for p in self.programs]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"program names must be unique; repeated: {', '.join(sorted(dup))}")
        # Kafka treats '.' and '_' in topic names as one (they collide in metric names) and
        # refuses a topic that collides with an existing one: so would two programs' internal topics.
        folded: dict[str, str] = {}
        for n in names:
            other = folded.setdefault(n.replace(".", "_"), n)
            if other != n:
                raise ValueError(
                    f"programs {other!r} and {n!r} differ only in '.' and '_': their internal topics "
                    f"would collide in Kafka; rename one"
                )
        return self

    def program(self, name: str) -> ProgramConfig:
        for p in self.programs:
            if p.name == name:
                return p
        raise TopologyError(
            f"no program named {name!r} in {self.source} (programs: {', '.join(p.name for p in self.programs)})"
        )

    def source_path(self, program: ProgramConfig) -> Path:
        p = Path(program.source)
        return p if p.is_absolute() else self.base_dir / p

    def state_path(self, program: ProgramConfig) -> Path:
        base = Path(program.state_dir or self.state_dir)
        base = base if base.is_absolute() else self.base_dir / base
        return base / program.name

    def group_id(self, program: ProgramConfig) -> str:
        return f"{self.application}.{program.name}"

    def repartition_topic(self, program: ProgramConfig) -> str:
        return f"{self.application}.{program.name}-repartition"

    def changelog_topic(self, program: ProgramConfig) -> str:
        return f"{self.application}.{program.name}-changelog"


@dataclass(frozen=True)
class UnsetVariable:
    """A ``${VAR}`` without a default whose variable is not set, in a topology read for its
    structure only (``topology check``): left as written, and reported as a warning there."""

    name: str
    #: ``file:line:col`` of the ``${`` ("" when the caller knows no file).
    where: str
    #: The setting it is in, e.g. ``kafka.bootstrap_servers``.
    setting: str


def substitute_env(
    value: Any,
    env: dict[str, str] | None = None,
    place: Callable[[tuple[Any, ...], int], str] | None = None,
    loc: tuple[Any, ...] = (),
    unset: list[UnsetVariable] | None = None,
) -> Any:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in every string of a parsed YAML document.

    A variable that is not set and has no default is an error wherever a topology is read to run
    (``run``, ``dev``, ``test``, the playground): :class:`TopologyError` naming the setting, the
    variable and the fix, placed by ``place(path, offset)`` (the file's line and column of
    character ``offset`` of the string at ``path``) when the caller knows the file. A caller that
    reads only the structure (``topology check``: the deployment's environment is not needed to
    check links) passes ``unset``: each such variable is added to it and left as written."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    if isinstance(value, str):

        def repl(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if name in env:  # type: ignore[operator]
                return env[name]  # type: ignore[index]
            if default is not None:
                return default
            if unset is not None:
                unset.append(UnsetVariable(name, place(loc, m.start()) if place else "", _loc(loc)))
                return m.group(0)
            at = f"{place(loc, m.start())}: " if place else ""
            raise TopologyError(
                f"{at}{_loc(loc) if loc else 'value'}: environment variable {name} is not set\n"
                f"  hint: set {name} in the environment of the command reading this topology, "
                f"or give a default: ${{{name}:-default}}"
            )

        return _ENV.sub(repl, value)
    if isinstance(value, dict):
        return {k: substitute_env(v, env, place, (*loc, k), unset) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_env(v, env, place, (*loc, i), unset) for i, v in enumerate(value)]
    return value


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _unknown_setting(loc: tuple[Any, ...]) -> str:
    """The message for a setting no model declares, naming the setting meant when its name is
    close to one accepted at that place (``ouputs``: ``outputs``), since a typo is the usual cause."""
    near = closest(str(loc[-1]), _settings_at(loc[:-1]))  # (the compiler's did-you-mean for names)
    meant = f": did you mean {near}?" if near else ""
    return f"unknown setting{meant} (check its spelling and indentation)"


#: Pydantic's words for a value of the wrong shape, which name a Python type and no way to write
#: it in YAML (an input list written as a mapping: "Input should be a valid list").
_SHAPES = {
    "list_type": "should be a list: one item per line, each starting with '- ', or [a, b] on one line",
    "dict_type": "should be a mapping: one 'name: value' per line, indented under it, or {name: value}",
    "model_type": "should be a mapping of settings: one 'name: value' per line, indented under it",
    "missing": "required setting is missing",
}


def _schema_message(err: Any) -> str:
    """What a schema error says: in YAML's words for a value of the wrong shape, else pydantic's."""
    return _SHAPES.get(err["type"]) or err["msg"].removeprefix("Value error, ")


def _settings_at(path: tuple[Any, ...]) -> list[str]:
    """The settings the topology file accepts in the mapping at ``path`` (``("programs", 0)``:
    a program's), followed through the models' fields, lists and maps; [] where none is known."""
    node: Any = Topology
    for part in path:
        node = _without_none(node)
        if isinstance(node, type) and issubclass(node, BaseModel):
            field = node.model_fields.get(part) if isinstance(part, str) else None
            node = field.annotation if field else None
        elif typing.get_origin(node) in (list, dict):
            node = typing.get_args(node)[-1]
        else:
            return []
    node = _without_none(node)
    return list(node.model_fields) if isinstance(node, type) and issubclass(node, BaseModel) else []


def _without_none(node: Any) -> Any:
    """``X`` for an optional setting's ``X | None``, so its settings can be followed."""
    args = [a for a in typing.get_args(node) if a is not type(None)]
    return args[0] if typing.get_origin(node) in (typing.Union, types.UnionType) and len(args) == 1 else node


def parse_topology(
    data: Any,
    source: str = "<topology>",
    base_dir: Path | None = None,
    env: dict[str, str] | None = None,
    where: Callable[..., str] | None = None,
    place: Callable[[tuple[Any, ...], int], str] | None = None,
    unset: list[UnsetVariable] | None = None,
) -> Topology:
    """A topology from its parsed YAML ``data``. ``where(*path)`` and ``place(path, offset)``
    give ``file:line:col`` for a setting and for a character of its string (``YamlPositions``):
    errors name them when given, else the ``source`` and the setting's path. ``unset``: see
    :func:`substitute_env`."""
    if not isinstance(data, dict):
        raise TopologyError(f"{source}: a topology is a mapping with 'kafka', 'programs' and 'topics'")
    try:
        data = substitute_env(data, env, place, unset=unset)
    except TopologyError as exc:
        raise TopologyError(str(exc) if place else f"{source}: {exc}") from None
    try:
        topo = Topology.model_validate(data)
    except ValidationError as exc:
        lines = [f"{source}: invalid topology:"]
        for err in exc.errors():
            unknown = err["type"] == "extra_forbidden"
            msg = _unknown_setting(err["loc"]) if unknown else _schema_message(err)
            at = f"{where(*err['loc'], key=unknown)}: " if where else ""
            lines.append(f"  {at}{_loc(err['loc'])}: {msg}")
        raise TopologyError("\n".join(lines)) from None
    topo.base_dir = base_dir or Path(".")
    topo._where, topo._source = where, source
    return topo


def load_topology(
    path: str | Path, env: dict[str, str] | None = None, unset: list[UnsetVariable] | None = None
) -> Topology:
    """A topology file, read with limits (topology/load.py); schema errors name file:line:col.
    ``unset``: see :func:`substitute_env`."""
    from .load import read_topology_file

    p = Path(path)
    data, positions = read_topology_file(p)
    return parse_topology(data, str(p), p.parent, env, where=positions.where, place=positions.where_in, unset=unset)
