"""The chaos verdict on records made by hand (no broker): a clean run passes, and each kind of
fault the harness must catch (a lost output, an output twice under exactly-once, a repeat with
other bytes, a poison record missing from the error topic or with other bytes, a wall-clock timer
fired before its deadline) is reported for its key."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from chaos_plan import ChaosPlan
from chaos_verdict import judge, wall_oracle

from eventscript.kafka import codec


@dataclass
class Msg:
    """What the verdict reads of a confluent_kafka Message."""

    _topic: str
    _partition: int
    _offset: int
    _key: bytes | None
    _value: bytes | None
    _headers: list[tuple[str, bytes]] = field(default_factory=list)
    _timestamp: int = 0

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes]]:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        return (1, self._timestamp)


def _inputs() -> list[Msg]:
    """Keys a and b on partition 0, one poison record of key a at offset 2."""
    rows = [("a", 0), ("b", 1), (None, 2), ("a", 3), ("b", 4)]
    out = []
    for k, n in rows:
        value = b"\xff\x00" if k is None else orjson.dumps({"k": k, "n": n})
        out.append(Msg("in", 0, n, (k or "a").encode(), value, [], 1_000 + 250 * n))
    return out


def _outputs(lines: list[tuple[str, Any, list[str]]], start_us: int = 10_000_000) -> list[Msg]:
    """Output records as the worker writes them: one es-id each, emission times 1 s apart."""
    out = []
    for i, (event, value, key) in enumerate(lines):
        t = start_us + i * 1_000_000
        headers = [
            (codec.HEADER_EVENT, event.encode()),
            (codec.HEADER_ID, f"p/in:0:{i}/1".encode()),
            (codec.HEADER_TIME, str(t).encode()),
        ]
        out.append(Msg("out", 0, i, key[0].encode(), orjson.dumps(value), headers, t // 1000))
    return out


def _error_about(poison: Msg, offset: int = 0) -> Msg:
    doc = {
        "code": 6,
        "message": "bad",
        "program": "p",
        "source": {
            "topic": "in",
            "partition": poison.partition(),
            "offset": poison.offset(),
            "value": base64.b64encode(poison.value() or b"").decode(),
        },
    }
    return Msg("err", 0, offset, poison.key(), orjson.dumps(doc), [(codec.HEADER_ID, f"p/err/{offset}".encode())])


PLAN = ChaosPlan(clock="wall")


def _clean() -> tuple[list[Msg], list[Msg], list[Msg]]:
    inputs = _inputs()
    want = wall_oracle(PLAN.program, "Tick", [m for m in inputs if m.offset() != 2])
    lines = [line for key in sorted(want) for line in want[key]]
    return inputs, _outputs(lines), [_error_about(inputs[2])]


def test_a_clean_run_passes() -> None:
    inputs, outputs, errors = _clean()
    verdict = judge(PLAN.program, "wall", "exactly_once", inputs, outputs, errors)
    assert verdict.ok, verdict.summary()
    assert verdict.figures["outputs"] == 6 and verdict.figures["timer outputs"] == 2


def test_a_lost_output_is_reported_for_its_key() -> None:
    inputs, outputs, errors = _clean()
    lost = [m for m in outputs if m.key() == b"b"][-1]  # its timer output
    verdict = judge(PLAN.program, "wall", "exactly_once", inputs, [m for m in outputs if m is not lost], errors)
    assert list(verdict.problems) == ['["b"]'] and "lost" in verdict.problems['["b"]'][0]


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_a_repeat_is_an_error_under_exactly_once_only(guarantee: str) -> None:
    inputs, outputs, errors = _clean()
    verdict = judge(PLAN.program, "wall", guarantee, inputs, [*outputs, outputs[0]], errors)
    assert verdict.figures["output repeats"] == 1
    assert verdict.ok == (guarantee == "at_least_once"), verdict.problems


def test_a_repeat_with_other_bytes_is_reported_except_at_least_once_on_the_wall_clock() -> None:
    """There it is counted apart and the latest copy judged: a record processed again after a
    stall may meet a timer that fired in between."""
    inputs, outputs, errors = _clean()
    first = outputs[0]
    later = [(n, v) if n != codec.HEADER_TIME else (n, b"99999999999") for n, v in first.headers()]
    other_time = Msg("out", 0, 99, first.key(), first.value(), later, 99_999_999)
    verdict = judge(PLAN.program, "record", "at_least_once", inputs, [*outputs, other_time], errors)
    assert any("different bytes" in p for p in verdict.problems['["a"]'])
    verdict = judge(PLAN.program, "wall", "at_least_once", inputs, [*outputs, other_time], errors)
    # (a late copy that differs in its time alone keeps the first copy's place: the key's order holds)
    assert verdict.ok and verdict.differing_repeats == 1, verdict.problems


def test_only_outputs_not_come_in_time_count_as_a_stall() -> None:
    """The exactly-once variants' expected failure (a worker blocked in librdkafka) is a stall alone:
    outputs lost at the end; an output twice or wrong alongside makes it a real failure."""
    inputs, outputs, errors = _clean()
    lost = [m for m in outputs if m.key() == b"b"][-1]
    stalled = judge(PLAN.program, "wall", "exactly_once", inputs, [m for m in outputs if m is not lost], errors)
    assert stalled.only_stalled, stalled.problems
    stalled.add("harness", "the harness gave up at step broker: timed out waiting for 30 new outputs")
    assert stalled.only_stalled, stalled.problems
    kept = [m for m in outputs if m is not lost]
    twice = judge(PLAN.program, "wall", "exactly_once", inputs, [*kept, outputs[0]], errors)
    assert not twice.ok and not twice.only_stalled, twice.problems
    assert not judge(PLAN.program, "wall", "exactly_once", inputs, outputs, errors).only_stalled  # (no problem)


def test_a_poison_record_missing_or_altered_on_the_error_topic_is_reported() -> None:
    inputs, outputs, _ = _clean()
    verdict = judge(PLAN.program, "wall", "exactly_once", inputs, outputs, [])
    assert "has 0 error records" in verdict.problems['["a"]'][0]
    altered = Msg(inputs[2].topic(), 0, 2, inputs[2].key(), b"\xff\x01")
    verdict = judge(PLAN.program, "wall", "exactly_once", inputs, outputs, [_error_about(altered)])
    assert "not the original's" in verdict.problems['["a"]'][0]


def test_a_wall_timer_fired_before_the_next_record_came_is_checked_against_its_deadline() -> None:
    """Key a goes quiet after its first record, then counts again from 1: right when its next
    record was processed after the timer's deadline (a real stall), wrong when before."""
    inputs, _, errors = _clean()
    good = [m for m in inputs if m.offset() != 2]
    lines = [
        ("Count", {"k": "a", "count": 1, "last": 0}, ["a"]),
        ("Quiet", {"k": "a", "count": 1}, ["a"]),
        ("Count", {"k": "a", "count": 1, "last": 3}, ["a"]),
        ("Quiet", {"k": "a", "count": 1}, ["a"]),
    ]
    b_lines = wall_oracle(PLAN.program, "Tick", [m for m in good if m.key() == b"b"])['["b"]']
    stalled = _outputs(lines + b_lines)
    assert judge(PLAN.program, "wall", "exactly_once", inputs, stalled, errors).ok
    early = list(stalled)
    # The quiet output's time set after the next record's processing time: it fired too early.
    q = early[1]
    early[1] = Msg(
        "out",
        0,
        1,
        q.key(),
        q.value(),
        [(n, v) if n != codec.HEADER_TIME else (n, b"99000000") for n, v in q.headers()],
        99_000,
    )
    verdict = judge(PLAN.program, "wall", "exactly_once", inputs, early, errors)
    assert "before that deadline" in verdict.problems['["a"]'][0]
