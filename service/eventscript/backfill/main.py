"""One backfill from start to end: plan the cut, start Spark, run, write the sink, report."""

from __future__ import annotations

import logging
import sys
from typing import Any

from ..kafka.config import ProgramConfig, Topology
from .cut import CutError
from .export import ExportError
from .job import Totals, check_totals, export_plan, outputs, spark_session
from .plan import Plan
from .progress import Progress
from .runner import BackfillError
from .sink import FileSink, SinkError, sink_format


class BackfillFailed(Exception):
    """The message says what is wrong and what to do; ``after_start``: Spark had started."""

    def __init__(self, message: str, after_start: bool = False) -> None:
        super().__init__(message)
        self.after_start = after_start


def make_plan(topo: Topology, cfg: ProgramConfig, inputs: list[str] | None, *, start: str | None,
              stop: str | None, until_us: int | None, partitions: int | None, batch_size: int) -> Plan:
    if inputs:
        return export_plan(topo, cfg, inputs, partitions=partitions, start=start, stop=stop, until_us=until_us,
                           batch_size=batch_size)
    from .kafka_source import kafka_plan

    return kafka_plan(topo, cfg, start=start, stop=stop, until_us=until_us, batch_size=batch_size)


def _spark_failure(exc: Exception) -> str:
    """The user's part of a failed Spark job: the last line of the Python error, if there is one."""
    text = str(exc)
    for marker in ("BackfillError: ", "ExportError: ", "KafkaReadError: "):
        if marker in text:
            return text.split(marker, 1)[1].split("\n", 1)[0]
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def backfill(topo: Topology, cfg: ProgramConfig, *, output: str, inputs: list[str] | None = None,
             start: str | None = None, stop: str | None = None, until_us: int | None = None,
             master: str = "local[*]", partitions: int | None = None, batch_size: int = 10_000, ui: bool = True,
             verbose: bool = False, spark: Any = None, err: Any = None) -> Totals:
    """Run a backfill of one program; returns what its tasks reported."""
    err = err or sys.stderr
    try:
        sink_format(output)
        plan = make_plan(topo, cfg, inputs, start=start, stop=stop, until_us=until_us, partitions=partitions,
                         batch_size=batch_size)
    except (BackfillError, ExportError, CutError, SinkError) as exc:
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
        spark = spark_session(master, ui=ui)
        spark.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    progress = Progress(len(plan.slices), plan.records, err)
    progress.spark_ui(spark.sparkContext.uiWebUrl if ui else None)
    totals = Totals()
    try:
        with FileSink(output) as sink:
            try:
                sink.write_all(outputs(spark, plan, totals, progress.task_done))
            except Exception as exc:  # a failed Spark job: py4j / captured exceptions
                raise BackfillFailed(f"the backfill failed: {_spark_failure(exc)}", after_start=True) from None
            try:
                check_totals(totals, plan)
            except BackfillError as exc:
                raise BackfillFailed(str(exc), after_start=True) from None
            sink.commit()
        progress.finish()
        err.write(f"wrote {sink.count} records to {output}\n")
        return totals
    finally:
        if own_session:
            spark.stop()
