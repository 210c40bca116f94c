"""``eventscript run`` that kills itself (SIGKILL) at a chosen point of its recovery work, for
tests/kafka/test_pipeline_kills.py's ``PIPELINE_KILLS_AT`` (run as a script: ``python
kill_point_worker.py run TOPOLOGY``).

A kill from outside at a random moment lands mostly in the worker's loop, between its commits;
the narrow windows where recovery has most to get right are seldom hit. Here the worker, once
armed (SIGUSR1, or ``KILL_POINT_ARMED=1`` in its environment: armed from the start), dies at the
next moment of the kind ``KILL_POINT`` names:

- ``commit``: a batch's changelog records (and outputs) are produced and acknowledged, its input
  offsets not committed yet: at-least-once, right before the consumer's offset commit (the
  changelog is then ahead of the committed offsets: the next owner's restore must skip those
  records); exactly-once, right before ``commit_transaction`` (the offsets were sent to the
  transaction: the broker aborts it);
- ``restore``: in the middle of a restore: at the changelog reader's fetch after one that brought
  records (a restore cut short, its local store partly written).

Before it dies it prints ``kill point: <what>`` (the harness counts those lines).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

from wrapped_clients import wrap_clients

from eventscript.cli.main import main

POINT = os.environ.get("KILL_POINT", "commit")
ARMED = threading.Event()
#: Per worker thread (one a program): whether changelog records were produced since its last
#: offset commit (at-least-once: its producer's records and its offset commits are made on that
#: thread; exactly-once commits on a thread of its own, so the producer keeps its own flag).
BATCH = threading.local()


def _die(what: str) -> None:
    print(f"kill point: {what}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


class MemberConsumer:
    """The group member's consumer: at-least-once, the offset commit is the kill point."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        if POINT == "commit" and ARMED.is_set() and getattr(BATCH, "changelog", False):
            _die("commit (at-least-once: changelog and outputs acknowledged, offsets not committed)")
        BATCH.changelog = False
        return self._client.commit(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class RestoreReader:
    """The reader of restores: its fetch after one that brought records is the kill point."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._brought = False

    def consume(self, *args: Any, **kwargs: Any) -> list[Any]:
        if POINT == "restore" and ARMED.is_set() and self._brought:
            _die("restore (records of a changelog read, the restore not finished)")
        got: list[Any] = self._client.consume(*args, **kwargs)
        self._brought = any(m.error() is None for m in got)
        return got

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class WorkerProducer:
    """The worker's producer: notes changelog records; exactly-once, the transaction's commit is
    the kill point."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._changelog = False

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> Any:
        if topic.endswith("-changelog"):
            BATCH.changelog = self._changelog = True
        return self._client.produce(topic, *args, **kwargs)

    def commit_transaction(self, *args: Any) -> Any:
        if POINT == "commit" and ARMED.is_set() and self._changelog:
            _die("commit (exactly-once: changelog, outputs and offsets in the transaction, not committed)")
        self._changelog = False
        return self._client.commit_transaction(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _install() -> None:
    wrap_clients(member=MemberConsumer, producer=WorkerProducer, restore=RestoreReader)

    def arm(*_: Any) -> None:
        ARMED.set()
        print(f"kill point armed: {POINT}", flush=True)

    signal.signal(signal.SIGUSR1, arm)
    if os.environ.get("KILL_POINT_ARMED"):
        arm()


if __name__ == "__main__":
    _install()
    sys.argv[0] = "eventscript"
    sys.exit(main())
