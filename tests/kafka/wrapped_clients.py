"""The client wrapping shared by the scripts that run ``eventscript run`` with a fault of their
own (zombie_worker.py, kill_point_worker.py): each wraps some of the worker's Kafka clients, made
by ``clients.ClientSupplier``, in a class of its own that sees or disturbs their calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventscript.kafka import clients

Wrap = Callable[[Any], Any]


def wrap_clients(member: Wrap | None = None, producer: Wrap | None = None, restore: Wrap | None = None) -> None:
    """Every client the worker makes from now on goes through the wrapper of its kind, if given:
    ``member`` its group consumer, ``producer`` its producer, ``restore`` the reader of its
    restores (the standbys' reader is never wrapped)."""
    make_consumer, make_producer = clients.ClientSupplier.consumer, clients.ClientSupplier.producer

    def consumer(self: clients.ClientSupplier, conf: dict[str, Any]) -> Any:
        client = make_consumer(self, conf)
        group = conf["group.id"]
        wrap = restore if ".restore." in group else None if ".standby." in group else member
        return wrap(client) if wrap is not None else client

    def new_producer(self: clients.ClientSupplier, conf: dict[str, Any]) -> Any:
        client = make_producer(self, conf)
        return producer(client) if producer is not None else client

    clients.ClientSupplier.consumer = consumer  # type: ignore[method-assign]
    clients.ClientSupplier.producer = new_producer  # type: ignore[method-assign]
