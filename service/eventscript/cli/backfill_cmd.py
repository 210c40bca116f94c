"""``eventscript backfill``: a topology's program over historical records on PySpark (docs/backfill.md)."""

from __future__ import annotations

import argparse
import sys

from .arguments import positive_int


def setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("topology", metavar="TOPOLOGY.yaml")
    p.add_argument("--program", metavar="NAME", help="the program to run (default: the topology's only program)")
    p.add_argument(
        "--input",
        action="append",
        metavar="FILE",
        help="read a Parquet or JSON-lines export of the input topics instead of Kafka (repeatable)",
    )
    sink = p.add_argument_group(
        "where the outputs go (default: the program's output and error topics, written in one Kafka transaction)"
    )
    sink.add_argument(
        "--output",
        metavar="FILE",
        help="write the outputs and $error records to FILE.jsonl (JSON lines) or FILE.parquet instead of Kafka",
    )
    sink.add_argument(
        "--output-topic",
        action="append",
        default=[],
        metavar="EVENT=TOPIC",
        type=_event_topic,
        help="write output EVENT to Kafka topic TOPIC instead of the program's (repeatable; EVENT "
        "'default': every output not named)",
    )
    sink.add_argument("--error-topic", metavar="TOPIC", help="write $error records to this Kafka topic")
    sink.add_argument(
        "--time-order",
        action="store_true",
        help="with --output: rewrite the file in record-time order at the end (key-split and "
        "key-parallel mode write key group after key group); holds the output in memory",
    )
    hand = p.add_argument_group("hand-over to live workers (docs/backfill.md)")
    hand.add_argument(
        "--handover",
        action="store_true",
        help="end by writing each instance's final state to the program's changelog and the consumer "
        "group's offsets at the cut, in one transaction, so workers started afterwards go on "
        "from there (the workers must be stopped, the changelog empty)",
    )
    hand.add_argument(
        "--force", action="store_true", help="with --handover: replace offsets the consumer group has already committed"
    )
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="override the topology's Kafka address")
    p.add_argument(
        "--from",
        dest="start",
        metavar="OFFSET|TIME",
        help="start every input partition at this offset, or at the first record at or after this time",
    )
    p.add_argument(
        "--to",
        dest="stop",
        metavar="OFFSET|TIME",
        help="stop every input partition before this offset, or before the first record at or after "
        "this time (default: what the topics hold when the backfill starts)",
    )
    p.add_argument(
        "--until",
        metavar="TIME",
        help="after the last record, fire pending timers up to this record time (default: none fire "
        "past the last record, as in the worker)",
    )
    p.add_argument(
        "--master", metavar="URL", help="Spark master (default: the one spark-submit was given, else local[*])"
    )
    p.add_argument(
        "--partitions",
        type=positive_int,
        metavar="N",
        help="the input topics' partition count, for an export (default: the topology's topics:, else "
        "the highest partition in the export plus one)",
    )
    p.add_argument(
        "--key-groups",
        type=positive_int,
        metavar="N",
        help="key-parallel mode: N tasks, each running the keys hashed to it (more parallelism than "
        "the inputs have partitions; default: one task per input partition)",
    )
    p.add_argument(
        "--split",
        type=_split_arg,
        default="auto",
        metavar="N|auto",
        help="key-split mode: N tasks per input partition, each reading all of it and running one key "
        "group (default auto: from Spark's slots when they outnumber the partitions; 1: partition "
        "mode)",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=10_000,
        metavar="N",
        help="records per Arrow batch handed to a task (default 10000)",
    )
    p.add_argument("--no-ui", action="store_true", help="do not start Spark's web UI")
    p.add_argument("-v", "--verbose", action="store_true", help="show Spark's own log lines")


def _split_arg(text: str) -> int | str:
    return "auto" if text == "auto" else positive_int(text)


def _event_topic(text: str) -> tuple[str, str]:
    event, sep, topic = text.partition("=")
    if not sep or not event.strip() or not topic.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: write EVENT=TOPIC, e.g. Alert=alerts-v2")
    return event.strip(), topic.strip()


def run(args: argparse.Namespace) -> int:
    from ..engine.timeutil import parse_time
    from ..topology.config import TopologyError
    from .kafka_cmds import _logging
    from .topology_args import load_with_address, program_or_first

    _logging(args.verbose)  # librdkafka's own lines only with --verbose, as in the other Kafka commands
    try:
        topo = load_with_address(args.topology, args.bootstrap_servers)
        if args.program is None and len(topo.programs) > 1:
            raise TopologyError(
                f"{args.topology}: name the program to backfill with --program (programs: "
                f"{', '.join(p.name for p in topo.programs)})"
            )
        cfg = program_or_first(topo, args.program)
    except TopologyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    until_us = None
    if args.until is not None:
        try:
            until_us = parse_time(args.until)
        except ValueError as exc:
            print(
                f"error: --until {args.until!r}: not a time ({exc}); write e.g. 2026-01-31T12:00:00Z", file=sys.stderr
            )
            return 2
    if args.time_order and not args.output:
        print(
            "error: --time-order applies to --output FILE (Kafka topics are written per key, as a worker writes them)",
            file=sys.stderr,
        )
        return 2
    if args.force and not args.handover:
        print("error: --force only applies to --handover", file=sys.stderr)
        return 2
    try:
        from ..backfill.main import BackfillFailed, backfill
    except ImportError as exc:
        from .extras import missing_extra

        print(missing_extra(exc, "the backfill needs PySpark"), file=sys.stderr)
        return 2
    try:
        backfill(
            topo,
            cfg,
            output=args.output,
            inputs=args.input,
            start=args.start,
            stop=args.stop,
            until_us=until_us,
            master=args.master,
            partitions=args.partitions,
            batch_size=args.batch_size,
            ui=not args.no_ui,
            verbose=args.verbose,
            output_topics=dict(args.output_topic),
            error_topic=args.error_topic,
            handover=args.handover,
            force=args.force,
            key_groups=args.key_groups or 0,
            split=args.split,
        )
    except BackfillFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1 if exc.after_start else 2
    if args.time_order:
        from pathlib import Path

        from .time_order import sort_output_by_time

        n = sort_output_by_time(Path(args.output))
        print(f"sorted {n} records of {args.output} by record time", file=sys.stderr)
    return 0
