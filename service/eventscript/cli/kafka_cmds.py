"""``run``, ``dev``, ``produce`` and ``tail``: the Kafka worker's commands (their options: ``kafka_options``)."""

from __future__ import annotations

import argparse
import io
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from .health_port import health_port_problem
from .state_lock import StateFolderError, lock_state_folders
from .topology_args import load_with_address, program_or_first, report_unreadable_programs, report_wiring_errors
from .trace_names import warn_unread_events
from .wording import counted

if TYPE_CHECKING:
    from ..automata.compiled import CompiledProgram
    from ..tester.trace import TraceItem
    from ..topology.config import ProgramConfig, Topology


def _logging(verbose: bool) -> None:
    """Log to stderr; librdkafka's own lines only with --verbose.

    An unreachable broker makes librdkafka log a "Connect ... failed" line every few tens of
    milliseconds, hundreds before a command gives up; the command then says "cannot reach Kafka"
    once, which is all a user needs unless they ask for more.
    """
    from ..kafka.clients import LIBRDKAFKA_LOG

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    LIBRDKAFKA_LOG.setLevel(logging.NOTSET if verbose else logging.CRITICAL)


def _load(args: argparse.Namespace):
    return load_with_address(args.topology, getattr(args, "bootstrap_servers", None))


def run_run(args: argparse.Namespace) -> int:
    from ..kafka.supervisor import TopologyRunner
    from ..topology.config import TopologyError

    _logging(args.verbose)
    try:
        topo = _load(args)
        if report_unreadable_programs(topo, args.topology) or _health_port_taken(
            topo, args.topology, args.health_port, args.health_host
        ):
            return 2
        held = lock_state_folders(
            topo,
            args.program,
            "stop that worker, or give this one a state folder of its own: state_dir "
            f"({topo.where('state_dir')}), which may read the environment, e.g. "
            "'state_dir: ${EVENTSCRIPT_STATE_DIR:-state}' and EVENTSCRIPT_STATE_DIR=state-2 for a second worker",
        )
    except (TopologyError, StateFolderError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with held:
        try:
            runner = TopologyRunner(topo, args.program, args.health_port, args.health_host)
            runner.stop_on_sigterm()  # (an input topic may be waited for: a SIGTERM then is an orderly stop)
            runner.prepare()
        except TopologyError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:  # Ctrl-C while waiting for the broker: one line, not a traceback
            print("interrupted while contacting Kafka", file=sys.stderr)
            return 130
        return _run_and_report(runner, args.until_idle, f"on {topo.kafka.bootstrap_servers}")


def _health_port_taken(topo: Topology, path: str, option_port: int | None, option_host: str | None) -> bool:
    """Say so, and return True, when the health server's address is taken (the server itself
    binds only after the workers start)."""
    port = topo.health.port if option_port is None else option_port
    problem = health_port_problem(option_host or topo.health.host, port, option_port is not None, path)
    if problem:
        print(problem, file=sys.stderr)
    return problem is not None


def _run_and_report(runner, until_idle: float | None, where: str) -> int:
    """Run the workers, saying when they are ready and, when they stop, what they did; 130 when
    Ctrl-C stopped them, 0 after SIGTERM (an orderly stop); the workers finish their batch first."""
    from .progress import ReadyNotice, summary

    names = ", ".join(w.cfg.name for w in runner.workers)
    stop = f"stops after {until_idle:g} s without input" if until_idle is not None else "Ctrl-C to stop"
    with ReadyNotice(runner, f"ready: {names} {where}; {stop}"):
        status = runner.run(until_idle=until_idle)
    print(summary(runner), file=sys.stderr)
    return 130 if status == 0 and runner.interrupted else status


def in_time_order(lines: list[str]) -> list[str]:
    """``dev --show``'s lines of one topic (JSON, as ``tail`` prints them) in the order of their
    ``time``: ``tail`` gives each partition's records in turn, so a topic of three partitions read
    08:03, 08:20, 08:11 (a new user's walk). The sort is stable: a key's records, on one partition,
    keep their order, and those of one time theirs; a line without a time keeps its place first."""
    return sorted(lines, key=_time_of)


def _time_of(line: str) -> str:
    """The ``time`` of a line (ISO-8601 with six digits and Z: they sort as text), "" if none."""
    try:
        found = orjson.loads(line).get("time")
    except (orjson.JSONDecodeError, AttributeError):
        return ""
    return found if isinstance(found, str) else ""


def _dev_broker(kind: str) -> tuple[str, Callable[[], None]]:
    """Starts the broker of ``dev``; returns its bootstrap servers and how to stop it. Raises
    BrokerError or KafkaNotFetched with a message for the user."""
    if kind == "kafka":
        from ..brokers import KafkaCluster

        cluster = KafkaCluster(1).start()
        print(f"Apache Kafka (KRaft, one node) on {cluster.bootstrap}", file=sys.stderr)
        return cluster.bootstrap, cluster.close
    from ..kafka.broker import EmbeddedBroker

    # Its own process group: Ctrl-C in a terminal reaches this process only, which stops the
    # workers, shows what they wrote (--show) and then stops the broker.
    broker = EmbeddedBroker(own_process_group=True).start()
    print(f"embedded Kafka-compatible broker (Tansu) on {broker.bootstrap}", file=sys.stderr)
    return broker.bootstrap, broker.stop


def run_dev(args: argparse.Namespace) -> int:
    from ..topology.config import TopologyError
    from .trace_file import read_trace_or_report

    _logging(args.verbose)
    try:
        topo = _load(args)
        traced = program_or_first(topo, args.program)  # before the broker starts
    except TopologyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if report_wiring_errors(topo, args.topology) or _health_port_taken(topo, args.topology, args.health_port, None):
        return 2
    items = read_trace_or_report(args.trace) if args.trace else None
    if args.trace and items is None:
        return 2
    from .progress import use_state_dir

    state, temporary = use_state_dir(topo, args.state_dir)
    try:
        held = lock_state_folders(
            topo, None, "stop that dev, or choose another --state-dir (without it, dev takes a fresh one)"
        )
    except StateFolderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with held:
        return _dev_on_broker(args, topo, traced, items, state, temporary)


def _dev_on_broker(
    args: argparse.Namespace,
    topo: Topology,
    traced: ProgramConfig,
    items: list[TraceItem] | None,
    state: Path,
    temporary: bool,
) -> int:
    """``dev`` once its state folder is chosen and held: start the broker, the workers, publish the
    trace, run, show."""
    from ..brokers.apache import KafkaNotFetched, KafkaStartError
    from ..kafka.broker import BrokerError
    from ..kafka.clients import DEV_SESSION_TIMEOUT_MS
    from ..kafka.supervisor import TopologyRunner
    from ..kafka.tools import produce_trace, tail
    from ..topology.config import TopologyError
    from .progress import Follower, output_topics, remove_state_dir, wall_clock_notice

    print(
        f"state in {state}" + (" (fresh, removed at the end; --state-dir DIR to choose)" if temporary else ""),
        file=sys.stderr,
    )
    try:
        bootstrap, stop_broker = _dev_broker(args.broker)
    except (BrokerError, KafkaNotFetched, KafkaStartError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if temporary:
            remove_state_dir(state)
        return 2
    try:
        topo.use_address(bootstrap, "the broker dev started")
        # Tansu makes a group's first join wait half the session timeout: keep it short here.
        topo.kafka.consumer.setdefault("session.timeout.ms", DEV_SESSION_TIMEOUT_MS)
        topo.kafka.consumer.setdefault("heartbeat.interval.ms", 1000)
        try:
            runner = TopologyRunner(topo, None, args.health_port)
            if temporary:  # (a second Ctrl-C while the workers stop exits at once, past every finally)
                runner.before_exit_now = lambda: remove_state_dir(state)
            runner.prepare()
        except TopologyError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("interrupted while contacting Kafka", file=sys.stderr)
            return 130
        if items is not None:
            notice = wall_clock_notice(topo, runner)
            if notice:
                print(notice, file=sys.stderr)
            worker = next(w for w in runner.workers if w.cfg.name == traced.name)
            _warn_undeclared(items, traced.name, worker.program)
            n = produce_trace(topo.kafka, traced, worker.program, items, worker.partitions)
            print(f"published {counted(n, 'event')} from {args.trace} to program {traced.name}", file=sys.stderr)
        topics = output_topics(topo)
        where = "on the embedded broker" if args.broker == "embedded" else f"on Apache Kafka ({bootstrap})"
        if args.follow:
            with Follower(topo.kafka, topics):
                status = _run_and_report(runner, args.until_idle, where)
        else:
            status = _run_and_report(runner, args.until_idle, where)
        # A second Ctrl-C from here on ends the command (through KeyboardInterrupt: the broker
        # is still stopped), not os._exit in the runner's handler.
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if args.show:
            for t in topics:
                print(f"== {t}")
                shown = io.StringIO()
                tail(topo.kafka, t, shown, idle=0.5, dedupe=True)
                sys.stdout.writelines(in_time_order(shown.getvalue().splitlines(keepends=True)))
        return status
    finally:
        try:
            stop_broker()
        finally:  # (a second Ctrl-C while the broker stops must not leave the folder in /tmp)
            if temporary:
                remove_state_dir(state)


def _warn_undeclared(items: list[TraceItem], name: str, program: CompiledProgram) -> None:
    """Before a trace is published (``dev``, ``produce``): its events the program does not declare,
    each at its place, as ``test`` says them (they would reach the error topic as $error 1)."""
    inputs = [i.name for i in program.program.inputs]
    warn_unread_events(items, inputs, f"program {name} declares no input event {{name}}", sys.stderr)


def run_produce(args: argparse.Namespace) -> int:
    from ..kafka.admin import Admin
    from ..kafka.supervisor import compile_programs
    from ..kafka.tools import ProduceError, produce_trace
    from ..topology.config import TopologyError
    from .trace_file import read_trace_or_report

    _logging(args.verbose)
    items = read_trace_or_report(args.trace)  # before Kafka: a bad trace should not wait for a broker
    if items is None:
        return 2
    try:
        topo = _load(args)
        if report_unreadable_programs(topo, args.topology):
            return 2
        cfg = program_or_first(topo, args.program)
        program = compile_programs(topo, [cfg])[cfg.name]
        _warn_undeclared(items, cfg.name, program)
        partitions = Admin(topo).prepare([cfg])[cfg.name]
        n = produce_trace(topo.kafka, cfg, program, items, partitions)
    except (TopologyError, ProduceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"published {counted(n, 'event')} to program {cfg.name}'s inputs", file=sys.stderr)
    return 0


def run_tail(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException

    from ..kafka.supervisor import compile_programs
    from ..kafka.tools import ProduceError, tail
    from ..topology.config import KafkaConfig, TopologyError, load_topology

    _logging(args.verbose)
    try:
        topo = load_topology(args.topology) if args.topology else None
    except TopologyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    kafka = topo.kafka if topo is not None else KafkaConfig()
    # Records from outside the topology may carry their event name elsewhere than es-event: where
    # the first program reading the topic finds it.
    found = (
        next(((cfg, i) for cfg in topo.programs for i in cfg.inputs if i.topic == args.topic), None) if topo else None
    )
    reader = found[1] if found else None
    input_types: dict[str, Any] = {}
    if topo is not None and found is not None and reader is not None and reader.event is None:
        try:  # (what of a record's value is the event's: a structure, or a wrapper's 'value')
            program = compile_programs(topo, [found[0]])[found[0].name]
            input_types = {i.name: i.ty for i in program.program.inputs}
        except TopologyError:
            pass  # (the program does not compile: values are printed as they are)
    note = changelog_note(args.topic, topo, args.topology)
    if note:
        print(f"note: {note}", file=sys.stderr)
    hinted: list[bool] = [True] if note else []  # (a changelog's records have no event names to find)

    def unnamed() -> None:
        if not hinted:
            hinted.append(True)
            print(
                f"note: records of {args.topic} carry no event name in an es-event header (records written "
                "outside the topology): "
                + (
                    "give --topology FILE to name them as the programs reading the topic do"
                    if topo is None
                    else f"no input of {args.topology} says where their name is"
                ),
                file=sys.stderr,
            )

    bootstrap = args.bootstrap_servers or (None if args.topology else os.environ.get("KAFKA_BOOTSTRAP_SERVERS"))
    if bootstrap:
        kafka.bootstrap_servers = bootstrap
    try:
        tail(
            kafka,
            args.topic,
            sys.stdout,
            idle=float("inf") if args.follow else args.idle,
            dedupe=args.dedupe,
            timeout=float("inf") if args.follow else 3600,
            markers=args.markers,
            reader=reader,
            input_types=input_types,
            unnamed=unnamed,
        )
    except ProduceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KafkaException as exc:
        print(
            f"error: cannot reach Kafka at {kafka.bootstrap_servers} ({_reason(exc)}); check the address "
            f"({_tail_address_origin(args)}) and that the broker is running (the broker 'eventscript dev' "
            "starts listens on a free port: while dev runs, pass the address its 'embedded Kafka-compatible "
            "broker (Tansu) on HOST:PORT' line shows as --bootstrap-servers; it is stopped when dev ends: "
            "see its topics with dev's --show or --follow)",
            file=sys.stderr,
        )
        return 2
    return 0


def changelog_note(topic: str, topo: Topology | None, path: str | None) -> str | None:
    """What to read instead when ``topic`` is a program's changelog (``<application>.<program>-changelog``,
    the topology's or, without one, by its name): its values are compressed instance snapshots,
    which ``tail`` printed as lines of mojibake. None for any other topic."""
    owners = [cfg.name for cfg in topo.programs if topo.changelog_topic(cfg) == topic] if topo is not None else []
    if owners:
        return (
            f"{topic} is the changelog of program {owners[0]}: its values are binary instance snapshots; "
            f"'eventscript state dump {path} --program {owners[0]}' reads them as JSON"
        )
    if topo is None and re.fullmatch(r"[^.]+\.[^.]+-changelog", topic):
        return (
            f"{topic} is named as a program's changelog (<application>.<program>-changelog): its values are "
            f"binary instance snapshots; 'eventscript state dump TOPOLOGY.yaml --program PROGRAM' reads them as JSON"
        )
    return None


def _tail_address_origin(args: argparse.Namespace) -> str:
    """Where ``tail`` took the Kafka address from, for the message when it cannot reach it."""
    if args.bootstrap_servers:
        return "from --bootstrap-servers"
    if args.topology:
        return f"kafka.bootstrap_servers in {args.topology}, or --bootstrap-servers"
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        return "from $KAFKA_BOOTSTRAP_SERVERS, or --bootstrap-servers"
    return "the default: set $KAFKA_BOOTSTRAP_SERVERS or --bootstrap-servers"


def _reason(exc: Exception) -> str:
    """librdkafka's reason, without the KafkaError{code=...} wrapping."""
    from confluent_kafka import KafkaError

    err = exc.args[0] if exc.args else None
    return err.str() if isinstance(err, KafkaError) else str(exc)


__all__ = [name for name in dir() if name.startswith(("setup_", "run_"))] + ["Path"]
