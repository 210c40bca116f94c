"""``eventscript run`` whose changelog records of one commit reach the broker late, for
tests/kafka/test_zombie_changelog.py (run as a script: ``python late_changelog_worker.py run
TOPOLOGY -v``).

After SIGUSR1 the worker's producer keeps the changelog records it is given (as a producer's queue
holds them while the process is frozen), and at the commit's wait for their acknowledgements the
worker stops itself with SIGSTOP: a worker frozen in the middle of an at-least-once commit. On
SIGCONT it hands them to the real producer, which sends them at once, after whatever the task's
new owner wrote meanwhile. The script says "late changelog: frozen" before it stops and
"late changelog: released" once the records are handed over.

The stop is not immediate for the thread that asks for it: the worker runs in a thread of its own,
the kernel hands the process's SIGSTOP to the main thread (asleep, so free to take it), and the
other threads stop only once that one has run. Meanwhile the worker's thread went on: it handed
the held records over and flush() sent them at once, before the freeze, whenever the main thread
waited for a CPU (3 runs in 4 with the worker on one CPU; the likely cause of the test's 6
failures in 6 on a machine at load 3-4.5 on 2026-11-27). The test then waited in vain for them
after the new owner's. So the records are handed over only once SIGCONT has been received
(``CONTINUED``), wherever the stop landed.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

from eventscript.cli.main import main
from eventscript.kafka import clients

ARMED = threading.Event()
#: Set by SIGCONT (the handler runs in the main thread): the worker's thread waits for it.
CONTINUED = threading.Event()


def _say(what: str) -> None:
    print(what, flush=True)


class LateChangelogProducer:
    """The worker's producer: once armed, holds one commit's changelog records until SIGCONT."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._held: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self._done = False

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> Any:
        if ARMED.is_set() and not self._done and topic.endswith("-changelog"):
            self._held.append(((topic, *args), kwargs))
            return None
        return self._client.produce(topic, *args, **kwargs)

    def flush(self, *args: Any) -> Any:
        if self._held and not self._done:
            self._done = True
            _say(f"late changelog: frozen with {len(self._held)} changelog records held")
            CONTINUED.clear()
            os.kill(os.getpid(), signal.SIGSTOP)
            CONTINUED.wait()  # (the stop may land after this thread got here: see the module)
            for call_args, kwargs in self._held:
                self._client.produce(*call_args, **kwargs)
            self._held.clear()
            _say("late changelog: released")
        return self._client.flush(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _install() -> None:
    make_producer = clients.ClientSupplier.producer

    def producer(self: clients.ClientSupplier, conf: dict[str, Any]) -> Any:
        return LateChangelogProducer(make_producer(self, conf))

    clients.ClientSupplier.producer = producer  # type: ignore[method-assign]

    def arm(*_: Any) -> None:
        ARMED.set()
        _say("late changelog: armed")

    signal.signal(signal.SIGUSR1, arm)
    signal.signal(signal.SIGCONT, lambda *_: CONTINUED.set())


if __name__ == "__main__":
    _install()
    sys.argv[0] = "eventscript"
    sys.exit(main())
