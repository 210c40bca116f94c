"""The topology model (programs, inputs, topics, the Kafka connection) moved to
:mod:`eventscript.topology.config`: it describes a topology, which every host reads, not the
worker alone. Re-exported here for the tests and tools that import it from its old place."""

from ..topology.config import (  # noqa: F401
    HealthConfig,
    InputConfig,
    KafkaConfig,
    NameFrom,
    ProgramConfig,
    SaslConfig,
    SecurityConfig,
    SslConfig,
    StateConfig,
    TopicSpec,
    Topology,
    TopologyError,
    load_topology,
    parse_topology,
    substitute_env,
)
