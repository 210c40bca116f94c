"""`tail --topology` prints each record's event and value as the reading input reads them,
through the worker's own reading (``codec.named_payload``), so that `test --trace` takes its
lines: it read names by a copy of its own, which knew no CloudEvents (their records were printed
with the event null), and printed the whole record value where the event is a part of it (a
structured CloudEvent's ``data``, a named wrapper's ``value``)."""

from __future__ import annotations

from typing import Any

import pytest

from eventscript.automata.compile import compile_source
from eventscript.kafka.tools import _as_read
from eventscript.topology.config import InputConfig

TYPES = {
    i.name: i.ty
    for i in compile_source("in {long x;} A, {long x;} B, long C, {long x;} D, {long x;} E\n( A() )*")
    .require()
    .program.inputs
}


class _Msg:
    def __init__(self, headers: list[tuple[str, bytes]] | None = None) -> None:
        self._headers = headers

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers


@pytest.mark.parametrize(
    ("reader", "headers", "value", "read"),
    [
        ({"event": "A"}, None, {"x": 1}, ("A", {"x": 1})),
        ({"event_from": {"header": "kind"}}, [("kind", b"B")], {"x": 1}, ("B", {"x": 1})),
        ({"event_from": {"header": "kind"}}, None, {"x": 1}, (None, {"x": 1})),
        ({"event_from": {"field": "type"}}, None, {"type": "C", "value": 3}, ("C", 3)),  # a wrapper
        ({"event_from": {"field": "type"}}, None, {"type": "B", "x": 2}, ("B", {"x": 2})),  # a structure
        ({"event_from": {"field": "type"}}, None, "not an object", (None, "not an object")),
        ({"format": "cloudevents"}, [("ce_type", b"D")], {"x": 1}, ("D", {"x": 1})),
        ({"format": "cloudevents"}, None, {"specversion": "1.0", "type": "E", "data": {"x": 1}}, ("E", {"x": 1})),
        ({"format": "cloudevents"}, None, {"data": {"x": 1}}, (None, {"data": {"x": 1}})),
    ],
)
def test_tail_reads_records_as_the_input_reads_them(
    reader: dict[str, Any], headers: list[tuple[str, bytes]] | None, value: Any, read: tuple[str | None, Any]
) -> None:
    assert _as_read(_Msg(headers), value, InputConfig(topic="t", **reader), TYPES) == read
