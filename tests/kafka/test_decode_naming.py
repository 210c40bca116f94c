"""How an input record is named and which part of its value is decoded, by input setting
(``codec.named_payload``, which ``decode_record`` runs for every record it decodes one by one,
and ``tail --topology`` for what it prints): each kind of record, and what each refuses."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from eventscript.automata.compile import compile_source
from eventscript.engine.events import ErrorCode
from eventscript.kafka.codec import BadRecord, decode_record
from eventscript.task.codec import named_payload
from eventscript.topology.config import InputConfig

NO_NAME = "the value has no string field 'type' naming its event"
TYPES = {i.name: i.ty for i in compile_source("in {long x;} S, long N\n( S() )*").require().program.inputs}


@pytest.mark.parametrize(
    ("setting", "headers", "value", "named", "decoded"),
    [
        ({"event": "S"}, None, {"x": 1}, ("S", {"x": 1}), ("S", [1])),
        ({"event_from": {"header": "es-event"}}, [("es-event", b"N")], 7, ("N", 7), ("N", 7)),
        ({"event_from": {"field": "type"}}, None, {"type": "N", "value": 7}, ("N", 7), ("N", 7)),  # a wrapper
        ({"event_from": {"field": "type"}}, None, {"type": "S", "x": 2}, ("S", {"type": "S", "x": 2}), ("S", [2])),
        ({"event_from": {"field": "type"}}, None, {"type": "Q", "value": 1}, ("Q", 1), None),  # (undeclared)
        ({"format": "cloudevents"}, None, {"type": "S", "data": {"x": 3}}, ("S", {"x": 3}), ("S", [3])),
        ({"format": "cloudevents"}, [("ce_type", b"N")], 4, ("N", 4), ("N", 4)),  # binary mode
    ],
)  # fmt: skip
def test_each_kind_of_record_is_named_and_decoded(
    setting: dict[str, Any], headers: Any, value: Any, named: tuple[str, Any], decoded: tuple[str, Any] | None
) -> None:
    cfg = InputConfig(topic="t", **setting)
    assert named_payload(cfg, value, headers, TYPES) == named
    if decoded is None:
        with pytest.raises(BadRecord) as info:
            decode_record(cfg, orjson.dumps(value), headers, TYPES)
        assert info.value.code == ErrorCode.UNDECLARED_EVENT
    else:
        assert decode_record(cfg, orjson.dumps(value), headers, TYPES) == decoded


@pytest.mark.parametrize(
    ("setting", "headers", "value", "message"),
    [
        ({"format": "cloudevents"}, None, {"data": 1}, "not a CloudEvent: no string 'type' attribute"),
        ({"event_from": {"header": "kind"}}, [("es", b"N")], 1, "the record has no 'kind' header naming its event"),
        ({"event_from": {"field": "type"}}, None, {"value": 1}, NO_NAME),
        ({"event_from": {"field": "type"}}, None, [1], NO_NAME),
    ],
)  # fmt: skip
def test_a_record_that_names_no_event_is_refused_saying_why(
    setting: dict[str, Any], headers: Any, value: Any, message: str
) -> None:
    cfg = InputConfig(topic="t", **setting)
    with pytest.raises(BadRecord) as info:
        decode_record(cfg, orjson.dumps(value), headers, TYPES)
    assert (info.value.code, info.value.message) == (ErrorCode.BAD_INPUT_VALUE, message)
