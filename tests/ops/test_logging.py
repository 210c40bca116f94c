"""JSON logs: one object per line with program, task, partition and key where known; level and
format from options or the environment; repeated errors rate-limited."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from eventscript.logging_setup import LoggingConfigError, configure, log_context, resolve


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    out = io.StringIO()
    configure("json", "INFO", out)
    yield out
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_one_json_object_per_line_with_context(stream: io.StringIO) -> None:
    log = logging.getLogger("eventscript.kafka.task")

    def in_worker() -> None:
        log.info("%s task %d: %d instance(s) restored", "overheat", 2, 7)
        log.warning("bad record", extra={"key": "sensor-9"})

    t = threading.Thread(target=in_worker, name="worker-overheat")
    t.start()
    t.join()
    with log_context(program="site-alarm", task=1, key="site-3"):
        log.error("multi\nline message")
    logging.getLogger("eventscript.x").debug("not at INFO")
    first, second, third = lines(stream)
    assert first["message"] == "overheat task 2: 7 instance(s) restored"
    assert (first["level"], first["logger"]) == ("INFO", "eventscript.kafka.task")
    assert (first["program"], first["task"], first["partition"]) == ("overheat", 2, 2)
    assert "time" in first and "key" not in first
    assert (second["program"], second["key"]) == ("overheat", "sensor-9") and "task" not in second
    assert (third["program"], third["task"], third["partition"], third["key"]) == ("site-alarm", 1, 1, "site-3")
    assert third["message"] == "multi\nline message"
    assert len(stream.getvalue().splitlines()) == 3


def test_exceptions_stay_on_one_line(stream: io.StringIO) -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("eventscript.kafka.worker").exception("worker failed")
    (line,) = lines(stream)
    assert "RuntimeError: boom" in str(line["exc_info"])


def test_an_outage_does_not_flood_the_log(stream: io.StringIO) -> None:
    """~6,000 ERROR lines in an 80 s broker outage before: now one per kind of failure and window."""
    librdkafka = logging.getLogger("eventscript.kafka.librdkafka")
    saved = librdkafka.level
    librdkafka.setLevel(logging.NOTSET)  # the Kafka commands silence it without --verbose
    try:
        for port in range(3000):
            librdkafka.error("FAIL [thrd:b:%d]: Connect to ipv4#127.0.0.1:%d failed: Connection refused", port, port)
    finally:
        librdkafka.setLevel(saved)
    got = lines(stream)
    assert len(got) == 1 and got[0]["logger"] == "eventscript.kafka.librdkafka"


def test_format_and_level_from_options_or_environment() -> None:
    assert resolve(None, None, env={}) is None
    assert resolve(None, None, env={"EVENTSCRIPT_LOG_FORMAT": "json"}) == ("json", "INFO")
    assert resolve("text", None, env={"EVENTSCRIPT_LOG_FORMAT": "json"}) == ("text", "INFO")
    assert resolve(None, "debug", env={}) == ("text", "DEBUG")
    with pytest.raises(LoggingConfigError, match="EVENTSCRIPT_LOG_LEVEL: unknown log level 'LOUD'"):
        resolve(None, None, env={"EVENTSCRIPT_LOG_LEVEL": "loud"})


def test_the_cli_logs_json() -> None:
    code = (
        "import logging, sys; from eventscript.cli.main import main; "
        "from eventscript.cli import commands; "
        "commands.COMMANDS['check'] = (commands.COMMANDS['check'][0], commands.COMMANDS['check'][1], "
        "lambda a: logging.getLogger('eventscript.kafka').info('hello') or 0); "
        "sys.exit(main(['--log-format', 'json', 'check', 'x.es']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    (line,) = [json.loads(x) for x in proc.stderr.splitlines()]
    assert (line["message"], line["level"], line["logger"]) == ("hello", "INFO", "eventscript.kafka")
