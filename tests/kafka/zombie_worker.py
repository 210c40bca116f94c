"""``eventscript run`` as a zombie that has not heard of its lost session yet, for
tests/kafka/test_zombie_commit.py (run as a script: ``python zombie_worker.py run TOPOLOGY -v``).

A worker frozen past its session timeout and resumed races two things: its consumer's
rebalance callback telling it the assignment was lost, and its own commit of the timers that came
due while it was frozen. Only the commit going first shows the fault (issue 20, fault 2), and on
the test machine it went first in some runs only. Here SIGUSR1 holds the worker's group consumer
back -- ``consume`` returns nothing and serves no callback -- until the worker's producer commits a
transaction or the worker gives its partitions up itself (``incremental_unassign``: it found out
by its commit and rejoins). The signal is handled on the main thread and the worker runs on its
own, which may be inside a real ``consume`` then: the script says "zombie hold in effect" from
the worker's first held call, and the test freezes the worker only then.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any

from wrapped_clients import wrap_clients

from eventscript.cli.main import main

HOLD = threading.Event()
#: The worker's thread has made a held ``consume`` call: a real one begun before the hold (which
#: could serve the lost-assignment callback once resumed) is over.
HELD = threading.Event()


def _say(what: str) -> None:
    print(what, flush=True)


class HeldConsumer:
    """The worker's group consumer, held back while HOLD is set."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        if HOLD.is_set():
            if not HELD.is_set():  # the worker's thread is out of any real consume call now
                HELD.set()
                _say("zombie hold in effect")
            time.sleep(0.1 if timeout < 0 else min(timeout, 0.1))
            return []
        return self._client.consume(num_messages=num_messages, timeout=timeout)

    def incremental_unassign(self, partitions: Any) -> Any:
        if HOLD.is_set():
            HOLD.clear()
            _say("zombie hold released: the worker gave its partitions up")
        return self._client.incremental_unassign(partitions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class ReleasingProducer:
    """The worker's producer: its first committed transaction while held releases the hold."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def commit_transaction(self, *args: Any) -> Any:
        result = self._client.commit_transaction(*args)
        if HOLD.is_set():
            HOLD.clear()
            _say("zombie hold released: a transaction committed while held")
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _install() -> None:
    wrap_clients(member=HeldConsumer, producer=ReleasingProducer)

    def arm(*_: Any) -> None:
        HOLD.set()
        _say("zombie hold armed")

    signal.signal(signal.SIGUSR1, arm)


if __name__ == "__main__":
    _install()
    sys.argv[0] = "eventscript"
    sys.exit(main())
