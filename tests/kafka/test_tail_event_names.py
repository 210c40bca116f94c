"""`tail --topology` names each record's event as the reading input does, through the worker's own
reading of the name (``codec.split_event``): it read names from an input's `event` and
`event_from` by a copy of its own, which knew no CloudEvents (their records were printed with
the event null, which `test --trace` then refuses)."""

from __future__ import annotations

from typing import Any

import pytest

from eventscript.kafka.tools import _event_name
from eventscript.topology.config import InputConfig


class _Msg:
    def __init__(self, headers: list[tuple[str, bytes]] | None = None) -> None:
        self._headers = headers

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers


@pytest.mark.parametrize(
    ("reader", "headers", "value", "name"),
    [
        ({"event": "A"}, None, {"x": 1}, "A"),
        ({"event_from": {"header": "kind"}}, [("kind", b"B")], {"x": 1}, "B"),
        ({"event_from": {"header": "kind"}}, None, {"x": 1}, None),
        ({"event_from": {"field": "type"}}, None, {"type": "C", "value": 3}, "C"),
        ({"event_from": {"field": "type"}}, None, "not an object", None),
        ({"format": "cloudevents"}, [("ce_type", b"D")], {"x": 1}, "D"),
        ({"format": "cloudevents"}, None, {"type": "E", "data": {"x": 1}}, "E"),
        ({"format": "cloudevents"}, None, {"data": {"x": 1}}, None),
    ],
)
def test_tail_names_events_as_the_input_reads_them(
    reader: dict[str, Any], headers: list[tuple[str, bytes]] | None, value: Any, name: str | None
) -> None:
    assert _event_name(_Msg(headers), value, InputConfig(topic="t", **reader)) == name
