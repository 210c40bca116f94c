"""The Kafka adapters: records to events, emitted events to records (document §5).

Input: the event name comes from the topic's configuration (a fixed name, a header, a JSON
field) or from the CloudEvents ``type``; the value is JSON decoded to the declared type (times
as ISO-8601 text or epoch milliseconds). What cannot be decoded becomes an ``$error`` record
carrying the original record — program, topic, partition, offset, timestamp, key, headers and
value bytes (base64) — so nothing is lost.

Output: key = the instance's group key (canonical JSON), value = the event value in the
conformance JSON encoding, timestamp = the emission time, headers ``es-event`` (name),
``es-program``, ``es-time`` (ISO emission time) and ``es-id`` (a deterministic id: consumers may
drop records whose id they have seen, which makes outputs idempotent even on brokers that show
aborted transactions to read_committed readers).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import orjson

from ..engine.encoding import DecodeError, decoder_for, encoder_for
from ..engine.events import ERROR_EVENT, Emitted, ErrorCode
from ..engine.timeutil import format_time
from ..language.types import ArrayType, StructType, Type
from ..topology.config import InputConfig
from ..topology.headers import (  # noqa: F401  (the record format's header names, here with the rest of it)
    HEADER_ARMED,
    HEADER_EVENT,
    HEADER_ID,
    HEADER_INPUT,
    HEADER_PROGRAM,
    HEADER_SEQ,
    HEADER_SOURCE,
    HEADER_SOURCE_BELOW,
    HEADER_SOURCE_KEY,
    HEADER_TICK,
    HEADER_TIME,
    REPUBLISH_HEADERS,
)

Headers = list[tuple[str, bytes | None]]


@dataclass(slots=True)
class RecordInfo:
    """What an $error record tells about the input record it concerns."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None  # ms
    key: bytes | None
    headers: Headers | None
    value: bytes | None

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "timestamp": self.timestamp,
            "key": _b64(self.key),
            "headers": [[k, _b64(v)] for k, v in (self.headers or [])],
            "value": _b64(self.value),
        }


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode("ascii")


class BadRecord(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def header(headers: Any, name: str) -> bytes | None:
    """The value of header ``name``: ``headers`` as a record carries them (a list of pairs; typed
    loosely, as confluent-kafka's stubs type a consumed message's headers as list or dict)."""
    if not headers:
        return None
    for k, v in headers:
        if k == name:
            return v
    return None


def cause_headers(headers: Any) -> tuple[bytes | None, bytes | None, bool]:
    """What a task reads of an input record's headers, in one pass: its ``es-id`` (a record a
    program wrote), its ``es-seq`` and whether it is a tick (``es-tick``), each as ``header``
    reads it (the first of its name), so that the task looks at a record's headers once."""
    upstream = seq = tick = None
    for k, v in reversed(headers):  # (the first of a name is the last assigned)
        if k == HEADER_SEQ:
            seq = v
        elif k == HEADER_ID:
            upstream = v
        elif k == HEADER_TICK:
            tick = v
    return upstream, seq, tick is not None


def input_record(inp: InputConfig, name: str, payload: Any) -> tuple[bytes, Headers]:
    """The value and headers a producer writes for event ``name`` with the JSON-shaped value
    ``payload`` on the topic of input ``inp``, so that ``decode_record`` reads them back (the
    inverse: ``eventscript produce`` and the tester's task host write records so)."""
    headers: Headers = []
    if inp.format == "cloudevents":
        doc = {"specversion": "1.0", "type": name, "source": "eventscript-produce", "id": "", "data": payload}
        return orjson.dumps(doc), headers
    if inp.event_from is not None and inp.event_from.header is not None:
        headers.append((inp.event_from.header, name.encode()))
        return orjson.dumps(payload), headers
    if inp.event_from is not None and inp.event_from.field is not None:
        if isinstance(payload, dict):
            return orjson.dumps({**payload, inp.event_from.field: name}), headers
        return orjson.dumps({inp.event_from.field: name, "value": payload}), headers
    return orjson.dumps(payload), headers


def named_payload(cfg: InputConfig, obj: Any, headers: Headers | None, input_types: dict[str, Type]) -> tuple[str, Any]:
    """(event name, the value to decode as that event) of a record's JSON value ``obj`` as input
    ``cfg`` names its events, or BadRecord(code, message): a structured CloudEvent's ``data``;
    where a field of the value names the event, the whole object for a structure type (the naming
    field among its fields) and its ``value`` field otherwise. One reading of the name for the
    worker and the tools (``tail --topology``), in one call: ``decode_record`` runs it for every
    record (the one-by-one path), where a second call cost 3-15% of its time."""
    if cfg.format == "cloudevents":
        ce_type = header(headers, "ce_type")
        if ce_type is not None:
            return ce_type.decode("utf-8", "replace"), obj
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise BadRecord(ErrorCode.BAD_INPUT_VALUE, "not a CloudEvent: no string 'type' attribute")
        return obj["type"], obj.get("data")
    if cfg.event is not None:
        return cfg.event, obj
    assert cfg.event_from is not None
    if cfg.event_from.header is not None:
        raw = header(headers, cfg.event_from.header)
        if raw is None:
            raise BadRecord(
                ErrorCode.BAD_INPUT_VALUE, f"the record has no {cfg.event_from.header!r} header naming its event"
            )
        return raw.decode("utf-8", "replace"), obj
    f = cfg.event_from.field
    if not isinstance(obj, dict) or not isinstance(obj.get(f), str):
        raise BadRecord(ErrorCode.BAD_INPUT_VALUE, f"the value has no string field {f!r} naming its event")
    name = obj[f]
    return name, obj if isinstance(input_types.get(name), StructType) else obj.get("value")


def decode_record(
    cfg: InputConfig,
    value: bytes | None,
    headers: Headers | None,
    input_types: dict[str, Type],
    decoders: dict[str, Any] | None = None,
) -> tuple[str, Any]:
    """(event name, run-time value) of an input record, or BadRecord(code, message)."""
    if value is None:
        raise BadRecord(ErrorCode.BAD_INPUT_VALUE, "the record has no value")
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise BadRecord(ErrorCode.BAD_INPUT_VALUE, f"the value is not JSON: {exc}") from None
    name, payload = named_payload(cfg, obj, headers, input_types)
    if cfg.extra_fields == "error" and name in input_types:
        naming = cfg.event_from.field if cfg.event_from is not None and payload is obj else None
        extra = undeclared_field(payload, input_types[name], skip=naming)
        if extra is not None:
            raise BadRecord(
                ErrorCode.BAD_INPUT_VALUE,
                f"{name}: {extra}: a field the event's type does not declare (the input has extra_fields: error)",
            )
    dec = decoders.get(name) if decoders is not None else None
    if dec is None:
        ty = input_types.get(name)
        if ty is None:
            raise BadRecord(ErrorCode.UNDECLARED_EVENT, f"undeclared input event {name}")
        dec = decoder_for(ty)
    try:
        return name, dec(payload)
    except DecodeError as exc:
        raise BadRecord(ErrorCode.BAD_INPUT_VALUE, f"{name}: {exc}") from None


def undeclared_field(obj: Any, ty: Type, path: str = "", skip: str | None = None) -> str | None:
    """The path of the first field of ``obj`` that its structure type ``ty`` (or one nested in it)
    does not declare, or None; ``skip``: a top-level field that names the event."""
    if isinstance(ty, StructType) and isinstance(obj, dict):
        names = ty.names
        for key, value in obj.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in names:
                if key != skip:
                    return where
                continue
            found = undeclared_field(value, ty.fields[names.index(key)][1], where)
            if found is not None:
                return found
    elif isinstance(ty, ArrayType) and isinstance(obj, list):
        for i, value in enumerate(obj):
            found = undeclared_field(value, ty.element, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def encode_value(e: Emitted) -> bytes:
    return orjson.dumps(encoder_for(e.ty)(e.value))


_STATIC: dict[tuple[str, str], tuple[tuple[str, bytes], tuple[str, bytes]]] = {}


def output_headers(e: Emitted, program: str, event_id: str) -> Headers:
    """Headers of an output record. ``es-time`` is the emission time in microseconds since the
    epoch (``tail`` shows it in ISO form)."""
    static = _STATIC.get((e.name, program))
    if static is None:
        static = _STATIC[(e.name, program)] = ((HEADER_EVENT, e.name.encode()), (HEADER_PROGRAM, program.encode()))
    return [static[0], static[1], (HEADER_TIME, str(e.time).encode()), (HEADER_ID, event_id.encode())]


def header_time(raw: bytes | None) -> int | None:
    """The emission time of an ``es-time`` header (microseconds), or None."""
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def error_value(
    program: str, code: int, message: str, time_us: int, source: RecordInfo | None, key: Any = None
) -> bytes:
    doc: dict[str, Any] = {"code": code, "message": message, "program": program, "time": format_time(time_us)}
    if key is not None:
        doc["key"] = key
    if source is not None:
        doc["source"] = source.to_json()
    return orjson.dumps(doc)


def emitted_error_value(e: Emitted, source: RecordInfo | None, key_json: Any) -> bytes:
    assert e.name == ERROR_EVENT
    return error_value(e.program, int(e.value[0]), str(e.value[1]), e.time, source, key_json)


def record_to_json(msg: Any) -> dict[str, Any]:
    """A record written by the worker, in the conformance JSON-lines encoding."""
    headers = msg.headers() or []
    event = header(headers, HEADER_EVENT)
    when = header_time(header(headers, HEADER_TIME))
    out: dict[str, Any] = {
        "time": format_time(when if when is not None else msg.timestamp()[1] * 1000),
        "event": event.decode() if event is not None else None,
    }
    value = msg.value()
    try:
        out["value"] = orjson.loads(value) if value is not None else None
    except orjson.JSONDecodeError:
        out["value"] = value.decode("utf-8", "replace") if value is not None else None
    key = msg.key()
    if key is not None:
        # The group key's components: a JSON array (key: json), or one component written as
        # plain text (key: string), shown as its JSON value when it reads as one (7, true).
        try:
            shown = orjson.loads(key)
        except orjson.JSONDecodeError:
            shown = key.decode("utf-8", "replace")
        out["key"] = shown if isinstance(shown, list) else [shown]
    program = header(headers, HEADER_PROGRAM)
    if program is not None and out["event"] == "$error":
        out["program"] = program.decode()
    return out
