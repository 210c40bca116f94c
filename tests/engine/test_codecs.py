"""The compiled codecs (engine.encoding.encoder_for / decoder_for) agree with encode / decode."""

from __future__ import annotations

import math

import pytest

from eventscript.engine.encoding import DecodeError, decode, decoder_for, encode, encoder_for, json_line
from eventscript.language.types import (
    BOOLEAN,
    DOUBLE,
    EMPTY,
    LONG,
    OBJECT,
    STRING,
    TIME,
    ArrayType,
    StructType,
)

POINT = StructType((("x", DOUBLE), ("y", DOUBLE)))
NESTED = StructType(
    (
        ("name", STRING),
        ("at", POINT),
        ("path", ArrayType(POINT)),
        ("when", TIME),
        ("n", LONG),
        ("ok", BOOLEAN),
        ("any", OBJECT),
        ("e", EMPTY),
    )
)

GOOD = [
    (EMPTY, {}),
    (EMPTY, {"extra": 1}),
    (POINT, {"x": 1, "y": 2.5}),
    (
        NESTED,
        {
            "name": "a",
            "at": {"x": 1.0, "y": -2.0},
            "path": [{"x": 0, "y": 0}],
            "when": "2026-01-01T00:00:00Z",
            "n": 7,
            "ok": True,
            "any": {"k": [1]},
            "e": {},
        },
    ),
    (ArrayType(LONG), [1, 2, 3]),
    (ArrayType(DOUBLE), [1, 2.5, "NaN"]),
]
BAD = [
    (POINT, {"x": 1.0}),
    (POINT, {"x": "1", "y": 2.0}),
    (NESTED, {"name": "a", "at": {"x": 1.0}, "path": [], "when": "x", "n": 1, "ok": True, "any": None, "e": {}}),
    (ArrayType(LONG), [1, 2.5]),
    (StructType((("n", LONG),)), {"n": 2**70}),
    # A lone UTF-16 surrogate is not text: no output could carry it (issue 9).
    (STRING, "\ud800"),
    (StructType((("s", STRING),)), {"s": "x\ud800"}),
    (ArrayType(STRING), ["ok", "\udc00"]),
]


@pytest.mark.parametrize(("ty", "obj"), GOOD)
def test_decoders_agree(ty, obj) -> None:  # type: ignore[no-untyped-def]
    assert _same(decoder_for(ty)(obj), decode(obj, ty))


@pytest.mark.parametrize(("ty", "obj"), BAD)
def test_decoders_reject_what_decode_rejects(ty, obj) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DecodeError) as fast:
        decoder_for(ty)(obj)
    with pytest.raises(DecodeError) as slow:
        decode(obj, ty)
    assert str(fast.value) == str(slow.value)


@pytest.mark.parametrize(("ty", "obj"), GOOD)
def test_encoders_agree(ty, obj) -> None:  # type: ignore[no-untyped-def]
    value = decode(obj, ty)
    assert encoder_for(ty)(value) == encode(value, ty)


def test_special_doubles_are_encoded_as_strings() -> None:
    value = [math.nan, math.inf]
    assert encoder_for(POINT)(value) == {"x": "NaN", "y": "Infinity"}


def _same(a, b) -> bool:  # type: ignore[no-untyped-def]
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def test_java_double_text() -> None:
    from eventscript.engine.builtins import format_double

    assert [format_double(x) for x in (1.0, 0.001, 1e-4, 1234567.0, 1e7, 12345678.9, -2.5e20, -0.0)] == [
        "1.0",
        "0.001",
        "1.0E-4",
        "1234567.0",
        "1.0E7",
        "1.23456789E7",
        "-2.5E20",
        "-0.0",
    ]


@pytest.mark.parametrize(
    ("x", "text"),
    [(5e-324, "4.9E-324"), (1e-323, "9.9E-324"), (5e-323, "4.9E-323"), (1.5e-323, "1.5E-323"), (2e-323, "2.0E-323")],
)
def test_a_tiny_subnormals_text_is_javas_two_digits_closest_to_it(x: float, text: str) -> None:
    """Double.toString (since JDK 19, which specifies it): when one digit reads back as the double,
    the decimal of one or two digits closest to it is written, so Double.MIN_VALUE is 4.9E-324,
    not 5.0E-324; the reference interpreter writes the same (string(x), docs/language.md 8)."""
    from eventscript.engine.builtins import format_double
    from reference.evaluate import java_double_text

    assert format_double(x) == format_double(-x)[1:] == java_double_text(x) == text


def test_a_timer_firing_forever_at_one_instant_is_stopped() -> None:
    from conftest import run_program

    out = run_program(
        "in double X\nout {} Z\n{ d = 1.0; }\n( X(d) | elapse[d seconds]() { !>Z({}); } )*",
        "[2026-01-01 00:00:00] X(0.0) [00:00:05]",
    )
    zs = [o for o in out if o["event"] == "Z"]
    errors = [o["value"]["code"] for o in out if o["event"] == "$error"]
    assert len(zs) == 1000 and errors == [8]  # stopped, with an $error 8, instead of hanging


def test_long_expression_chains_compile_to_valid_python() -> None:
    """Python's parser allows 200 nested parentheses; a 95-term sum must still run (the front
    end allows nesting up to 100)."""
    from conftest import run_program

    terms = " + ".join(["x"] * 95)
    out = run_program(f"in long X\nout long S\n( X(x) {{ !>S({terms}); }} )*", "[2026-01-01 00:00:00] X(2)")
    assert [o["value"] for o in out] == [190]
    dterms = " * ".join(["y"] * 95)
    out = run_program(f"in double Y\nout double P\n( Y(y) {{ !>P({dterms}); }} )*", "[2026-01-01 00:00:00] Y(1.0)")
    assert [o["value"] for o in out] == [1.0]


def test_deep_expressions_keep_their_grouping() -> None:
    from conftest import run_program

    # 40 levels of right-nested subtraction, 1 - (1 - (1 - ...)): grouping decides the result.
    nested = "1"
    for _ in range(40):
        nested = f"1 - ({nested})"
    out = run_program(f"in {{}} Go\nout long R\nGo() {{ !>R({nested}); }}", "[2026-01-01 00:00:00] Go()")
    assert [o["value"] for o in out] == [eval(nested)]


def test_json_lines_escape_lone_surrogates_instead_of_failing() -> None:
    """An object value or an external's error message can still hold one: writing the line to a
    UTF-8 stream must not raise, and JSON readers get the code point back."""
    import json

    obj = {"value": "a\ud800b", "\udc00": ["é", "\U0001f600"]}
    line = json_line(obj)
    line.encode("utf-8")  # would raise UnicodeEncodeError with the surrogates left raw
    assert "\\ud800" in line and "é" in line and "\U0001f600" in line
    assert json.loads(line) == obj


def test_snapshots_keep_shared_arrays_shared_and_plain_ones_plain() -> None:
    """A list reached once is written as a plain array; one reached twice keeps its identity."""
    from eventscript.engine import context
    from eventscript.engine.values import UNSET

    a = [1, 2]
    b = [a, a, [3]]
    restored = context.decode(context.encode(1, [a, b, UNSET, a, [4, [5]]], ("k",), None)).variables
    assert restored == [[1, 2], [[1, 2], [1, 2], [3]], UNSET, [1, 2], [4, [5]]]
    assert restored[0] is restored[1][0] is restored[1][1] is restored[3]
    assert restored[2] is UNSET
    plain = context.encode(1, [7, "x", True, 1.5], None, None)
    assert context.decode(plain).variables == [7, "x", True, 1.5]


def test_epoch_milliseconds_past_year_9999_say_out_of_range() -> None:
    """A time given as epoch milliseconds beyond the range says so (it said 'expected a time ... got
    integer', which reads as if an integer could not be a time); both decoders agree."""
    for decoder in (decoder_for(TIME), lambda obj: decode(obj, TIME)):
        with pytest.raises(DecodeError, match="out of range: a time lies in years 1 to 9999"):
            decoder(1_735_689_600_000_000)  # microseconds written where milliseconds belong
        assert decoder(1_735_689_600_000) == 1_735_689_600_000_000
