"""Logging for operators: one JSON object per line (python-json-logger) or human-readable text.

Chosen by ``--log-format``/``--log-level`` of ``eventscript`` or the environment variables
``EVENTSCRIPT_LOG_FORMAT`` (``json`` or ``text``) and ``EVENTSCRIPT_LOG_LEVEL`` (``DEBUG``, ``INFO``,
...). The image and the Helm chart set ``json``; the level defaults to INFO. Without either, the
commands keep their terminal behaviour (warnings only, ``-v`` for more).

Each JSON line has ``time``, ``level``, ``logger`` and ``message``, and, where known, ``program``,
``task``, ``partition`` and ``key``. They come from, in order: the record's own ``extra=``; the
:func:`log_context` in force; the thread (the Kafka runner names each program's thread
``worker-<program>``); and for ``task``/``partition`` a message that names one task
(``... task 3: ...``). librdkafka's lines arrive through the ``eventscript.kafka.librdkafka``
logger. Repeated warnings and errors are rate-limited at the handler (:class:`RepeatFilter`), so
a broker outage gives a line per kind of failure and window, not thousands.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any, TextIO

from .kafka.logs import RepeatFilter

FORMATS = ("json", "text")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: The structured fields a line may carry beyond time, level, logger and message.
CONTEXT_FIELDS = ("program", "task", "partition", "key")
_CONTEXT: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "eventscript_log_context", default=None
)
_ONE_TASK = re.compile(r"\btask (\d+)\b")
_WORKER_THREAD = "worker-"


class LoggingConfigError(ValueError):
    """A log format or level that does not exist (the message says where it came from)."""


@contextlib.contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Add ``program``, ``task``, ``partition`` or ``key`` to every line logged inside the block."""
    token = _CONTEXT.set({**(_CONTEXT.get() or {}), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


class ContextFilter(logging.Filter):
    """Fill in the structured fields of a record from its context (see the module's docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in (_CONTEXT.get() or {}).items():
            if not hasattr(record, name):
                setattr(record, name, value)
        if not hasattr(record, "program"):
            thread = record.threadName or threading.current_thread().name
            if thread.startswith(_WORKER_THREAD):
                record.program = thread.removeprefix(_WORKER_THREAD)
        if not hasattr(record, "task"):
            tasks = _ONE_TASK.findall(record.getMessage())
            if len(tasks) == 1:
                record.task = int(tasks[0])
        if hasattr(record, "task") and not hasattr(record, "partition"):
            record.partition = record.task  # a task is one partition of the program's inputs
        return True


def json_formatter() -> logging.Formatter:
    """One JSON object per line (python-json-logger, imported here: most commands log no JSON and
    the command line's start should not pay for it)."""
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        datefmt="%Y-%m-%dT%H:%M:%S%z",
    )


def text_formatter() -> logging.Formatter:
    return logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")


def resolve(log_format: str | None, level: str | None, env: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """The (format, level) asked for by the options or, failing them, the environment; None when
    neither asks (the commands then configure logging as they always did)."""
    if env is None:
        env = os.environ
    fmt = log_format or env.get("EVENTSCRIPT_LOG_FORMAT") or None
    lvl = level or env.get("EVENTSCRIPT_LOG_LEVEL") or None
    if fmt is None and lvl is None:
        return None
    fmt = (fmt or "text").strip().lower()
    lvl = (lvl or "INFO").strip().upper()
    if fmt not in FORMATS:
        where = "--log-format" if log_format else "EVENTSCRIPT_LOG_FORMAT"
        raise LoggingConfigError(f"{where}: unknown log format {fmt!r}; use one of {', '.join(FORMATS)}")
    if lvl not in LEVELS:
        where = "--log-level" if level else "EVENTSCRIPT_LOG_LEVEL"
        raise LoggingConfigError(f"{where}: unknown log level {lvl!r}; use one of {', '.join(LEVELS)}")
    return fmt, lvl


def configure(log_format: str, level: str, stream: TextIO | None = None, window: float = 10.0) -> logging.Handler:
    """Replace the root logger's handlers by one writing ``log_format`` lines at ``level`` to
    ``stream`` (stderr); later ``logging.basicConfig`` calls then change nothing."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(json_formatter() if log_format == "json" else text_formatter())
    handler.addFilter(ContextFilter())
    handler.addFilter(RepeatFilter(window))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
