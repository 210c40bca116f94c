"""``eventscript run`` as a zombie whose rejoin restores its tasks while their new owner commits,
for tests/kafka/test_zombie_restore.py (run as a script: ``python zombie_restore_worker.py run
TOPOLOGY -v``).

SIGUSR1 holds the worker's group consumer back (``consume`` returns nothing and serves no
callback), so that, frozen and resumed, the worker finds out about its lost session only by its
commit being refused; it then gives its partitions up and takes them again (``ProgramWorker.
_rejoin``), and restores their tasks while still held. That restore stops right after it has read
the committed offsets ("zombie restore: committed offsets read") until the first SIGUSR2: the new
owner commits meanwhile. The second SIGUSR2 lets the consumer go: it hears of the lost assignment
and the worker joins the group again.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

from zombie_worker import HOLD, HeldConsumer, _say

from eventscript.cli.main import main
from eventscript.kafka import clients

#: The held worker gave its partitions up (its commit was refused) and takes them again.
REJOINED = threading.Event()
#: The restore after the rejoin may go on past its read of the committed offsets.
GO = threading.Event()


class HeldMember(HeldConsumer):
    """The worker's group consumer, held while HOLD is set (zombie_worker.py) -- also after the
    worker gave its partitions up -- and whose first read of the committed offsets after that
    waits for GO."""

    _paused_restore = False

    def incremental_unassign(self, partitions: Any) -> Any:
        if HOLD.is_set() and not REJOINED.is_set():
            REJOINED.set()
            _say("zombie rejoining: its tasks are assigned again while held")
        return self._client.incremental_unassign(partitions)

    def committed(self, partitions: Any, timeout: float = -1) -> Any:
        answer = self._client.committed(partitions, timeout=timeout)
        if REJOINED.is_set() and not self._paused_restore:
            self._paused_restore = True
            _say("zombie restore: committed offsets read")
            GO.wait(50)
        return answer


def _install() -> None:
    make_consumer = clients.ClientSupplier.consumer

    def consumer(self: clients.ClientSupplier, conf: dict[str, Any]) -> Any:
        client = make_consumer(self, conf)
        if ".restore." in conf["group.id"] or ".standby." in conf["group.id"]:
            return client  # the readers of restores and standbys
        return HeldMember(client)

    clients.ClientSupplier.consumer = consumer  # type: ignore[method-assign]

    def arm(*_: Any) -> None:
        HOLD.set()
        _say("zombie hold armed")

    def step(*_: Any) -> None:
        if not GO.is_set():
            GO.set()
            _say("zombie restore: going on")
        else:
            HOLD.clear()
            _say("zombie hold released")

    signal.signal(signal.SIGUSR1, arm)
    signal.signal(signal.SIGUSR2, step)


if __name__ == "__main__":
    _install()
    sys.argv[0] = "eventscript"
    sys.exit(main())
