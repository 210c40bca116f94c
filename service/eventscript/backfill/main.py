"""One backfill from start to end: plan the cut, check the sink (and the hand-over's
preconditions) before Spark starts, run, write the sink, hand over, report."""

from __future__ import annotations

import dataclasses
import logging
import re
import sys
from collections.abc import Callable
from typing import Any

from ..topology.config import ProgramConfig, Topology
from . import handover as ho
from . import key_split
from .cut import CutError
from .export import ExportError
from .job import Totals, check_totals, export_plan, outputs, spark_session
from .kafka_sink import KafkaSink, Transaction, ensure_topics, sink_topics, transactional_id, with_topics
from .markers import MarkerRecord, final_markers, read_topics
from .plan import Plan, program_spec
from .progress import Progress
from .sink import FileSink, SinkError, sink_format
from .task_stage import BackfillError, compiled_program


class BackfillFailed(Exception):
    """The message says what is wrong and what to do; ``after_start``: Spark had started."""

    def __init__(self, message: str, after_start: bool = False) -> None:
        super().__init__(message)
        self.after_start = after_start


def make_plan(
    topo: Topology,
    cfg: ProgramConfig,
    inputs: list[str] | None,
    *,
    start: str | None,
    stop: str | None,
    until_us: int | None,
    partitions: int | None,
    batch_size: int,
) -> Plan:
    if inputs:
        return export_plan(
            topo, cfg, inputs, partitions=partitions, start=start, stop=stop, until_us=until_us, batch_size=batch_size
        )
    from .kafka_source import kafka_plan

    return kafka_plan(topo, cfg, start=start, stop=stop, until_us=until_us, batch_size=batch_size)


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt): ")


def _spark_failure(exc: Exception) -> str:
    """The user's part of a failed Spark job: the last line of the Python error, if there is one."""
    text = str(exc)
    for marker in ("BackfillError: ", "ExportError: ", "KafkaReadError: "):
        if marker in text:
            return text.split(marker, 1)[1].split("\n", 1)[0]
    # Else the last Python exception line of the executor's traceback (e.g. "ModuleNotFoundError:
    # No module named 'eventscript'"), not py4j's "An error occurred while calling o74.getResult".
    raised = [line.strip() for line in text.splitlines() if _EXCEPTION_LINE.match(line.strip())]
    if raised:
        return raised[-1]
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def _sink_config(
    topo: Topology, cfg: ProgramConfig, output: str | None, output_topics: dict[str, str], error_topic: str | None
) -> tuple[ProgramConfig, list[str]]:
    """Check the sink options: the program's configuration with ``--output-topic`` /
    ``--error-topic``, and the Kafka topics the sink writes (none for a file)."""
    if output is not None:
        sink_format(output)
        if output_topics or error_topic is not None:
            raise SinkError(
                f"--output {output} writes a file; --output-topic and --error-topic name Kafka topics: "
                f"give one or the other"
            )
        return cfg, []
    names = [o.name for o in compiled_program(program_spec(topo, cfg, 1)).program.outputs]
    cfg = with_topics(cfg, names, output_topics, error_topic)
    return cfg, sink_topics(cfg, names)


def backfill(
    topo: Topology,
    cfg: ProgramConfig,
    *,
    output: str | None,
    inputs: list[str] | None = None,
    start: str | None = None,
    stop: str | None = None,
    until_us: int | None = None,
    master: str | None = None,
    partitions: int | None = None,
    batch_size: int = 10_000,
    ui: bool = True,
    verbose: bool = False,
    spark: Any = None,
    err: Any = None,
    output_topics: dict[str, str] | None = None,
    error_topic: str | None = None,
    handover: bool = False,
    force: bool = False,
    key_groups: int = 0,
    split: int | str = "auto",
) -> Totals:
    """Run a backfill of one program; returns what its tasks reported.

    ``output``: a .jsonl or .parquet file; None: the program's Kafka topics (or ``output_topics``,
    event name → topic, and ``error_topic``), all written in one transaction. ``handover``: end by
    handing the final state and the offsets at the cut to the program's workers (handover.py).
    ``key_groups`` > 0: key-parallel mode with that many tasks (key_parallel.py). ``split``: tasks
    per input partition in key-split mode (key_split.py): "auto" (the default) chooses from
    Spark's slots, 1 is partition mode; if the inputs turn out not to fit key-split mode, the
    backfill runs again in partition mode."""
    err = err or sys.stderr
    target: ho.HandoverTarget | None = None
    try:
        if handover and (refusal := ho.refusal_for_source(inputs, until_us)) is not None:
            raise ho.HandoverError(refusal)
        cfg, topics = _sink_config(topo, cfg, output, output_topics or {}, error_topic)
        plan = make_plan(
            topo, cfg, inputs, start=start, stop=stop, until_us=until_us, partitions=partitions, batch_size=batch_size
        )
        plan = dataclasses.replace(plan, key_groups=key_groups)
        if split not in ("auto", 0, 1) and not key_groups:
            if not isinstance(split, int) or split < 1:
                raise BackfillError(f"--split {split}: give auto or a number of tasks per partition")
            if (refusal := key_split.split_refusal(plan)) is not None:
                raise BackfillError(f"--split {split}: {refusal}; leave --split out")
            plan = dataclasses.replace(plan, split=split)
        if topics:
            ensure_topics(topo, topics, plan.program.partitions)
        if handover:
            plan = dataclasses.replace(plan, handover=True)
            target = ho.prepare(topo, cfg, plan, force)
    except (BackfillError, ExportError, CutError, SinkError, ho.HandoverError) as exc:
        raise BackfillFailed(str(exc)) from None
    except OSError as exc:
        raise BackfillFailed(f"{getattr(exc, 'filename', '') or ''}: {exc.strerror or exc}") from None
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()  # one the caller started (a notebook, tests): left running
    own_session = spark is None
    if own_session:
        if not verbose:
            logging.getLogger("py4j").setLevel(logging.WARNING)
        from .quiet import quiet_spark_conf

        spark = spark_session(master, ui=ui, conf=None if verbose else quiet_spark_conf())
        spark.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    if split == "auto" and not key_groups:
        plan = dataclasses.replace(plan, split_each=key_split.auto_split(plan, spark.sparkContext.defaultParallelism))
    try:
        return _run(topo, cfg, plan, spark, err, output, topics, target, ui, force)
    except _SplitMismatch as exc:
        err.write(f"backfill: {exc}: running again in partition mode\n")
        return _run(
            topo, cfg, dataclasses.replace(plan, split=0, split_each=[]), spark, err, output, topics, target, ui, force
        )
    finally:
        if own_session:
            spark.stop()


class _SplitMismatch(Exception):
    """A key-split task found a record that does not fit key-split mode (nothing was written)."""


def _run(
    topo: Topology,
    cfg: ProgramConfig,
    plan: Plan,
    spark: Any,
    err: Any,
    output: str | None,
    topics: list[str],
    target: ho.HandoverTarget | None,
    ui: bool,
    force: bool,
) -> Totals:
    """The Spark job and the sink (and the hand-over) of one planned backfill."""
    if topics:
        err.write(
            f"backfill: the outputs go to Kafka topics {', '.join(topics)} on {topo.kafka.bootstrap_servers}, "
            f"in one transaction committed at the end\n"
        )
    progress = Progress(
        plan.tasks,
        plan.records,
        err,
        unit="key groups" if plan.key_groups else "tasks" if plan.splits > 1 else "partitions",
    )
    progress.spark_ui(spark.sparkContext.uiWebUrl if ui else None)
    totals = Totals()
    state = ho.HandoverState() if target is not None else None
    txn_id = transactional_id(topo, cfg)

    def hand_over(txn: Transaction) -> None:
        assert target is not None and state is not None
        ho.write(txn, topo, target, state, force)

    def markers(partitions_of: Callable[[str], int]) -> list[MarkerRecord]:
        clocks = {int(p): ms for p, ms in totals.clocks.items()}
        return final_markers(topo, cfg, plan.program.partitions, clocks, partitions_of, handover=target is not None)

    sink: FileSink | KafkaSink = (
        FileSink(output)
        if output is not None
        else KafkaSink(topo.kafka, txn_id, hand_over if target is not None else None, markers, read_topics(topo, cfg))
    )
    try:
        with sink:
            try:
                sink.write_all(
                    outputs(spark, plan, totals, progress.task_done, on_state=state.add if state is not None else None)
                )
            except Exception as exc:  # a failed Spark job: py4j / captured exceptions
                if plan.splits > 1 and key_split.MISMATCH in str(exc):
                    raise _SplitMismatch(_spark_failure(exc)) from None
                raise BackfillFailed(f"the backfill failed: {_spark_failure(exc)}", after_start=True) from None
            try:
                check_totals(totals, plan)
                sink.commit()
                if target is not None and isinstance(sink, FileSink):
                    _hand_over_alone(topo, txn_id, hand_over, output)
            except (BackfillError, SinkError, ho.HandoverError) as exc:
                raise BackfillFailed(str(exc), after_start=True) from None
        progress.finish()
        _report(err, sink, output)
        if state is not None:
            err.write(
                f"handed over {state.instances} instance(s) of {len(state.partitions)} partition(s) to "
                f"{plan.program.changelog_topic} and committed the offsets of consumer group "
                f"{topo.group_id(cfg)} at the cut: start the workers\n"
            )
        return totals
    finally:
        if state is not None:
            state.close()


def _hand_over_alone(topo: Topology, txn_id: str, hand_over: Any, output: str | None) -> None:
    """The hand-over in a transaction of its own (the outputs went to a file)."""
    txn: Transaction | None = None
    try:
        txn = Transaction(topo.kafka, txn_id)
        hand_over(txn)
    except (SinkError, ho.HandoverError) as exc:
        raise ho.HandoverError(f"{exc} (the outputs are in {output}; nothing was handed over)") from None
    finally:
        if txn is not None:
            txn.abort()  # a no-op after a commit


def _report(err: Any, sink: FileSink | KafkaSink, output: str | None) -> None:
    if isinstance(sink, KafkaSink):
        markers = f", then {sink.marker_count} progress markers" if sink.marker_count else ""
        err.write(f"wrote {sink.count} records in one transaction: {sink.describe()}{markers}\n")
    else:
        err.write(f"wrote {sink.count} records to {output}\n")
