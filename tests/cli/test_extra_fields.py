"""An input's ``extra_fields`` setting (issue 27): Kafka records may carry fields their event's
type does not declare (ignored by default, as producers add fields over time) or, with
``extra_fields: error``, become ``$error`` 6 naming the field. Traces are always strict
(tests/cli/test_traces.py)."""

from __future__ import annotations

import orjson
import pytest

from eventscript.engine.events import ErrorCode
from eventscript.kafka.codec import BadRecord, decode_record
from eventscript.kafka.config import InputConfig
from eventscript.language.types import DOUBLE, STRING, ArrayType, StructType

READING = StructType((("sensor", STRING), ("temp", DOUBLE), ("tags", ArrayType(StructType((("k", STRING),))))))
TYPES = {"Reading": READING}


def _decode(value: dict, **settings: object):  # type: ignore[no-untyped-def, type-arg]
    cfg = InputConfig(topic="readings", event="Reading", **settings)  # type: ignore[arg-type]
    return decode_record(cfg, orjson.dumps(value), None, TYPES)


GOOD = {"sensor": "s1", "temp": 21.5, "tags": [{"k": "a"}]}


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        ({**GOOD, "debug": True}, "debug"),
        ({**GOOD, "tags": [{"k": "a"}, {"k": "b", "v": 1}]}, "tags[1].v"),
    ],
)
def test_extra_fields_are_ignored_by_default_and_refused_when_asked(extra: dict, path: str) -> None:  # type: ignore[type-arg]
    name, value = _decode(extra)  # by default the extra field is dropped
    assert name == "Reading" and value[:2] == ["s1", 21.5] and value[2][0] == ["a"]
    with pytest.raises(BadRecord) as info:
        _decode(extra, extra_fields="error")
    assert info.value.code == ErrorCode.BAD_INPUT_VALUE
    assert f"Reading: {path}: a field the event's type does not declare" in str(info.value)


def test_the_field_naming_the_event_is_not_extra() -> None:
    cfg = InputConfig(topic="mixed", event_from={"field": "type"}, extra_fields="error")  # type: ignore[arg-type]
    assert decode_record(cfg, orjson.dumps({"type": "Reading", **GOOD}), None, TYPES) == (
        "Reading",
        ["s1", 21.5, [["a"]]],
    )


def test_a_conforming_record_decodes_the_same_either_way() -> None:
    assert _decode(GOOD, extra_fields="error") == _decode(GOOD)
