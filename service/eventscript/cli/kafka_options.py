"""The options of ``run``, ``dev``, ``produce`` and ``tail`` (``kafka_cmds`` runs them), apart from
what runs them so that building the parser (``eventscript --help``, any command) imports neither
the Kafka machinery nor the tester's trace reader."""

from __future__ import annotations

import argparse

from .arguments import port, seconds

#: ``--health-port`` of ``run`` and ``dev``.
HEALTH_PORT_HELP = (
    "serve /healthz, /readyz and /metrics on this port, and /state/<program>?key=K where the topology "
    "enables state_query ('eventscript state' asks it)"
)


def _common(p: argparse.ArgumentParser, topology: bool = True) -> None:
    if topology:
        p.add_argument("topology", metavar="TOPOLOGY.yaml")
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="override the topology's Kafka address")
    p.add_argument("-v", "--verbose", action="store_true", help="log what is done, and librdkafka's own lines")


def setup_run(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--program", action="append", metavar="NAME", help="run only this program (repeatable)")
    p.add_argument("--health-port", type=port, metavar="PORT", help=HEALTH_PORT_HELP)
    p.add_argument(
        "--health-host",
        metavar="ADDRESS",
        help="address the health server listens on (default: the topology's, 127.0.0.1; 0.0.0.0 in containers)",
    )
    p.add_argument(
        "--until-idle",
        type=seconds,
        metavar="SECONDS",
        help="stop once all input has been processed and nothing new came for this long",
    )


def setup_dev(p: argparse.ArgumentParser) -> None:
    p.add_argument("topology", metavar="TOPOLOGY.yaml")
    p.add_argument("--trace", metavar="FILE", help="publish this timed trace to the (first) program's inputs")
    p.add_argument("--program", metavar="NAME", help="the program the trace is for (default: the first)")
    p.add_argument(
        "--until-idle",
        type=seconds,
        metavar="SECONDS",
        help="stop once everything has been processed and nothing new came for this long",
    )
    p.add_argument(
        "--show",
        action="store_true",
        help="at the end (also after Ctrl-C), print the records of the programs' output and error topics",
    )
    p.add_argument(
        "--broker",
        choices=["embedded", "kafka"],
        default="embedded",
        help="embedded: the Tansu broker (starts at once, no Java); kafka: Apache Kafka from the "
        "jars scripts/get-kafka fetches (needs Java 17)",
    )
    p.add_argument(
        "--follow", action="store_true", help="print the records of the output and error topics as they are written"
    )
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="keep the programs' state in DIR (default: a fresh temporary folder, removed at the end, "
        "since the embedded broker starts empty each run)",
    )
    p.add_argument("--health-port", type=port, metavar="PORT", help=HEALTH_PORT_HELP)
    p.add_argument("-v", "--verbose", action="store_true", help="log what the workers do, and librdkafka's own lines")


def setup_produce(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument(
        "--trace", required=True, metavar="FILE", help="the timed trace to publish (as 'eventscript test' reads it)"
    )
    p.add_argument("--program", metavar="NAME", help="the program whose inputs receive the trace (default: the first)")


def setup_tail(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument(
        "--bootstrap-servers",
        metavar="HOST:PORT",
        help="Kafka address (default: $KAFKA_BOOTSTRAP_SERVERS, or --topology's)",
    )
    p.add_argument("--topology", metavar="TOPOLOGY.yaml", help="take the Kafka settings from a topology")
    p.add_argument(
        "--idle",
        type=seconds,
        default=2.0,
        metavar="SECONDS",
        help="stop when every partition is at its end and nothing came for this long (default 2)",
    )
    p.add_argument("--follow", action="store_true", help="keep printing new records until interrupted")
    p.add_argument("--dedupe", action="store_true", help="skip records whose es-id was already printed")
    p.add_argument(
        "--markers",
        action="store_true",
        help="also print the progress markers of the tasks writing the topic (hidden by default)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="also print librdkafka's own log lines")
